#!/usr/bin/env python3
"""MinHash-LSH baseline for `dupgram pairs` (the `datasketch` package).

Reads a JSON Lines corpus (plain or .zst, through the `zstd` command), takes
the word n-grams of each document (Unicode words, lower-cased, as dupgram's
default tokenizer on most text), builds a 128-permutation MinHash per
document and finds candidate pairs with MinHashLSH at a Jaccard threshold.

    minhash_lsh.py corpus.jsonl.zst -n 5 --threshold 0.5 --pairs lsh.tsv
    minhash_lsh.py --recall dupgram-pairs.tsv lsh.tsv --min-sscr 0.8

The second form prints the share of dupgram's pairs with SSCR >= X that the
LSH run also found.
"""
import argparse
import json
import re
import subprocess
import sys
import time

WORD = re.compile(r"[^\W_]+", re.UNICODE)


def documents(path):
    if path.endswith(".zst"):
        proc = subprocess.Popen(["zstd", "-dc", path], stdout=subprocess.PIPE)
        stream = proc.stdout
    else:
        proc, stream = None, open(path, "rb")
    for line in stream:
        if line.strip():
            rec = json.loads(line)
            yield str(rec.get("id")), rec["text"]
    if proc:
        proc.wait()


def run_lsh(args):
    from datasketch import MinHash, MinHashLSH

    started = time.time()
    lsh = MinHashLSH(threshold=args.threshold, num_perm=args.perm)
    signatures = {}
    for doc_id, text in documents(args.corpus):
        words = WORD.findall(text.lower())
        grams = {" ".join(words[i:i + args.n]).encode() for i in range(len(words) - args.n + 1)}
        if not grams:
            continue
        m = MinHash(num_perm=args.perm)
        m.update_batch(list(grams))
        lsh.insert(doc_id, m)
        signatures[doc_id] = m
    pairs = set()
    for doc_id, m in signatures.items():
        for other in lsh.query(m):
            if other != doc_id:
                pairs.add(tuple(sorted((doc_id, other))))
    with open(args.pairs, "w") as out:
        for a, b in sorted(pairs):
            out.write(f"{a}\t{b}\n")
    print(f"documents\t{len(signatures)}\npairs\t{len(pairs)}\nseconds\t{time.time() - started:.1f}")


def recall(args):
    found = set()
    with open(args.recall[1]) as f:
        for line in f:
            a, b = line.rstrip("\n").split("\t")[:2]
            found.add(tuple(sorted((a, b))))
    wanted = set()
    with open(args.recall[0]) as f:
        next(f)
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if float(fields[2]) >= args.min_sscr:
                wanted.add(tuple(sorted((fields[0], fields[1]))))
    hit = len(wanted & found)
    share = hit / len(wanted) if wanted else 1.0
    print(f"dupgram_pairs\t{len(wanted)}\nfound_by_lsh\t{hit}\nrecall\t{share:.3f}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("corpus", nargs="?")
    p.add_argument("-n", type=int, default=5)
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--perm", type=int, default=128)
    p.add_argument("--pairs", default="lsh-pairs.tsv")
    p.add_argument("--recall", nargs=2, metavar=("DUPGRAM_PAIRS", "LSH_PAIRS"))
    p.add_argument("--min-sscr", type=float, default=0.8)
    args = p.parse_args()
    if args.recall:
        recall(args)
    elif args.corpus:
        run_lsh(args)
    else:
        p.error("a corpus, or --recall")


if __name__ == "__main__":
    sys.exit(main())
