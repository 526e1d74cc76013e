#!/usr/bin/env bash
# dupgram on web-shaped text, the same comments as JSON Lines, as one
# document per line, and as a vertical file, of one column and of three
# (word, tag, word again), and, for a like-for-like comparison with them,
# the vertical file's own tokens as one document per line, read with
# --tokens raw: `ngrams -n 10` and `dedup --unit doc -n 7`; then `pairs -n 5
# --min-sscr 0.8` on the JSON Lines beside an in-memory 64-bit hash count of
# their 10-grams (dupgram-hashcount). Medians of --runs walls, the lexicon
# pass from --stats-json, the largest peak RSS.
#
#   scripts/bench-web.sh [--corpus REDDIT.jsonl.zst] [--runs N] [--memory SIZE] [--pairs-memory SIZE]
#
#   --corpus FILE         scripts/fetch-corpora.sh reddit's output [$DUPGRAM_BENCH_DIR/reddit.jsonl.zst]
#   --runs N              runs of each job [3]
#   --memory SIZE         dupgram's --memory [1G]
#   --pairs-memory SIZE   pairs' --memory [2G]
#   --only pairs          the pairs rows only
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
work=${DUPGRAM_BENCH_DIR:-$here/target/bench}
corpus=$work/reddit.jsonl.zst runs=3 memory=1G pairs_memory=2G only=
while [ $# -gt 0 ]; do
  case "$1" in
    --corpus) corpus=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    --pairs-memory) pairs_memory=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done
[ -f "$corpus" ] || { echo "$corpus: not found (scripts/fetch-corpora.sh reddit SOURCE makes it)" >&2; exit 2; }
cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p dupgram -p dupgram-testkit
bin=$here/target/release
web=$work/web
mkdir -p "$web"

if [ "$only" != pairs ]; then
  echo "writing the corpus as text and vertical files..." >&2
  python3 - "$corpus" "$web/comments.txt" <<'PY'
import json, subprocess, sys
zstd = subprocess.Popen(["zstd", "-dcq", sys.argv[1]], stdout=subprocess.PIPE)
with open(sys.argv[2], "w", encoding="utf-8") as out:
    for line in zstd.stdout:
        out.write(json.loads(line)["text"].replace("\r", " ").replace("\n", " ") + "\n")
PY
  "$bin/dupgram-vert" "$corpus" > "$web/comments.vert"
  awk '{ if (substr($0, 1, 1) == "<") print; else print $0 "\tNN\t" $0 }' "$web/comments.vert" > "$web/columns.vert"
  python3 - "$web/comments.vert" "$web/vert-tokens.txt" <<'PY'
import sys
with open(sys.argv[1], encoding="utf-8") as vert, open(sys.argv[2], "w", encoding="utf-8") as out:
    words = []
    for line in vert:
        line = line.rstrip("\n")
        if line == "</doc>":
            out.write(" ".join(words) + "\n")
        elif line.startswith("<doc"):
            words = []
        elif line and not line.startswith("<"):
            words.append(line.split("\t")[0])
PY
fi

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

run() { # label job input [options…]: prints "label wall lexicon rss"
  local label=$1 job=$2 input=$3; shift 3
  local walls=() lexicons=() rss=() job_memory=$memory
  [ "$job" = pairs ] && job_memory=$pairs_memory
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$web/time.txt" "$bin/dupgram" "$job" "$input" "$@" --memory "$job_memory" -q \
      -o /dev/null --stats-json "$web/stats.json"
    read -r w m < "$web/time.txt"
    walls+=("$w"); rss+=("$m")
    lexicons+=("$(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(s.get("first_pass", s).get("seconds", {}).get("lexicon", 0))' "$web/stats.json")")
  done
  printf '| %s | `%s` | %.2f s | %.2f s | %d MiB |\n' "$label" "$job" "$(median "${walls[@]}")" \
    "$(median "${lexicons[@]}")" "$(( $(printf '%s\n' "${rss[@]}" | sort -g | tail -n 1) / 1024 ))"
}

peer() { # label command…: prints "label wall rss" as run does, no lexicon pass
  local label=$1; shift
  local walls=() rss=()
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$web/time.txt" "$@" > /dev/null
    read -r w m < "$web/time.txt"
    walls+=("$w"); rss+=("$m")
  done
  printf '| %s | %s | %.2f s | | %d MiB |\n' "$label" "$1" "$(median "${walls[@]}")" \
    "$(( $(printf '%s\n' "${rss[@]}" | sort -g | tail -n 1) / 1024 ))"
}

echo "| input | job | wall (median of $runs) | lexicon pass | peak RSS |"
echo "|---|---|---:|---:|---:|"
if [ "$only" != pairs ]; then
  run "JSON Lines (.zst)" ngrams "$corpus" -n 10
  run "one comment per line" ngrams "$web/comments.txt" -n 10
  run "vertical" ngrams "$web/comments.vert" -n 10
  run "vertical, three columns" ngrams "$web/columns.vert" -n 10
  run "its tokens, one document per line (--tokens raw)" ngrams "$web/vert-tokens.txt" -n 10 --tokens raw
  run "vertical" dedup "$web/comments.vert" -n 7 --unit doc
  run "vertical, three columns" dedup "$web/columns.vert" -n 7 --unit doc
  run "its tokens, one document per line (--tokens raw)" dedup "$web/vert-tokens.txt" -n 7 --unit doc --tokens raw
fi
run "JSON Lines (.zst), --memory $pairs_memory" pairs "$corpus" -n 5 --min-sscr 0.8
peer "JSON Lines (.zst), a 64-bit hash of every 10-gram in a hash map" "$bin/dupgram-hashcount" "$corpus" -n 10
