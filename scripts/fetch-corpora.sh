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
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,17p' "$0"; exit 2; }
[ $# -ge 2 ] || usage
what=$1 source=$2
work=${DUPGRAM_BENCH_DIR:-$here/target/bench}

case "$what" in
  gutenberg)
    output=${3:-$work/gutenberg.jsonl.zst}
    mkdir -p "$(dirname "$output")"
    if [ -d "$source/.git" ]; then
      git_dir=$source/.git
    elif [ -f "$source/HEAD" ] && [ -d "$source/objects" ]; then
      git_dir=$source
    else
      echo "$source: not a git checkout or git directory of rcdm-uga/Gutenberg_Text" >&2
      exit 2
    fi
    tmp=$output.tmp.$$
    trap 'rm -f "$tmp"' EXIT
    # Every .txt file of the newest commit, read straight from git's objects.
    python3 - "$git_dir" <<'PY' | zstd -q -T2 -10 -o "$tmp"
import json, subprocess, sys

git_dir = sys.argv[1]
git = ["git", "--git-dir", git_dir]
names = subprocess.run(git + ["ls-tree", "-r", "-z", "--name-only", "HEAD"], check=True,
                       capture_output=True).stdout.split(b"\0")
names = sorted(n for n in names if n.endswith(b".txt"))
cat = subprocess.Popen(git + ["cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
books = missing = 0
for name in names:
    cat.stdin.write(b"HEAD:" + name + b"\n")
    cat.stdin.flush()
    header = cat.stdout.readline().split()
    if header and header[-1] == b"missing":
        # A partial mirror may lack its largest files: the corpus is what is there.
        missing += 1
        continue
    if len(header) != 3 or header[1] != b"blob":
        sys.exit(f"git cat-file: unexpected answer for {name!r}: {header!r}")
    data = cat.stdout.read(int(header[2]))
    cat.stdout.read(1)  # the newline after each object
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    path = name.decode("utf-8", "replace")
    book = path[:-4].replace(" /", "/").strip()
    print(json.dumps({"id": book, "text": text}, ensure_ascii=False))
    books += 1
cat.stdin.close()
cat.wait()
print(f"gutenberg: {books} books ({missing} listed but absent from this copy of the repository)", file=sys.stderr)
PY
    mv "$tmp" "$output"
    trap - EXIT
    echo "wrote $output ($(du -h "$output" | cut -f1))" >&2
    ;;
  *) usage ;;
esac
