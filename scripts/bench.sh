#!/usr/bin/env bash
# The dupgram benchmark: dupgram against the classic baselines, side by side,
# on the same corpora, in one run. Prints a Markdown table (and saves it under
# $DUPGRAM_BENCH_DIR/results.md).
#
#   scripts/bench.sh                      # 1M, 10M and 100M generated tokens + the real corpora
#   scripts/bench.sh --sizes 1M,10M       # smaller
#   scripts/bench.sh --runs 3 --no-sort   # more repeats; skip the sort | uniq baseline
#   scripts/bench.sh --only pairs         # one section: ngrams, memory or pairs
#
# Baselines:
#   sort   awk n-gram lines | LC_ALL=C sort -S <same memory> | uniq -cd   (exact)
#   hash   dupgram-hashcount: 64-bit n-gram fingerprints in a hash map   (approximate; memory grows)
#   lsh    MinHash-LSH (datasketch, from PyPI, installed in a venv under the bench directory)
# Tokenisation: dupgram's default (Unicode words, case-folded); the awk
# baseline lower-cases and splits at non-alphanumerics, the same on ASCII text.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
sizes=1M,10M,100M
runs=0
n=10
memory=1G
with_sort=1
only=all
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    --no-sort) with_sort=0; shift ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

work=${DUPGRAM_BENCH_DIR:-$here/target/bench}
mkdir -p "$work"
cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p dupgram -p dupgram-testkit
bin=$here/target/release
awk_bin=$(command -v mawk || command -v awk)
sort_mem=$(echo "$memory" | sed 's/[Bb]$//')

# --- corpora -----------------------------------------------------------------
corpora=()
for size in ${sizes//,/ }; do
  base=$work/gen-$size
  if [ ! -s "$base.jsonl.zst" ]; then
    echo "generating $size tokens..." >&2
    "$bin/dupgram-gen" --tokens "$size" --seed 1 --format jsonl | zstd -q -T2 -f -o "$base.jsonl.zst"
  fi
  corpora+=("$base")
done
for real in reuters21578 20newsgroups; do
  src=$here/../shared/corpora/$real.jsonl.zst
  if [ -f "$src" ]; then
    corpora+=("$work/$real")
    [ -e "$work/$real.jsonl.zst" ] || cp "$src" "$work/$real.jsonl.zst"
  else
    echo "skipping $real: $src not found" >&2
  fi
done
# Plain one-document-per-line text for the awk baseline, made once, untimed.
for c in "${corpora[@]}"; do
  if [ ! -s "$c.txt" ]; then
    zstd -dc "$c.jsonl.zst" | python3 -c 'import sys, json
for line in sys.stdin:
    if line.strip():
        print(" ".join(json.loads(line)["text"].split()))' > "$c.txt"
  fi
done

# --- measuring ---------------------------------------------------------------
# measure COMMAND...: runs it; prints wall seconds and peak RSS (KiB).
measure() {
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" > /dev/null 2> "$work/stderr.log" || {
    echo "failed: $*" >&2; cat "$work/stderr.log" >&2; exit 1; }
  cat "$work/time.txt"
}

# Largest size a directory reached while process $1 ran.
watch_dir() {
  local pid=$1 dir=$2 peak=0 now
  while kill -0 "$pid" 2> /dev/null; do
    now=$(du -sb "$dir" 2> /dev/null | cut -f1)
    [ "${now:-0}" -gt "$peak" ] && peak=$now
    sleep 0.2
  done
  echo "$peak"
}

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

table=$work/results.md
: > "$table"
section() { [ "$only" = all ] || [ "$only" = "$1" ]; }

section ngrams && {
  echo "| corpus | tokens | tool | wall (median) | M tokens/s | peak RSS | spill / input byte (stored, text) | wall vs dupgram |"
  echo "|---|---:|---|---:|---:|---:|---:|---:|"
} >> "$table"

section ngrams && for c in "${corpora[@]}"; do
  name=$(basename "$c")
  input=$c.jsonl.zst
  in_bytes=$(stat -Lc %s "$input")
  text_bytes=$(stat -c %s "$c.txt")
  r=$runs
  if [ "$r" = 0 ]; then r=3; [ "$text_bytes" -gt 300000000 ] && r=1; fi

  # dupgram
  times=()
  for _ in $(seq "$r"); do
    read -r wall rss < <(measure "$bin/dupgram" ngrams "$input" -n "$n" --memory "$memory" -q -o "$work/dups.tsv" --stats-json "$work/stats.json")
    times+=("$wall"); d_rss=$rss
  done
  d_wall=$(printf '%s\n' "${times[@]}" | median)
  tokens=$(python3 -c "import json; print(json.load(open('$work/stats.json'))['tokens'])")
  spill=$(python3 -c "import json; print(json.load(open('$work/stats.json'))['bytes_spilled'])")
  d_types=$(python3 -c "import json; print(json.load(open('$work/stats.json'))['duplicate_types'])")
  row() { # tool wall rss spill
    printf '| %s | %s | %s | %.2f s | %.2f | %s MiB | %s | %s |\n' "$name" "$tokens" "$1" "$2" \
      "$(python3 -c "print($tokens / $2 / 1e6)")" "$(( $3 / 1024 ))" "$4" \
      "$(python3 -c "print(f'{$2 / $d_wall:.1f}×')")" >> "$table"
  }
  row dupgram "$d_wall" "$d_rss" "$(python3 -c "print(f'{$spill / $in_bytes:.2f}, {$spill / $text_bytes:.2f}')")"

  # in-memory hash map of fingerprints
  times=()
  for _ in $(seq "$r"); do
    read -r wall rss < <(measure "$bin/dupgram-hashcount" "$input" -n "$n")
    times+=("$wall"); h_rss=$rss
  done
  row "hash map (approximate)" "$(printf '%s\n' "${times[@]}" | median)" "$h_rss" "0 (in memory)"

  # awk | sort | uniq -cd
  if [ "$with_sort" = 1 ]; then
    times=()
    for _ in $(seq "$r"); do
      tmp=$(mktemp -d "$work/sort.XXXX")
      /usr/bin/time -f "%e %M" -o "$work/time.txt" bash -c "LC_ALL=C '$awk_bin' -v n=$n '{ s = tolower(\$0); gsub(/[^a-z0-9]+/, \" \", s); k = split(s, w, \" \"); for (i = 1; i + n - 1 <= k; i++) { g = w[i]; for (j = 1; j < n; j++) g = g \" \" w[i + j]; print g } }' '$c.txt' | LC_ALL=C sort -S $sort_mem -T '$tmp' | uniq -cd > '$work/sort.out'" &
      pid=$!
      peak=$(watch_dir "$pid" "$tmp")
      wait "$pid"
      read -r wall rss < "$work/time.txt"
      times+=("$wall"); s_rss=$rss; s_peak=$peak
      rm -rf "$tmp"
    done
    s_types=$(wc -l < "$work/sort.out")
    row "awk \| sort -S $memory \| uniq -cd" "$(printf '%s\n' "${times[@]}" | median)" "$s_rss" \
      "$(python3 -c "print(f'{$s_peak / $in_bytes:.2f}, {$s_peak / $text_bytes:.2f}')")"
    echo "$name: dupgram found $d_types duplicate $n-grams, sort | uniq $s_types (tokenisers differ on non-ASCII text)" >&2
  fi
done

# --- memory: the same budgets on generated corpora 10× apart ------------------
gens=()
for c in "${corpora[@]}"; do case $(basename "$c") in gen-*) gens+=("$c") ;; esac; done
if section memory && [ "${#gens[@]}" -ge 2 ]; then
  {
    echo
    echo "| corpus | --memory | peak RSS | runs | spill / text byte | wall |"
    echo "|---|---:|---:|---:|---:|---:|"
  } >> "$table"
  for c in "${gens[@]: -2}"; do
    for budget in 64M 256M; do
      read -r wall rss < <(measure "$bin/dupgram" ngrams "$c.jsonl.zst" -n "$n" --memory "$budget" -q -o "$work/dups.tsv" --stats-json "$work/stats.json")
      python3 - "$work/stats.json" "$(basename "$c")" "$budget" "$rss" "$wall" "$(stat -c %s "$c.txt")" >> "$table" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
name, budget, rss, wall, text = sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
print(f"| {name} | {budget} | {rss // 1024} MiB | {s['runs_written']} | {s['bytes_spilled'] / text:.2f} | {wall:.1f} s |")
PY
    done
  done
fi

# --- pairs: dupgram pairs against MinHash-LSH ---------------------------------
# News-like generated text with 20 % near copies (plus 2 % exact copies and 5 %
# documents reusing a passage), at the largest size asked for.
if section pairs; then
  size=${sizes##*,}
  base=$work/news-$size
  if [ ! -s "$base.jsonl.zst" ]; then
    echo "generating $size tokens with 20 % near copies..." >&2
    "$bin/dupgram-gen" --tokens "$size" --seed 2 --exact 0.02 --near 0.2 --passages 0.05 | zstd -q -T2 -f -o "$base.jsonl.zst"
  fi
  venv=$work/venv
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet datasketch
  fi
  pairs_mem=2G
  read -r p_wall p_rss < <(measure "$bin/dupgram" pairs "$base.jsonl.zst" -n 5 --memory "$pairs_mem" -q -o "$work/pairs.tsv" --clusters "$work/clusters.tsv" --stats-json "$work/pairs.json")
  p_pairs=$(( $(wc -l < "$work/pairs.tsv") - 1 ))
  p_tokens=$(python3 -c "import json; print(json.load(open('$work/pairs.json'))['tokens'])")
  p_high=$(awk -F'\t' 'NR > 1 && $3 >= 0.8' "$work/pairs.tsv" | wc -l)
  read -r l_wall l_rss < <(measure "$venv/bin/python" "$here/scripts/minhash_lsh.py" "$base.jsonl.zst" -n 5 --threshold 0.5 --pairs "$work/lsh.tsv")
  l_pairs=$(wc -l < "$work/lsh.tsv")
  recall=$("$venv/bin/python" "$here/scripts/minhash_lsh.py" --recall "$work/pairs.tsv" "$work/lsh.tsv" --min-sscr 0.8 | awk '$1 == "recall" { print $2 }')
  {
    echo
    echo "| corpus | tokens | tool | wall | peak RSS | pairs found | pairs with SSCR ≥ 0.8 found |"
    echo "|---|---:|---|---:|---:|---:|---:|"
    echo "| news-$size | $p_tokens | dupgram pairs -n 5 --memory $pairs_mem (both passes) | $p_wall s | $(( p_rss / 1024 )) MiB | $p_pairs (all, exact scores) | $p_high (all of them) |"
    echo "| news-$size | $p_tokens | MinHash-LSH, 128 permutations, Jaccard ≥ 0.5 | $l_wall s | $(( l_rss / 1024 )) MiB | $l_pairs (candidates) | recall $recall |"
  } >> "$table"
fi

echo
cat "$table"
