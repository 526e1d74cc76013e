"""The datatrove step, in a datatrove pipeline, against `dupgram dedup` run directly."""

from __future__ import annotations

import gzip
import json
import os
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


@pytest.mark.parametrize("options", [dict(unit="p", n=7, threshold=0.5), dict(unit="span", n=7)], ids=["p", "span"])
def test_step_on_reuters(tmp_path, options):
    """Paragraph and span dedup of Reuters-21578 through datatrove's own reader:
    the step keeps what `dupgram dedup` keeps, and strip cuts what --strip cuts."""
    if not REUTERS.is_file():
        pytest.skip(f"{REUTERS} is absent: the Reuters-21578 test needs ../shared/corpora")
    pytest.importorskip("zstandard", reason="zstandard is not installed: datatrove cannot read .jsonl.zst")
    reader = JsonlReader(str(CORPORA), glob_pattern=REUTERS.name, compression="zstd")
    step = DupgramDedup(strip=True, quiet=True, **options)
    kept = list(step(reader()))
    expected = stripped_records(REUTERS, tmp_path, **options)
    assert 0 < len(expected) < step.summary["documents"]
    assert [d.id for d in kept] == [r["id"] for r in expected], "the documents --strip keeps"
    assert [d.text for d in kept] == [r["text"] for r in expected], "the text --strip writes"
    assert any(0.0 < d.metadata["dup_fraction"] < 1.0 and d.metadata["dup_spans"] for d in kept)


def reuters_shards(folder: Path, shards: int) -> list[Path]:
    """Reuters-21578 cut into `shards` JSON Lines files of consecutive documents."""
    if not REUTERS.is_file():
        pytest.skip(f"{REUTERS} is absent: the global dedup tests need ../shared/corpora")
    zstandard = pytest.importorskip("zstandard", reason="zstandard is not installed: Reuters is .jsonl.zst")
    lines = zstandard.ZstdDecompressor().decompress(REUTERS.read_bytes(), max_output_size=1 << 30).splitlines(True)
    folder.mkdir()
    paths = []
    for s in range(shards):
        path = folder / f"shard-{s}.jsonl"
        path.write_bytes(b"".join(lines[s * len(lines) // shards : (s + 1) * len(lines) // shards]))
        paths.append(path)
    return paths


def in_task_order(shards: list[Path], tasks: int) -> list[Path]:
    """The shards as datatrove's readers share them out (task r: r, r + tasks, …), task after task."""
    return [path for rank in range(tasks) for path in shards[rank::tasks]]


def kept_by_one_dedup(shards: list[Path], tmp_path: Path, **options) -> list[tuple[str, str]]:
    out = tmp_path / "one.jsonl"
    dupgram.dedup(shards, output=out, strip=True, quiet=True, **options)
    return [(r["id"], r["text"]) for r in map(json.loads, out.read_text().splitlines())]


def written(folder: Path) -> list[tuple[str, str]]:
    """The documents of a JsonlWriter's output, file after file (``${rank}`` sorts by task)."""
    import gzip

    records = []
    for path in sorted(folder.glob("*.jsonl*")):
        opened = gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")
        with opened as lines:
            records += [(r["id"], r["text"]) for r in map(json.loads, lines)]
    return records


def test_global_steps_judge_all_tasks_as_one_dedup(tmp_path):
    """Spool, plan, the count stages, find and filter with 4 tasks over 8
    shards keep what one `dupgram dedup --strip` over the shards in task
    order keeps, text and all."""
    from dupgram.datatrove import DupgramFilter, DupgramFind, DupgramPlan, DupgramSpool, DupgramStage

    shards = reuters_shards(tmp_path / "shards", 8)
    options = {"unit": "p", "n": 7}
    work, out, logs = tmp_path / "work", tmp_path / "out", tmp_path / "logs"

    def reader():
        return JsonlReader(str(shards[0].parent), glob_pattern="*.jsonl")

    plan = DupgramPlan(work, tasks=4, buckets=3, quiet=True, **options)
    assert plan.stages() == [("lexicon", 4), ("vocab", 1), ("map", 4), ("reduce", 3), ("finish", 1)]

    def run_stages() -> None:
        """The pipelines, as a user's script runs them (new executors each time)."""
        before = LocalPipelineExecutor(
            [reader(), DupgramSpool(work)], tasks=4, workers=2, logging_dir=str(logs / "spool")
        )
        before = LocalPipelineExecutor([plan], tasks=1, logging_dir=str(logs / "plan"), depends=before)
        for stage, tasks in plan.stages():
            before = LocalPipelineExecutor(
                [DupgramStage(work, stage)], tasks=tasks, workers=2, logging_dir=str(logs / stage), depends=before
            )
        find = LocalPipelineExecutor(
            [DupgramFind(work, tasks=4, quiet=True, **options)], tasks=1, logging_dir=str(logs / "find"), depends=before
        )
        LocalPipelineExecutor(
            [reader(), DupgramFilter(work, strip=True), JsonlWriter(str(out), output_filename="${rank}.jsonl")],
            tasks=4,
            workers=2,
            logging_dir=str(logs / "filter"),
            depends=find,
        ).run()

    run_stages()
    expected = kept_by_one_dedup(in_task_order(shards, 4), tmp_path, **options)
    within_tasks = sum(len(kept_by_one_dedup(shards[r::4], tmp_path, **options)) for r in range(4))
    assert within_tasks > len(expected), "the shards repeat each other's text: judged apart, more is kept"
    got = written(out)
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert got == expected
    assert sorted(p.name for p in (work / "decisions").iterdir()) == [f"{r:05d}.jsonl" for r in range(4)]
    # The count the stages made is what one `dupgram ngrams` over the documents gives.
    dupgram.ngrams(in_task_order(shards, 4), output=tmp_path / "one.tsv", n=7, quiet=True)
    assert (work / "dups.tsv").read_bytes() == (tmp_path / "one.tsv").read_bytes()

    # A spool task, a map task and a filter task killed midway: their
    # completion markers gone, a torn spool file and a torn output left. Run
    # again, datatrove runs those tasks only (dupgram finds the map task
    # done), the spool file stays as it was, and the result is the same.
    spooled = (work / "docs" / "00002.jsonl.gz").stat().st_mtime_ns
    (logs / "spool" / "completions" / "00002").unlink()
    (work / "docs" / ".00002.jsonl.gz.partial").write_bytes(b"torn")
    (logs / "map" / "completions" / "00001").unlink()
    (logs / "filter" / "completions" / "00001").unlink()
    (out / "00001.jsonl.gz").write_bytes(b"torn")
    (logs / "find" / "completions" / "00000").unlink()
    run_stages()
    assert written(out) == expected
    assert not (work / "docs" / ".00002.jsonl.gz.partial").exists()
    assert (work / "docs" / "00002.jsonl.gz").stat().st_mtime_ns == spooled

    # Documents spooled again, changed, after the count: the find step refuses the stale count.
    (work / "docs" / "00002.jsonl.gz").write_bytes(gzip.compress(b'{"id": "x", "text": "changed"}\n'))
    with pytest.raises(RuntimeError, match="changed since DupgramPlan counted it"):
        list(DupgramFind(work, tasks=4, quiet=True, **options).run(None))


@pytest.mark.parametrize("unit, min_span", [("doc", None), ("span", None), ("span", 12)])
def test_example_script_dedups_a_shard_folder_across_tasks(tmp_path, unit, min_span):
    """python/examples/datatrove_dedup.py, as documented, against one dedup over the shards."""
    import subprocess
    import sys

    shards = reuters_shards(tmp_path / "shards", 8)
    out = tmp_path / "kept"
    script = ROOT / "python" / "examples" / "datatrove_dedup.py"
    args = ["--input", str(shards[0].parent), "--output", str(out), "--tasks", "4", "--workers", "2"]
    args += ["--unit", unit, "-n", "7", "--strip"]
    options = {"unit": unit, "n": 7}
    if min_span:
        args += ["--min-span", str(min_span)]
        options["min_span"] = min_span
    subprocess.run([sys.executable, str(script), *args], check=True, cwd=tmp_path)
    work = tmp_path / "dupgram-work"
    if unit == "span":
        # Each task hashed its own K-grams; the find step merged them.
        assert sorted(p.name for p in (work / "kgrams").iterdir()) == [f"{r:05d}" for r in range(4)]
    else:
        assert (work / "dups.tsv").stat().st_size > 0, "the count stages counted"
    expected = kept_by_one_dedup(in_task_order(shards, 4), tmp_path, **options)
    assert len(expected) < 20841
    if unit == "span" and not min_span:
        # A task's documents spooled again, changed, after they were hashed: the find step refuses.
        from dupgram.datatrove import DupgramFind

        spooled = work / "docs" / "00001.jsonl.gz"
        os.utime(spooled, ns=(spooled.stat().st_atime_ns, spooled.stat().st_mtime_ns + 10**9))
        with pytest.raises(RuntimeError, match="changed since DupgramHash hashed it"):
            list(DupgramFind(work, tasks=4, unit="span", n=7, quiet=True).run(None))
    if min_span:
        # Shorter passages count: more is cut than at the default 50 words.
        default = kept_by_one_dedup(in_task_order(shards, 4), tmp_path, unit=unit, n=7)
        assert sum(map(len, (t for _, t in expected))) < sum(map(len, (t for _, t in default)))
    assert written(out) == expected


def test_example_script_reads_parquet_shards_with_its_options(tmp_path):
    """Parquet shards, --threshold, --memory, --buckets and --work: the documents one
    dedup keeps of the same records as JSON Lines, in the same order."""
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    shards = reuters_shards(tmp_path / "shards", 4)
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    for path in shards:
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        table = pa.table({"id": [r["id"] for r in records], "text": [r["text"] for r in records]})
        pq.write_table(table, parquet / f"{path.stem}.parquet")
    out, work = tmp_path / "kept", tmp_path / "elsewhere"
    script = ROOT / "python" / "examples" / "datatrove_dedup.py"
    args = ["--input", str(parquet), "--output", str(out), "--tasks", "2", "--work", str(work), "--memory", "256M"]
    args += ["--buckets", "3"]
    subprocess.run([sys.executable, str(script), *args, "--unit", "p", "--threshold", "0.3"], check=True, cwd=tmp_path)
    assert (work / "job.json").is_file(), "the work folder is where --work says"
    assert len(list((work / "logs" / "reduce" / "completions").iterdir())) == 3, "--buckets 3: three reduce tasks"
    expected = kept_by_one_dedup(in_task_order(shards, 2), tmp_path, unit="p", n=7, threshold=0.3)
    kept = written(out)
    originals = {r["id"]: r["text"] for path in shards for r in map(json.loads, path.read_text().splitlines())}
    assert [i for i, _ in kept] == [i for i, _ in expected]
    assert [t for _, t in kept] == [originals[i] for i, _ in kept], "without --strip the text is untouched"


def test_ngrams_and_pairs_steps_cover_all_tasks(tmp_path):
    """After the spool step, DupgramNgrams and DupgramPairs write what the
    command gives over the tasks' documents in task order, byte for byte."""
    from dupgram.datatrove import DupgramNgrams, DupgramPairs, DupgramPlan, DupgramSpool, DupgramStage

    folder = tmp_path / "shards"
    folder.mkdir()
    lines = NEWS.read_text(encoding="utf-8").splitlines(True)
    shards = []
    for s in range(3):
        shards.append(folder / f"s{s}.jsonl")
        shards[-1].write_text("".join(lines[s::3]), encoding="utf-8")
    work, logs = tmp_path / "work", tmp_path / "logs"
    reader = JsonlReader(str(folder), glob_pattern="*.jsonl")
    spool = LocalPipelineExecutor([reader, DupgramSpool(work)], tasks=2, logging_dir=str(logs / "spool"))
    steps = [
        DupgramNgrams(work, tasks=2, output=tmp_path / "steps.tsv", n=5, quiet=True),
        DupgramPairs(work, tasks=2, output=tmp_path / "steps.pairs", n=5, min_sscr=0.3, quiet=True),
    ]
    before = LocalPipelineExecutor(steps, tasks=1, logging_dir=str(logs / "jobs"), depends=spool)
    # The same jobs through dupgram's own stages, from the same spool.
    for job, options in [("ngrams", {"n": 5}), ("pairs", {"n": 5, "min_sscr": 0.3})]:
        plan = DupgramPlan(work, tasks=2, buckets=2, job=job, output=tmp_path / f"staged.{job}", quiet=True, **options)
        before = LocalPipelineExecutor([plan], tasks=1, logging_dir=str(logs / job), depends=before)
        for stage, tasks in plan.stages():
            step = DupgramStage(work, stage, job=job)
            before = LocalPipelineExecutor([step], tasks=tasks, logging_dir=str(logs / f"{job}-{stage}"), depends=before)
    before.run()
    ordered = in_task_order(shards, 2)
    dupgram.ngrams(ordered, output=tmp_path / "one.tsv", n=5, quiet=True)
    dupgram.pairs(ordered, output=tmp_path / "one.pairs", n=5, min_sscr=0.3, quiet=True)
    assert (tmp_path / "steps.tsv").read_bytes() == (tmp_path / "one.tsv").read_bytes()
    assert (tmp_path / "steps.pairs").read_bytes() == (tmp_path / "one.pairs").read_bytes()
    assert (tmp_path / "staged.ngrams").read_bytes() == (tmp_path / "one.tsv").read_bytes()
    assert (tmp_path / "staged.pairs").read_bytes() == (tmp_path / "one.pairs").read_bytes()
    pairs = (tmp_path / "one.pairs").read_text().splitlines()[1:]
    assert pairs, "the sample's reprinted stories make pairs"


def test_a_plan_refuses_what_it_cannot_count(tmp_path):
    """Span and exact-only units count no n-grams; an output is the step's for dedup and the user's otherwise."""
    from dupgram.datatrove import DupgramHash, DupgramPlan, DupgramStage

    with pytest.raises(ValueError, match="count no n-grams"):
        DupgramPlan(tmp_path, tasks=2, unit="span")
    with pytest.raises(ValueError, match="count no n-grams"):
        DupgramPlan(tmp_path, tasks=2, unit="p", exact_only=True)
    with pytest.raises(TypeError, match="output"):
        DupgramPlan(tmp_path, tasks=2, job="ngrams")
    with pytest.raises(TypeError, match="output"):
        DupgramPlan(tmp_path, tasks=2, output=tmp_path / "x.tsv")
    with pytest.raises(ValueError, match="no stage 'map'"):
        DupgramStage(tmp_path, "map", job="pairs")
    with pytest.raises(ValueError, match="--unit span"):
        DupgramHash(tmp_path, unit="p")


def test_a_spool_step_that_fails_leaves_no_file(tmp_path):
    """A reader error midway: the error goes on, and neither the task's
    documents nor a partial file are left for the find step."""
    from dupgram.datatrove import DupgramSpool

    def broken():
        yield Document(text="one two three", id="a")
        raise OSError("the shard is truncated")

    with pytest.raises(OSError, match="truncated"):
        list(DupgramSpool(tmp_path)(broken()))
    assert list((tmp_path / "docs").iterdir()) == []
