"""Helpers of scripts/bench-overlap.sh: the benchmark's inputs, an in-memory
hash-set baseline, and which reference documents each tool flags.

  overlap_peers.py prepare TEST.jsonl FIELD REFERENCE.jsonl[.zst|.gz] PLANT OUT_DIR
      writes OUT_DIR/query.jsonl (the test items, IDs test-N) and
      OUT_DIR/documents/reference.jsonl.gz: the reference with PLANT
      comments planted at random places, half quoting a test item whole
      inside other words ("planted-quote-N"), half the item with every
      eighth word changed ("planted-edited-N": shares few or no 13-grams);
  overlap_peers.py hashset QUERY REFERENCE N OUT
      the reference documents holding any n-gram of the query, found with a
      Python set of the query's n-grams (words: lower-cased \\w+ runs);
  overlap_peers.py agree NAME=FILE...
      flagged documents per tool and, per pair of tools, how many each
      flags that the other does not. FILE: dupgram's --mark-reference TSV,
      the hash set's list, or Dolma's attribute files (a document is flagged
      when its attribute holds a span).
"""

from __future__ import annotations

import gzip
import io
import json
import random
import re
import subprocess
import sys
from pathlib import Path

WORD = re.compile(r"\w+")


def open_text(path: str):
    if path.endswith(".zst"):
        zstd = subprocess.Popen(["zstd", "-dcq", path], stdout=subprocess.PIPE)
        return io.TextIOWrapper(zstd.stdout, encoding="utf-8")
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def prepare(test: str, field: str, reference: str, plant: int, out: str) -> None:
    out_dir = Path(out)
    (out_dir / "documents").mkdir(parents=True, exist_ok=True)
    items = [json.loads(line)[field] for line in open_text(test) if line.strip()]
    with open(out_dir / "query.jsonl", "w", encoding="utf-8") as q:
        for i, text in enumerate(items):
            q.write(json.dumps({"id": f"test-{i}", "text": text}) + "\n")
    rng = random.Random(5)
    planted = []
    for k in range(plant):
        item = rng.randrange(len(items))
        words = items[item].split()
        if k % 2 == 0:
            text = f"Saw this one on a quiz today: {' '.join(words)} Anyone know the answer?"
            planted.append((f"planted-quote-{k}", text))
        else:
            edited = [("something" if j % 8 == 7 else w) for j, w in enumerate(words)]
            planted.append((f"planted-edited-{k}", " ".join(edited)))
    lines = sum(1 for _ in open_text(reference))
    at = sorted(rng.randrange(lines + 1) for _ in planted)
    with gzip.open(out_dir / "documents" / "reference.jsonl.gz", "wt", encoding="utf-8", compresslevel=1) as r:
        p = 0
        for n, line in enumerate(open_text(reference)):
            while p < len(at) and at[p] == n:
                r.write(json.dumps({"id": planted[p][0], "text": planted[p][1]}) + "\n")
                p += 1
            record = json.loads(line)
            r.write(json.dumps({"id": record["id"], "text": record["text"]}) + "\n")
        for ident, text in planted[p:]:
            r.write(json.dumps({"id": ident, "text": text}) + "\n")
    print(f"{len(items)} test items, {lines} reference documents, {plant} planted", file=sys.stderr)


def grams(text: str, n: int):
    words = WORD.findall(text.lower())
    return (tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def hashset(query: str, reference: str, n: int, out: str) -> None:
    wanted = set()
    for line in open_text(query):
        wanted.update(grams(json.loads(line)["text"], n))
    with open(out, "w", encoding="utf-8") as o:
        for line in open_text(reference):
            record = json.loads(line)
            if any(g in wanted for g in grams(record["text"], n)):
                o.write(record["id"] + "\n")


def flagged(path: str) -> set[str]:
    if path.endswith(".tsv"):
        return {line.split("\t")[0] for line in open_text(path) if line.strip()} - {"id"}
    if ".jsonl" in path:
        out = set()
        for line in open_text(path):
            record = json.loads(line)
            spans = next(iter(record.get("attributes", {}).values()), [])
            if spans:
                out.add(record["id"])
        return out
    return {line.strip() for line in open_text(path) if line.strip()}


def agree(pairs: list[str]) -> None:
    sets = {}
    for pair in pairs:
        name, path = pair.split("=", 1)
        sets[name] = flagged(path)
    for name, s in sets.items():
        quotes = sum(1 for d in s if d.startswith("planted-quote"))
        edited = sum(1 for d in s if d.startswith("planted-edited"))
        print(f"{name}\tflagged {len(s)}\tplanted quotes {quotes}\tplanted edits {edited}")
    for a in sets:
        for b in sets:
            if a < b:
                only_a, only_b = sorted(sets[a] - sets[b]), sorted(sets[b] - sets[a])
                print(f"{a} not {b}\t{len(only_a)}\t{' '.join(only_a[:5])}")
                print(f"{b} not {a}\t{len(only_b)}\t{' '.join(only_b[:5])}")


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "prepare":
        prepare(args[0], args[1], args[2], int(args[3]), args[4])
    elif command == "hashset":
        hashset(args[0], args[1], int(args[2]), args[3])
    elif command == "agree":
        agree(args)
    else:
        sys.exit(__doc__)
