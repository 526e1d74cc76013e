#!/usr/bin/env python3
"""Helper of scripts/bench-span.sh (standard library only).

  span_agreement.py prepare CORPUS.jsonl DATA.bin
      Writes deduplicate-text-datasets' input: each document's text (UTF-8)
      after b"\\xff\\xff" and a 4-byte document number, as its
      scripts/load_dataset.py does.

  span_agreement.py compare CORPUS.jsonl DUPGRAM.jsonl DTD.ranges
      Compares what the two remove, in bytes of document text:
      dupgram's dup_spans (character offsets, first copy kept) and
      deduplicate-text-datasets' `collect` byte ranges of DATA.bin (every
      copy, the first one too). Prints one JSON object.
"""

import json
import struct
import sys

SEPARATOR = 6  # b"\xff\xff" and a 4-byte number


def texts(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)["text"]


def prepare(corpus, data):
    with open(data, "wb") as out:
        for i, text in enumerate(texts(corpus)):
            out.write(b"\xff\xff" + struct.pack("<I", i) + text.encode("utf-8"))


def char_to_byte(text, spans):
    """Character-offset spans of a text as byte-offset spans."""
    if not spans:
        return []
    ends = sorted({p for s in spans for p in s})
    where, chars, nbytes = {}, 0, 0
    it = iter(ends)
    want = next(it, None)
    for ch in text:
        while want is not None and want == chars:
            where[want] = nbytes
            want = next(it, None)
        chars += 1
        nbytes += len(ch.encode("utf-8"))
    while want is not None:
        where[want] = nbytes
        want = next(it, None)
    return [(where[a], where[b]) for a, b in spans]


def length(spans):
    return sum(b - a for a, b in spans)


def intersection(a, b):
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def compare(corpus, dupgram, ranges):
    docs = [t.encode("utf-8") for t in texts(corpus)]
    starts, at = [], 0
    for d in docs:
        starts.append(at + SEPARATOR)
        at += SEPARATOR + len(d)
    # deduplicate-text-datasets: byte ranges of the data file, cut to each document's text.
    theirs = [[] for _ in docs]
    doc = 0
    with open(ranges) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 2 or not all(p.isdigit() for p in parts):
                continue
            a, b = int(parts[0]), int(parts[1])
            while doc + 1 < len(docs) and starts[doc + 1] - SEPARATOR <= a:
                doc += 1
            d = doc
            while d < len(docs) and starts[d] - SEPARATOR < b:
                lo, hi = max(a, starts[d]) - starts[d], min(b, starts[d] + len(docs[d])) - starts[d]
                if lo < hi:
                    theirs[d].append((lo, hi))
                d += 1
    ours = []
    with open(dupgram, encoding="utf-8") as f:
        for line, text in zip(f, texts(corpus)):
            ours.append(char_to_byte(text, json.loads(line)["dup_spans"]))
    total = sum(len(d) for d in docs)
    mine, other = sum(length(s) for s in ours), sum(length(s) for s in theirs)
    both = sum(intersection(a, b) for a, b in zip(ours, theirs))
    print(json.dumps({
        "text_bytes": total,
        "dupgram_removed_bytes": mine,
        "dtd_removed_bytes": other,
        "both_bytes": both,
        "dupgram_share": mine / total if total else 0,
        "dtd_share": other / total if total else 0,
        "dupgram_in_dtd": both / mine if mine else 0,
        "dtd_in_dupgram": both / other if other else 0,
        "dupgram_docs_touched": sum(1 for s in ours if s),
        "dtd_docs_touched": sum(1 for s in theirs if s),
    }))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "compare":
        compare(*sys.argv[2:])
    else:
        sys.exit(__doc__)
