#!/usr/bin/env bash
# Global deduplication inside datatrove pipelines on web-shaped text:
# dupgram's steps (DupgramSpool, DupgramHash or DupgramPlan and its count stages, DupgramFind, DupgramFilter) beside
# datatrove's own MinhashDedup (signatures, buckets, cluster, filter), on the
# same JSON Lines shards with the same LocalPipelineExecutor settings. For
# each: wall (median of --runs), peak memory summed over the processes of
# all workers (sampled every 0.2 s), documents removed; then how many of
# each tool's removals the other misses.
#
# With --pairs, rows for dupgram's pairs through datatrove (DupgramSpool,
# DupgramPairs with --clusters, then every document of a cluster but its
# first removed, as MinHash's cluster and filter stages remove them).
#
# With --substrings, a second table: datatrove's exact-substring steps
# (ESDatasetToSequence, ESMergeSequences, deduplicate-text-datasets' suffix
# array, self-similar and collect, ESRangeRemover) beside dupgram's steps
# with `--unit span --strip`: wall, peak memory, documents changed,
# characters removed, and the documents each changes that the other does not.
#
#   scripts/bench-datatrove-global.sh --python DT_VENV/bin/python [--corpus REDDIT.jsonl.zst]
#       [--docs N] [--shards 8] [--tasks 4] [--workers 2] [--runs 3] [--dupgram "OPTIONS"]… [--pairs "OPTIONS"]…
#       [--substrings DTD_DIR [--length-threshold 100] [--min-span 38]]
#
#   --python PY     a Python with datatrove and dupgram: pip install "./python[datatrove]" spacy tokenizers
#   --corpus FILE   scripts/fetch-corpora.sh reddit's output [$DUPGRAM_BENCH_DIR/reddit.jsonl.zst]
#   --docs N        the first N documents only [all]
#   --dupgram OPTS  dupgram's dedup options (--unit, -n, --threshold, --no-smoothing, --exact-only), one
#                   row each [three rows: -n 5 --threshold 0.5, -n 10 --threshold 0.9 (both --no-smoothing), --exact-only]
#   --pairs OPTS    dupgram pairs' options (-n, --min-ssr, --min-sscr), one row each [none]
#   --substrings DIR  a checkout of google-research/deduplicate-text-datasets built with `cargo build --release`
#                   (and target/debug/dedup_dataset linked to the release binary: its scripts call that path)
#   --length-threshold B  the suffix-array tool's minimum repeat, in bytes of 16-bit tokens [100: 50 tokens]
#   --min-span K    dupgram's minimum repeated passage in words [38: about 50 of the BPE tokens on Reddit]
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
work=${DUPGRAM_BENCH_DIR:-$here/target/bench}
corpus=$work/reddit.jsonl.zst python= docs=0 shards=8 tasks=4 workers=2 runs=3 configs=() pair_configs=()
dtd= length=100 min_span=38
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
    --pairs) pair_configs+=("$2"); shift 2 ;;
    --substrings) dtd=$(cd "$2" && pwd); shift 2 ;;
    --length-threshold) length=$2; shift 2 ;;
    --min-span) min_span=$2; shift 2 ;;
    *) sed -n '2,33p' "$0"; exit 2 ;;
  esac
done
[ -n "$python" ] || { sed -n '2,33p' "$0"; exit 2; }
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
common() { sort "$bench/$1/${3:-removed}.txt" "$bench/$2/${3:-removed}.txt" | uniq -d | wc -l; }
field() { "$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$bench/$1.json" "$2"; }


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
i=0
for config in "${pair_configs[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086 # the options are words
  read -r wall peak removed stages < <(run "pairs-$i" pairs $config)
  both=$(common "pairs-$i" minhash)
  printf '| dupgram pairs steps, `%s`, a cluster'"'"'s later documents | %.1f s | %d MiB | %d | %d | %d | %s |\n' "$config" \
    "$wall" "$peak" "$removed" "$both" "$((m_removed - both))" "$stages"
done
printf '| datatrove MinhashDedup (5-grams, 14 × 8 hashes) | %.1f s | %d MiB | %d | — | — | %s |\n' "$m_wall" "$m_peak" \
  "$m_removed" "$m_stages"

if [ -n "$dtd" ]; then
  echo
  [ -x "$dtd/target/debug/dedup_dataset" ] || { echo "$dtd/target/debug/dedup_dataset: not found (see --help)" >&2; exit 2; }
  # The exact-substring steps take a tokenizer (GPT-2's by default, from the
  # Hugging Face hub): a byte-level BPE of 32,000 tokens trained on the shards.
  echo "training a byte-level BPE tokenizer on the shards..." >&2
  "$python" - "$bench/shards" "$bench/tokenizer.json" <<'PY'
import json, sys
from pathlib import Path
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

def texts():
    for path in sorted(Path(sys.argv[1]).glob("*.jsonl")):
        with open(path, encoding="utf-8") as lines:
            yield from filter(None, (json.loads(line).get("text") for line in lines))

tokenizer = Tokenizer(models.BPE())
tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tokenizer.decoder = decoders.ByteLevel()
alphabet = pre_tokenizers.ByteLevel.alphabet()
tokenizer.train_from_iterator(texts(), trainers.BpeTrainer(vocab_size=32000, initial_alphabet=alphabet))
tokenizer.save(sys.argv[2])
PY
  read -r s_wall s_peak _ s_stages < <(run substrings substrings --dtd "$dtd" --tokenizer "$bench/tokenizer.json" \
    --length-threshold "$length")
  read -r d_wall d_peak _ d_stages < <(run span dupgram --unit span --min-span "$min_span" --strip)
  both=$(common span substrings changed)
  echo "| tool | wall (median of $runs) | peak memory, all workers | documents changed | characters removed | the other changes too | the other's it misses | stages (s) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---|"
  for row in "dupgram steps, \`--unit span --min-span $min_span --strip\`|span|$d_wall|$d_peak|$d_stages|substrings" \
    "datatrove exact substrings, \`--length-threshold $length\`|substrings|$s_wall|$s_peak|$s_stages|span"; do
    IFS='|' read -r label name wall peak stages other <<< "$row"
    changed=$(field "$name" changed)
    printf '| %s | %.1f s | %d MiB | %d | %d | %d | %d | %s |\n' "$label" "$wall" "$peak" "$changed" \
      "$(field "$name" characters_removed)" "$both" "$(($(field "$other" changed) - both))" "$stages"
  done
fi
