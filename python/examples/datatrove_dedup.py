#!/usr/bin/env python3
"""Global deduplication of a folder of shards with datatrove and dupgram.

datatrove pipelines over a shared work folder: each task spools its shards'
documents (and, for --unit span, hashes their K-grams); for the n-gram
units (doc, p, s), dupgram's own count stages (lexicon, vocab, map, reduce,
finish) count the duplicate n-grams of all of them in parallel tasks; one
task judges the documents in task order
(``dupgram dedup``, which is sequential: the first instance is kept); and
each task reads its shards again and writes the documents kept as JSONL.gz
(``OUTPUT/NNNNN.jsonl.gz``, one file per task): the documents ``dupgram
dedup --strip`` keeps of the tasks' shards concatenated in task order (task
r reads the shards r, r + tasks, r + 2 tasks, … of the sorted folder, as
datatrove's readers share files out).

    python datatrove_dedup.py --input shards/ --output kept/ --tasks 4 --workers 2 --unit p -n 7
"""

from __future__ import annotations

import argparse
from pathlib import Path

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import JsonlReader, ParquetReader
from datatrove.pipeline.writers import JsonlWriter

from dupgram.datatrove import DupgramFilter, DupgramFind, DupgramHash, DupgramPlan, DupgramSpool, DupgramStage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="a folder of JSONL (.gz, .zst) or Parquet shards")
    parser.add_argument("--output", required=True, help="where the kept documents go, one JSONL.gz a task")
    parser.add_argument("--work", help="the shared work folder [OUTPUT/../dupgram-work]")
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--buckets", type=int, help="n-gram buckets of the count stages [as many as tasks]")
    parser.add_argument("--unit", default="doc", choices=["doc", "p", "s", "line", "span"])
    parser.add_argument("-n", type=int, default=7)
    parser.add_argument("--threshold", type=float)
    parser.add_argument("--min-span", type=int)
    parser.add_argument("--exact-only", action="store_true")
    parser.add_argument("--strip", action="store_true", help="cut the duplicate spans from the documents kept")
    parser.add_argument("--memory", default="1G", help="dupgram's --memory for each task of the count and the find")
    args = parser.parse_args()

    inputs = Path(args.input)
    work = Path(args.work) if args.work else Path(args.output).resolve().parent / "dupgram-work"
    parquet = any(inputs.glob("*.parquet"))
    reader = (
        (lambda: ParquetReader(str(inputs), glob_pattern="*.parquet"))
        if parquet
        else (lambda: JsonlReader(str(inputs), glob_pattern="*.jsonl*"))
    )
    options = {"unit": args.unit, "n": args.n, "memory": args.memory, "quiet": True}
    for name in ("threshold", "min_span"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if args.exact_only:
        options["exact_only"] = True
        del options["n"]

    logs = work / "logs"
    # For --unit span, each task hashes its own documents' K-grams once they are spooled.
    hash_spans = [DupgramHash(work, **options)] if args.unit == "span" else []
    spool = LocalPipelineExecutor(
        pipeline=[reader(), DupgramSpool(work), *hash_spans],
        tasks=args.tasks,
        workers=args.workers,
        logging_dir=str(logs / "spool"),
    )
    before = spool
    if args.unit != "span" and not args.exact_only:
        # The n-gram units: the duplicate n-grams of all tasks' documents, counted stage by stage.
        plan = DupgramPlan(work, tasks=args.tasks, buckets=args.buckets, **options)
        before = LocalPipelineExecutor(pipeline=[plan], tasks=1, logging_dir=str(logs / "plan"), depends=before)
        for stage, tasks in plan.stages():
            before = LocalPipelineExecutor(
                pipeline=[DupgramStage(work, stage)],
                tasks=tasks,
                workers=args.workers,
                logging_dir=str(logs / stage),
                depends=before,
            )
    find = LocalPipelineExecutor(
        pipeline=[DupgramFind(work, tasks=args.tasks, **options)],
        tasks=1,
        logging_dir=str(logs / "find"),
        depends=before,
    )
    keep = LocalPipelineExecutor(
        pipeline=[
            reader(),
            DupgramFilter(work, strip=args.strip),
            JsonlWriter(args.output, output_filename="${rank}.jsonl.gz"),
        ],
        tasks=args.tasks,
        workers=args.workers,
        logging_dir=str(logs / "filter"),
        depends=find,
    )
    keep.run()


if __name__ == "__main__":
    main()
