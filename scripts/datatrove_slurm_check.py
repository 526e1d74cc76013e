"""dupgram's global datatrove steps through datatrove's SlurmPipelineExecutor.

Run by scripts/python-check.sh, in its virtual environment, once it has
brought up the throw-away single-node Slurm of scripts/lib/slurm.sh:
spool (2 tasks), plan (1 task), dupgram's count stages (lexicon, map and
reduce 2 tasks each; vocab and finish 1), find (1 task) and filter (2 tasks)
as Slurm jobs chained by dependencies, over four shards of data-samples/news.jsonl (the
last repeating the first), and checks that the documents kept are those of
one `dupgram dedup --strip` over the shards in task order.

    python scripts/datatrove_slurm_check.py WORK_DIR
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import dupgram
from datatrove.executor import SlurmPipelineExecutor
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter

from dupgram.datatrove import DupgramFilter, DupgramFind, DupgramPlan, DupgramSpool, DupgramStage

ROOT = Path(__file__).resolve().parents[1]
TASKS = 2


def shards(folder: Path) -> list[Path]:
    """news.jsonl in three shards, and a fourth that repeats the first under other IDs."""
    lines = (ROOT / "data-samples" / "news.jsonl").read_text(encoding="utf-8").splitlines(True)
    folder.mkdir(parents=True)
    parts = [lines[i * len(lines) // 3 : (i + 1) * len(lines) // 3] for i in range(3)]
    again = [json.dumps(dict(json.loads(line), id=f"again-{i}")) + "\n" for i, line in enumerate(parts[0])]
    paths = []
    for i, part in enumerate([*parts, again]):
        paths.append(folder / f"shard-{i}.jsonl")
        paths[-1].write_text("".join(part), encoding="utf-8")
    return paths


def wait_for(completions: Path, logs: Path) -> None:
    """Until the filter's tasks have all completed; fails, with the jobs'
    logs, once the queue has stayed empty for a while without them."""
    deadline, idle = time.monotonic() + 600, 0
    while not completions.exists() or len(list(completions.iterdir())) < TASKS:
        queued = subprocess.run(["squeue", "-h"], capture_output=True, text=True, check=True).stdout.strip()
        idle = 0 if queued else idle + 1
        if idle > 10 or time.monotonic() > deadline:
            found = "\n".join(f"== {p}\n{p.read_text(errors='replace')}" for p in sorted(logs.rglob("*.out")))
            sys.exit(f"datatrove-slurm: the filter's tasks did not all complete\n{found}")
        time.sleep(1)


def main() -> None:
    work = Path(sys.argv[1]).resolve()
    paths = shards(work / "shards")
    venv = Path(sys.executable).parent / "activate"
    slurm = {"partition": "debug", "time": "00:10:00", "mem_per_cpu_gb": 1, "venv_path": str(venv), "with_srun": False}

    def reader() -> JsonlReader:
        return JsonlReader(str(work / "shards"), glob_pattern="*.jsonl")

    options = {"unit": "p", "n": 5, "memory": "256M", "quiet": True}
    spool = SlurmPipelineExecutor(
        pipeline=[reader(), DupgramSpool(work / "dupgram")],
        tasks=TASKS,
        job_name="dupgram-spool",
        logging_dir=str(work / "logs" / "spool"),
        **slurm,
    )
    plan = DupgramPlan(work / "dupgram", tasks=TASKS, **options)
    before = SlurmPipelineExecutor(
        pipeline=[plan], tasks=1, job_name="dupgram-plan", logging_dir=str(work / "logs" / "plan"), depends=spool, **slurm
    )
    for stage, tasks in plan.stages():
        before = SlurmPipelineExecutor(
            pipeline=[DupgramStage(work / "dupgram", stage)],
            tasks=tasks,
            job_name=f"dupgram-{stage}",
            logging_dir=str(work / "logs" / stage),
            depends=before,
            **slurm,
        )
    find = SlurmPipelineExecutor(
        pipeline=[DupgramFind(work / "dupgram", tasks=TASKS, **options)],
        tasks=1,
        job_name="dupgram-find",
        logging_dir=str(work / "logs" / "find"),
        depends=before,
        **slurm,
    )
    keep = SlurmPipelineExecutor(
        pipeline=[reader(), DupgramFilter(work / "dupgram", strip=True), JsonlWriter(str(work / "kept"))],
        tasks=TASKS,
        job_name="dupgram-filter",
        logging_dir=str(work / "logs" / "filter"),
        depends=find,
        **slurm,
    )
    keep.run()
    wait_for(work / "logs" / "filter" / "completions", work / "logs")

    one = work / "one.jsonl"
    ordered = [path for rank in range(TASKS) for path in paths[rank::TASKS]]
    dupgram.dedup(ordered, output=one, strip=True, **options)
    expected = [(r["id"], r["text"]) for r in map(json.loads, one.read_text().splitlines())]
    got = []
    for path in sorted((work / "kept").glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            got += [(r["id"], r["text"]) for r in map(json.loads, lines)]
    if got != expected:
        sys.exit(f"datatrove-slurm: {len(got)} documents kept through Slurm, {len(expected)} by one dedup")
    dropped = sum(1 for _ in open(paths[3])) - sum(1 for i, _ in got if i.startswith("again-"))
    if dropped == 0:
        sys.exit("datatrove-slurm: the repeated shard lost nothing: the tasks were not judged together")
    dupgram.ngrams(ordered, output=work / "one.tsv", n=options["n"], quiet=True)
    if (work / "dupgram" / "dups.tsv").read_bytes() != (work / "one.tsv").read_bytes():
        sys.exit("datatrove-slurm: the count stages' duplicate n-grams are not one `dupgram ngrams`'s")
    jobs = 4 + len(plan.stages())
    print(f"datatrove-slurm: {len(got)} documents kept through {jobs} Slurm jobs ({dropped} repeats across tasks dropped), as one dedup")


if __name__ == "__main__":
    main()
