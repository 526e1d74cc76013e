"""The files of a git directory's newest commit, read straight from its
objects: what scripts/fetch-corpora.sh builds its corpora from."""

import subprocess
import sys


def blobs(git_dir, wanted, under=None):
    """Yields (path, bytes) for each file of HEAD (below `under`) whose path
    `wanted(path)` accepts, in path order; the files a partial copy lacks
    are skipped and counted in `blobs.missing`."""
    git = ["git", "--git-dir", git_dir]
    listing = git + ["ls-tree", "-r", "-z", "--name-only", "HEAD"] + ([under] if under else [])
    names = sorted(n for n in subprocess.run(listing, check=True, capture_output=True).stdout.split(b"\0") if n and wanted(n))
    cat = subprocess.Popen(git + ["cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    blobs.missing = 0
    for name in names:
        cat.stdin.write(b"HEAD:" + name + b"\n")
        cat.stdin.flush()
        header = cat.stdout.readline().split()
        if header and header[-1] == b"missing":
            # A partial mirror may lack its largest files: the corpus is what is there.
            blobs.missing += 1
            continue
        if len(header) != 3 or header[1] != b"blob":
            sys.exit(f"git cat-file: unexpected answer for {name!r}: {header!r}")
        data = cat.stdout.read(int(header[2]))
        cat.stdout.read(1)  # the newline after each object
        yield name.decode("utf-8", "replace"), data
    cat.stdin.close()
    cat.wait()
