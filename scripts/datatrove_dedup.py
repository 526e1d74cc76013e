"""datatrove's exact document deduplication (ExactDedup) or C4's three-sentence
rule (SentenceDedup) on one JSON Lines file, for scripts/bench.sh.

    python datatrove_dedup.py exact    INPUT.jsonl.gz WORKDIR   # kept documents in WORKDIR/kept/
    python datatrove_dedup.py sentence INPUT.jsonl.gz WORKDIR

Each of datatrove's three stages (signatures, finding duplicates, filtering)
runs as one local task, one after the other. ExactDedup hashes the raw text
(64-bit xxhash), as Dolma's `dedupe` keys on `$.text`.
"""

import os
import shutil
import sys

from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.exact_dedup import (
    ExactDedupConfig,
    ExactDedupFilter,
    ExactDedupSignature,
    ExactFindDedups,
)
from datatrove.pipeline.dedup.sentence_dedup import (
    SentDedupConfig,
    SentenceDedupFilter,
    SentenceDedupSignature,
    SentenceFindDedups,
)
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter


def raw_text(doc) -> str:
    return doc.text


def main() -> None:
    mode, source, work = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    folder, name = os.path.dirname(source), os.path.basename(source)

    def reader():
        return JsonlReader(folder, glob_pattern=name, add_file_path=False)

    kept = JsonlWriter(f"{work}/kept", output_filename="kept.jsonl.gz")
    if mode == "exact":
        config = ExactDedupConfig(content_getter=raw_text)
        stages = [
            [reader(), ExactDedupSignature(f"{work}/sigs", config=config)],
            [ExactFindDedups(f"{work}/sigs", f"{work}/dups", config=config)],
            [reader(), ExactDedupFilter(f"{work}/dups", config=config), kept],
        ]
    elif mode == "sentence":
        config = SentDedupConfig()
        stages = [
            [reader(), SentenceDedupSignature(f"{work}/sigs", config=config)],
            [SentenceFindDedups(f"{work}/sigs", f"{work}/dups", config=config)],
            [reader(), SentenceDedupFilter(f"{work}/dups", config=config), kept],
        ]
    else:
        sys.exit(f"unknown mode {mode} (exact or sentence)")
    for i, pipeline in enumerate(stages):
        LocalPipelineExecutor(pipeline=pipeline, tasks=1, workers=1, logging_dir=f"{work}/logs-{i}").run()


if __name__ == "__main__":
    main()
