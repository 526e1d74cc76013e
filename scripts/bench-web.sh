#!/usr/bin/env bash
# dupgram on web-shaped text, the same comments as JSON Lines, as one
# document per line, and as a vertical file, of one column and of three
# (word, tag, word again), and, for a like-for-like comparison with them,
# the vertical file's own tokens as one document per line, read with
# --tokens raw: `ngrams -n 10` and `dedup --unit doc -n 7`; then `pairs -n 5
# --min-sscr 0.8` on the JSON Lines beside an in-memory 64-bit hash count of
# their 10-grams (dupgram-hashcount). With --onion, Onion 1.2 beside them
# on the vertical file: `hashgen -n 10` + `hashdup` (64-bit hashes of every
# 10-token window, those seen twice; no counts) and `onion -p doc -n 7 -t
# 0.5`. Medians of --runs walls, the lexicon pass from --stats-json, the
# largest peak RSS.
#
#   scripts/bench-web.sh [--corpus REDDIT.jsonl.zst] [--runs N] [--memory SIZE] [--pairs-memory SIZE] [--onion PATH]
#
#   --corpus FILE         scripts/fetch-corpora.sh reddit's output [$DUPGRAM_BENCH_DIR/reddit.jsonl.zst]
#   --runs N              runs of each job [3]
#   --memory SIZE         dupgram's --memory [1G]
#   --pairs-memory SIZE   pairs' --memory [2G]
#   --only pairs          the pairs rows only
#   --onion PATH          Onion 1.2's `onion`, with `hashgen` and `hashdup` beside it: built outside this
#                         repository from Suwarnan/onion, commit fb395d1c ("Release 1.2"), with
#                         libjudy-dev installed, by `make` (see scripts/bench.sh)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
work=${DUPGRAM_BENCH_DIR:-$here/target/bench}
corpus=$work/reddit.jsonl.zst runs=3 memory=1G pairs_memory=2G only= onion=
while [ $# -gt 0 ]; do
  case "$1" in
    --corpus) corpus=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    --pairs-memory) pairs_memory=$2; shift 2 ;;
    --onion) onion=$2; shift 2 ;;
    --only)
      [ "$2" = pairs ] || { echo "--only takes pairs (the pairs rows), not $2" >&2; exit 2; }
      only=$2; shift 2 ;;
    *) sed -n '2,23p' "$0"; exit 2 ;;
  esac
done
if [ -n "$onion" ]; then
  for tool in "$onion" "$(dirname "$onion")/hashgen" "$(dirname "$onion")/hashdup"; do
    [ -x "$tool" ] || { echo "--onion $onion: $tool not found or not executable" >&2; exit 2; }
  done
fi
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

measure() { # with-stats command…: runs the command --runs times; sets walls, lexicons (the
  # lexicon pass from its --stats-json when with-stats is yes) and peak (the largest RSS, KiB)
  local with_stats=$1; shift
  walls=() lexicons=() peak=0
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$web/time.txt" "$@" > /dev/null
    read -r w m < "$web/time.txt"
    walls+=("$w")
    [ "$m" -gt "$peak" ] && peak=$m
    [ "$with_stats" = yes ] && lexicons+=("$(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(s.get("first_pass", s).get("seconds", {}).get("lexicon", 0))' "$web/stats.json")")
  done
  return 0
}

run() { # label job input [options…]: prints "label job wall lexicon rss"
  local label=$1 job=$2 input=$3; shift 3
  local job_memory=$memory
  [ "$job" = pairs ] && job_memory=$pairs_memory
  measure yes "$bin/dupgram" "$job" "$input" "$@" --memory "$job_memory" -q -o /dev/null --stats-json "$web/stats.json"
  printf '| %s | `%s` | %.2f s | %.2f s | %d MiB |\n' "$label" "$job" "$(median "${walls[@]}")" \
    "$(median "${lexicons[@]}")" "$((peak / 1024))"
}

peer() { # label job command…: prints "label job wall rss", as run does without a lexicon pass
  local label=$1 job=$2; shift 2
  measure no "$@"
  printf '| %s | %s | %.2f s | | %d MiB |\n' "$label" "$job" "$(median "${walls[@]}")" "$((peak / 1024))"
}

# Onion's n-gram tools, one after the other: hashgen writes the hashes of every
# 10-token window to 10 files, hashdup sorts them and writes those seen twice.
onion_ngrams='tmp=$(mktemp -d "$1/onion.XXXX") && "$2/hashgen" -q -n 10 -o "$tmp/hashes." "$3" &&
  "$2/hashdup" -q -o "$tmp/duphashes" "$tmp"/hashes.*; rc=$?; rm -rf "$tmp"; exit $rc'

echo "| input | job | wall (median of $runs) | lexicon pass | peak RSS |"
echo "|---|---|---:|---:|---:|"
if [ "$only" != pairs ]; then
  run "JSON Lines (.zst)" ngrams "$corpus" -n 10
  run "one comment per line" ngrams "$web/comments.txt" -n 10
  run "vertical" ngrams "$web/comments.vert" -n 10
  run "vertical, three columns" ngrams "$web/columns.vert" -n 10
  run "its tokens, one document per line (--tokens raw)" ngrams "$web/vert-tokens.txt" -n 10 --tokens raw
  [ -n "$onion" ] && peer "vertical" "Onion 1.2 \`hashgen -n 10\` + \`hashdup\`" \
    bash -c "$onion_ngrams" _ "$web" "$(dirname "$onion")" "$web/comments.vert"
  run "vertical" dedup "$web/comments.vert" -n 7 --unit doc
  run "vertical, three columns" dedup "$web/columns.vert" -n 7 --unit doc
  run "its tokens, one document per line (--tokens raw)" dedup "$web/vert-tokens.txt" -n 7 --unit doc --tokens raw
  [ -n "$onion" ] && peer "vertical" "Onion 1.2 \`onion -p doc -n 7 -t 0.5\`" \
    "$onion" -p doc -n 7 -t 0.5 -q "$web/comments.vert"
fi
run "JSON Lines (.zst), --memory $pairs_memory" pairs "$corpus" -n 5 --min-sscr 0.8
peer "JSON Lines (.zst), a 64-bit hash of every 10-gram in a hash map" dupgram-hashcount "$bin/dupgram-hashcount" "$corpus" -n 10
