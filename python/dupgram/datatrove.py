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
tasks' documents in task order would, run the global steps as pipelines of
their own over a shared work folder, as datatrove's own ``MinhashDedup``
stages run; the count in between is dupgram's own Slurm stages (the same
code and files as ``dupgram slurm``), each a pipeline of as many tasks as
the stage has::

    spool = [JsonlReader("data/"), DupgramSpool("work/")]            # tasks=N
    plan = DupgramPlan("work/", tasks=N, unit="p", n=7)                # tasks=1
    count = [[DupgramStage("work/", stage)] for stage, _ in plan.stages()]  # tasks as stages() says
    find = [DupgramFind("work/", tasks=N, unit="p", n=7)]              # tasks=1
    keep = [JsonlReader("data/"), DupgramFilter("work/"), JsonlWriter("out/")]  # tasks=N

``DupgramSpool`` writes each task's documents (ID and text) to
``work/docs/NNNNN.jsonl.gz``. ``DupgramPlan`` plans the count of those files
(``dupgram slurm ngrams --plan-only``: one shard per task, ``buckets``
n-gram buckets) in ``work/stages/dedup/``; the ``DupgramStage`` tasks then count
in parallel: each ``lexicon`` task the words and n-gram fingerprints of its
shard, ``vocab`` the job's lexicon, each ``map`` task its shard's n-grams as
sorted runs cut by bucket, each ``reduce`` task one bucket of every shard's
runs, and ``finish`` writes the duplicate n-grams of all tasks and their
lexicon (``work/dups.tsv``, ``work/dups.lex``). ``DupgramFind`` then runs the
decisions in one task, because Onion's rule is sequential (a unit is judged
against the text kept before it): ``dupgram dedup --dups work/dups.tsv
--attributes`` over all tasks' documents in task order, which reads them
once for where the duplicate n-grams are and once to judge, and cuts the
attributes by task into ``work/decisions/``. ``DupgramFilter`` reads its
task's documents again (the same reader, the same number of tasks) and
yields those ``dedup --strip`` keeps, in order, with ``dup_fraction`` and
``dup_spans`` as ``DupgramDedup`` gives them.

``unit="span"`` counts no n-grams: it sorts a fingerprint of every K-gram.
Put ``DupgramHash("work/", min_span=K)`` after ``DupgramSpool`` in the spool
pipeline, and each task hashes its own documents' K-grams into sorted runs
(``dedup --hash-to``, ``work/kgrams/NNNNN/``); ``DupgramFind`` then merges
every task's runs (``dedup --hashed``) and judges. ``exact_only`` needs
neither: ``DupgramFind`` runs the whole ``dupgram dedup`` in its task, as it
does for any unit without a plan or hashed K-grams.

``DupgramPlan(job="ngrams")`` and ``DupgramPlan(job="pairs")`` (with
``output=``) plan ``dupgram slurm ngrams`` or ``pairs`` instead, whose
``finish`` stage writes the duplicate n-grams or the near-duplicate pairs of
all tasks' documents; ``DupgramNgrams`` and ``DupgramPairs`` write the same
in one task. Every file is written under a temporary name and renamed once
whole, and a stage's task that finished is skipped when run again, so a
task killed and run again (or skipped by datatrove's completion markers)
leaves the same files. Each task's memory is the job's ``memory``, whatever
the number of documents.

Each step spools to files, so memory stays within ``memory`` however long
the stream is.
"""

from __future__ import annotations

import filecmp
import gzip
import io
import json
import os
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from . import _with_summary, command_line, dedup, ngrams, pairs, run
from ._dupgram import run as run_args


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


DOCS, DECISIONS, JOB, STAGES = "docs", "decisions", "job.json", "stages"
# What DupgramPlan(job="dedup") has the count's finish stage write.
DUPS, DUPS_LEXICON = "dups.tsv", "dups.lex"
# Where DupgramHash puts each task's hashed K-grams, and what it notes of the documents it hashed.
KGRAMS, SOURCE = "kgrams", "source.json"


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
            # mtime=0: the same documents make the same bytes, so a task run
            # again leaves its file as it was (see `replace_unless_same`).
            with self.track_time(unit="task"), open(partial, "wb") as raw:
                with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as zipped:
                    with io.TextIOWrapper(zipped, encoding="utf-8") as out:
                        for document in data or ():
                            out.write(record_line(document))
                            self.stat_update("documents")
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        replace_unless_same(partial, final)
        return
        yield  # a generator that yields nothing


def replace_unless_same(partial: Path, final: Path) -> None:
    """Renames `partial` to `final`, unless `final` holds the same bytes: then
    `final` stays as it was, so a count planned over it (which notes each
    file's size and time) still holds."""
    if final.exists() and filecmp.cmp(partial, final, shallow=False):
        partial.unlink()
    else:
        os.replace(partial, final)


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


# The options of `dupgram dedup` that the count of DupgramPlan(job="dedup") takes too.
COUNT_OPTIONS = (
    "n", "tokens", "numbers_as_token", "strip_markup", "stopwords", "stop_top",
    "memory", "threads", "tmp_dir", "skip_bad", "quiet",
)

# dupgram's Slurm stages, in order, for each kind of job, and what each runs a task for.
STAGE_ORDER = {
    "ngrams": ("lexicon", "vocab", "map", "reduce", "finish"),
    "pairs": ("lexicon", "vocab", "index", "postings", "candidates", "score", "finish"),
}
PER_SHARD, PER_BUCKET = ("lexicon", "map", "index", "score"), ("reduce", "postings", "candidates")


def stage_tasks(stage: str, shards: int, buckets: int) -> int:
    """How many tasks `stage` has: one per shard, one per bucket, or one."""
    return shards if stage in PER_SHARD else buckets if stage in PER_BUCKET else 1


class DupgramPlan(PipelineStep):
    """After ``DupgramSpool``, in one task: plans the count of every task's
    documents as dupgram's own Slurm stages (``dupgram slurm ngrams
    --plan-only``) in ``work_dir/stages/dedup/``, one shard per spool task and
    ``buckets`` n-gram buckets (default: as many as tasks). Then run, in the
    order of :meth:`stages`, one pipeline of ``DupgramStage(work_dir, stage,
    job=job)`` per stage with the number of tasks given there. The stages of
    each job keep their files in ``work_dir/stages/JOB/``, so one spool can
    feed a job of each kind.

    ``job="dedup"`` (the default) takes ``dupgram dedup``'s keyword options,
    the same as ``DupgramFind``'s, and counts with those that choose the
    n-grams (``n``, ``tokens``, ``stopwords``, …, ``memory``, ``threads``);
    its finish stage writes ``work_dir/dups.tsv`` and ``dups.lex`` for
    ``DupgramFind``. ``job="ngrams"`` or ``"pairs"`` plans that command
    instead, with its own options, and its finish stage writes ``output``
    as ``dupgram ngrams`` or ``pairs`` over the tasks' documents would.
    """

    name = "dupgram plan"
    type = "🫂 - DEDUP"

    def __init__(
        self,
        work_dir: str | os.PathLike[str],
        *,
        tasks: int,
        buckets: int | None = None,
        job: str = "dedup",
        output: str | os.PathLike[str] | None = None,
        **options: Any,
    ):
        super().__init__()
        if tasks < 1 or (buckets is not None and buckets < 1):
            raise ValueError("DupgramPlan: tasks and buckets must be at least 1")
        if job not in ("dedup", "ngrams", "pairs"):
            raise ValueError(f"DupgramPlan: job is dedup, ngrams or pairs, not {job!r}")
        if (output is None) != (job == "dedup"):
            raise TypeError("DupgramPlan: output is chosen by the step for dedup, and needed for ngrams and pairs")
        for taken in ("workdir", "shards", "format", "text_field", "id_field", "lexicon" if job == "dedup" else ""):
            if taken in options:
                raise TypeError(f"DupgramPlan: {taken} is chosen by the step")
        if job == "dedup" and (options.get("unit") == "span" or options.get("exact_only")):
            raise ValueError(
                "DupgramPlan: --unit span and --exact-only count no n-grams: for span, put DupgramHash "
                "after DupgramSpool; for exact_only, run DupgramFind without a plan"
            )
        self.work_dir = Path(work_dir)
        self.tasks = tasks
        self.buckets = buckets or tasks
        self.job = job
        self.output = output
        self.options = options

    def stages(self) -> list[tuple[str, int]]:
        """The stages the plan's job runs, in order, each with its number of tasks."""
        order = STAGE_ORDER["pairs" if self.job == "pairs" else "ngrams"]
        return [(stage, stage_tasks(stage, self.tasks, self.buckets)) for stage in order]

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        yield from data or ()
        if rank != 0:
            return
        shards = [s.resolve() for s in spooled(self.work_dir, self.tasks, "DupgramPlan")]
        if self.job == "dedup":
            options = {k: v for k, v in self.options.items() if k in COUNT_OPTIONS}
            options.update(output=self.work_dir.resolve() / DUPS, lexicon=self.work_dir.resolve() / DUPS_LEXICON)
        else:
            options = dict(self.options, output=Path(self.output).resolve())
        options.update(
            format="jsonl",
            workdir=stages_dir(self.work_dir, self.job).resolve(),
            shards=self.tasks,
            buckets=self.buckets,
            plan_only=True,
        )
        command = "pairs" if self.job == "pairs" else "ngrams"
        with self.track_time(unit="job"):
            run_args(["slurm", *command_line(command, shards, options)])


class DupgramStage(PipelineStep):
    """One stage of the job ``DupgramPlan`` planned: task ``rank`` of it, as
    ``dupgram stage STAGE --index RANK`` runs it (the pipeline must have as
    many tasks as :meth:`DupgramPlan.stages` gives the stage). A task that
    finished is not run again."""

    name = "dupgram stage"
    type = "🫂 - DEDUP"

    def __init__(self, work_dir: str | os.PathLike[str], stage: str, *, job: str = "dedup"):
        super().__init__()
        if stage not in STAGE_ORDER["pairs" if job == "pairs" else "ngrams"]:
            raise ValueError(f"DupgramStage: a {job} job has no stage {stage!r}")
        self.work_dir = Path(work_dir)
        self.stage = stage
        self.job = job

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        yield from data or ()
        plan = read_plan(self.work_dir, self.job, f"DupgramStage({self.stage!r})")
        tasks = stage_tasks(self.stage, len(plan["shards"]), plan["buckets"])
        if world_size != tasks:
            raise RuntimeError(f"DupgramStage: stage {self.stage} has {tasks} task(s), not {world_size}")
        # `dupgram stage` runs in the job's directory; this process goes back after.
        here = os.getcwd()
        try:
            with self.track_time(unit="task"):
                workdir = stages_dir(self.work_dir, self.job).resolve()
                run_args(["stage", self.stage, f"--workdir={workdir}", f"--index={rank}"])
        finally:
            os.chdir(here)


def stages_dir(work_dir: Path, job: str) -> Path:
    """Where the stages of DupgramPlan's `job` keep their files (dupgram's work directory)."""
    return work_dir / STAGES / job


def read_plan(work_dir: Path, job: str, step: str) -> dict[str, Any]:
    """The plan DupgramPlan wrote for `job` (a header line, then the plan as JSON)."""
    path = stages_dir(work_dir, job) / JOB
    if not path.exists():
        raise RuntimeError(f"{step}: {path} is missing: run DupgramPlan first")
    return json.loads(path.read_text(encoding="utf-8").split("\n", 1)[1])


def check_unchanged(plan: dict[str, Any], step: str) -> None:
    """Refuses a count whose spooled documents were written again, changed, since it was planned."""
    for planned in plan["inputs"]:
        seconds, nanoseconds = planned["modified"]
        if file_stamp(Path(planned["path"])) != {"size": planned["size"], "mtime_ns": seconds * 10**9 + nanoseconds}:
            raise RuntimeError(
                f"{step}: {planned['path']} changed since DupgramPlan counted it: plan and count again in a new work folder"
            )


# The options of `dupgram dedup --unit span` that decide its K-grams' hashes, or how it runs.
HASH_OPTIONS = (
    "min_span", "tokens", "numbers_as_token", "strip_markup", "stopwords",
    "memory", "threads", "tmp_dir", "skip_bad", "quiet",
)


class DupgramHash(PipelineStep):
    """``unit="span"``'s per-task step, right after ``DupgramSpool`` in the
    same pipeline: once the task's documents are spooled, hashes their
    K-grams into sorted runs (``dupgram dedup --unit span --hash-to
    work_dir/kgrams/NNNNN --part RANK``), so ``DupgramFind`` merges every
    task's runs instead of hashing all documents in its one task. Takes
    ``dupgram dedup``'s options (those of ``DupgramFind``); uses
    ``min_span`` and the token options. Yields nothing."""

    name = "dupgram hash"
    type = "🫂 - DEDUP"

    def __init__(self, work_dir: str | os.PathLike[str], **options: Any):
        super().__init__()
        if options.get("unit", "span") != "span":
            raise ValueError("DupgramHash: it hashes the K-grams of --unit span; other units count with DupgramPlan")
        self.work_dir = Path(work_dir)
        self.options = {k: v for k, v in options.items() if k in HASH_OPTIONS}

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        yield from data or ()
        shard = self.work_dir / DOCS / f"{shard_name(rank)}.jsonl.gz"
        if not shard.exists():
            raise RuntimeError(f"DupgramHash: {shard} is missing: put DupgramSpool before it in the pipeline")
        folder = self.work_dir / KGRAMS
        folder.mkdir(parents=True, exist_ok=True)
        final, partial = folder / shard_name(rank), folder / f".{shard_name(rank)}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        try:
            with self.track_time(unit="task"):
                run("dedup", shard, unit="span", format="jsonl", hash_to=partial, part=rank, **self.options)
            (partial / SOURCE).write_text(json.dumps(file_stamp(shard)))
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        shutil.rmtree(final, ignore_errors=True)
        os.replace(partial, final)


def file_stamp(path: Path) -> dict[str, int]:
    """What says a file is as it was: its size and modification time."""
    status = path.stat()
    return {"size": status.st_size, "mtime_ns": status.st_mtime_ns}


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
    writes each task's attributes to ``work_dir/decisions/NNNNN.jsonl``.
    After ``DupgramPlan`` and its stages, it takes the duplicate n-grams they
    counted (``dedup --dups``) instead of counting them again."""

    name = "dupgram find"

    def __init__(self, work_dir: str | os.PathLike[str], *, tasks: int, **options: Any):
        for taken in ("output", "attributes", "format", "text_field", "id_field", "strip", "dups", "lexicon"):
            if taken in options:
                raise TypeError(f"DupgramFind: {taken} is chosen by the step")
        super().__init__(work_dir, tasks=tasks, **options)

    def job(self, shards: list[Path]) -> dict[str, Any]:
        decisions = self.work_dir / DECISIONS
        decisions.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="pydupgram-", dir=self.options.get("tmp_dir")) as work:
            marked = Path(work) / "attributes.jsonl"
            options = dict(self.options, attributes=marked, format="jsonl", **self.counted())
            summary = _with_summary("dedup", shards, options, self.hashed(shards))
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

    def counted(self) -> dict[str, Path]:
        """With a plan, the duplicate n-grams its stages counted (which must
        be there, over the documents as they are); without one, nothing."""
        if not (stages_dir(self.work_dir, "dedup") / JOB).exists():
            return {}
        plan = read_plan(self.work_dir, "dedup", "DupgramFind")
        dups, lexicon = self.work_dir / DUPS, self.work_dir / DUPS_LEXICON
        if not (dups.exists() and lexicon.exists()):
            raise RuntimeError(f"DupgramFind: {dups} is missing: run the stages of DupgramPlan first")
        check_unchanged(plan, "DupgramFind")
        return {"dups": dups, "lexicon": lexicon}

    def hashed(self, shards: list[Path]) -> list[str]:
        """With ``DupgramHash`` before it, the ``--hashed`` arguments for every
        task's K-grams (which must all be there, of the documents as they
        are); without, none."""
        folder = self.work_dir / KGRAMS
        if self.options.get("unit") != "span" or not folder.exists():
            return []
        args = []
        for rank, shard in enumerate(shards):
            part = folder / shard_name(rank)
            if not (part / SOURCE).exists():
                raise RuntimeError(f"DupgramFind: {part} is missing: DupgramHash has not run for task {rank}")
            if json.loads((part / SOURCE).read_text()) != file_stamp(shard):
                raise RuntimeError(f"DupgramFind: {shard} changed since DupgramHash hashed it: hash it again")
            args.append(f"--hashed={part}")
        return args


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
