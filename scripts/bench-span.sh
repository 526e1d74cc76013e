#!/usr/bin/env bash
# `dupgram dedup --unit span` beside deduplicate-text-datasets (Lee et al.
# 2022), on the real corpora (Reuters-21578 + 20 Newsgroups) and a generated
# one. Prints a Markdown table: time, peak memory, peak disk, share of text
# removed, and how far the removed regions agree.
#
#   scripts/bench-span.sh --dtd /tmp/peers/dtd             # K = 50 words; 100, 200, 400 bytes
#   scripts/bench-span.sh --dtd DIR --k 50 --bytes 100,200,400 --gen 10M --memory 1G
#   scripts/bench-span.sh --dtd DIR --no-build   # use target/release/dupgram as it is
#
# --dtd DIR: a clone of github.com/google-research/deduplicate-text-datasets
# built there with `cargo build --release` (its target/release/dedup_dataset
# is run directly: make, self-similar, collect; no Python needed). The real
# corpora come from ../shared/corpora (or $DUPGRAM_CORPORA); the generated
# corpus from scripts/gen-corpus.sh. Work files go under $DUPGRAM_BENCH_DIR
# (default /tmp/dupgram-bench-span).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dtd=
k=50
bytes=100,200,400
gen=10M
memory=1G
build=1
corpora=${DUPGRAM_CORPORA:-$here/../shared/corpora}
while [ $# -gt 0 ]; do
  case "$1" in
    --dtd) dtd=$2; shift 2 ;;
    --k) k=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --gen) gen=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    --corpora) corpora=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done
[ -n "$dtd" ] && [ -x "$dtd/target/release/dedup_dataset" ] || {
  echo "bench-span.sh: --dtd DIR must hold a release build of deduplicate-text-datasets (target/release/dedup_dataset)" >&2
  exit 2
}
work=${DUPGRAM_BENCH_DIR:-/tmp/dupgram-bench-span}
mkdir -p "$work"
[ "$build" = 0 ] || cargo build --release --quiet --manifest-path "$here/Cargo.toml" --bin dupgram
dupgram=$here/target/release/dupgram
dedup_dataset=$dtd/target/release/dedup_dataset

# Runs a command under /usr/bin/time (its standard output to a log) while
# sampling the bytes under DIR; prints "seconds peak_rss_bytes peak_disk_bytes".
measure() {
  local dir=$1; shift
  local peak_file; peak_file=$(mktemp)
  echo 0 > "$peak_file"
  ( peak=0; while :; do
      b=$(du -sb "$dir" 2>/dev/null | cut -f1); b=${b:-0}
      [ "$b" -gt "$peak" ] && { peak=$b; echo "$peak" > "$peak_file"; }
      sleep 0.2
    done ) &
  local sampler=$!
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f '%M' -o "$work/time.out" "$@" > "$work/stdout.log"
  end=$(date +%s.%N)
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
  local b; b=$(du -sb "$dir" | cut -f1)
  local peak; peak=$(cat "$peak_file"); rm -f "$peak_file"
  [ "$b" -gt "$peak" ] && peak=$b
  echo "$(printf '%.2f' "$(echo "$end - $start" | bc)") $(( $(tail -1 "$work/time.out") * 1024 )) $peak"
}

mib() { echo "$(( $1 / 1048576 )) MiB"; }

table="$work/results.md"
{
  echo "| corpus | tool | setting | time | peak memory | peak disk | text removed | overlap |"
  echo "|---|---|---|---|---|---|---|---|"
} > "$table"

run_corpus() {
  local name=$1 jsonl=$2
  local dir="$work/$name"
  rm -rf "$dir"; mkdir -p "$dir/dupgram-tmp" "$dir/dtd"
  # dupgram: the corpus and its temporary directory count as its disk.
  local m; m=$(measure "$dir/dupgram-tmp" "$dupgram" dedup "$jsonl" --format jsonl --unit span --min-span "$k" \
    --memory "$memory" --tmp-dir "$dir/dupgram-tmp" -q -o "$dir/dupgram.jsonl" --stats-json "$dir/dupgram-stats.json")
  read -r secs rss disk <<< "$m"
  local size; size=$(stat -c %s "$jsonl")
  local removed
  removed=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print('%.2f %% of tokens' % (100*s['tokens_removed']/max(1,s['tokens'])))" "$dir/dupgram-stats.json")
  echo "| $name | dupgram dedup --unit span | K = $k words, --memory $memory | ${secs} s | $(mib "$rss") | $(mib $((disk + size))) (input $(mib "$size") + temp) | $removed | — |" >> "$table"
  # deduplicate-text-datasets: its input file, suffix array and caches.
  python3 "$here/scripts/span_agreement.py" prepare "$jsonl" "$dir/dtd/data.bin"
  local m1; m1=$(cd "$dir/dtd" && measure "$dir/dtd" "$dedup_dataset" make --data-file data.bin)
  read -r s1 r1 d1 <<< "$m1"
  for b in ${bytes//,/ }; do
    rm -rf "$dir/dtd/cache"; mkdir -p "$dir/dtd/cache"
    local m2 m3
    m2=$(cd "$dir/dtd" && measure "$dir/dtd" "$dedup_dataset" self-similar --data-file data.bin \
      --length-threshold "$b" --cache-dir cache --num-threads 2)
    read -r s2 r2 d2 <<< "$m2"
    m3=$(cd "$dir/dtd" && measure "$dir/dtd" sh -c "'$dedup_dataset' collect --data-file data.bin --cache-dir cache --length-threshold $b > ranges-$b.txt")
    read -r s3 r3 d3 <<< "$m3"
    local agree
    agree=$(python3 "$here/scripts/span_agreement.py" compare "$jsonl" "$dir/dupgram.jsonl" "$dir/dtd/ranges-$b.txt")
    echo "$agree" > "$dir/agreement-$b.json"
    local peak_rss=$r1; [ "$r2" -gt "$peak_rss" ] && peak_rss=$r2; [ "$r3" -gt "$peak_rss" ] && peak_rss=$r3
    local peak_disk=$d1; [ "$d2" -gt "$peak_disk" ] && peak_disk=$d2; [ "$d3" -gt "$peak_disk" ] && peak_disk=$d3
    python3 - "$agree" "$name" "$b" "$(echo "$s1 + $s2 + $s3" | bc)" "$(mib "$peak_rss")" "$(mib "$peak_disk")" >> "$table" <<'EOF'
import json, sys
a = json.loads(sys.argv[1]); name, b, secs, rss, disk = sys.argv[2:]
print(f"| {name} | deduplicate-text-datasets (make, self-similar, collect) | {b} bytes | {float(secs):.2f} s | {rss} | {disk} "
      f"| {100*a['dtd_share']:.2f} % of bytes (dupgram: {100*a['dupgram_share']:.2f} %) "
      f"| {100*a['dupgram_in_dtd']:.1f} % of dupgram's removed bytes in its; {100*a['dtd_in_dupgram']:.1f} % of its in dupgram's |")
EOF
  done
}

real="$work/real.jsonl"
zstdcat "$corpora/reuters21578.jsonl.zst" "$corpora/20newsgroups.jsonl.zst" > "$real"
run_corpus reuters+20ng "$real"
generated="$work/gen-$gen.jsonl"
[ -s "$generated" ] || "$here/scripts/gen-corpus.sh" "$gen" "$generated" 1
run_corpus "gen-$gen" "$generated"
cat "$table"
