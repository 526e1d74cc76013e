#!/usr/bin/env bash
# How time, memory and temporary disk grow with the tokens, the vocabulary
# and the budget: generated web-like text (a vocabulary that keeps growing,
# as a crawl's does) piped on standard input, so the text never sits on
# disk, through each job at each size and budget. Prints a Markdown table
# (saved under $DUPGRAM_BENCH_DIR/scale.md) and checks that every budget
# gives byte for byte the same output.
#
#   scripts/bench-scale.sh                                 # 10M and 100M tokens, ngrams, --memory 1G: minutes
#   scripts/bench-scale.sh --sizes 1B,10B --output-stdout   # the 10B run: 80 minutes, 35 GB of temporary
#                                                      # disk; its 33 GB of .zst output is hashed, not kept
#   scripts/bench-scale.sh --sizes 1B --memory 1G,256M     # one size, two budgets (outputs compared)
#   scripts/bench-scale.sh --sizes 1B,3B --jobs dedup-doc,dedup-span
#   scripts/bench-scale.sh --sizes 1B --jobs pairs
#   scripts/bench-scale.sh --copies-of comments.txt --sizes 1,2   # a real text, then twice with new word forms
#
# Options:
#   --sizes LIST            token counts (k, M, B suffixes), smallest first; the per-token
#                           time of every row is given against the first size's (same job, budget)
#   --memory LIST           budgets (default 1G)
#   --jobs LIST             ngrams, dedup-doc, dedup-span, pairs (default ngrams)
#   --open-vocabulary X     dupgram-gen's share of fresh words from the open tail (default 0.6:
#                           about 3M distinct words at 100M tokens, 18M at 1B, 42M at 3B)
#   --copies-of FILE        read copies of FILE (one document a line) instead of generated text,
#                           each copy's words suffixed with its number (`word_2`), so every copy
#                           brings a vocabulary of its own, read with --tokens raw; --sizes are
#                           then numbers of copies
#   --output-zst            write each output as .zst (the default writes plain files)
#   --output-stdout         write each output to standard output, through `zstd -3`, and keep only
#                           its SHA-256 (for sizes whose output does not fit beside the run)
#   --tmp-share X           ngrams' --tmp-share (temporary disk as a share of the text; default 0.5)
#   --keep                  keep the outputs
#   --bin DIR               run the dupgram and dupgram-gen in DIR instead of building them
#                           (another commit's build, to compare in one sitting)
# Peak temporary disk is sampled every 2 s: the job's --tmp-dir, and with the output beside it.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
sizes=10M,100M
memories=1G
jobs=ngrams
open_vocabulary=0.6
ext=
keep=0
copies_of=
to_stdout=0
tmp_share=
bin_dir=
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes=$2; shift 2 ;;
    --memory) memories=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --open-vocabulary) open_vocabulary=$2; shift 2 ;;
    --copies-of) copies_of=$2; shift 2 ;;
    --output-zst) ext=.zst; shift ;;
    --output-stdout) ext=.zst; to_stdout=1; shift ;;
    --keep) keep=1; shift ;;
    --bin) bin_dir=$2; shift 2 ;;
    --tmp-share) tmp_share=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

work=${DUPGRAM_BENCH_DIR:-$here/target/bench}
mkdir -p "$work"
if [ -n "$bin_dir" ]; then
  bin=$(cd "$bin_dir" && pwd)
else
  cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p dupgram -p dupgram-testkit
  bin=$here/target/release
fi
table=$work/scale.md

# With --copies-of, a row's copies are written to a file first (sed is slower than the
# job, so piping it would time sed), compressed (33 copies of the Reddit comments are
# 25.6 GB of text, 8.7 GB as zstd -1, and decompressing is far faster than the job), which
# the row pipes through zstd -d and removes.
copies=$work/copies.txt.zst
unit=tokens
if [ -n "$copies_of" ]; then unit="copies of $copies_of"; fi
make_copies() {
  for i in $(seq 1 "$1"); do LC_ALL=C sed "s/[^ ][^ ]*/&_$i/g" "$copies_of"; done | zstd -1 -T0 -q -c > "$copies"
}

# The text of a row of `size`: generated web-like text of that many tokens, or the copies.
corpus() {
  if [ -n "$copies_of" ]; then
    zstd -dc "$copies"
  else
    "$bin/dupgram-gen" --tokens "$(count "$1")" --seed 1 --open-vocabulary "$open_vocabulary" --format text 2> /dev/null
  fi
}

# 10M → 10000000; 1B → 1000000000.
count() { awk -v s="$1" 'BEGIN { m = 1; u = toupper(substr(s, length(s)))
  if (u == "K") m = 1e3; else if (u == "M") m = 1e6; else if (u == "B" || u == "G") m = 1e9
  if (m > 1) s = substr(s, 1, length(s) - 1); printf "%.0f\n", s * m }'; }

# Samples the bytes under a directory (and of a file) until the process ends; prints the peaks.
# The directory's are the blocks its files hold (a run whose read part was given back to the
# disk counts only what it still holds); the output's, its length.
watch_disk() {
  local pid=$1 dir=$2 out=$3 peak=0 peak_all=0 s o
  while kill -0 "$pid" 2> /dev/null; do
    s=$(du -s -B1 "$dir" 2> /dev/null | cut -f1); s=${s:-0}
    # The output is written under a hidden temporary name beside it, then renamed.
    o=$( (du -cb "$out" "$(dirname "$out")"/."$(basename "$out")".*.tmp 2> /dev/null || true) | tail -n 1 | cut -f1)
    o=${o:-0}
    [ "$s" -gt "$peak" ] && peak=$s
    [ $((s + o)) -gt "$peak_all" ] && peak_all=$((s + o))
    sleep 2
  done
  echo "$peak $peak_all"
}

{
  echo
  echo "| job | tokens | --memory | wall | M tokens/s | time per token vs first size | peak RSS | peak temp disk (× text) | with output | distinct words (past the table) | parts | stages (s, from --stats-json) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
} > "$table"

for job in ${jobs//,/ }; do
  case $job in
    ngrams) args=(ngrams - -n 10 ${tmp_share:+--tmp-share "$tmp_share"}) ;;
    dedup-doc) args=(dedup - --unit doc -n 7 --threshold 0.5 --strip) ;;
    dedup-span) args=(dedup - --unit span --min-span 50 --strip) ;;
    pairs) args=(pairs - -n 5) ;;
    *) echo "unknown job $job (ngrams, dedup-doc, dedup-span, pairs)" >&2; exit 2 ;;
  esac
  if [ -n "$copies_of" ]; then args+=(--tokens raw); fi
  for memory in ${memories//,/ }; do
    first_per_token=
    for size in ${sizes//,/ }; do
      tmp=$work/scale-tmp
      rm -rf "$tmp"; mkdir -p "$tmp"
      out=$work/scale-$job-$size-$memory.out$ext
      stats=$work/scale-$job-$size-$memory.json
      echo "$job, $size $unit, --memory $memory ..." >&2
      rm -f "$out.sha"
      # With --output-stdout the output goes by on standard output through `zstd -3` (so its
      # hash compares only with other --output-stdout runs) and only its SHA-256 stays.
      target=$out
      [ "$to_stdout" = 1 ] && target=-
      if [ -n "$copies_of" ]; then make_copies "$size"; fi
      (
        corpus "$size" \
          | /usr/bin/time -f "%e %M" -o "$work/time.txt" "$bin/dupgram" "${args[@]}" -q --memory "$memory" \
              --tmp-dir "$tmp" -o "$target" --stats-json "$stats" 2> "$work/stderr.log" \
          | if [ "$to_stdout" = 1 ]; then zstd -3 -q -c | sha256sum | cut -d' ' -f1 > "$out.sha"; else cat; fi
      ) &
      pid=$!
      read -r peak peak_all < <(watch_disk "$pid" "$tmp" "$out")
      wait "$pid" || { echo "failed: dupgram ${args[*]} --memory $memory" >&2; cat "$work/stderr.log" >&2; exit 1; }
      read -r wall rss < <(tail -n 1 "$work/time.txt")
      row=$(python3 - "$stats" "$job" "$size" "$memory" "$wall" "$rss" "$peak" "$peak_all" "${first_per_token:-0}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
job, size, memory = sys.argv[2], sys.argv[3], sys.argv[4]
wall, rss, peak, peak_all, first = float(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8]), float(sys.argv[9])
first_pass = s.get("first_pass") or s
tokens = first_pass.get("tokens") or s.get("tokens") or 0
text = first_pass.get("text_bytes") or 0
per_token = wall / max(tokens, 1)
ratio = f"{per_token / first:.2f}×" if first else "1.00×"
gib = lambda b: f"{b / 2**30:.2f} GiB" if b >= 2**30 else f"{b / 2**20:.0f} MiB"
over = f" ({peak / text:.2f}×)" if text else ""
sieve = first_pass.get("sieve") or {}
parts = sieve.get("parts") or 1
own, fp = s.get("seconds", {}), first_pass.get("seconds", {})
if job == "ngrams":
    stages = [("lexicon", own.get("lexicon")), ("renumber", own.get("renumber")), ("fill", own.get("sieve")),
              ("count", own.get("count")), ("merge", own.get("merge"))]
elif job == "dedup-span":
    stages = [(k, v) for k, v in own.items() if k != "total"]
else:
    fill = fp.get("sieve") or 0
    stages = [("lexicon", fp.get("lexicon")), ("renumber", fp.get("renumber")), ("fill", fill),
              ("index", (s.get("index_seconds") or 0) - fill), ("index merge", s.get("merge_seconds"))]
    later = ["candidates", "scoring", "output"] if job == "pairs" else ["decisions"]
    stages += [(name, own.get(name)) for name in later]
stages = " · ".join(f"{n} {v:.1f}" for n, v in stages if isinstance(v, (int, float)) and v >= 0.05)
words = first_pass.get("vocabulary") or 0
past = first_pass.get("overflow_words") or 0
print(f"{per_token}\t| {job} | {tokens:,} | {memory} | {wall:.1f} s | {tokens / wall / 1e6:.2f} | {ratio} | {rss // 1024} MiB "
      f"| {gib(peak)}{over} | {gib(peak_all)} | {words:,} ({past:,}) | {parts} | {stages} |")
PY
)
      per_token=${row%%$'\t'*}
      [ -z "$first_per_token" ] && first_per_token=$per_token
      echo "${row#*$'\t'}" >> "$table"
      [ -s "$out.sha" ] || sha256sum "$out" | cut -d' ' -f1 > "$out.sha"
    done
  done
  # Every budget must give the same output, size by size.
  for size in ${sizes//,/ }; do
    hashes=$(cat "$work"/scale-"$job"-"$size"-*.out$ext.sha | sort -u | wc -l)
    if [ "$hashes" -ne 1 ]; then
      echo "$job at $size: the budgets' outputs differ" >&2
      exit 1
    fi
  done
  [ "$keep" = 1 ] || rm -f "$work"/scale-"$job"-*.out$ext
done
rm -rf "$work/scale-tmp" "$copies"
cat "$table"
