"""datatrove's n-gram decontamination over a reference, for scripts/bench-overlap.sh.

  datatrove_decont.py QUERY.jsonl REFERENCE_DIR N WORK

The index is what datatrove's NGramsDecontIndexer writes (its own
compute_hashes over each test item, taken whole as the label: every n-gram
of it), built here because the indexer's run() reads its test sets through
lighteval from the Hugging Face hub, which this benchmark does not reach; then NGramsDecontFilter, unchanged,
reads REFERENCE_DIR/*.jsonl.gz in a LocalPipelineExecutor and writes the
documents it removes to WORK/removed. Their IDs go to WORK/flagged.txt.
"""

import gzip
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.decont import NGramsDecontConfig, NGramsDecontFilter, NGramsDecontIndexer
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.hashing import create_hash_func
from datatrove.utils.typeshelper import Languages
from datatrove.utils.word_tokenizers import load_word_tokenizer

query, reference, n, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
config = NGramsDecontConfig(n_grams=n, find_query_ngrams=False, find_overlap_ngrams=False)
index = work / "index"
index.mkdir(parents=True, exist_ok=True)
# The indexer's own method, on what its constructor would set up (the
# constructor itself refuses to run without lighteval installed).
indexer = SimpleNamespace(
    config=config, tokenizer=load_word_tokenizer(Languages.english), hash_func=create_hash_func(config.hash_config)
)
hashes = set()
with open(query, encoding="utf-8") as items:
    for line in items:
        hashes.update(NGramsDecontIndexer.compute_hashes(indexer, json.loads(line)["text"]))
np.array(sorted(hashes), dtype=config.hash_config.np_descr).tofile(index / "test.index.hashes")

LocalPipelineExecutor(
    pipeline=[
        JsonlReader(reference, glob_pattern="*.jsonl.gz"),
        NGramsDecontFilter(str(index), config=config, exclusion_writer=JsonlWriter(str(work / "removed"))),
    ],
    tasks=1,
    workers=1,
    logging_dir=str(work / "logs"),
).run()

with open(work / "flagged.txt", "w", encoding="utf-8") as out:
    for path in sorted((work / "removed").glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as removed:
            for line in removed:
                out.write(json.loads(line)["id"] + "\n")
