"""Global deduplication of a folder of JSON Lines shards inside datatrove,
by dupgram's steps or by datatrove's own MinhashDedup, for
scripts/bench-datatrove-global.sh. Runs in a virtual environment with
datatrove and dupgram (`pip install "./python[datatrove]"`).

    python datatrove_global.py dupgram SHARDS WORK --tasks N --workers N [--unit doc -n 5 --threshold 0.5]
        [--no-smoothing] [--exact-only]
    python datatrove_global.py minhash SHARDS WORK --tasks N --workers N

Writes the IDs of the documents it removed, one a line, to WORK/removed.txt
and the stages' walls to WORK/stages.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import time
from pathlib import Path

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter


def reader(shards: Path) -> JsonlReader:
    return JsonlReader(str(shards), glob_pattern="*.jsonl*")


def run_stages(stages: list[tuple[str, list, int]], work: Path, workers: int) -> dict[str, float]:
    """Each (name, pipeline, tasks) as a local executor, one after the other; their walls."""
    walls = {}
    for name, pipeline, tasks in stages:
        started = time.monotonic()
        LocalPipelineExecutor(
            pipeline=pipeline, tasks=tasks, workers=min(workers, tasks), logging_dir=str(work / "logs" / name)
        ).run()
        walls[name] = round(time.monotonic() - started, 2)
    return walls


def dupgram_stages(args, work: Path) -> list[tuple[str, list, int]]:
    from dupgram.datatrove import DupgramFilter, DupgramFind, DupgramSpool

    options = {"unit": args.unit, "n": args.n, "memory": args.memory, "threads": args.workers, "quiet": True}
    if args.threshold is not None:
        options["threshold"] = args.threshold
    for flag in ("no_smoothing", "exact_only"):
        if getattr(args, flag):
            options[flag] = True
    if args.exact_only:
        del options["n"]
    return [
        ("spool", [reader(args.shards), DupgramSpool(work / "dupgram")], args.tasks),
        ("find", [DupgramFind(work / "dupgram", tasks=args.tasks, **options)], 1),
        (
            "filter",
            [reader(args.shards), DupgramFilter(work / "dupgram"), JsonlWriter(str(work / "kept"))],
            args.tasks,
        ),
    ]


def minhash_stages(args, work: Path) -> list[tuple[str, list, int]]:
    from datatrove.pipeline.dedup import MinhashDedupBuckets, MinhashDedupCluster, MinhashDedupFilter
    from datatrove.pipeline.dedup import MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import MinhashConfig

    config = MinhashConfig()
    m = work / "minhash"
    return [
        ("signatures", [reader(args.shards), MinhashDedupSignature(str(m / "sigs"), config=config)], args.tasks),
        (
            "buckets",
            [MinhashDedupBuckets(str(m / "sigs"), str(m / "buckets"), config=config)],
            config.num_buckets,
        ),
        ("cluster", [MinhashDedupCluster(str(m / "buckets"), str(m / "remove"), config=config)], 1),
        (
            "filter",
            [reader(args.shards), MinhashDedupFilter(str(m / "remove")), JsonlWriter(str(work / "kept"))],
            args.tasks,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tool", choices=["dupgram", "minhash"])
    parser.add_argument("shards", type=Path)
    parser.add_argument("work", type=Path)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--unit", default="doc")
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--threshold", type=float)
    parser.add_argument("--memory", default="1G")
    parser.add_argument("--no-smoothing", action="store_true")
    parser.add_argument("--exact-only", action="store_true")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    stages = dupgram_stages(args, args.work) if args.tool == "dupgram" else minhash_stages(args, args.work)
    walls = run_stages(stages, args.work, args.workers)
    kept = set()
    for path in (args.work / "kept").glob("*.jsonl.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            kept.update(json.loads(line)["id"] for line in lines)
    removed = []
    for path in sorted(args.shards.glob("*.jsonl*")):
        opened = gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")
        with opened as lines:
            # datatrove's readers skip documents without text: neither tool sees them.
            records = (json.loads(line) for line in lines)
            removed += [r["id"] for r in records if r.get("text") and r["id"] not in kept]
    (args.work / "removed.txt").write_text("".join(f"{i}\n" for i in removed))
    (args.work / "stages.json").write_text(json.dumps(walls))
    print(json.dumps({"tool": args.tool, "stages": walls, "removed": len(removed), "kept": len(kept)}))


if __name__ == "__main__":
    main()
