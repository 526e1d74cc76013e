#!/usr/bin/env bash
# The dupgram benchmark: dupgram against the classic baselines, side by side,
# on the same corpora, in one run. Prints a Markdown table (and saves it under
# $DUPGRAM_BENCH_DIR/results.md).
#
#   scripts/bench.sh                      # 1M, 10M and 100M generated tokens + the real corpora
#   scripts/bench.sh --sizes 1M,10M       # smaller
#   scripts/bench.sh --runs 3 --no-sort   # more repeats; skip the sort | uniq baseline
#   scripts/bench.sh --only pairs         # one section: ngrams, memory, pairs, dedup or exact
#   scripts/bench.sh --only pairs --sizes 100M --lsh-size 10M   # LSH recall on a smaller corpus
#   scripts/bench.sh --only dedup --onion ~/onion-1.2/src/onion  # beside the real Onion 1.2
#   scripts/bench.sh --only ngrams --sizes 10M --no-sort --runs 3 --onion ~/onion-1.2/src/onion
#                                         # ngrams beside Onion 1.2's hashgen + hashdup (and
#                                         # dupgram --memory 256M beside --memory 1G), on the
#                                         # generated, real and Gutenberg corpora
#   scripts/bench.sh --only exact --sizes 20M   # dedup --exact-only beside Dolma and datatrove
#                                         # (--no-datatrove: Dolma only; datatrove's SentenceDedup takes minutes)
#   scripts/bench.sh --sizes 1B           # scaling: ngrams, pairs, dedup on 10M, 100M and 1B tokens
#                                         # of a growing (Heaps-law) vocabulary, default budgets
#   scripts/bench.sh --only scale --sizes 1M,10M --open-vocabulary 0.2   # the same, smaller
#   scripts/bench.sh --only pairs --before OLD/dupgram   # where a section compares them (pairs:
#                                         # the first 800 Gutenberg books; scale: every job and
#                                         # size, outputs compared), an older build beside this one
#   scripts/bench.sh --only scale --sizes 100M,1B --open-vocabulary 0.1 --jobs pairs,dedup --before OLD/dupgram
#                                         # the index pass in parts (README) beside the build before it
#
# Baselines:
#   sort   awk n-gram lines | LC_ALL=C sort -S <same memory> | uniq -cd   (exact)
#   hash   dupgram-hashcount: 64-bit n-gram fingerprints in a hash map   (approximate; memory grows)
#   lsh    MinHash-LSH (datasketch, from PyPI, installed in a venv under the bench directory)
#   onion  dupgram-onion: Onion's in-memory algorithm, 64-bit n-gram hashes in a hash set (memory grows)
#   dolma  Dolma 1.2.1 `dolma dedupe` (Bloom filter) and datatrove 0.10.1 ExactDedup / SentenceDedup,
#          from PyPI, each installed in its own venv under the bench directory (section exact)
#   Onion 1.2 itself with --onion PATH: build it outside this repository from the public
#          repository Suwarnan/onion, commit fb395d1c ("Release 1.2"): apt-get install
#          libjudy-dev, then make; PATH is its src/onion (buzhash.c, hashgen and hashdup
#          beside it). Section dedup runs `onion`; section ngrams runs `hashgen -n 10`
#          + `hashdup` (64-bit hashes, no counts) on a vertical copy of each corpus
# Real corpora: Reuters-21578 and 20 Newsgroups from ../shared/corpora, and
#   $DUPGRAM_BENCH_DIR/gutenberg.jsonl.zst when present (scripts/fetch-corpora.sh gutenberg).
# Tokenisation: dupgram's default (Unicode words, case-folded); the awk
# baseline lower-cases and splits at non-alphanumerics, the same on ASCII text.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
sizes=1M,10M,100M
runs=0
n=10
memory=1G
with_sort=1
with_datatrove=1
only=all
lsh_size=
onion=
onion_src=
open_vocabulary=0.08
before=
scale_jobs=ngrams,pairs,dedup
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    --no-sort) with_sort=0; shift ;;
    --no-datatrove) with_datatrove=0; shift ;;
    --only) only=$2; shift 2 ;;
    --lsh-size) lsh_size=$2; shift 2 ;;
    --onion) onion=$2; shift 2 ;;
    --onion-src) onion_src=$2; shift 2 ;;
    --open-vocabulary) open_vocabulary=$2; shift 2 ;;
    --before) before=$2; shift 2 ;;
    --jobs) scale_jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,43p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

# Sizes in B (1B = 10⁹ tokens) are for the scaling section alone (section
# scale): too large for the baselines of the others. Asked for alone, they
# run that section only.
scale_sizes=
plain_sizes=
for s in ${sizes//,/ }; do
  case $s in
    *B|*b) scale_sizes+=${scale_sizes:+,}$s ;;
    *) plain_sizes+=${plain_sizes:+,}$s ;;
  esac
done
if [ -n "$scale_sizes" ] && [ -z "$plain_sizes" ] && [ "$only" = all ]; then only=scale; fi
sizes=${plain_sizes:-10M}

work=${DUPGRAM_BENCH_DIR:-$here/target/bench}
mkdir -p "$work"
cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p dupgram -p dupgram-testkit
bin=$here/target/release
awk_bin=$(command -v mawk || command -v awk)
sort_mem=$(echo "$memory" | sed 's/[Bb]$//')
section() { [ "$only" = all ] || [ "$only" = "$1" ]; }

# 10M → 10000000 (k, M, G suffixes, as dupgram-gen reads them).
count() { awk -v s="$1" 'BEGIN { m = 1; u = toupper(substr(s, length(s)))
  if (u == "K") m = 1e3; else if (u == "M") m = 1e6; else if (u == "G") m = 1e9
  if (m > 1) s = substr(s, 1, length(s) - 1); printf "%.0f\n", s * m }'; }
# The sizes asked for, smallest first.
sizes_sorted() { for s in ${sizes//,/ }; do echo "$(count "$s") $s"; done | sort -n | awk '{ print $2 }'; }

# --- corpora (for the ngrams and memory sections) ------------------------------
corpora=()
gen_sizes=$sizes
section ngrams || section memory || gen_sizes=
for size in ${gen_sizes//,/ }; do
  base=$work/gen-$size
  if [ ! -s "$base.jsonl.zst" ]; then
    echo "generating $size tokens..." >&2
    "$bin/dupgram-gen" --tokens "$size" --seed 1 --format jsonl | zstd -q -T2 -f -o "$base.jsonl.zst"
  fi
  corpora+=("$base")
done
for real in reuters21578 20newsgroups; do
  section ngrams || section memory || break
  src=$here/../shared/corpora/$real.jsonl.zst
  if [ -f "$src" ]; then
    corpora+=("$work/$real")
    [ -e "$work/$real.jsonl.zst" ] || cp "$src" "$work/$real.jsonl.zst"
  else
    echo "skipping $real: $src not found" >&2
  fi
done
# Project Gutenberg books (long documents, a large vocabulary, boilerplate in
# every file), built by scripts/fetch-corpora.sh from a fetched copy of the
# public repository rcdm-uga/Gutenberg_Text.
if section ngrams; then
  if [ -s "$work/gutenberg.jsonl.zst" ]; then
    corpora+=("$work/gutenberg")
  else
    echo "skipping gutenberg: $work/gutenberg.jsonl.zst not found (see scripts/fetch-corpora.sh)" >&2
  fi
fi
# Plain one-document-per-line text for the awk baseline, made once, untimed.
# (zstd reads the input from stdin: given a symbolic link, such as a linked
# gutenberg.jsonl.zst, by name it skips it with a warning.)
for c in "${corpora[@]}"; do
  if [ ! -s "$c.txt" ]; then
    zstd -dc < "$c.jsonl.zst" | python3 -c 'import sys, json
for line in sys.stdin:
    if line.strip():
        print(" ".join(json.loads(line)["text"].split()))' > "$c.txt.part"
    mv "$c.txt.part" "$c.txt"
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

json_field() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
maximum() { sort -g | tail -n 1; }

table=$work/results.md
: > "$table"

# --- ngrams: dupgram beside the baselines -----------------------------------
# Per corpus, in every repetition one run of each tool in turn (so load on a
# shared machine hits them alike); medians of the walls, the largest RSS.
# dupgram runs at --memory $memory and at 256M (its "wall vs dupgram" is the
# ratio to the $memory time; the two outputs must be identical).
# With --onion PATH, Onion 1.2's hashgen + hashdup (beside PATH) run on the
# corpus as a vertical file (dupgram-vert, made once, untimed, kept beside the
# corpus): `hashgen -n $n` writes 64-bit buzhashes of every n-token window to
# 10 files, `hashdup` sorts each and writes the hashes seen twice or more, no
# counts. Their walls are summed, their RSS the larger; the hash files go to a
# temporary directory under $work, removed after each run.
if section ngrams && [ -n "$onion" ]; then
  hashgen=$(dirname "$onion")/hashgen
  hashdup=$(dirname "$onion")/hashdup
  for tool in "$hashgen" "$hashdup"; do
    [ -x "$tool" ] || { echo "--onion $onion: $tool not found or not executable" >&2; exit 2; }
  done
fi

section ngrams && {
  echo "| corpus | tokens | tool | wall (median) | M tokens/s | peak RSS (max) | spill / input byte (stored, text) | wall vs dupgram $memory |"
  echo "|---|---:|---|---:|---:|---:|---:|---:|"
} >> "$table"

seconds_of() { # STATS.JSON: the pass times dupgram reports
  python3 -c "import json, sys; s = json.load(open(sys.argv[1]))['seconds']
print(f\"lexicon {s['lexicon']:.1f}, count {s['count']:.1f}, merge {s['merge']:.1f}, total {s['total']:.1f}\")" "$1"
}

section ngrams && for c in "${corpora[@]}"; do
  name=$(basename "$c")
  input=$c.jsonl.zst
  in_bytes=$(stat -Lc %s "$input")
  text_bytes=$(stat -c %s "$c.txt")
  r=$runs
  if [ "$r" = 0 ]; then r=3; [ "$text_bytes" -gt 300000000 ] && r=1; fi
  if [ -n "$onion" ] && [ ! -s "$c.vert" ]; then
    echo "$name: writing the vertical file for Onion (untimed)..." >&2
    "$bin/dupgram-vert" "$input" > "$c.vert.part"
    mv "$c.vert.part" "$c.vert"
  fi

  d_times=(); d_rss=0; d_secs=(); l_times=(); l_rss=0; l_secs=()
  x_times=(); x_rss=0; x_peak=0; h_times=(); h_rss=0; s_times=(); s_rss=0; s_peak=0
  for _ in $(seq "$r"); do
    read -r wall rss < <(measure "$bin/dupgram" ngrams "$input" -n "$n" --memory "$memory" -q -o "$work/dups.tsv" --stats-json "$work/stats.json")
    d_times+=("$wall"); [ "$rss" -gt "$d_rss" ] && d_rss=$rss; d_secs+=("($(seconds_of "$work/stats.json"))")

    read -r wall rss < <(measure "$bin/dupgram" ngrams "$input" -n "$n" --memory 256M -q -o "$work/dups-256M.tsv" --stats-json "$work/stats-256M.json")
    l_times+=("$wall"); [ "$rss" -gt "$l_rss" ] && l_rss=$rss; l_secs+=("($(seconds_of "$work/stats-256M.json"))")

    if [ -n "$onion" ]; then
      tmp=$(mktemp -d "$work/onion.XXXX")
      read -r g_wall g_rss < <(measure "$hashgen" -q -n "$n" -o "$tmp/hashes." "$c.vert")
      peak=$(du -sb "$tmp" | cut -f1)
      read -r u_wall u_rss < <(measure "$hashdup" -q -o "$tmp/duphashes" "$tmp"/hashes.*)
      x_dups=$(( $(stat -c %s "$tmp/duphashes") / 8 ))
      x_times+=("$(python3 -c "print(round($g_wall + $u_wall, 2))")")
      for v in "$g_rss" "$u_rss"; do [ "$v" -gt "$x_rss" ] && x_rss=$v; done
      [ "$peak" -gt "$x_peak" ] && x_peak=$peak
      rm -rf "$tmp"
    fi

    read -r wall rss < <(measure "$bin/dupgram-hashcount" "$input" -n "$n")
    h_times+=("$wall"); [ "$rss" -gt "$h_rss" ] && h_rss=$rss

    # awk | sort | uniq -cd
    if [ "$with_sort" = 1 ]; then
      tmp=$(mktemp -d "$work/sort.XXXX")
      /usr/bin/time -f "%e %M" -o "$work/time.txt" bash -c "LC_ALL=C '$awk_bin' -v n=$n '{ s = tolower(\$0); gsub(/[^a-z0-9]+/, \" \", s); k = split(s, w, \" \"); for (i = 1; i + n - 1 <= k; i++) { g = w[i]; for (j = 1; j < n; j++) g = g \" \" w[i + j]; print g } }' '$c.txt' | LC_ALL=C sort -S $sort_mem -T '$tmp' | uniq -cd > '$work/sort.out'" &
      pid=$!
      peak=$(watch_dir "$pid" "$tmp")
      wait "$pid"
      read -r wall rss < "$work/time.txt"
      s_times+=("$wall"); [ "$rss" -gt "$s_rss" ] && s_rss=$rss; [ "$peak" -gt "$s_peak" ] && s_peak=$peak
      rm -rf "$tmp"
    fi
  done

  d_wall=$(printf '%s\n' "${d_times[@]}" | median)
  tokens=$(json_field "$work/stats.json" tokens)
  spill=$(json_field "$work/stats.json" bytes_spilled)
  d_types=$(json_field "$work/stats.json" duplicate_types)
  per_input() { python3 -c "print(f'{$1 / $in_bytes:.2f}, {$1 / $text_bytes:.2f}')"; }
  row() { # tool wall rss spill
    printf '| %s | %s | %s | %.2f s | %.2f | %s MiB | %s | %s |\n' "$name" "$tokens" "$1" "$2" \
      "$(python3 -c "print($tokens / $2 / 1e6)")" "$(( $3 / 1024 ))" "$4" \
      "$(python3 -c "print(f'{$2 / $d_wall:.2f}×')")" >> "$table"
  }
  row "dupgram --memory $memory" "$d_wall" "$d_rss" "$(per_input "$spill")"

  # --memory 256M: the same n-grams, written in the same order, or the row says so.
  if cmp -s "$work/dups.tsv" "$work/dups-256M.tsv"; then same="identical output"; else
    same="OUTPUT DIFFERS from --memory $memory"
    echo "$name: dupgram --memory 256M wrote different output from --memory $memory" >&2
  fi
  row "dupgram --memory 256M ($same)" "$(printf '%s\n' "${l_times[@]}" | median)" "$l_rss" \
    "$(per_input "$(json_field "$work/stats-256M.json" bytes_spilled)")"
  rm -f "$work/dups-256M.tsv" "$work/dups-256M.tsv.lex"
  echo "ngrams $name: dupgram --memory $memory walls ${d_times[*]}, seconds ${d_secs[*]}" >&2
  echo "ngrams $name: dupgram --memory 256M walls ${l_times[*]}, seconds ${l_secs[*]}" >&2

  if [ -n "$onion" ]; then
    row "Onion 1.2 hashgen + hashdup (64-bit hashes, no counts)" "$(printf '%s\n' "${x_times[@]}" | median)" "$x_rss" \
      "$(per_input "$x_peak")"
    vert_tokens=$(LC_ALL=C grep -vc '^<' "$c.vert" || true)
    echo "ngrams $name: Onion hashgen + hashdup walls ${x_times[*]}" >&2
    echo "ngrams $name: dupgram found $d_types duplicate $n-gram types; Onion's hashdup $x_dups duplicate $n-gram hashes." \
      "They differ by design: Onion hashes the vertical file's $vert_tokens tokens (punctuation a token of its own, case kept;" \
      "dupgram counted $tokens case-folded words), its windows run across document boundaries, and its 64-bit hashes may collide." >&2
  fi

  row "hash map (approximate)" "$(printf '%s\n' "${h_times[@]}" | median)" "$h_rss" "0 (in memory)"

  if [ "$with_sort" = 1 ]; then
    s_types=$(wc -l < "$work/sort.out")
    row "awk \| sort -S $memory \| uniq -cd" "$(printf '%s\n' "${s_times[@]}" | median)" "$s_rss" "$(per_input "$s_peak")"
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
# documents reusing a passage), at the largest size asked for. The LSH
# baseline runs on the same corpus, or with --lsh-size on a smaller one (and
# dupgram runs there too, so the recall compares the two on one corpus).
if section pairs; then
  size=$(sizes_sorted | tail -n 1)
  lsh_size=${lsh_size:-$size}
  venv=$work/venv
  if ! "$venv/bin/python" -c 'import datasketch' 2> /dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet datasketch
  fi
  pairs_mem=2G
  {
    echo
    echo "| corpus | tokens | tool | wall (median) | M tokens/s | peak RSS (max) | pairs found | pairs with SSCR ≥ 0.8 |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|"
  } >> "$table"
  for s in $(printf '%s\n' "$size" "$lsh_size" | awk '!seen[$0]++'); do
    base=$work/news-$s
    if [ ! -s "$base.jsonl.zst" ]; then
      echo "generating $s tokens with 20 % near copies..." >&2
      "$bin/dupgram-gen" --tokens "$s" --seed 2 --exact 0.02 --near 0.2 --passages 0.05 | zstd -q -T2 -f -o "$base.jsonl.zst"
    fi
    r=$runs; [ "$r" = 0 ] && r=3
    times=(); rss_all=()
    for _ in $(seq "$r"); do
      read -r wall rss < <(measure "$bin/dupgram" pairs "$base.jsonl.zst" -n 5 --memory "$pairs_mem" -q -o "$work/pairs-$s.tsv" --clusters "$work/clusters-$s.tsv" --stats-json "$work/pairs-$s.json")
      times+=("$wall"); rss_all+=("$rss")
    done
    p_wall=$(printf '%s\n' "${times[@]}" | median)
    p_rss=$(printf '%s\n' "${rss_all[@]}" | maximum)
    p_pairs=$(( $(wc -l < "$work/pairs-$s.tsv") - 1 ))
    p_tokens=$(json_field "$work/pairs-$s.json" tokens)
    p_high=$(awk -F'\t' 'NR > 1 && $3 >= 0.8' "$work/pairs-$s.tsv" | wc -l)
    printf '| news-%s | %s | dupgram pairs -n 5 --memory %s (both passes) | %.2f s | %.2f | %s MiB | %s (all, exact scores) | %s |\n' \
      "$s" "$p_tokens" "$pairs_mem" "$p_wall" "$(python3 -c "print($p_tokens / $p_wall / 1e6)")" "$(( p_rss / 1024 ))" \
      "$p_pairs" "$p_high" >> "$table"
    echo "pairs news-$s: dupgram walls ${times[*]}" >&2
  done
  # MinHash-LSH, in Python: minutes long, so one run unless --runs says otherwise.
  base=$work/news-$lsh_size
  r=$runs; [ "$r" = 0 ] && r=1
  times=(); rss_all=()
  for _ in $(seq "$r"); do
    read -r wall rss < <(measure "$venv/bin/python" "$here/scripts/minhash_lsh.py" "$base.jsonl.zst" -n 5 --threshold 0.5 --pairs "$work/lsh-$lsh_size.tsv")
    times+=("$wall"); rss_all+=("$rss")
  done
  l_wall=$(printf '%s\n' "${times[@]}" | median)
  l_rss=$(printf '%s\n' "${rss_all[@]}" | maximum)
  l_pairs=$(wc -l < "$work/lsh-$lsh_size.tsv")
  l_tokens=$(json_field "$work/pairs-$lsh_size.json" tokens)
  read -r wanted hit recall < <("$venv/bin/python" "$here/scripts/minhash_lsh.py" --recall "$work/pairs-$lsh_size.tsv" "$work/lsh-$lsh_size.tsv" --min-sscr 0.8 | awk '{ v[$1] = $2 } END { print v["dupgram_pairs"], v["found_by_lsh"], v["recall"] }')
  printf '| news-%s | %s | MinHash-LSH (datasketch), 128 permutations, Jaccard ≥ 0.5 | %.2f s | %.2f | %s MiB | %s (candidates) | %s of dupgram'"'"'s %s (recall %s) |\n' \
    "$lsh_size" "$l_tokens" "$l_wall" "$(python3 -c "print($l_tokens / $l_wall / 1e6)")" "$(( l_rss / 1024 ))" \
    "$l_pairs" "$hit" "$wanted" "$recall" >> "$table"
  echo "pairs news-$lsh_size: LSH walls ${times[*]}" >&2

  # Real text: the whole pairs job on the Gutenberg books beside an in-memory
  # 64-bit hash count of their 10-grams (dupgram-hashcount), alternating.
  gut=$work/gutenberg.jsonl.zst
  if [ -s "$gut" ]; then
    {
      echo
      echo "| corpus | tokens | tool | wall (median) | M tokens/s | peak RSS (max) | result | wall vs hash count |"
      echo "|---|---:|---|---:|---:|---:|---|---:|"
    } >> "$table"
    r=$runs; [ "$r" = 0 ] && r=3
    p_times=(); p_rss_all=(); h_times=(); h_rss_all=()
    for _ in $(seq "$r"); do
      read -r wall rss < <(measure "$bin/dupgram" pairs "$gut" -n 5 --memory "$pairs_mem" --min-sscr 0.8 -q -o "$work/pairs-gutenberg.tsv" --stats-json "$work/pairs-gutenberg.json")
      p_times+=("$wall"); p_rss_all+=("$rss")
      read -r wall rss < <(measure "$bin/dupgram-hashcount" "$gut" -n 10)
      h_times+=("$wall"); h_rss_all+=("$rss")
    done
    p_wall=$(printf '%s\n' "${p_times[@]}" | median)
    h_wall=$(printf '%s\n' "${h_times[@]}" | median)
    p_tokens=$(json_field "$work/pairs-gutenberg.json" tokens)
    p_pairs=$(( $(wc -l < "$work/pairs-gutenberg.tsv") - 1 ))
    gut_row() { # tool wall rss result
      printf '| gutenberg | %s | %s | %.2f s | %.2f | %s MiB | %s | %s |\n' "$p_tokens" "$1" "$2" \
        "$(python3 -c "print($p_tokens / $2 / 1e6)")" "$(( $3 / 1024 ))" "$4" \
        "$(python3 -c "print(f'{$2 / $h_wall:.2f}×')")" >> "$table"
    }
    gut_row "dupgram pairs -n 5 --memory $pairs_mem --min-sscr 0.8 (both passes)" "$p_wall" \
      "$(printf '%s\n' "${p_rss_all[@]}" | maximum)" "$p_pairs pairs, exact scores"
    gut_row "dupgram-hashcount -n 10 (64-bit fingerprints in a hash map)" "$h_wall" \
      "$(printf '%s\n' "${h_rss_all[@]}" | maximum)" "duplicate fingerprints, no pairs"
    echo "pairs gutenberg: dupgram walls ${p_times[*]}; hashcount walls ${h_times[*]}" >&2

    # The first 800 books, every pair scored (the default thresholds): fewer
    # books than --max-df, so the licence's n-grams, each in hundreds of
    # books, all make candidates, the same pairs over and over (README, How
    # it works, Candidates). With --before, an older build beside this one.
    gut800=$work/gutenberg-800.jsonl.zst
    if [ ! -s "$gut800" ]; then
      # head stops reading after 800 books: the decompressor's broken pipe is expected.
      (set +o pipefail; zstd -dc "$gut" | head -n 800 | zstd -q -f -o "$gut800.part") && mv "$gut800.part" "$gut800"
    fi
    {
      echo
      echo "| corpus | tokens | tool | wall (median) | peak RSS (max) | candidates (median) | scoring (median) | pairs |"
      echo "|---|---:|---|---:|---:|---:|---:|---:|"
    } >> "$table"
    tools=("$bin/dupgram"); [ -n "$before" ] && tools+=("$before")
    declare -A g_walls=() g_rss=() g_cand=() g_score=()
    for _ in $(seq "$r"); do
      for t in "${!tools[@]}"; do
        read -r wall rss < <(measure "${tools[$t]}" pairs "$gut800" -n 5 --memory 1G -q -o "$work/pairs-gut800-$t.tsv" --stats-json "$work/pairs-gut800-$t.json")
        g_walls[$t]+="$wall "; g_rss[$t]+="$rss "
        g_cand[$t]+="$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['seconds']['candidates'])" "$work/pairs-gut800-$t.json") "
        g_score[$t]+="$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['seconds']['scoring'])" "$work/pairs-gut800-$t.json") "
      done
    done
    for t in "${!tools[@]}"; do
      name="dupgram pairs -n 5 --memory 1G"; [ "$t" = 1 ] && name="$name, --before $before"
      printf '| gutenberg-800 | %s | %s | %.2f s | %s MiB | %.2f s | %.2f s | %s |\n' \
        "$(json_field "$work/pairs-gut800-$t.json" tokens)" "$name" \
        "$(printf '%s\n' ${g_walls[$t]} | median)" "$(( $(printf '%s\n' ${g_rss[$t]} | maximum) / 1024 ))" \
        "$(printf '%s\n' ${g_cand[$t]} | median)" "$(printf '%s\n' ${g_score[$t]} | median)" \
        "$(( $(wc -l < "$work/pairs-gut800-$t.tsv") - 1 ))" >> "$table"
      echo "pairs gutenberg-800 ${tools[$t]}: walls ${g_walls[$t]}" >&2
    done
    if [ -n "$before" ] && ! cmp -s "$work/pairs-gut800-0.tsv" "$work/pairs-gut800-1.tsv"; then
      echo "pairs gutenberg-800: the two builds' pairs differ" >&2
    fi
  else
    echo "skipping pairs on gutenberg: $gut not found (see scripts/fetch-corpora.sh)" >&2
  fi
fi

# --- dedup: dupgram dedup against Onion 1.2 and its in-memory algorithm ------
# Vertical corpora: generated (seed 1, <p> every 40 tokens) at the two largest
# sizes asked for, so memory is seen at sizes 10× apart, and real text
# (Reuters-21578 + 20 Newsgroups from ../shared/corpora, one token a line, by
# dupgram-vert) when present, and the Gutenberg books (261M vertical tokens)
# when gutenberg.jsonl.zst is. All decompressed once, untimed, so every tool
# reads the same plain file. Paragraphs, n = 7, threshold 0.5, smoothing on
# (Onion's defaults); runs of the tools alternate. Each writes the marked
# corpus (1/0 before every line); "lines that differ" compares it with
# dupgram's, line by line.
#
# With --onion PATH (Onion 1.2's `onion`, built from its source) the real
# program runs beside them, and a second table counts the lines on which it
# and dupgram differ, smoothing on and off, and how many of those the port
# also gives when it hashes as Onion does (--onion-hash with Onion's own
# buzhash.c, found beside the binary or given by --onion-src).
differing_lines() { # A B: lines of A and B that differ (a missing line counts)
  LC_ALL=C "$awk_bin" -v other="$2" '
    { if ((getline o < other) <= 0) { d++; next } if (o != $0) d++ }
    END { while ((getline o < other) > 0) d++; print d + 0 }' "$1"
}
removed_paragraphs() { LC_ALL=C grep -c -E '^1	<p[ >]' "$1" || true; }
if section dedup; then
  dedup_mem=1G
  verts=()
  for size in $(sizes_sorted | tail -n 2); do
    vert=$work/gen-$size.vert
    if [ ! -s "$vert" ]; then
      echo "generating $size tokens, vertical..." >&2
      "$bin/dupgram-gen" --tokens "$size" --seed 1 --format vertical > "$vert"
    fi
    verts+=("$vert")
  done
  real_src=("$here/../shared/corpora/reuters21578.jsonl.zst" "$here/../shared/corpora/20newsgroups.jsonl.zst")
  if [ -f "${real_src[0]}" ] && [ -f "${real_src[1]}" ]; then
    [ -s "$work/real.vert" ] || "$bin/dupgram-vert" "${real_src[@]}" > "$work/real.vert"
    verts+=("$work/real.vert")
  else
    echo "skipping the real-text vertical corpus: ${real_src[*]} not found" >&2
  fi
  # The Gutenberg books (214M tokens): real text of the size the targets name.
  if [ -s "$work/gutenberg.jsonl.zst" ]; then
    if [ ! -s "$work/gutenberg.vert" ]; then
      "$bin/dupgram-vert" "$work/gutenberg.jsonl.zst" > "$work/gutenberg.vert.part"
      mv "$work/gutenberg.vert.part" "$work/gutenberg.vert"
    fi
    verts+=("$work/gutenberg.vert")
  else
    echo "skipping gutenberg in the dedup section: $work/gutenberg.jsonl.zst not found (see scripts/fetch-corpora.sh)" >&2
  fi
  if [ -n "$onion" ]; then
    [ -x "$onion" ] || { echo "--onion $onion: not an executable" >&2; exit 2; }
    [ -n "$onion_src" ] || onion_src=$(dirname "$onion")/buzhash.c
    [ -f "$onion_src" ] || { echo "Onion's buzhash.c not found at $onion_src (give --onion-src)" >&2; exit 2; }
  fi
  {
    echo
    echo "| corpus | tokens | tool | wall (median) | M tokens/s | peak RSS (max) | paragraphs removed | lines that differ from dupgram | wall vs dupgram |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|---:|"
  } >> "$table"
  for vert in "${verts[@]}"; do
    name=$(basename "$vert" .vert)
    r=$runs; [ "$r" = 0 ] && r=3
    d_times=(); d_rss_all=(); o_times=(); o_rss_all=(); x_times=(); x_rss_all=()
    for _ in $(seq "$r"); do
      read -r wall rss < <(measure "$bin/dupgram" dedup "$vert" --unit p -n 7 --threshold 0.5 --memory "$dedup_mem" -q -o "$work/dedup.vert" --stats-json "$work/dedup.json")
      d_times+=("$wall"); d_rss_all+=("$rss")
      read -r wall rss < <(measure "$bin/dupgram-onion" "$vert" --unit p -n 7 --threshold 0.5 --keep-case -o "$work/port.vert")
      o_times+=("$wall"); o_rss_all+=("$rss")
      if [ -n "$onion" ]; then
        /usr/bin/time -f "%e %M" -o "$work/time.txt" "$onion" -n 7 -t 0.5 -q "$vert" > "$work/onion.vert" 2> "$work/stderr.log" || {
          echo "failed: $onion" >&2; cat "$work/stderr.log" >&2; exit 1; }
        read -r wall rss < "$work/time.txt"
        x_times+=("$wall"); x_rss_all+=("$rss")
      fi
    done
    d_wall=$(printf '%s\n' "${d_times[@]}" | median)
    tokens=$(json_field "$work/dedup.json" tokens)
    row() { # tool wall rss marked-file
      local differ=—
      [ "$4" = "$work/dedup.vert" ] || differ=$(differing_lines "$work/dedup.vert" "$4")
      printf '| %s | %s | %s | %.2f s | %.2f | %s MiB | %s | %s | %s |\n' "$name" "$tokens" "$1" "$2" \
        "$(python3 -c "print($tokens / $2 / 1e6)")" "$(( $3 / 1024 ))" "$(removed_paragraphs "$4")" "$differ" \
        "$(python3 -c "print(f'{$2 / $d_wall:.2f}×')")" >> "$table"
    }
    row "dupgram dedup --unit p -n 7 --memory $dedup_mem" "$d_wall" "$(printf '%s\n' "${d_rss_all[@]}" | maximum)" "$work/dedup.vert"
    row "Onion's algorithm in memory (dupgram-onion)" "$(printf '%s\n' "${o_times[@]}" | median)" \
      "$(printf '%s\n' "${o_rss_all[@]}" | maximum)" "$work/port.vert"
    if [ -n "$onion" ]; then
      row "Onion 1.2 (onion -n 7 -t 0.5)" "$(printf '%s\n' "${x_times[@]}" | median)" \
        "$(printf '%s\n' "${x_rss_all[@]}" | maximum)" "$work/onion.vert"
    fi
    echo "dedup $name: dupgram walls ${d_times[*]}; port walls ${o_times[*]}; onion walls ${x_times[*]:-}" >&2
  done

  if [ -n "$onion" ]; then
    {
      echo
      echo "| corpus | smoothing | lines | differ: dupgram vs Onion 1.2 | differ: port with Onion's hash vs Onion 1.2 | differ: port with a 64-bit hash vs dupgram | paragraphs removed by dupgram / Onion 1.2 |"
      echo "|---|---|---:|---:|---:|---:|---:|"
    } >> "$table"
    for vert in "${verts[@]}"; do
      name=$(basename "$vert" .vert)
      for smoothing in on off; do
        d_flag=(); o_flag=()
        [ "$smoothing" = off ] && { d_flag=(--no-smoothing); o_flag=(-m); }
        "$bin/dupgram" dedup "$vert" --unit p -n 7 --threshold 0.5 "${d_flag[@]}" --memory "$dedup_mem" -q -o "$work/dedup.vert"
        "$onion" -n 7 -t 0.5 -q "${o_flag[@]}" "$vert" > "$work/onion.vert"
        "$bin/dupgram-onion" "$vert" -n 7 --threshold 0.5 --keep-case "${d_flag[@]}" --onion-hash "$onion_src" -o "$work/port-onion.vert" > /dev/null
        "$bin/dupgram-onion" "$vert" -n 7 --threshold 0.5 --keep-case "${d_flag[@]}" -o "$work/port.vert" > /dev/null
        printf '| %s | %s | %s | %s | %s | %s | %s / %s |\n' "$name" "$smoothing" "$(wc -l < "$vert")" \
          "$(differing_lines "$work/dedup.vert" "$work/onion.vert")" \
          "$(differing_lines "$work/port-onion.vert" "$work/onion.vert")" \
          "$(differing_lines "$work/port.vert" "$work/dedup.vert")" \
          "$(removed_paragraphs "$work/dedup.vert")" "$(removed_paragraphs "$work/onion.vert")" >> "$table"
      done
    done
  fi
fi

# --- exact: dedup --exact-only against Dolma's dedupe and datatrove's ExactDedup ---
# The same JSONL.gz input for every tool: Reuters-21578 + 20 Newsgroups (from
# ../shared/corpora, recompressed once, untimed) and a generated corpus at the
# largest size asked for (seed 3, 5 % exact copies). Units: whole documents
# (Dolma keyed on $.text; datatrove's ExactDedup on the raw text) and lines
# (Dolma's paragraphs are the text's \n-separated lines). Every tool writes
# what it normally writes: dupgram the marked JSON Lines, Dolma its attribute
# file, datatrove the kept documents. Agreement is counted unit by unit by
# scripts/exact_agreement.py, beside an exact set computation on raw text.
# Then datatrove's SentenceDedup (C4's three-sentence rule) beside
# `dupgram dedup --unit s` on the real corpus: time, memory, text kept.
if section exact; then
  dolma_venv=$work/venv-dolma
  dt_venv=$work/venv-datatrove
  if ! "$dolma_venv/bin/dolma" --help > /dev/null 2>&1; then
    python3 -m venv "$dolma_venv"
    # boto3 pinned: s3fs 2023.6.0 (Dolma's pin) wants botocore 1.29.161; unpinned, pip backtracks for a long time.
    "$dolma_venv/bin/pip" install --quiet 'dolma==1.2.1' 'boto3==1.26.161' || echo "Dolma could not be installed: its rows are skipped" >&2
  fi
  if [ "$with_datatrove" = 1 ] && ! "$dt_venv/bin/python" -c 'import datatrove, orjson, spacy' 2> /dev/null; then
    python3 -m venv "$dt_venv"
    "$dt_venv/bin/pip" install --quiet 'datatrove[processing]==0.10.1' orjson spacy || echo "datatrove could not be installed: its rows are skipped" >&2
  fi
  have_dolma=0; "$dolma_venv/bin/dolma" --help > /dev/null 2>&1 && have_dolma=1
  have_dt=0; [ "$with_datatrove" = 1 ] && "$dt_venv/bin/python" -c 'import datatrove, orjson, spacy' 2> /dev/null && have_dt=1
  exact_corpora=()
  real_src=("$here/../shared/corpora/reuters21578.jsonl.zst" "$here/../shared/corpora/20newsgroups.jsonl.zst")
  if [ -f "${real_src[0]}" ] && [ -f "${real_src[1]}" ]; then
    [ -s "$work/exact-real.jsonl.gz" ] || zstd -dc "${real_src[@]}" | gzip -1 > "$work/exact-real.jsonl.gz"
    exact_corpora+=("$work/exact-real.jsonl.gz")
  else
    echo "skipping the real corpus for exact: ${real_src[*]} not found" >&2
  fi
  size=$(sizes_sorted | tail -n 1)
  if [ ! -s "$work/exact-gen-$size.jsonl.gz" ]; then
    echo "generating $size tokens for exact..." >&2
    "$bin/dupgram-gen" --tokens "$size" --seed 3 --exact 0.05 --format jsonl | gzip -1 > "$work/exact-gen-$size.jsonl.gz"
  fi
  exact_corpora+=("$work/exact-gen-$size.jsonl.gz")
  {
    echo
    echo "| corpus | tokens | unit | tool | wall (median) | peak RSS (max) | units removed | marked by it, not by dupgram | marked by dupgram, not by it | wall vs dupgram |"
    echo "|---|---:|---|---|---:|---:|---:|---:|---:|---:|"
  } >> "$table"
  agreement=$work/exact-agreement.txt
  : > "$agreement"
  for input in "${exact_corpora[@]}"; do
    name=$(basename "$input" .jsonl.gz)
    docs=$(zcat "$input" | grep -c .)
    r=$runs; [ "$r" = 0 ] && r=3
    for unit in doc line; do
      d_times=(); d_rss=(); a_times=(); a_rss=(); o_times=(); o_rss=(); t_times=(); t_rss=()
      dolma_dir=$work/dolma-$name
      for _ in $(seq "$r"); do
        read -r wall rss < <(measure "$bin/dupgram" dedup "$input" --exact-only --unit "$unit" -q -o "$work/exact-$name-$unit.jsonl" --stats-json "$work/exact-$name-$unit.json")
        d_times+=("$wall"); d_rss+=("$rss")
        # The same job writing what Dolma writes: attributes, no documents.
        read -r wall rss < <(measure "$bin/dupgram" dedup "$input" --exact-only --unit "$unit" -q --attributes "$work/exact-$name-$unit.attributes.jsonl")
        a_times+=("$wall"); a_rss+=("$rss")
        if [ "$have_dolma" = 1 ]; then
          rm -rf "$dolma_dir"; mkdir -p "$dolma_dir/documents"; ln -s "$input" "$dolma_dir/documents/$name.jsonl.gz"
          if [ "$unit" = doc ]; then
            what=(--dedupe.documents.attribute_name dups --dedupe.documents.key '$.text')
            count=$docs
          else
            what=(--dedupe.paragraphs.attribute_name dups)
            count=$(zcat "$input" | python3 -c 'import sys, json; print(sum(json.loads(l)["text"].count("\n") + 1 for l in sys.stdin if l.strip()))')
          fi
          read -r wall rss < <(measure "$dolma_venv/bin/dolma" dedupe --documents "$dolma_dir/documents/*.jsonl.gz" \
            --dedupe.name dups "${what[@]}" --dedupe.skip_empty --bloom_filter.file "$dolma_dir/bloom.bin" \
            --no-bloom_filter.read_only --bloom_filter.estimated_doc_count "$count" \
            --bloom_filter.desired_false_positive_rate 1e-6 --processes 2)
          o_times+=("$wall"); o_rss+=("$rss")
        fi
        if [ "$have_dt" = 1 ] && [ "$unit" = doc ]; then
          read -r wall rss < <(measure "$dt_venv/bin/python" "$here/scripts/datatrove_dedup.py" exact "$input" "$work/dt-$name")
          t_times+=("$wall"); t_rss+=("$rss")
        fi
      done
      extra=()
      [ "$have_dolma" = 1 ] && extra+=(--dolma "$dolma_dir/attributes/dups/$name.jsonl.gz")
      [ "$have_dt" = 1 ] && [ "$unit" = doc ] && extra+=(--datatrove "$work/dt-$name/kept/kept.jsonl.gz")
      python3 "$here/scripts/exact_agreement.py" "$input" "$unit" "$work/exact-$name-$unit.jsonl" "${extra[@]}" > "$work/agree.txt"
      agree() { awk -v k="$1" '$1 == k { print $2 }' "$work/agree.txt"; }
      tokens=$(json_field "$work/exact-$name-$unit.json" tokens)
      d_wall=$(printf '%s\n' "${d_times[@]}" | median)
      exact_row() { # tool wall rss removed only-it only-dupgram
        printf '| %s | %s | %s | %s | %.2f s | %s MiB | %s | %s | %s | %s |\n' "$name" "$tokens" "$unit" "$1" "$2" \
          "$(( $3 / 1024 ))" "$4" "$5" "$6" "$(python3 -c "print(f'{$2 / $d_wall:.2f}×')")" >> "$table"
      }
      exact_row "dupgram dedup --exact-only" "$d_wall" "$(printf '%s\n' "${d_rss[@]}" | maximum)" \
        "$(json_field "$work/exact-$name-$unit.json" units_removed)" — —
      exact_row "dupgram dedup --exact-only --attributes (no documents written)" "$(printf '%s\n' "${a_times[@]}" | median)" \
        "$(printf '%s\n' "${a_rss[@]}" | maximum)" "$(json_field "$work/exact-$name-$unit.json" units_removed)" — —
      [ "$have_dolma" = 1 ] && exact_row "Dolma 1.2.1 dedupe (Bloom filter, 2 processes)" \
        "$(printf '%s\n' "${o_times[@]}" | median)" "$(printf '%s\n' "${o_rss[@]}" | maximum)" \
        "$(agree dolma)" "$(agree dolma_not_dupgram)" "$(agree dupgram_not_dolma)"
      [ "$have_dt" = 1 ] && [ "$unit" = doc ] && exact_row "datatrove 0.10.1 ExactDedup (3 stages, 1 task)" \
        "$(printf '%s\n' "${t_times[@]}" | median)" "$(printf '%s\n' "${t_rss[@]}" | maximum)" \
        "$(agree datatrove)" "$(agree datatrove_not_dupgram)" "$(agree dupgram_not_datatrove)"
      echo "$name $unit: raw-text repeats (exact set) $(agree raw_exact), of them not marked by dupgram $(agree raw_exact_not_dupgram) ($(agree raw_exact_not_dupgram_with_alnum) with a letter or digit); Dolma marks $(agree dolma_not_raw_exact) that are not raw repeats and misses $(agree raw_exact_not_dolma); dupgram walls ${d_times[*]}; with --attributes ${a_times[*]}; Dolma ${o_times[*]:-}; datatrove ${t_times[*]:-}" >> "$agreement"
    done
  done
  # SentenceDedup (C4: spans of 3 sentences seen before) beside dupgram's sentence dedup, one run each.
  if [ "$have_dt" = 1 ] && [ -s "$work/exact-real.jsonl.gz" ]; then
    input=$work/exact-real.jsonl.gz
    kept_text() { python3 -c 'import sys, json, gzip
f = gzip.open(sys.argv[1], "rt") if sys.argv[1].endswith(".gz") else open(sys.argv[1])
docs = chars = 0
for l in f:
    if l.strip():
        docs += 1; chars += len(json.loads(l)["text"])
print(docs, chars)' "$1"; }
    read -r in_docs in_chars < <(kept_text "$input")
    {
      echo
      echo "| corpus | tool | wall | peak RSS | documents kept | characters kept |"
      echo "|---|---|---:|---:|---:|---:|"
      echo "| exact-real (input) | — | — | — | $in_docs | $in_chars |"
    } >> "$table"
    read -r wall rss < <(measure "$bin/dupgram" dedup "$input" --unit s -n 7 --threshold 0.5 --strip -q -o "$work/sent-dupgram.jsonl")
    read -r k_docs k_chars < <(kept_text "$work/sent-dupgram.jsonl")
    echo "| exact-real | dupgram dedup --unit s -n 7 --threshold 0.5 --strip | $wall s | $(( rss / 1024 )) MiB | $k_docs | $k_chars |" >> "$table"
    read -r wall rss < <(measure "$bin/dupgram" dedup "$input" --exact-only --unit s --strip -q -o "$work/sent-exact.jsonl")
    read -r k_docs k_chars < <(kept_text "$work/sent-exact.jsonl")
    echo "| exact-real | dupgram dedup --exact-only --unit s --strip | $wall s | $(( rss / 1024 )) MiB | $k_docs | $k_chars |" >> "$table"
    read -r wall rss < <(measure "$dt_venv/bin/python" "$here/scripts/datatrove_dedup.py" sentence "$input" "$work/dt-sent")
    read -r k_docs k_chars < <(kept_text "$work/dt-sent/kept/kept.jsonl.gz")
    echo "| exact-real | datatrove 0.10.1 SentenceDedup (3 sentences, min 50 words, 3 stages, 1 task) | $wall s | $(( rss / 1024 )) MiB | $k_docs | $k_chars |" >> "$table"
  fi
  cat "$agreement" >&2
fi

# --- scale: a growing vocabulary, 10M to 1B tokens, default budgets ----------
# Generated text whose vocabulary grows like real text's (Heaps' law:
# --open-vocabulary 0.08 gives about 139k distinct words at 10M tokens, 628k
# at 100M, several million at 1B), zstd-compressed. Each job runs with its
# default --memory; its temporary directory is watched for its peak size.
if [ "$only" = scale ]; then
  {
    echo
    echo "| corpus | tokens | job | build | wall | M tokens/s | peak RSS | peak temp disk | spilled | text bytes | sieve | stages (s) |"
    echo "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---|---|"
  } >> "$table"
  builds=("$bin/dupgram"); [ -n "$before" ] && builds+=("$before")
  scale_list=${plain_sizes:-10M,100M}${scale_sizes:+,$scale_sizes}
  for size in ${scale_list//,/ }; do
    tokens=$(count "${size%[Bb]}$(case $size in *[Bb]) echo G ;; esac)")
    base=$work/open-$open_vocabulary-$size
    if [ ! -s "$base.jsonl.zst" ]; then
      echo "generating $size tokens with a growing vocabulary..." >&2
      "$bin/dupgram-gen" --tokens "$tokens" --seed 1 --open-vocabulary "$open_vocabulary" --format jsonl | zstd -q -T2 -f -o "$base.jsonl.zst"
    fi
    text_bytes=$(zstd -dc "$base.jsonl.zst" | wc -c)
    for job in ${scale_jobs//,/ }; do
      case $job in
        ngrams) args=(ngrams "$base.jsonl.zst" -n "$n") ;;
        pairs) args=(pairs "$base.jsonl.zst" -n 5) ;;
        dedup) args=(dedup "$base.jsonl.zst" --unit doc -n 7 --threshold 0.5) ;;
        *) echo "unknown job $job (--jobs takes ngrams, pairs, dedup)" >&2; exit 2 ;;
      esac
      for b in "${!builds[@]}"; do
        tmp=$(mktemp -d "$work/scale-tmp.XXXX")
        label=this; [ "$b" = 1 ] && label=before
        /usr/bin/time -f "%e %M" -o "$work/time.txt" "${builds[$b]}" "${args[@]}" -q --tmp-dir "$tmp" \
          -o "$work/scale-$job-$b.out" --stats-json "$work/scale-$job.json" 2> "$work/stderr.log" &
        pid=$!
        peak=$(watch_dir "$pid" "$tmp")
        wait "$pid" || { echo "failed: ${builds[$b]} ${args[*]}" >&2; cat "$work/stderr.log" >&2; exit 1; }
        rm -rf "$tmp"
        read -r wall rss < <(tail -n 1 "$work/time.txt")
        python3 - "$work/scale-$job.json" "$size" "$job" "$wall" "$rss" "$peak" "$text_bytes" "$tokens" "$label" >> "$table" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
size, job, wall, rss, peak, text, tokens = sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
label = sys.argv[9]
tokens = s.get("tokens", tokens)
spilled = s.get("bytes_spilled")
mib = lambda b: f"{b / 2**20:,.0f} MiB"
sieve = s.get("sieve") or s.get("first_pass", {}).get("sieve") or {}
if not sieve:
    said = "—"
elif not sieve.get("used"):
    said = f"off: {sieve.get('dropped') or 'not used'}"
else:
    parts = sieve.get("parts") or 1
    # frozen_bytes: what the count keeps once the sieve is filled (builds before the staged sieve lack it).
    filled = f" ({mib(sieve['frozen_bytes'])} once filled)" if sieve.get("frozen_bytes") else ""
    said = f"{mib(sieve['bytes'])}{filled}, {parts} part{'s' if parts > 1 else ''}, {100 * sieve['saturation']:.2f} % of unseen pass"
# Where the time went, from the job's own clock: what grows faster than the
# tokens between two sizes is what to look at first.
first = s.get("first_pass", {}).get("seconds", {})
own = s.get("seconds", {})
if job == "ngrams":
    stages = [("lexicon", own.get("lexicon")), ("fill", own.get("sieve")), ("count", own.get("count")), ("merge", own.get("merge"))]
else:
    # The index pass's seconds hold the sieve's fills for its parts: "index" is the walks alone.
    fill = first.get("sieve") or 0
    stages = [("lexicon", first.get("lexicon")), ("fill", fill), ("index", (s.get("index_seconds") or 0) - fill),
              ("index merge", s.get("merge_seconds"))]
    later = ["candidates", "scoring", "output"] if job == "pairs" else ["decisions"]
    stages += [(name, own.get(name)) for name in later]
stages = " · ".join(f"{name} {v:.1f}" if v >= 1 else f"{name} {v:.2f}" for name, v in stages if v)
print(f"| open-{size} | {tokens:,} | {job} | {label} | {wall:.1f} s | {tokens / wall / 1e6:.2f} | {rss // 1024} MiB | {mib(peak)} "
      f"| {mib(spilled) if spilled is not None else '—'} | {mib(text)} | {said} | {stages} |")
PY
      done
      if [ -n "$before" ] && ! cmp -s "$work/scale-$job-0.out" "$work/scale-$job-1.out"; then
        echo "open-$size $job: this build's output differs from --before's" >&2
        exit 1
      fi
    done
  done
fi

echo
cat "$table"
