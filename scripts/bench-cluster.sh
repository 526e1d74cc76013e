#!/usr/bin/env bash
# dupgram on one machine against the same job through Slurm, and a nightly
# update against a full recount, side by side in one run. Prints Markdown
# tables (and saves them under $DUPGRAM_BENCH_DIR/cluster.md).
#
#   scripts/bench-cluster.sh                 # 100M generated tokens, n = 10, --memory 1G
#   scripts/bench-cluster.sh --size 10M      # smaller
#
# Brings up a throw-away single-node Slurm cluster (scripts/lib/slurm.sh;
# needs root), so "through Slurm" here measures the stages' overhead (more
# passes, files between tasks, scheduling) on the same 2 cores, not a speed-up
# from more nodes. Every staged output is checked against the one-machine one.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
size=100M
n=10
memory=1G
while [ $# -gt 0 ]; do
  case "$1" in
    --size) size=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

work=${DUPGRAM_BENCH_DIR:-$here/target/bench}
mkdir -p "$work"
cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p dupgram -p dupgram-testkit
bin=$here/target/release
corpus=$work/gen-$size.jsonl
if [ ! -s "$corpus" ]; then
  echo "generating $size tokens (plain JSON Lines, so shards can be cut)..." >&2
  "$bin/dupgram-gen" --tokens "$size" --seed 1 --format jsonl > "$corpus"
fi

# shellcheck source=lib/slurm.sh
. "$here/scripts/lib/slurm.sh"
run=$(mktemp -d "$work/cluster.XXXX")
cleanup() {
  local status=$?
  slurm_down
  rm -rf "$run"
  exit "$status"
}
trap cleanup EXIT INT TERM
slurm_up "$run"

# timed COMMAND...: runs it; sets wall and cpu (seconds, user + system of it and its children).
timed() {
  /usr/bin/time -f "%e %U %S" -o "$run/time.txt" "$@" 2> "$run/stderr.log" > /dev/null || {
    echo "failed: $*" >&2; cat "$run/stderr.log" >&2; exit 1; }
  read -r wall user sys < "$run/time.txt"
  cpu=$(python3 -c "print(round($user + $sys, 2))")
}

table=$work/cluster.md
tokens=$(wc -c < "$corpus")
{
  echo "| job | shards × buckets | wall | CPU | wall vs one process | output |"
  echo "|---|---:|---:|---:|---:|---|"
} > "$table"

timed "$bin/dupgram" ngrams "$corpus" -n "$n" --memory "$memory" -o "$run/one.tsv" --stats-json "$run/one.json"
one_wall=$wall
tokens=$(python3 -c "import json; print(json.load(open('$run/one.json'))['tokens'])")
echo "| dupgram ngrams, one process | — | $wall s | $cpu s | 1.00× | $(wc -l < "$run/one.tsv") duplicate $n-grams |" >> "$table"

for shards in 2 4; do
  # The tasks run under slurmd, not as children of this shell: their CPU
  # time comes from their own records (the summary's last line).
  timed "$bin/dupgram" slurm ngrams "$corpus" -n "$n" --memory "$memory" -o "$run/staged-$shards.tsv" \
    --workdir "$run/job-$shards" --shards "$shards" --buckets "$shards" --wait
  tasks_cpu=$(sed -n 's/.*tasks *[0-9]*, \([0-9.]*\) s of CPU in all.*/\1/p' "$run/stderr.log")
  cmp -s "$run/one.tsv" "$run/staged-$shards.tsv" && same="byte-identical" || { echo "staged output differs" >&2; exit 1; }
  echo "| dupgram slurm ngrams, local Slurm | $shards × $shards | $wall s | $tasks_cpu s | $(python3 -c "print(f'{$wall / $one_wall:.2f}×')") | $same |" >> "$table"
done

# --- a nightly update: 1 % new documents -------------------------------------
lines=$(wc -l < "$corpus")
base_lines=$(( lines * 99 / 100 ))
head -n "$base_lines" "$corpus" > "$run/base.jsonl"
tail -n +"$(( base_lines + 1 ))" "$corpus" > "$run/day.jsonl"
{
  echo
  echo "| job | new data | wall | CPU | peak RSS | wall vs full recount | output |"
  echo "|---|---:|---:|---:|---:|---:|---|"
} >> "$table"
timed "$bin/dupgram" slurm ngrams "$run/base.jsonl" -n "$n" --memory "$memory" -q -o "$run/base.tsv" \
  --workdir "$run/state-job" --shards 1 --buckets 4 --keep-state --local
base_wall=$wall base_cpu=$cpu
/usr/bin/time -f "%e %U %S %M" -o "$run/time.txt" "$bin/dupgram" ngrams "$run/base.jsonl" "$run/day.jsonl" \
  -n "$n" --memory "$memory" -q -o "$run/full.tsv" 2> /dev/null
read -r full_wall user sys full_rss < "$run/time.txt"
full_cpu=$(python3 -c "print(round($user + $sys, 2))")
/usr/bin/time -f "%e %U %S %M" -o "$run/time.txt" "$bin/dupgram" update --workdir "$run/state-job" "$run/day.jsonl" \
  -q -o "$run/new.tsv" --all "$run/all.tsv" --stats-json "$run/update.json" 2> /dev/null
read -r up_wall user sys up_rss < "$run/time.txt"
up_cpu=$(python3 -c "print(round($user + $sys, 2))")
cmp -s <(sort "$run/full.tsv") <(sort "$run/all.tsv") || { echo "update differs from the full recount" >&2; exit 1; }
state=$(python3 -c "import json; print(round(json.load(open('$run/update.json'))['state_bytes'] / 2**20))")
day_mb=$(python3 -c "print(f'{$(wc -c < "$run/day.jsonl") / 2**20:.1f}')")
{
  echo "| dupgram ngrams base + day, full recount | $day_mb MiB (1 %) | $full_wall s | $full_cpu s | $(( full_rss / 1024 )) MiB | 1.00× | $(wc -l < "$run/full.tsv") duplicates |"
  echo "| dupgram update with the day | $day_mb MiB (1 %) | $up_wall s | $up_cpu s | $(( up_rss / 1024 )) MiB | $(python3 -c "print(f'{$up_wall / $full_wall:.2f}×')") | $(wc -l < "$run/new.tsv") newly duplicated; the same duplicates (sorted), state $state MiB |"
  echo "| (once) the base with --keep-state | — | $base_wall s | $base_cpu s | — | — | state kept for updates |"
} >> "$table"

echo "$size tokens ($tokens), n = $n, --memory $memory" >&2
cat "$table"
