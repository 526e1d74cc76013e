#!/usr/bin/env bash
# dupgram ngrams and dupgram pairs on one machine against the same jobs through
# Slurm, and a nightly update against a full recount, side by side in one run.
# Prints Markdown tables (and saves them under $DUPGRAM_BENCH_DIR/cluster.md).
#
#   scripts/bench-cluster.sh                 # 100M generated tokens, ngrams n = 10 (pairs: n = 5), --memory 1G
#   scripts/bench-cluster.sh --size 10M      # smaller
#   scripts/bench-cluster.sh --only pairs    # one of ngrams, pairs, update
#   scripts/bench-cluster.sh --size 1B --only ngrams --shards 8 --open-vocabulary 0.6
#                                            # web-like text (a growing vocabulary), 8 × 8 tasks
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
only=
shard_counts="2 4"
open_vocabulary=0
while [ $# -gt 0 ]; do
  case "$1" in
    --size) size=$2; shift 2 ;;
    --shards) shard_counts=$2; shift 2 ;;
    --open-vocabulary) open_vocabulary=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    --only)
      case "$2" in ngrams|pairs|update) only=$2 ;; *) echo "--only takes ngrams, pairs or update" >&2; exit 2 ;; esac
      shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

work=${DUPGRAM_BENCH_DIR:-$here/target/bench}
mkdir -p "$work"
cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p dupgram -p dupgram-testkit
bin=$here/target/release
corpus=$work/gen-$size-open$open_vocabulary.jsonl
if [ ! -s "$corpus" ]; then
  echo "generating $size tokens (plain JSON Lines, so shards can be cut)..." >&2
  "$bin/dupgram-gen" --tokens "$size" --seed 1 --open-vocabulary "$open_vocabulary" --format jsonl > "$corpus"
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
# The update runs its base job with --local: it alone needs no Slurm.
[ "$only" = update ] || slurm_up "$run"

# want SECTION: whether this run measures it (--only).
want() { [ -z "$only" ] || [ "$only" = "$1" ]; }

# timed COMMAND...: runs it; sets wall and cpu (seconds, user + system of it and its children).
timed() {
  /usr/bin/time -f "%e %U %S" -o "$run/time.txt" "$@" 2> "$run/stderr.log" > /dev/null || {
    echo "failed: $*" >&2; cat "$run/stderr.log" >&2; exit 1; }
  read -r wall user sys < "$run/time.txt"
  cpu=$(python3 -c "print(round($user + $sys, 2))")
}

# tasks_cpu: the CPU time of a staged job's tasks. They run under slurmd, not
# as children of this shell, so it comes from their own records: the last line
# of the --wait summary ("tasks N, X s of CPU in all").
tasks_cpu() {
  local secs
  secs=$(sed -n 's/.*tasks *[0-9]*, \([0-9.]*\) s of CPU in all.*/\1/p' "$run/stderr.log")
  [ -n "$secs" ] || { echo "no task CPU line in the summary:" >&2; cat "$run/stderr.log" >&2; exit 1; }
  echo "$secs"
}

# same ONE STAGED WHAT: fails loudly unless the staged output is byte-identical
# to the one-process one (compared decompressed when they are .zst); both are
# kept under $work/differs for a look.
same() {
  if [ "${1%.zst}" != "$1" ]; then
    [ "$(zstd -dcq "$1" | sha256sum)" = "$(zstd -dcq "$2" | sha256sum)" ] && return 0
  else
    cmp "$1" "$2" >&2 && return 0
  fi
  mkdir -p "$work/differs"
  cp "$1" "$2" "$work/differs/"
  echo "FAILED: $3 differs from the one-process output (both kept in $work/differs)" >&2
  exit 1
}

ratio() { python3 -c "print(f'{$1 / $2:.2f}×')"; }

# largest_task WORKDIR: the largest peak RSS of a staged job's tasks (MiB), from their records.
largest_task() {
  python3 - "$1" <<'PY'
import glob, json, sys
peaks = [json.loads(open(f).read().split("\n", 1)[1])["stats"]["peak_rss"] for f in glob.glob(sys.argv[1] + "/tasks/*.json")]
print(f"{max(peaks) / 2**20:,.0f} MiB")
PY
}

table=$work/cluster.md
: > "$table"
# header LINE...: starts another table in $table, after a blank line.
header() {
  if [ -s "$table" ]; then echo >> "$table"; fi
  printf '%s\n' "$@" >> "$table"
}
tokens=

# --- n-grams: one process against the stages ---------------------------------
if want ngrams; then
  header "| job | shards × buckets | wall | CPU | wall vs one process | peak RSS (largest task) | output |" "|---|---:|---:|---:|---:|---:|---|"
  # Compressed: at a billion tokens the duplicates of web-like text are about 9 GB of TSV.
  timed "$bin/dupgram" ngrams "$corpus" -n "$n" --memory "$memory" -o "$run/one.tsv.zst" --stats-json "$run/one.json"
  one_wall=$wall
  tokens=$(python3 -c "import json; print(json.load(open('$run/one.json'))['tokens'])")
  one_rss=$(python3 -c "import json; print(f\"{json.load(open('$run/one.json'))['peak_rss'] / 2**20:,.0f} MiB\")")
  found=$(python3 -c "import json; print(json.load(open('$run/one.json'))['output_ngrams'])")
  echo "| dupgram ngrams, one process | — | $wall s | $cpu s | 1.00× | $one_rss | $found duplicate $n-grams |" >> "$table"

  for shards in $shard_counts; do
    timed "$bin/dupgram" slurm ngrams "$corpus" -n "$n" --memory "$memory" -o "$run/staged-$shards.tsv.zst" \
      --workdir "$run/job-$shards" --shards "$shards" --buckets "$shards" --wait
    cpu=$(tasks_cpu)
    same "$run/one.tsv.zst" "$run/staged-$shards.tsv.zst" "slurm ngrams $shards × $shards: the n-grams"
    echo "| dupgram slurm ngrams, local Slurm | $shards × $shards | $wall s | $cpu s | $(ratio "$wall" "$one_wall") | $(largest_task "$run/job-$shards") | byte-identical |" >> "$table"
    rm -rf "$run/job-$shards" "$run/staged-$shards.tsv.zst"
  done
fi

# --- pairs: one process against the stages -----------------------------------
if want pairs; then
  header "| job | shards × buckets | wall | CPU | wall vs one process | peak RSS (largest task) | output |" "|---|---:|---:|---:|---:|---:|---|"
  pairs_opts=(-n 5 --memory "$memory" --min-sscr 0.5)
  timed "$bin/dupgram" pairs "$corpus" "${pairs_opts[@]}" -o "$run/one.pairs" --clusters "$run/one.clusters" \
    --stats-json "$run/pairs.json"
  one_wall=$wall
  tokens=$(python3 -c "import json; print(json.load(open('$run/pairs.json'))['tokens'])")
  found="$(( $(wc -l < "$run/one.pairs") - 1 )) pairs, $(wc -l < "$run/one.clusters") clusters"
  one_rss=$(python3 -c "import json; print(f\"{json.load(open('$run/pairs.json'))['peak_rss'] / 2**20:,.0f} MiB\")")
  echo "| dupgram pairs, one process | — | $wall s | $cpu s | 1.00× | $one_rss | $found |" >> "$table"

  for shards in $shard_counts; do
    timed "$bin/dupgram" slurm pairs "$corpus" "${pairs_opts[@]}" -o "$run/staged-$shards.pairs" \
      --clusters "$run/staged-$shards.clusters" --workdir "$run/pairs-job-$shards" --shards "$shards" --buckets "$shards" --wait
    cpu=$(tasks_cpu)
    same "$run/one.pairs" "$run/staged-$shards.pairs" "slurm pairs $shards × $shards: the pairs"
    same "$run/one.clusters" "$run/staged-$shards.clusters" "slurm pairs $shards × $shards: the clusters"
    echo "| dupgram slurm pairs, local Slurm | $shards × $shards | $wall s | $cpu s | $(ratio "$wall" "$one_wall") | $(largest_task "$run/pairs-job-$shards") | byte-identical (pairs and clusters) |" >> "$table"
    rm -rf "$run/pairs-job-$shards"
  done
fi

# --- a nightly update: 1 % new documents -------------------------------------
if want update; then
  lines=$(wc -l < "$corpus")
  base_lines=$(( lines * 99 / 100 ))
  head -n "$base_lines" "$corpus" > "$run/base.jsonl"
  tail -n +"$(( base_lines + 1 ))" "$corpus" > "$run/day.jsonl"
  header "| job | new data | wall | CPU | peak RSS | wall vs full recount | output |" "|---|---:|---:|---:|---:|---:|---|"
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
    echo "| dupgram update with the day | $day_mb MiB (1 %) | $up_wall s | $up_cpu s | $(( up_rss / 1024 )) MiB | $(ratio "$up_wall" "$full_wall") | $(wc -l < "$run/new.tsv") newly duplicated; the same duplicates (sorted), state $state MiB |"
    echo "| (once) the base with --keep-state | — | $base_wall s | $base_cpu s | — | — | state kept for updates |"
  } >> "$table"

  # With positions kept: the day's pairs with older documents, against a full pairs run.
  header "| job | new data | wall | CPU | peak RSS | wall vs full pairs run | output |" "|---|---:|---:|---:|---:|---:|---|"
  pairs_opts=(-n 5 --memory "$memory" --min-sscr 0.5)
  timed "$bin/dupgram" slurm ngrams "$run/base.jsonl" -n 5 --memory "$memory" -q -o "$run/base5.tsv" \
    --workdir "$run/postings-job" --shards 1 --buckets 4 --keep-state --keep-postings --local
  pbase_wall=$wall pbase_cpu=$cpu
  /usr/bin/time -f "%e %U %S %M" -o "$run/time.txt" "$bin/dupgram" pairs "$run/base.jsonl" "$run/day.jsonl" \
    "${pairs_opts[@]}" -q -o "$run/full.pairs" 2> /dev/null
  read -r fullp_wall user sys fullp_rss < "$run/time.txt"
  fullp_cpu=$(python3 -c "print(round($user + $sys, 2))")
  /usr/bin/time -f "%e %U %S %M" -o "$run/time.txt" "$bin/dupgram" update --workdir "$run/postings-job" \
    "$run/day.jsonl" -q -o /dev/null --pairs "$run/day.pairs" --min-sscr 0.5 --stats-json "$run/update-pairs.json" 2> /dev/null
  read -r upp_wall user sys upp_rss < "$run/time.txt"
  upp_cpu=$(python3 -c "print(round($user + $sys, 2))")
  # dupgram pairs pairs a group of identical documents through its first only;
  # the update pairs every copy: each pair of the full run must be there, with the same scores.
  read -r crossing extra < <(python3 - "$run/base.jsonl" "$run/full.pairs" "$run/day.pairs" <<'PY'
import json, sys
base = {json.loads(line)["id"] for line in open(sys.argv[1])}
def rows(path):
    return {l for l in open(path).read().splitlines()[1:]}
full = {r for r in rows(sys.argv[2]) if r.split("\t")[0] in base and r.split("\t")[1] not in base}
day = rows(sys.argv[3])
missing = full - day
if missing:
    sys.exit(f"update --pairs misses {len(missing)} pairs of the full run, e.g. {sorted(missing)[0]}")
print(len(full), len(day - full))
PY
  )
  pstate=$(python3 -c "import json; print(round(json.load(open('$run/update-pairs.json'))['state_bytes'] / 2**20))")
  {
    echo "| dupgram pairs base + day, full run (n = 5) | $day_mb MiB (1 %) | $fullp_wall s | $fullp_cpu s | $(( fullp_rss / 1024 )) MiB | 1.00× | $crossing pairs of an older and a new document |"
    echo "| dupgram update --pairs with the day | $day_mb MiB (1 %) | $upp_wall s | $upp_cpu s | $(( upp_rss / 1024 )) MiB | $(ratio "$upp_wall" "$fullp_wall") | each of them, same scores, + $extra pairs of copies of grouped documents; state $pstate MiB |"
    echo "| (once) the base with --keep-state --keep-postings | — | $pbase_wall s | $pbase_cpu s | — | — | state kept for updates |"
  } >> "$table"
fi

echo "$size tokens${tokens:+ ($tokens)}, n = $n (pairs: n = 5), --memory $memory" >&2
cat "$table"
