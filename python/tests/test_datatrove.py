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

from dupgram.datatrove import DupgramDedup  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NEWS = ROOT / "data-samples" / "news.jsonl"
CORPORA = ROOT.parent / "shared" / "corpora"
REUTERS = CORPORA / "reuters21578.jsonl.zst"


def stripped_records(corpus: Path, tmp_path: Path, **options) -> list[dict]:
    """What `dupgram dedup --strip` keeps: the documents and their cut text."""
    out = tmp_path / "stripped.jsonl"
    dupgram.dedup(corpus, output=out, strip=True, quiet=True, **options)
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
    originals = {json.loads(line)["id"]: json.loads(line)["text"] for line in NEWS.read_text().splitlines()}
    expected = stripped_records(NEWS, tmp_path, unit="doc", n=5)
    assert len(expected) < len(originals), "the sample has reprinted stories"
    assert [k["id"] for k in kept] == [r["id"] for r in expected], "the documents --strip keeps"
    assert all(k["metadata"]["dup_fraction"] < 1.0 for k in kept)
    assert [k["text"] for k in kept] == [originals[k["id"]] for k in kept], "without strip the text is untouched"


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
    expected = stripped_records(REUTERS, tmp_path, **options)
    assert 0 < len(expected) < step.summary["documents"]
    assert [d.id for d in kept] == [r["id"] for r in expected], "the documents --strip keeps"
    assert [d.text for d in kept] == [r["text"] for r in expected], "the text --strip writes"
    assert step.summary["units_removed"] > 0
    assert any(0.0 < d.metadata["dup_fraction"] < 1.0 and d.metadata["dup_spans"] for d in kept)
