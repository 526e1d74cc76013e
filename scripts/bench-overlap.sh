#!/usr/bin/env bash
# Benchmark decontamination beside the peers: a benchmark's test set against
# a web-shaped reference, with test items planted in it, by
#   dupgram overlap QUERY --reference REF -n N --mark-reference
#   an in-memory Python set of the test set's n-grams (exact, one process)
#   Dolma's dedupe with a Bloom filter of the test set's n-grams (paragraphs by_ngram)
#   datatrove's NGramsDecontFilter (n-gram hashes; see scripts/datatrove_decont.py)
# each run --runs times in turn (medians of the walls, the largest RSS), and
# which reference documents each flags that the others do not.
#
#   scripts/bench-overlap.sh --test TEST.jsonl --reference REF.jsonl.zst [options]
#
#   --test FILE        the test set, JSON Lines (GSM8K's test.jsonl from openai/grade-school-math)
#   --field NAME       the test items' text field [question]
#   --reference FILE   the reference (scripts/fetch-corpora.sh reddit makes one)
#   --plant N          test items planted in the reference: half quoted whole, half edited [200]
#   -n N               words per n-gram [13]
#   --runs N           runs of each tool [3]
#   --datatrove-runs N runs of datatrove's filter, which is far slower [--runs]
#   --dolma PATH       the `dolma` command (pip install dolma==1.2.1) [skipped without]
#   --datatrove PATH   a python with datatrove, spacy and xxhash<4 installed [skipped without]
#   --work DIR         where inputs and outputs go [$DUPGRAM_BENCH_DIR/overlap, else target/bench/overlap]
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,23p' "$0"; exit 2; }
test_set='' field=question reference='' plant=200 n=13 runs=3 dolma='' datatrove='' datatrove_runs=''
work=${DUPGRAM_BENCH_DIR:-$here/target/bench}/overlap
while [ $# -gt 0 ]; do
  case "$1" in
    --test) test_set=$2; shift 2 ;;
    --field) field=$2; shift 2 ;;
    --reference) reference=$2; shift 2 ;;
    --plant) plant=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --datatrove-runs) datatrove_runs=$2; shift 2 ;;
    --dolma) dolma=$2; shift 2 ;;
    --datatrove) datatrove=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) usage ;;
  esac
done
[ -n "$test_set" ] && [ -n "$reference" ] || usage
datatrove_runs=${datatrove_runs:-$runs}
mkdir -p "$work"
bin=$here/target/release
cargo build --release --quiet --manifest-path "$here/Cargo.toml" --bin dupgram

measure() {
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" > /dev/null 2> "$work/stderr.log" || {
    echo "failed: $*" >&2; cat "$work/stderr.log" >&2; exit 1; }
  cat "$work/time.txt"
}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
maximum() { sort -g | tail -n 1; }

echo "preparing the inputs..." >&2
python3 "$here/scripts/overlap_peers.py" prepare "$test_set" "$field" "$reference" "$plant" "$work"
query=$work/query.jsonl ref=$work/documents/reference.jsonl.gz
mkdir -p "$work/dolma/test/documents"
gzip -c "$query" > "$work/dolma/test/documents/query.jsonl.gz"
items=$(wc -l < "$query")

declare -A walls rss
add() { walls[$1]+="$2 "; rss[$1]+="$3 "; }
for run in $(seq "$runs"); do
  echo "run $run of $runs..." >&2
  read -r w m < <(measure "$bin/dupgram" overlap "$query" --reference "$ref" -n "$n" -q \
    --mark-reference "$work/dupgram-marks.tsv" -o "$work/dupgram-rows.tsv" --stats-json "$work/dupgram.json")
  add dupgram "$w" "$m"
  read -r w m < <(measure python3 "$here/scripts/overlap_peers.py" hashset "$query" "$ref" "$n" "$work/hashset.txt")
  add hashset "$w" "$m"
  if [ -n "$dolma" ]; then
    rm -rf "$work/dolma/test/attributes" "$work/dolma/attributes" "$work/dolma/bloom.bin"
    common=(--dedupe.name decon --dedupe.paragraphs.attribute_name decon
      --dedupe.paragraphs.by_ngram.ngram_length "$n" --dedupe.paragraphs.by_ngram.overlap_threshold 0.000001
      --dedupe.skip_empty --bloom_filter.file "$work/dolma/bloom.bin" --bloom_filter.estimated_doc_count "$((items * 100))"
      --bloom_filter.desired_false_positive_rate 1e-6 --processes 2)
    read -r w1 m1 < <(measure "$dolma" dedupe --documents "$work/dolma/test/documents/*.jsonl.gz" "${common[@]}" \
      --no-bloom_filter.read_only)
    # Dolma writes attributes beside the documents' folder: the reference's is linked into its own.
    mkdir -p "$work/dolma/ref/documents"
    ln -sf "$ref" "$work/dolma/ref/documents/reference.jsonl.gz"
    rm -rf "$work/dolma/ref/attributes"
    read -r w2 m2 < <(measure "$dolma" dedupe --documents "$work/dolma/ref/documents/*.jsonl.gz" "${common[@]}" \
      --bloom_filter.read_only)
    add dolma "$(echo "$w1 + $w2" | bc)" "$(printf '%s\n' "$m1" "$m2" | maximum)"
  fi
  if [ -n "$datatrove" ] && [ "$run" -le "$datatrove_runs" ]; then
    rm -rf "$work/datatrove"
    read -r w m < <(measure "$datatrove" "$here/scripts/datatrove_decont.py" "$query" "$work/documents" "$n" "$work/datatrove")
    add datatrove "$w" "$m"
  fi
done

sets=(dupgram="$work/dupgram-marks.tsv" hashset="$work/hashset.txt")
[ -n "$dolma" ] && sets+=(dolma="$work/dolma/ref/attributes/decon/reference.jsonl.gz")
[ -n "$datatrove" ] && sets+=(datatrove="$work/datatrove/flagged.txt")
python3 "$here/scripts/overlap_peers.py" agree "${sets[@]}" > "$work/agreement.txt"

echo
echo "| tool | wall (median) | runs | peak RSS | reference documents flagged | planted quotes | planted edits |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for tool in dupgram hashset dolma datatrove; do
  [ -n "${walls[$tool]:-}" ] || continue
  wall=$(printf '%s\n' ${walls[$tool]} | median)
  peak=$(printf '%s\n' ${rss[$tool]} | maximum)
  read -r flagged quotes edits < <(awk -F'\t' -v t="$tool" '$1 == t { sub("flagged ", "", $2); sub("planted quotes ", "", $3); sub("planted edits ", "", $4); print $2, $3, $4 }' "$work/agreement.txt")
  count=$(echo ${walls[$tool]} | wc -w)
  printf '| %s | %.1f s | %d | %d MiB | %s | %s | %s |\n' "$tool" "$wall" "$count" "$((peak / 1024))" "$flagged" "$quotes" "$edits"
done
echo
grep ' not ' "$work/agreement.txt" | sed 's/^/    /'
