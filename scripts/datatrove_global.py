"""Global deduplication of a folder of JSON Lines shards inside datatrove,
by dupgram's steps or by datatrove's own MinhashDedup or exact-substring
steps, for scripts/bench-datatrove-global.sh. Runs in a virtual
environment with datatrove and dupgram (`pip install "./python[datatrove]"`).

    python datatrove_global.py dupgram SHARDS WORK --tasks N --workers N [--unit doc -n 5 --threshold 0.5]
        [--no-smoothing] [--exact-only] [--min-span K] [--strip]
    python datatrove_global.py minhash SHARDS WORK --tasks N --workers N
    python datatrove_global.py pairs SHARDS WORK --tasks N --workers N [-n 5 --min-ssr 0.72] [--min-sscr S]
    python datatrove_global.py substrings SHARDS WORK --tasks N --workers N --dtd DIR --tokenizer FILE
        [--length-threshold BYTES]

`pairs` runs DupgramSpool, then DupgramPairs with `--clusters` (the
near-duplicate pairs of all tasks' documents, scored exactly), then removes
every document of a cluster but its first, as MinHash's cluster and filter
stages do.

`substrings` runs datatrove's ESDatasetToSequence and ESMergeSequences, then
deduplicate-text-datasets (a built checkout, DIR) as datatrove's docs say
(make_suffix_array.py, self-similar, collect), then ESRangeRemover with
`min_doc_words=0` (no length filter: only the repeated substrings go).

Writes the IDs of the documents it removed, one a line, to WORK/removed.txt;
of those it removed or whose text it changed to WORK/changed.txt; the
stages' walls to WORK/stages.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter


def reader(shards: Path) -> JsonlReader:
    return JsonlReader(str(shards), glob_pattern="*.jsonl*")


def run_stages(stages: list[tuple[str, list, int]], work: Path, workers: int, dtd: Path | None) -> dict[str, float]:
    """Each (name, pipeline, tasks) as a local executor, one after the other
    (tasks 0: commands run in `dtd`); their walls."""
    walls = {}
    for name, pipeline, tasks in stages:
        started = time.monotonic()
        if tasks == 0:
            # Not datatrove steps: commands (the exact-substring tool's).
            run_commands(pipeline, dtd, work / "es" / "dataset.bytearange")
            walls[name] = round(time.monotonic() - started, 2)
            continue
        LocalPipelineExecutor(
            pipeline=pipeline, tasks=tasks, workers=min(workers, tasks), logging_dir=str(work / "logs" / name)
        ).run()
        walls[name] = round(time.monotonic() - started, 2)
    return walls


def dupgram_stages(args, work: Path) -> list[tuple[str, list, int]]:
    from dupgram.datatrove import DupgramFilter, DupgramFind, DupgramHash, DupgramPlan, DupgramSpool, DupgramStage

    options = {"unit": args.unit, "n": args.n, "memory": args.memory, "threads": args.workers, "quiet": True}
    if args.threshold is not None:
        options["threshold"] = args.threshold
    if args.min_span is not None:
        options["min_span"] = args.min_span
    for flag in ("no_smoothing", "exact_only"):
        if getattr(args, flag):
            options[flag] = True
    if args.exact_only:
        del options["n"]
    count = []
    if args.unit != "span" and not args.exact_only:
        # The n-gram units: dupgram's count stages, a thread a task (the tasks are the parallelism).
        plan = DupgramPlan(work / "dupgram", tasks=args.tasks, **dict(options, threads=1))
        count = [("plan", [plan], 1)]
        count += [(stage, [DupgramStage(work / "dupgram", stage)], tasks) for stage, tasks in plan.stages()]
    # --unit span: each spool task hashes its documents' K-grams (a thread a task, as the count).
    hash_spans = [DupgramHash(work / "dupgram", **dict(options, threads=1))] if args.unit == "span" else []
    return [
        ("spool", [reader(args.shards), DupgramSpool(work / "dupgram"), *hash_spans], args.tasks),
        *count,
        ("find", [DupgramFind(work / "dupgram", tasks=args.tasks, **options)], 1),
        (
            "filter",
            [reader(args.shards), DupgramFilter(work / "dupgram", strip=args.strip), JsonlWriter(str(work / "kept"))],
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


def pairs_stages(args, work: Path) -> list[tuple[str, list, int]]:
    from datatrove.pipeline.base import PipelineStep
    from dupgram.datatrove import DupgramPairs, DupgramSpool

    class LaterCopies(PipelineStep):
        """Drops every document of a cluster but its first (clusters list
        their members in corpus order)."""

        name = "later copies"

        def __init__(self, clusters: Path):
            super().__init__()
            self.clusters = clusters

        def run(self, data, rank: int = 0, world_size: int = 1):
            later = set()
            with open(self.clusters, encoding="utf-8") as lines:
                for line in lines:
                    fields = line.rstrip("\n").split("\t")
                    if fields[0].isdigit():
                        later.update(fields[2:])
            for document in data:
                if str(document.id) not in later:
                    yield document

    options = {"n": args.n, "memory": args.memory, "threads": args.workers, "quiet": True}
    for name in ("min_ssr", "min_sscr"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    clusters = work / "clusters.tsv"
    return [
        ("spool", [reader(args.shards), DupgramSpool(work / "dupgram")], args.tasks),
        (
            "pairs",
            [DupgramPairs(work / "dupgram", tasks=args.tasks, output=work / "pairs.tsv", clusters=clusters, **options)],
            1,
        ),
        ("filter", [reader(args.shards), LaterCopies(clusters), JsonlWriter(str(work / "kept"))], args.tasks),
    ]


def substring_stages(args, work: Path) -> list[tuple[str, list, int]]:
    from datatrove.pipeline.dedup.exact_substrings import ESDatasetToSequence, ESMergeSequences, ESRangeRemover

    es = work / "es"
    tokenizer = str(args.tokenizer)
    return [
        ("sequences", [reader(args.shards), ESDatasetToSequence(str(es), tokenizer_name_or_path=tokenizer)], args.tasks),
        ("merge", [ESMergeSequences(str(es), tasks_stage_1=args.tasks)], 1),
        ("suffix array", suffix_array_steps(args, es), 0),
        (
            "remove",
            [
                reader(args.shards),
                ESRangeRemover(str(es), tokenizer_name_or_path=tokenizer, min_doc_words=0),
                JsonlWriter(str(work / "kept")),
            ],
            args.tasks,
        ),
    ]


def suffix_array_steps(args, es: Path) -> list[list[str]]:
    """deduplicate-text-datasets' commands over the merged sequence, run in its checkout."""
    data = str(es / "dataset.big_sequence")
    tool = "./target/debug/dedup_dataset"
    length = str(args.length_threshold)
    return [
        [sys.executable, "scripts/make_suffix_array.py", data],
        [tool, "self-similar", "--data-file", data, "--length-threshold", length, "--cache-dir", str(es / "cache"),
         "--num-threads", str(args.workers)],
        [tool, "collect", "--data-file", data, "--cache-dir", str(es / "cache"), "--length-threshold", length],
    ]


def run_commands(commands: list[list[str]], dtd: Path, ranges: Path) -> None:
    """The commands in order in `dtd`; the last one's output is the byte ranges."""
    (dtd / "tmp").mkdir(exist_ok=True)
    for command in commands[:-1]:
        subprocess.run(command, cwd=dtd, check=True, stdout=subprocess.DEVNULL)
    with open(ranges, "wb") as out:
        subprocess.run(commands[-1], cwd=dtd, check=True, stdout=out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tool", choices=["dupgram", "minhash", "pairs", "substrings"])
    parser.add_argument("shards", type=Path)
    parser.add_argument("work", type=Path)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--unit", default="doc")
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--threshold", type=float)
    parser.add_argument("--min-span", type=int)
    parser.add_argument("--memory", default="1G")
    parser.add_argument("--min-ssr", type=float)
    parser.add_argument("--min-sscr", type=float)
    parser.add_argument("--no-smoothing", action="store_true")
    parser.add_argument("--exact-only", action="store_true")
    parser.add_argument("--strip", action="store_true")
    parser.add_argument("--dtd", type=Path, help="a built checkout of deduplicate-text-datasets")
    parser.add_argument("--tokenizer", type=Path, help="a tokenizers JSON file (byte-level, under 65,535 tokens)")
    parser.add_argument("--length-threshold", type=int, default=100, help="in bytes of tokens: 2 a token")
    args = parser.parse_args()
    if args.tool == "substrings" and not (args.dtd and args.tokenizer):
        parser.error("substrings needs --dtd and --tokenizer")
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    stages = {"dupgram": dupgram_stages, "minhash": minhash_stages, "pairs": pairs_stages, "substrings": substring_stages}
    stages = stages[args.tool]
    walls = run_stages(stages(args, args.work), args.work, args.workers, args.dtd)
    kept = {}
    for path in (args.work / "kept").glob("*.jsonl.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            kept.update((r["id"], r.get("text", "")) for r in map(json.loads, lines))
    removed, changed, characters = [], [], 0
    for path in sorted(args.shards.glob("*.jsonl*")):
        opened = gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")
        with opened as lines:
            # datatrove's readers skip documents without text: neither tool sees them.
            for record in filter(lambda r: r.get("text"), map(json.loads, lines)):
                text = kept.get(record["id"])
                if text is None:
                    removed.append(record["id"])
                if text != record["text"]:
                    changed.append(record["id"])
                    characters += len(record["text"]) - len(text or "")
    (args.work / "removed.txt").write_text("".join(f"{i}\n" for i in removed))
    (args.work / "changed.txt").write_text("".join(f"{i}\n" for i in changed))
    (args.work / "stages.json").write_text(json.dumps(walls))
    summary = {"tool": args.tool, "stages": walls, "removed": len(removed), "kept": len(kept)}
    summary |= {"changed": len(changed), "characters_removed": characters}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
