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

Documents are judged within one task (one rank): dedup needs the corpus in
order, in one place. The stream is spooled to a temporary directory, so
memory stays within ``memory`` however long the stream is.
"""

from __future__ import annotations

import json
import pickle
import tempfile
from pathlib import Path
from typing import Any, Iterator

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from . import dedup


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
                    document.text = cut(document.text, document.metadata["dup_spans"])
                self.stat_update("kept")
                yield document


def spool_documents(data: DocumentsPipeline, corpus: Path, spool: Path) -> int:
    """Writes each document's ID and text to `corpus` (JSON Lines, for
    dedup) and the whole document to `spool` (pickles, for the yield);
    returns how many there were."""
    count = 0
    with open(corpus, "w", encoding="utf-8") as jsonl, open(spool, "wb") as pickles:
        for document in data:
            record = {"id": str(document.id), "text": document.text}
            jsonl.write(json.dumps(record, ensure_ascii=False) + "\n")
            pickle.dump(document, pickles, protocol=pickle.HIGHEST_PROTOCOL)
            count += 1
    return count


def judged(spool: Path, marked: Path) -> Iterator[tuple[Document, bool]]:
    """Each spooled document with dedup's attributes in its metadata, and
    whether it is kept, in corpus order. dedup writes one attribute record
    per input record, in order; the IDs are checked to be sure."""
    with open(spool, "rb") as pickles, open(marked, encoding="utf-8") as records:
        for line_number, line in enumerate(records, 1):
            record = json.loads(line)
            try:
                document: Document = pickle.load(pickles)
            except EOFError:
                raise RuntimeError(f"{marked}:{line_number}: dedup wrote more records than it was given") from None
            if record["id"] != str(document.id):
                raise RuntimeError(f"{marked}:{line_number}: record {record['id']!r} is not document {document.id!r}")
            attributes = record["attributes"]
            fraction = attributes["dupgram_dup_fraction"][0][2]
            document.metadata["dup_fraction"] = fraction
            document.metadata["dup_spans"] = [[start, end] for start, end, _ in attributes["dupgram_duplicate_spans"]]
            # 1.0 exactly for the documents --strip drops whole.
            yield document, fraction < 1.0
        try:
            pickle.load(pickles)
        except EOFError:
            return
        raise RuntimeError(f"{marked}: dedup wrote fewer records than it was given")


def cut(text: str, spans: list[list[int]]) -> str:
    """`text` without the character ranges `spans` (sorted, disjoint)."""
    kept, at = [], 0
    for start, end in spans:
        kept.append(text[at:start])
        at = end
    kept.append(text[at:])
    return "".join(kept)
