"""The datatrove step, in a datatrove pipeline, against `dupgram dedup` run directly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dupgram

pytest.importorskip("datatrove", reason="datatrove is not installed (pip install datatrove); its step is not tested")

from datatrove.data import Document  # noqa: E402
from datatrove.executor import LocalPipelineExecutor  # noqa: E402
from datatrove.pipeline.readers import JsonlReader  # noqa: E402
from datatrove.pipeline.writers import JsonlWriter  # noqa: E402

from dupgram.datatrove import DupgramDedup, cut  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NEWS = ROOT / "data-samples" / "news.jsonl"
CORPORA = ROOT.parent / "shared" / "corpora"
REUTERS = CORPORA / "reuters21578.jsonl.zst"


def marked_records(corpus: Path, tmp_path: Path, **options) -> list[dict]:
    """What `dupgram dedup` (marking, not stripping) says of every document."""
    out = tmp_path / "marked.jsonl"
    dupgram.dedup(corpus, output=out, quiet=True, **options)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    out.unlink()
    return records


def test_step_in_a_local_pipeline(tmp_path):
    """Reader → dupgram → writer, as a datatrove user runs it."""
    written = tmp_path / "written"
    LocalPipelineExecutor(
        pipeline=[
            JsonlReader(str(NEWS.parent), glob_pattern=NEWS.name),
            DupgramDedup(unit="doc", n=5, quiet=True),
            JsonlWriter(str(written), output_filename="kept.jsonl", compression=None),
        ],
        tasks=1,
        logging_dir=str(tmp_path / "logs"),
    ).run()
    kept = [json.loads(line) for line in (written / "kept.jsonl").read_text().splitlines()]
    # datatrove's reader passes no document with empty text (news-012).
    records = [r for r in marked_records(NEWS, tmp_path, unit="doc", n=5) if r["text"]]
    expected = [r for r in records if r["dup_fraction"] < 1.0]
    assert len(expected) < len(records), "the sample has reprinted stories"
    assert [k["id"] for k in kept] == [r["id"] for r in expected]
    assert [k["metadata"]["dup_fraction"] for k in kept] == [r["dup_fraction"] for r in expected]
    assert [k["text"] for k in kept] == [r["text"] for r in expected], "without strip the text is untouched"


def test_step_keeps_metadata_and_order():
    docs = [
        Document(text="one two three four five six seven eight nine ten", id="a", metadata={"url": "u1"}),
        Document(text="something else entirely with its own words in it", id="b", metadata={"url": "u2"}),
        Document(text="one two three four five six seven eight nine ten", id="c", metadata={"url": "u3"}),
    ]
    kept = list(DupgramDedup(unit="doc", n=3, no_smoothing=True, quiet=True)(iter(docs)))
    assert [(d.id, d.metadata["url"], d.metadata["dup_fraction"]) for d in kept] == [("a", "u1", 0.0), ("b", "u2", 0.0)]
    assert list(DupgramDedup(quiet=True)(None)) == []
    with pytest.raises(TypeError, match="output"):
        DupgramDedup(output="x.jsonl")


def test_step_on_reuters(tmp_path):
    """Paragraph dedup of Reuters-21578 through datatrove's own reader: the
    step keeps what `dupgram dedup` keeps, and strip cuts what --strip cuts."""
    if not REUTERS.is_file():
        pytest.skip(f"{REUTERS} is absent: the Reuters-21578 test needs ../shared/corpora")
    pytest.importorskip("zstandard", reason="zstandard is not installed: datatrove cannot read .jsonl.zst")
    options = dict(unit="p", n=7, threshold=0.5)
    reader = JsonlReader(str(CORPORA), glob_pattern=REUTERS.name, compression="zstd")
    step = DupgramDedup(strip=True, quiet=True, **options)
    kept = list(step(reader()))
    records = marked_records(REUTERS, tmp_path, **options)
    expected = [r for r in records if r["dup_fraction"] < 1.0]
    assert 0 < len(expected) < len(records)
    assert [d.id for d in kept] == [r["id"] for r in expected]
    assert [d.metadata["dup_fraction"] for d in kept] == [r["dup_fraction"] for r in expected]
    assert [d.text for d in kept] == [cut(r["text"], r["dup_spans"]) for r in expected]
    assert step.summary["units_removed"] > 0
    # --strip drops the same documents, except those without words, and its
    # text is the kept units' text (the step keeps what lies between units).
    stripped = tmp_path / "stripped.jsonl"
    dupgram.dedup(REUTERS, output=stripped, strip=True, quiet=True, **options)
    strip_ids = [json.loads(line)["id"] for line in stripped.read_text().splitlines()]
    assert set(strip_ids) <= {d.id for d in kept}
    no_words = {d.id for d in kept} - set(strip_ids)
    assert all(d.metadata["dup_fraction"] == 0.0 for d in kept if d.id in no_words)
