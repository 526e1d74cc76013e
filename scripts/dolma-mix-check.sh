#!/usr/bin/env bash
# Checks that Dolma's mixer, given the attribute file of `dupgram dedup
# --attributes`, keeps exactly what `dupgram dedup --strip` keeps: the same
# documents, in order, with the same text.
#
#   scripts/dolma-mix-check.sh CORPUS.jsonl[.zst|.gz] [dedup options…]
#   scripts/dolma-mix-check.sh ../shared/corpora/20newsgroups.jsonl.zst --unit p -n 7
#
# Needs dupgram on PATH (or $DUPGRAM) and Dolma's CLI (or $DOLMA), e.g. from
#   python3 -m venv /tmp/peers/dolma && /tmp/peers/dolma/bin/pip install dolma==1.2.1 \
#     s3fs==2023.6.0 fsspec==2023.6.0 boto3==1.26.161   # pins that spare pip a long backtrack
# The mixer cuts every listed span (min_score 0) and drops documents whose
# duplicate share is 1 (what --strip drops whole). Prints one line; exit 1 on a difference.
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,13p' "$0"; exit 2; }
corpus=$(realpath "$1"); shift
dupgram=${DUPGRAM:-dupgram}
dolma=${DOLMA:-dolma}
python=$(dirname "$(command -v "$dolma")")/python
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
name=$(basename "$corpus")
mkdir -p "$work/documents" "$work/attributes/dupgram"
cp "$corpus" "$work/documents/$name"
"$dupgram" dedup "$work/documents/$name" "$@" -q --attributes "$work/attributes/dupgram/$name"
"$dupgram" dedup "$work/documents/$name" "$@" -q --strip -o "$work/stripped.jsonl"
cat > "$work/mix.yaml" <<EOY
streams:
  - name: dupgram
    documents: [$work/documents/*]
    attributes: [dupgram]
    output: {path: $work/mixed, max_size_in_bytes: 100000000000}
    span_replacement:
      - {span: "\$.attributes.dupgram_duplicate_spans", min_score: 0.0, replacement: ""}
    filter:
      exclude: ["\$.attributes[?(@.dupgram_dup_fraction[0][2] >= 1.0)]"]
processes: 1
EOY
"$dolma" -c "$work/mix.yaml" mix > "$work/mix.log" 2>&1 || { cat "$work/mix.log" >&2; exit 1; }
"$python" - "$work" "$*" <<'EOP'
import glob, gzip, json, sys
work, args = sys.argv[1], sys.argv[2]
mixed = [json.loads(l) for f in sorted(glob.glob(f"{work}/mixed/*.gz")) for l in gzip.open(f, "rt", encoding="utf-8")]
stripped = [json.loads(l) for l in open(f"{work}/stripped.jsonl", encoding="utf-8")]
same = [(d["id"], d["text"]) for d in mixed] == [(d["id"], d["text"]) for d in stripped]
print(f"dedup {args}: Dolma's mixer kept {len(mixed)} documents, --strip {len(stripped)}; identical ids and texts: {same}")
sys.exit(0 if same else 1)
EOP
