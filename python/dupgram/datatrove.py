"""dupgram as a datatrove pipeline step.

    from datatrove.pipeline.readers import JsonlReader
    from dupgram.datatrove import DupgramDedup

    pipeline = [JsonlReader("data/"), DupgramDedup(unit="p", n=7, threshold=0.5), ...]

The step reads the whole document stream of its task, runs ``dupgram
dedup --attributes`` over it (Onion's rule: the first instance is kept),
and yields the kept documents in their order, each with ``dup_fraction``
(the share of its tokens in duplicate units) and ``dup_spans`` (character
offsets of the units ``--strip`` removes) in its metadata. It keeps exactly
the documents ``dupgram dedup --strip`` keeps (those whose
``dup_fraction`` is below 1), and with ``strip=True`` their text is exactly
``--strip``'s: the spans cut out.

``DupgramDedup`` judges the documents of one task (one rank). To judge the
documents of all tasks together, exactly as one ``dupgram dedup`` over the
tasks' documents in task order would, run three pipelines over a shared
work folder, as datatrove's own ``MinhashDedup`` stages run::

    spool = [JsonlReader("data/"), DupgramSpool("work/")]          # tasks=N
    find = [DupgramFind("work/", tasks=N, unit="p", n=7)]            # tasks=1
    keep = [JsonlReader("data/"), DupgramFilter("work/"), JsonlWriter("out/")]  # tasks=N

``DupgramSpool`` writes each task's documents (ID and text) to
``work/docs/NNNNN.jsonl.gz``; ``DupgramFind`` runs ``dupgram dedup
--attributes`` once over all of them, in task order, and cuts the
attributes by task into ``work/decisions/``; ``DupgramFilter`` reads its
task's documents again (the same reader, the same number of tasks) and
yields those ``dedup --strip`` keeps, in order, with ``dup_fraction`` and
``dup_spans`` as ``DupgramDedup`` gives them. After the spool step,
``DupgramNgrams`` and ``DupgramPairs`` (one task each) write the duplicate
n-grams or the near-duplicate pairs of all tasks' documents instead. Every file is written under a
temporary name and renamed once whole, so a task killed and run again (or
skipped by datatrove's completion markers) leaves the same files. The find
step's memory is dedup's ``memory``, whatever the number of documents.

Each step spools to files, so memory stays within ``memory`` however long
the stream is.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Iterator

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from . import dedup, ngrams, pairs


class DupgramDedup(PipelineStep):
    """Drops repeated text from a datatrove document stream with ``dupgram dedup``.

    Takes the options of ``dupgram dedup`` (``unit``, ``n``, ``threshold``,
    ``exact``, ``memory``, ``threads``, ``tmp_dir``, …) as keyword arguments,
    except those about files, which the step chooses; ``strip`` cuts the
    duplicate spans from the text of the documents it keeps.
    """

    name = "dupgram dedup"
    type = "🫂 - DEDUP"

    def __init__(self, *, strip: bool = False, **options: Any):
        super().__init__()
        for taken in ("output", "attributes", "format", "text_field", "id_field", "stats_json", "strip"):
            if taken in options:
                raise TypeError(f"DupgramDedup: {taken} is chosen by the step")
        self.strip = strip
        self.options = options
        self.summary: dict[str, Any] | None = None

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data is None:
            return
        with tempfile.TemporaryDirectory(prefix="pydupgram-", dir=self.options.get("tmp_dir")) as work:
            corpus, spool, marked = (Path(work) / name for name in ("docs.jsonl", "docs.pickle", "attributes.jsonl"))
            documents = spool_documents(data, corpus, spool)
            if documents == 0:
                return
            with self.track_time(unit="task"):
                self.summary = dedup(corpus, attributes=marked, format="jsonl", **self.options)
            for document, kept in judged(spool, marked):
                self.stat_update("documents")
                if not kept:
                    self.stat_update("dropped")
                    continue
                if self.strip:
                    document.text = cut(document.text, document.metadata["dup_spans"], self.options.get("unit"))
                self.stat_update("kept")
                yield document


DOCS, DECISIONS, JOB = "docs", "decisions", "job.json"


def shard_name(rank: int) -> str:
    return f"{rank:05d}"


class DupgramSpool(PipelineStep):
    """The first of the global steps: writes the task's documents (ID and
    text) to ``work_dir/docs/NNNNN.jsonl.gz`` for ``DupgramFind``, and yields nothing."""

    name = "dupgram spool"
    type = "🫂 - DEDUP"

    def __init__(self, work_dir: str | os.PathLike[str]):
        super().__init__()
        self.work_dir = Path(work_dir)

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        folder = self.work_dir / DOCS
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / f"{shard_name(rank)}.jsonl.gz"
        partial = folder / f".{shard_name(rank)}.jsonl.gz.partial"
        try:
            with self.track_time(unit="task"), gzip.open(partial, "wt", encoding="utf-8", compresslevel=1) as out:
                for document in data or ():
                    out.write(record_line(document))
                    self.stat_update("documents")
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        os.replace(partial, final)
        return
        yield  # a generator that yields nothing


def record_line(document: Document) -> str:
    """The document's ID and text as a JSON line, as dedup reads it."""
    return json.dumps({"id": str(document.id), "text": document.text}, ensure_ascii=False) + "\n"


def spooled(work_dir: Path, tasks: int, step: str) -> list[Path]:
    """The documents `DupgramSpool` wrote for tasks ``0..tasks``, in task order; all of them must be there."""
    shards = [work_dir / DOCS / f"{shard_name(r)}.jsonl.gz" for r in range(tasks)]
    missing = [str(s) for s in shards if not s.exists()]
    if missing:
        raise RuntimeError(f"{step}: no documents from {len(missing)} spool task(s), first {missing[0]}")
    return shards


class SpooledJob(PipelineStep):
    """A ``dupgram`` job over every task's documents that ``DupgramSpool``
    wrote, in task order, in one task (rank 0). Documents from the steps
    before it pass through, and those steps finish first, so several such
    jobs may share a pipeline."""

    type = "🫂 - DEDUP"

    def __init__(self, work_dir: str | os.PathLike[str], *, tasks: int, **options: Any):
        super().__init__()
        if tasks < 1:
            raise ValueError(f"{type(self).__name__}: tasks must be at least 1")
        self.work_dir = Path(work_dir)
        self.tasks = tasks
        self.options = options
        self.summary: dict[str, Any] | None = None

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        yield from data or ()
        if rank != 0:
            return
        shards = spooled(self.work_dir, self.tasks, type(self).__name__)
        with self.track_time(unit="job"):
            self.summary = self.job(shards)

    def job(self, shards: list[Path]) -> dict[str, Any]:
        """Runs the job over `shards`; returns its summary."""
        raise NotImplementedError


class DupgramFind(SpooledJob):
    """The second of the global steps, in one task: ``dupgram dedup`` over the
    documents ``DupgramSpool`` wrote for tasks ``0..tasks``, in that order,
    with the keyword options of ``dupgram dedup`` (``unit``, ``n``,
    ``threshold``, ``min_span``, ``exact_only``, ``memory``, ``threads``, …);
    writes each task's attributes to ``work_dir/decisions/NNNNN.jsonl``."""

    name = "dupgram find"

    def __init__(self, work_dir: str | os.PathLike[str], *, tasks: int, **options: Any):
        for taken in ("output", "attributes", "format", "text_field", "id_field", "strip"):
            if taken in options:
                raise TypeError(f"DupgramFind: {taken} is chosen by the step")
        super().__init__(work_dir, tasks=tasks, **options)

    def job(self, shards: list[Path]) -> dict[str, Any]:
        decisions = self.work_dir / DECISIONS
        decisions.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="pydupgram-", dir=self.options.get("tmp_dir")) as work:
            marked = Path(work) / "attributes.jsonl"
            summary = dedup(shards, attributes=marked, format="jsonl", **self.options)
            with open(marked, encoding="utf-8") as records:
                for r, shard in enumerate(shards):
                    write_decisions(shard, records, decisions / f"{shard_name(r)}.jsonl")
                if records.readline():
                    raise RuntimeError(f"{marked}: dedup wrote more records than it was given")
        job = {"tasks": self.tasks, "unit": self.options.get("unit", "p")}
        partial = self.work_dir / ".job.json.partial"
        partial.write_text(json.dumps(job))
        os.replace(partial, self.work_dir / JOB)
        self.stat_update("documents", value=summary.get("documents", 0))
        return summary


class DupgramNgrams(SpooledJob):
    """``dupgram ngrams`` over all tasks' documents (after ``DupgramSpool``),
    in one task: every n-gram seen at least twice in any of them, with its
    count, written to ``output`` as the command line writes it (byte for
    byte its file over the tasks' documents in task order); takes
    ``ngrams``' options (``n``, …)."""

    name = "dupgram ngrams"

    def __init__(self, work_dir: str | os.PathLike[str], *, tasks: int, output: str | os.PathLike[str], **options: Any):
        super().__init__(work_dir, tasks=tasks, output=output, **options)

    def job(self, shards: list[Path]) -> dict[str, Any]:
        return ngrams(shards, **self.options)


class DupgramPairs(SpooledJob):
    """``dupgram pairs`` over all tasks' documents (after ``DupgramSpool``),
    in one task: the near-duplicate pairs across tasks, by document ID,
    written to ``output`` (``clusters=`` too) as the command line writes
    them; takes ``pairs``' options."""

    name = "dupgram pairs"

    def __init__(self, work_dir: str | os.PathLike[str], *, tasks: int, output: str | os.PathLike[str], **options: Any):
        super().__init__(work_dir, tasks=tasks, output=output, **options)

    def job(self, shards: list[Path]) -> dict[str, Any]:
        return pairs(shards, **self.options)


def write_decisions(shard: Path, records: Any, out: Path) -> None:
    """Copies the next attribute records, one per document of `shard`, to `out` (whole or not at all)."""
    partial = out.with_name(f".{out.name}.partial")
    try:
        with gzip.open(shard, "rt", encoding="utf-8") as documents, open(partial, "w", encoding="utf-8") as kept:
            for line_number, _ in enumerate(documents, 1):
                record = records.readline()
                if not record:
                    raise RuntimeError(f"{shard}:{line_number}: dedup wrote fewer records than it was given")
                kept.write(record)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, out)


class DupgramFilter(PipelineStep):
    """The last of the global steps: of the task's documents (read again, as
    ``DupgramSpool`` read them), yields those ``dupgram dedup --strip``
    keeps, with ``dup_fraction`` and ``dup_spans`` in their metadata;
    ``strip`` cuts the duplicate spans from their text."""

    name = "dupgram filter"
    type = "🫂 - DEDUP"

    def __init__(self, work_dir: str | os.PathLike[str], *, strip: bool = False):
        super().__init__()
        self.work_dir = Path(work_dir)
        self.strip = strip
        self.unit: str | None = None

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        job_file = self.work_dir / JOB
        if not job_file.exists():
            raise RuntimeError(f"DupgramFilter: {job_file} is missing: run DupgramFind first")
        job = json.loads(job_file.read_text())
        if world_size != job["tasks"]:
            raise RuntimeError(f"DupgramFilter: {world_size} tasks, where DupgramFind judged {job['tasks']}")
        self.unit = job["unit"]
        marked = self.work_dir / DECISIONS / f"{shard_name(rank)}.jsonl"
        with open(marked, encoding="utf-8") as records:
            yield from self.kept(judged_stream(data or (), records, marked))

    def kept(self, judged_documents: Iterator[tuple[Document, bool]]) -> DocumentsPipeline:
        for document, kept in judged_documents:
            self.stat_update("documents")
            if not kept:
                self.stat_update("dropped")
                continue
            if self.strip:
                document.text = cut(document.text, document.metadata["dup_spans"], self.unit)
            self.stat_update("kept")
            yield document


def spool_documents(data: DocumentsPipeline, corpus: Path, spool: Path) -> int:
    """Writes each document's ID and text to `corpus` (JSON Lines, for
    dedup) and the whole document to `spool` (pickles, for the yield);
    returns how many there were."""
    count = 0
    with open(corpus, "w", encoding="utf-8") as jsonl, open(spool, "wb") as pickles:
        for document in data:
            jsonl.write(record_line(document))
            pickle.dump(document, pickles, protocol=pickle.HIGHEST_PROTOCOL)
            count += 1
    return count


def judged(spool: Path, marked: Path) -> Iterator[tuple[Document, bool]]:
    """Each spooled document with dedup's attributes in its metadata, and
    whether it is kept, in corpus order."""

    def documents() -> Iterator[Document]:
        with open(spool, "rb") as pickles:
            while True:
                try:
                    yield pickle.load(pickles)
                except EOFError:
                    return

    with open(marked, encoding="utf-8") as records:
        yield from judged_stream(documents(), records, marked)


def judged_stream(documents: Iterator[Document], records: Any, marked: Path) -> Iterator[tuple[Document, bool]]:
    """Each document with the attributes of the next record of `records` in
    its metadata, and whether it is kept. dedup writes one attribute record
    per input record, in order; the IDs are checked to be sure."""
    line_number = 0
    for document in documents:
        line = records.readline()
        line_number += 1
        if not line:
            raise RuntimeError(f"{marked}: {line_number - 1} records, for more documents (did the input change?)")
        record = json.loads(line)
        if record["id"] != str(document.id):
            raise RuntimeError(f"{marked}:{line_number}: record {record['id']!r} is not document {document.id!r}")
        attributes = record["attributes"]
        fraction = attributes["dupgram_dup_fraction"][0][2]
        document.metadata["dup_fraction"] = fraction
        document.metadata["dup_spans"] = [[start, end] for start, end, _ in attributes["dupgram_duplicate_spans"]]
        # 1.0 exactly for the documents --strip drops whole.
        yield document, fraction < 1.0
    if records.readline():
        raise RuntimeError(f"{marked}: more records than documents (did the input change?)")


# What Rust's `char::is_whitespace` takes for whitespace (Unicode White_Space),
# which `--unit span --strip` trims around a cut; Python's `str.strip()` takes more.
WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


def cut(text: str, spans: list[list[int]], unit: str | None = None) -> str:
    """`text` without the character ranges `spans` (sorted, disjoint), as
    ``--strip`` cuts them: for ``--unit span`` the whitespace around each cut
    goes with it and the words on either side are joined by one space."""
    if unit != "span":
        kept, at = [], 0
        for start, end in spans:
            kept.append(text[at:start])
            at = end
        kept.append(text[at:])
        return "".join(kept)
    if not spans:
        return text
    pieces, at = [], 0
    for i, (start, end) in enumerate(spans):
        piece = text[at:start]
        pieces.append(piece.rstrip(WHITESPACE) if i == 0 else piece.strip(WHITESPACE))
        at = end
    pieces.append(text[at:].lstrip(WHITESPACE))
    return " ".join(piece for piece in pieces if piece)
