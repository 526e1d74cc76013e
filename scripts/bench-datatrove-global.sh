#!/usr/bin/env bash
# Global deduplication inside datatrove pipelines on web-shaped text:
# dupgram's steps (DupgramSpool, DupgramFind, DupgramFilter) beside
# datatrove's own MinhashDedup (signatures, buckets, cluster, filter), on the
# same JSON Lines shards with the same LocalPipelineExecutor settings. For
# each: wall (median of --runs), peak memory summed over the processes of
# all workers (sampled every 0.2 s), documents removed; then how many of
# each tool's removals the other misses.
#
#   scripts/bench-datatrove-global.sh --python DT_VENV/bin/python [--corpus REDDIT.jsonl.zst]
#       [--docs N] [--shards 8] [--tasks 4] [--workers 2] [--runs 3] [--dupgram "OPTIONS"]…
#
#   --python PY     a Python with datatrove and dupgram: pip install "./python[datatrove]" spacy tokenizers
#   --corpus FILE   scripts/fetch-corpora.sh reddit's output [$DUPGRAM_BENCH_DIR/reddit.jsonl.zst]
#   --docs N        the first N documents only [all]
#   --dupgram OPTS  dupgram's dedup options (--unit, -n, --threshold, --no-smoothing, --exact-only), one
#                   row each [three rows: -n 5 --threshold 0.5, -n 10 --threshold 0.9 (both --no-smoothing), --exact-only]
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
work=${DUPGRAM_BENCH_DIR:-$here/target/bench}
corpus=$work/reddit.jsonl.zst python= docs=0 shards=8 tasks=4 workers=2 runs=3 configs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    --docs) docs=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --tasks) tasks=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --dupgram) configs+=("$2"); shift 2 ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done
[ -n "$python" ] || { sed -n '2,17p' "$0"; exit 2; }
# Onion's rule keeps no document of --max-stub tokens or fewer (most comments): --no-smoothing keeps them.
[ ${#configs[@]} -gt 0 ] || configs=("--unit doc -n 5 --threshold 0.5 --no-smoothing" "--unit doc -n 10 --threshold 0.9 --no-smoothing" "--unit doc --exact-only")
[ -f "$corpus" ] || { echo "$corpus: not found (scripts/fetch-corpora.sh reddit SOURCE makes it)" >&2; exit 2; }
bench=$work/datatrove-global
rm -rf "$bench" && mkdir -p "$bench/shards"

echo "cutting $corpus into $shards shards..." >&2
"$python" - "$corpus" "$bench/shards" "$shards" "$docs" <<'PY'
import json, subprocess, sys
corpus, folder, shards, docs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lines = subprocess.run(["zstd", "-dcq", corpus], capture_output=True, check=True).stdout.splitlines(True)
lines = lines[:docs] if docs else lines
for s in range(shards):
    with open(f"{folder}/shard-{s:02d}.jsonl", "wb") as out:
        out.writelines(lines[s * len(lines) // shards : (s + 1) * len(lines) // shards])
print(f"{len(lines)} documents", file=sys.stderr)
PY

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# run NAME TOOL [OPTIONS…]: the median wall, the highest peak and the stages of --runs runs; removals in $bench/NAME/
run() {
  local name=$1 tool=$2 walls=() peaks=() peak wall
  shift 2
  for _ in $(seq "$runs"); do
    "$python" "$here/scripts/lib/tree_rss.py" "$python" "$here/scripts/datatrove_global.py" "$tool" \
      "$bench/shards" "$bench/$name" --tasks "$tasks" --workers "$workers" "$@" > "$bench/$name.json" 2> "$bench/$name.log" ||
      { tail -n 20 "$bench/$name.log" >&2; echo "$name failed (the whole log: $bench/$name.log)" >&2; exit 1; }
    read -r peak wall < <(tail -n 1 "$bench/$name.log")
    walls+=("$wall") peaks+=("$peak")
  done
  echo "$(median "${walls[@]}") $(printf '%s\n' "${peaks[@]}" | sort -g | tail -n 1) $(wc -l < "$bench/$name/removed.txt")" \
    "$("$python" -c 'import json, sys; print(" · ".join(f"{k} {v:.1f}" for k, v in json.load(open(sys.argv[1]))["stages"].items()))' "$bench/$name.json")"
}
common() { sort "$bench/$1/removed.txt" "$bench/$2/removed.txt" | uniq -d | wc -l; }

read -r m_wall m_peak m_removed m_stages < <(run minhash minhash)
echo "| tool | wall (median of $runs) | peak memory, all workers | documents removed | MinHash removes too | of MinHash's, missed | stages (s) |"
echo "|---|---:|---:|---:|---:|---:|---|"
i=0
for config in "${configs[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086 # the options are words
  read -r wall peak removed stages < <(run "dupgram-$i" dupgram $config)
  both=$(common "dupgram-$i" minhash)
  printf '| dupgram steps, `%s` | %.1f s | %d MiB | %d | %d | %d | %s |\n' "$config" "$wall" "$peak" "$removed" "$both" \
    "$((m_removed - both))" "$stages"
done
printf '| datatrove MinhashDedup (5-grams, 14 × 8 hashes) | %.1f s | %d MiB | %d | — | — | %s |\n' "$m_wall" "$m_peak" \
  "$m_removed" "$m_stages"
