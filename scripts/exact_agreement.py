"""Which units exact deduplicators mark, compared unit by unit, for scripts/bench.sh.

    python exact_agreement.py CORPUS.jsonl.gz doc|line DUPGRAM.jsonl [--dolma ATTRS.jsonl.gz] [--datatrove KEPT.jsonl.gz]

DUPGRAM.jsonl is `dupgram dedup --exact-only` output with marks (dup_spans,
in characters); ATTRS is Dolma's `dedupe` attribute file (the one attribute
of each record: spans of duplicate documents or `\\n`-separated paragraphs);
KEPT is datatrove's output (the documents kept, by id). Units: the document,
or each line of its text (a line's span excludes its `\\n`). Also computed
here, exactly, with a set: the units whose raw text (the line or document as
it is) repeats an earlier unit's, empty ones excepted -- what Dolma's Bloom
filter approximates. Prints one `name value` line per count.
"""

import argparse
import gzip
import json


def units_of(text, unit):
    """(char start, char end, byte start, byte end, raw) of each unit, line breaks excluded."""
    if unit == "doc":
        return [(0, len(text), 0, len(text.encode()), text)]
    out, c, b = [], 0, 0
    for line in text.split("\n"):
        lb = len(line.encode())
        out.append((c, c + len(line), b, b + lb, line))
        c += len(line) + 1
        b += lb + 1
    return out


def covered(spans, start, end):
    return start < end and any(s <= start and end <= e for s, e in spans)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("unit", choices=["doc", "line"])
    ap.add_argument("dupgram")
    ap.add_argument("--dolma")
    ap.add_argument("--datatrove")
    a = ap.parse_args()
    dolma = {}
    if a.dolma:
        for line in gzip.open(a.dolma, "rt"):
            r = json.loads(line)
            spans = [s[:2] for v in r["attributes"].values() for s in v]
            dolma.setdefault(r["id"], []).append(spans)
    kept_ids = None
    if a.datatrove:
        kept_ids = {}
        for line in gzip.open(a.datatrove, "rt"):
            i = json.loads(line)["id"]
            kept_ids[i] = kept_ids.get(i, 0) + 1
    seen = set()
    counts = {k: 0 for k in ["units", "raw_exact", "dupgram", "dolma", "datatrove",
                             "dolma_not_dupgram", "dupgram_not_dolma", "datatrove_not_dupgram", "dupgram_not_datatrove",
                             "raw_exact_not_dupgram", "raw_exact_not_dupgram_with_alnum", "dolma_not_raw_exact", "raw_exact_not_dolma",
                             "dolma_spans_in_bytes", "dolma_spans_in_chars"]}
    dolma_seen = {}
    with gzip.open(a.corpus, "rt") as corpus, open(a.dupgram) as marked:
        for line in corpus:
            if not line.strip():
                continue
            record = json.loads(line)
            text = record["text"]
            ours = json.loads(next(marked))
            assert ours.get("id") == record.get("id"), (ours.get("id"), record.get("id"))
            dup_spans = ours["dup_spans"]
            k = dolma_seen.get(record["id"], 0)
            dolma_seen[record["id"]] = k + 1
            d_spans = dolma.get(record["id"], [[]] * (k + 1))[k] if a.dolma else []
            for cs, ce, bs, be, raw in units_of(text, a.unit):
                counts["units"] += 1
                ex = bool(raw.strip()) and raw in seen
                seen.add(raw)
                # dupgram's line units include their "\n": compare on the line itself.
                d = covered(dup_spans, cs, ce)
                counts["dolma_spans_in_chars"] += covered(d_spans, cs, ce)
                counts["dolma_spans_in_bytes"] += covered(d_spans, bs, be)
                # Dolma's spans count characters (checked: both counts are printed).
                o = covered(d_spans, cs, ce)
                counts["raw_exact"] += ex
                counts["dupgram"] += d
                counts["dolma"] += o
                counts["dolma_not_dupgram"] += o and not d
                counts["dupgram_not_dolma"] += d and not o
                counts["raw_exact_not_dupgram"] += ex and not d
                # dupgram never marks a unit without a token (only punctuation or symbols).
                counts["raw_exact_not_dupgram_with_alnum"] += ex and not d and any(ch.isalnum() for ch in raw)
                counts["dolma_not_raw_exact"] += o and not ex
                counts["raw_exact_not_dolma"] += ex and not o
                if kept_ids is not None and a.unit == "doc":
                    i = record["id"]
                    gone = kept_ids.get(i, 0) == 0
                    if not gone:
                        kept_ids[i] -= 1
                    counts["datatrove"] += gone
                    counts["datatrove_not_dupgram"] += gone and not d
                    counts["dupgram_not_datatrove"] += d and not gone
    for k, v in counts.items():
        print(k, v)


if __name__ == "__main__":
    main()
