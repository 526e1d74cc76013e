#!/usr/bin/env bash
# Builds the benchmark corpora that are too large to ship in ../shared/corpora,
# from public repositories fetched outside this repository. Nothing it reads
# or writes is committed.
#
#   scripts/fetch-corpora.sh gutenberg SOURCE [OUTPUT]
#
# gutenberg — Project Gutenberg books, one JSON Lines record a book
#   ({"id": "Author/Title", "text": …}, zstd): long documents (many longer
#   than a chunk), a vocabulary of millions of word forms, and the same
#   licence header and footer in every file. SOURCE is the public repository
#   rcdm-uga/Gutenberg_Text (3,400 books, 1.2 GB of text), as a checkout or as
#   a bare git directory (what a mirror or `git clone --bare` gives). OUTPUT
#   defaults to target/bench/gutenberg.jsonl.zst, where scripts/bench.sh looks
#   for it (DUPGRAM_BENCH_DIR moves both). Books are taken in path order;
#   text that is not UTF-8 is read as Latin-1, as Gutenberg's older files are.
#   A partial copy (a mirror that left out its largest files) gives the books
#   it has; the count of those missing goes to standard error.
#
#   scripts/fetch-corpora.sh reddit SOURCE [OUTPUT]
#
# reddit — web-shaped text: Reddit comments, one JSON Lines record a comment
#   ({"id": "RC_2006-01:17", "subreddit": …, "text": …}, zstd), millions of
#   short documents (median 13 words) with bots, quotes, copypasta and a
#   large noisy vocabulary. SOURCE is the public repository
#   roy-elia/MAISProject (data/sampled_comments/RC_*.csv: CSV without a
#   header, columns subreddit, subreddit_id, body, created_utc, bodies with
#   line breaks), as a checkout or a bare git directory; monthly files absent
#   from the copy are skipped and counted. OUTPUT defaults to
#   target/bench/reddit.jsonl.zst.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,29p' "$0"; exit 2; }
[ $# -ge 2 ] || usage
what=$1 source=$2
work=${DUPGRAM_BENCH_DIR:-$here/target/bench}

# The git directory of a checkout or of a bare copy.
git_dir_of() {
  if [ -d "$1/.git" ]; then
    echo "$1/.git"
  elif [ -f "$1/HEAD" ] && [ -d "$1/objects" ]; then
    echo "$1"
  else
    echo "$1: not a git checkout or git directory of $2" >&2
    exit 2
  fi
}

case "$what" in
  gutenberg)
    output=${3:-$work/gutenberg.jsonl.zst}
    mkdir -p "$(dirname "$output")"
    git_dir=$(git_dir_of "$source" rcdm-uga/Gutenberg_Text)
    tmp=$output.tmp.$$
    trap 'rm -f "$tmp"' EXIT
    # Every .txt file of the newest commit, read straight from git's objects.
    python3 - "$git_dir" "$here/scripts/lib" <<'PY' | zstd -q -T2 -10 -o "$tmp"
import json, sys

sys.path.insert(0, sys.argv[2])
from git_blobs import blobs

books = 0
for path, data in blobs(sys.argv[1], lambda name: name.endswith(b".txt")):
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    book = path[:-4].replace(" /", "/").strip()
    print(json.dumps({"id": book, "text": text}, ensure_ascii=False))
    books += 1
print(f"gutenberg: {books} books ({blobs.missing} listed but absent from this copy of the repository)", file=sys.stderr)
PY
    mv "$tmp" "$output"
    trap - EXIT
    echo "wrote $output ($(du -h "$output" | cut -f1))" >&2
    ;;
  reddit)
    output=${3:-$work/reddit.jsonl.zst}
    mkdir -p "$(dirname "$output")"
    git_dir=$(git_dir_of "$source" roy-elia/MAISProject)
    tmp=$output.tmp.$$
    trap 'rm -f "$tmp"' EXIT
    python3 - "$git_dir" "$here/scripts/lib" <<'PY' | zstd -q -T2 -10 -o "$tmp"
import csv, io, json, sys

sys.path.insert(0, sys.argv[2])
from git_blobs import blobs

def monthly(name):
    return name.rsplit(b"/", 1)[-1].startswith(b"RC_") and name.endswith(b".csv")

months = comments = 0
for path, data in blobs(sys.argv[1], monthly, under="data/sampled_comments"):
    month = path.rsplit("/", 1)[-1][:-4]
    for row, fields in enumerate(csv.reader(io.StringIO(data.decode("utf-8", "replace"), newline="")), 1):
        if len(fields) < 3:
            continue
        print(json.dumps({"id": f"{month}:{row}", "subreddit": fields[0], "text": fields[2]}, ensure_ascii=False))
        comments += 1
    months += 1
print(f"reddit: {comments} comments from {months} monthly files ({blobs.missing} absent from this copy)", file=sys.stderr)
PY
    mv "$tmp" "$output"
    trap - EXIT
    echo "wrote $output ($(du -h "$output" | cut -f1))" >&2
    ;;
  *) usage ;;
esac
