"""The Python package against the command line's own results and independent counts."""

from __future__ import annotations

import _thread
import json
import os
import random
import signal
import threading
from collections import Counter
from pathlib import Path

import pytest

import dupgram

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data-samples"
KUPIETZ = SAMPLES / "kupietz-example1.jsonl"
NEWS = SAMPLES / "news.jsonl"


def test_kupietz_example_1():
    """Kupietz (2005), example 1: SSR 8/28, SSCR 40/44 at n = 5."""
    table = dupgram.pairs(KUPIETZ, n=5, quiet=True)
    assert table.num_rows == 1
    row = table.to_pylist()[0]
    assert (row["a"], row["b"]) == ("T02/NOV.53095", "T03/JUL.31966")
    assert row["ssr"] == pytest.approx(8 / 28, abs=1e-6)
    assert row["sscr"] == pytest.approx(40 / 44, abs=1e-6)
    assert row["shared"] == 8
    summary = json.loads(table.schema.metadata[b"dupgram"])
    assert summary["kept_pairs"] == 1


def test_pairs_table_is_typed_and_matches_the_file(tmp_path):
    import pyarrow as pa

    table = dupgram.pairs(NEWS, n=5, min_sscr=0.5, quiet=True)
    assert table.schema.field("a").type == pa.string()
    assert table.schema.field("sscr").type == pa.float64()
    assert table.schema.field("shared").type == pa.int64()
    assert table.num_rows > 0
    out = tmp_path / "pairs.tsv"
    summary = dupgram.pairs(NEWS, n=5, min_sscr=0.5, output=out, quiet=True)
    assert summary["kept_pairs"] + summary["group_pairs"] == table.num_rows
    lines = out.read_text().splitlines()
    assert lines[0].split("\t") == ["a", "b", "sscr", "ssr", "contain_a_in_b", "contain_b_in_a", "cover_a", "cover_b",
                                    "shared"]
    from_file = [(f[0], f[1], float(f[2]), int(f[8])) for f in (line.split("\t") for line in lines[1:])]
    assert from_file == [(r["a"], r["b"], r["sscr"], r["shared"]) for r in table.to_pylist()]
    assert all(s >= 0.5 for s in table.column("sscr").to_pylist())


def test_pairs_without_any_pair_is_an_empty_table():
    table = dupgram.pairs(KUPIETZ, n=30, quiet=True)
    assert table.num_rows == 0
    assert table.column_names[:2] == ["a", "b"]


def independent_ngram_counts(path: Path, n: int) -> Counter:
    """Whitespace n-grams within each document, as `--tokens raw` makes them."""
    counts: Counter = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        words = json.loads(line)["text"].split()
        counts.update(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    return Counter({g: c for g, c in counts.items() if c >= 2})


def test_ngrams_stream_equals_an_independent_count():
    stream = dupgram.ngrams(NEWS, n=3, tokens="raw", quiet=True)
    got = list(stream)
    assert Counter(dict(got)) == independent_ngram_counts(NEWS, 3)
    assert len(got) == len(dict(got)), "each n-gram once"
    assert stream.summary["output_ngrams"] == len(got)


def test_ngrams_to_a_file_and_min_count(tmp_path):
    out = tmp_path / "dups.tsv"
    summary = dupgram.ngrams(NEWS, n=3, tokens="raw", min_count=3, output=out, quiet=True)
    expected = {g: c for g, c in independent_ngram_counts(NEWS, 3).items() if c >= 3}
    lines = out.read_text().splitlines()
    assert {g: int(c) for g, _, c in (line.rpartition("\t") for line in lines)} == expected
    assert summary["output_ngrams"] == len(expected)
    assert not (tmp_path / "dups.tsv.lex").exists(), "the lexicon is saved only when asked for, as on the command line"


def test_dedup_writes_the_file_and_returns_the_summary(tmp_path):
    out = tmp_path / "kept.jsonl"
    summary = dupgram.dedup(NEWS, output=out, unit="doc", n=5, strip=True, quiet=True)
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    documents = len(NEWS.read_text().splitlines())
    assert summary["units"] == documents
    assert len(kept) == documents - summary["documents_removed"]
    assert summary["units_removed"] > 0, "the sample has reprinted stories"
    marked = tmp_path / "marked.jsonl"
    dupgram.dedup(NEWS, output=marked, unit="doc", n=5, quiet=True)
    records = [json.loads(line) for line in marked.read_text().splitlines()]
    # --strip drops what is wholly duplicate (dup_fraction 1), and a document
    # without words (news-012 is empty: dup_fraction 0, nothing to judge).
    assert [r["id"] for r in records if r["dup_fraction"] < 1.0 and r["id"] != "news-012"] == [r["id"] for r in kept]
    assert [r["dup_fraction"] for r in records if r["id"] == "news-012"] == [0.0]


def test_errors_carry_the_command_lines_message(tmp_path):
    with pytest.raises(dupgram.DupgramError, match="no-such-file.jsonl: no such file"):
        dupgram.dedup(tmp_path / "no-such-file.jsonl", output=tmp_path / "out.jsonl")
    with pytest.raises(ValueError, match="--threshold"):
        dupgram.dedup(NEWS, output=tmp_path / "out.jsonl", threshold="lots")
    with pytest.raises(ValueError, match="--no-such-option"):
        dupgram.dedup(NEWS, output=tmp_path / "out.jsonl", no_such_option=1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": "b", "text": \n')
    with pytest.raises(dupgram.DupgramError, match="bad.jsonl"):
        dupgram.dedup(bad, output=tmp_path / "out.jsonl", quiet=True)
    assert sorted(os.listdir(tmp_path)) == ["bad.jsonl"], "nothing written under or beside the output name"


def test_ctrl_c_raises_keyboard_interrupt_and_leaves_nothing(tmp_path):
    """A Python thread sees the job's scratch directory (so the job runs
    without the GIL), then sends SIGINT's KeyboardInterrupt to the caller."""
    corpus = tmp_path / "corpus.txt"
    rng = random.Random(7)
    words = [f"w{i}" for i in range(5000)]
    with open(corpus, "w") as f:
        for _ in range(60_000):
            f.write(" ".join(rng.choices(words, k=60)) + "\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    seen = threading.Event()

    def interrupt_once_running():
        while not seen.is_set():
            if any(p.name.startswith("dupgram-") for p in scratch.iterdir()):
                seen.set()
                _thread.interrupt_main()
                return
            threading.Event().wait(0.01)

    # Python's own Ctrl-C handler, whatever this process was started with: a
    # background job of a non-interactive shell starts with SIGINT ignored,
    # and then interrupt_main does nothing (and Ctrl-C could not reach it).
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    watcher = threading.Thread(target=interrupt_once_running, daemon=True)
    watcher.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            # --memory bounds the whole process, and this one holds an
            # interpreter and pyarrow (tens of MiB, more or less by test order).
            dupgram.ngrams(corpus, n=5, output=out / "dups.tsv", tmp_dir=scratch, threads=1, memory="1G", quiet=True)
    finally:
        seen.set()
        watcher.join()
        signal.signal(signal.SIGINT, handler)
    assert list(scratch.iterdir()) == [], "temporary files removed"
    assert list(out.iterdir()) == [], "no output, not even a temporary one"


def test_parquet_round_trip(tmp_path):
    """The Kupietz pairs from a Parquet copy of the corpus (written by
    pyarrow), written as Parquet, equal those from JSON Lines."""
    assert "parquet" in dupgram.choices("pairs", "format")
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(line) for line in KUPIETZ.read_text().splitlines()]
    corpus = tmp_path / "kupietz.parquet"
    pq.write_table(pa.Table.from_pylist(rows), corpus)
    expected = dupgram.pairs(KUPIETZ, n=5, quiet=True)
    assert dupgram.pairs(corpus, n=5, quiet=True).to_pylist() == expected.to_pylist()
    out = tmp_path / "pairs.parquet"
    dupgram.pairs(corpus, n=5, output=out, quiet=True)
    written = pq.read_table(out)
    assert written.column_names == expected.column_names
    # The table went through text with 6 decimals; Parquet keeps the float64.
    rounded = [{k: round(v, 6) if isinstance(v, float) else v for k, v in row.items()} for row in written.to_pylist()]
    assert rounded == expected.to_pylist()


def _words(text):
    return [w.lower() for w in text.replace(",", " ").replace(".", " ").split()]


def test_overlap_table_equals_a_brute_force(tmp_path):
    reference = [
        "the council voted to extend the night bus service to the northern suburbs",
        "heavy rain caused flooding in several low lying streets near the river",
        "nothing in common with any query at all",
    ]
    query = [
        "Residents said the council voted to extend the night bus service, at last.",
        "A quiet day. Heavy rain caused flooding in several places; the council voted to extend it.",
        "short text",
        "",
    ]
    q, r = tmp_path / "q.jsonl", tmp_path / "r.jsonl"
    q.write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n" for i, t in enumerate(query)))
    r.write_text("".join(json.dumps({"id": f"r{i}", "text": t}) + "\n" for i, t in enumerate(reference)))
    n = 3
    grams = [{tuple(w[i : i + n]) for i in range(len(w) - n + 1)} for w in map(_words, reference)]
    table = dupgram.overlap(q, r, n=n, top=2, quiet=True)
    assert table.column_names[:6] == ["id", "tokens", "ngrams", "ngrams_found", "covered_tokens", "coverage"]
    rows = table.to_pylist()
    for text, row in zip(query, rows):
        words = _words(text)
        covered_by = []
        for ref in grams:
            covered = set()
            for i in range(len(words) - n + 1):
                if tuple(words[i : i + n]) in ref:
                    covered.update(range(i, i + n))
            covered_by.append(covered)
        found = [i for i in range(len(words) - n + 1) if any(tuple(words[i : i + n]) in g for g in grams)]
        covered = set().union(*covered_by)
        assert row["tokens"] == len(words)
        assert row["ngrams"] == max(0, len(words) - n + 1)
        assert row["ngrams_found"] == len(found)
        assert row["covered_tokens"] == len(covered)
        assert row["coverage"] == pytest.approx(len(covered) / len(words) if words else 0.0, abs=1e-6)
        best = sorted(((-len(c), i) for i, c in enumerate(covered_by) if c))[:2]
        assert [(row["ref_1"], row["covered_1"]), (row["ref_2"], row["covered_2"])] == [
            (f"r{i}", -c) for c, i in best
        ] + [("", 0)] * (2 - len(best))
    summary = json.loads(table.schema.metadata[b"dupgram"])
    assert summary["query_documents"] == 4 and summary["reference_documents"] == 3
    marks, kept = tmp_path / "marks.tsv", tmp_path / "kept.jsonl"
    summary = dupgram.overlap(
        [q], [r], n=n, output=tmp_path / "rows.tsv", mark_reference=marks, drop_reference=kept, quiet=True
    )
    assert summary["reference_documents_found"] == 2
    query_grams = {tuple(w[i : i + n]) for w in map(_words, query) for i in range(len(w) - n + 1)}
    counts = [sum(tuple(w[i : i + n]) in query_grams for i in range(len(w) - n + 1)) for w in map(_words, reference)]
    assert counts == [7, 4, 0]
    assert marks.read_text().splitlines() == ["id\tngrams_found", "r0\t7", "r1\t4"]
    assert [json.loads(line)["id"] for line in kept.read_text().splitlines()] == ["r2"]
    assert (tmp_path / "rows.tsv").read_text().splitlines()[1].startswith("q0\t")
