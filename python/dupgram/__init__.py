"""dupgram from Python: the command line's jobs, run in this process.

Every function takes the corpus paths and the command line's options as
keyword arguments, named as the long flags with ``_`` for ``-``
(``text_field="body"`` is ``--text-field body``, ``n=5`` is ``-n 5``,
``strip=True`` is ``--strip``; ``False`` and ``None`` leave a flag out). The
options are parsed and checked by the command line's own definitions and run
by the same Rust code, without spawning a process and without holding the
GIL. Progress and the summary go to standard error as on the command line
(``quiet=True`` silences them). Ctrl-C raises KeyboardInterrupt once the job
has removed its temporary files; no output is left behind. A failed job
raises :class:`DupgramError` with the command line's message; options the
command line refuses raise ValueError.

``--memory`` bounds the whole process, so in Python it includes the
interpreter and whatever else the program holds.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator, Union

from ._dupgram import DupgramError, __version__, choices
from ._dupgram import run as _run

__all__ = ["DupgramError", "choices", "dedup", "ngrams", "overlap", "pairs", "run", "__version__"]

PathLike = Union[str, "os.PathLike[str]"]

# The columns of a pairs table: those of the TSV header, typed.
PAIR_SCORES = ("sscr", "ssr", "contain_a_in_b", "contain_b_in_a", "cover_a", "cover_b")


def run(command: str, inputs: PathLike | list[PathLike], **options: Any) -> None:
    """Runs ``dupgram COMMAND INPUTS --OPTION VALUE …`` in this process."""
    _run(command_line(command, inputs, options))


def command_line(command: str, inputs: PathLike | list[PathLike], options: dict[str, Any]) -> list[str]:
    """The command line's arguments for ``command`` over ``inputs`` with ``options``."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    args = [command]
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple, set, dict)):
            raise TypeError(f"{name}: one value, not a {type(value).__name__}")
        else:
            # FLAG=VALUE, so a value starting with '-' is not taken for a flag.
            args.append(f"{flag}={os.fspath(value) if isinstance(value, os.PathLike) else value}")
    # After `--`, an input named like a flag is still an input.
    return args + ["--"] + [os.fspath(p) for p in inputs]


def ngrams(
    inputs: PathLike | list[PathLike], *, output: PathLike | None = None, **options: Any
) -> NgramStream | dict[str, Any]:
    """Every word n-gram seen at least twice (``dupgram ngrams``), with its count.

    Without ``output``, returns a :class:`NgramStream`: iterate it for
    ``(ngram, count)`` tuples, the n-gram's words joined by single spaces, in
    the command line's order. With ``output``, writes the list there as the
    command line does and returns the summary as a dict.
    """
    if output is not None:
        return _with_summary("ngrams", inputs, dict(options, output=output))
    return NgramStream(inputs, options)


class NgramStream:
    """The duplicate n-grams of a corpus, read as the job's output is.

    The job runs when iteration starts, into a temporary file (in
    ``tmp_dir`` when given) that is read line by line and removed when the
    iteration ends or is abandoned. ``summary`` holds the job's summary once
    it has run.
    """

    def __init__(self, inputs: PathLike | list[PathLike], options: dict[str, Any]):
        for reserved in ("output", "stats_json", "lexicon"):
            if options.get(reserved) is not None:
                raise TypeError(f"ngrams(): {reserved} is not taken when streaming; give output= to keep files")
        self._inputs = inputs
        self._options = options
        self.summary: dict[str, Any] | None = None

    def __iter__(self) -> Iterator[tuple[str, int]]:
        with tempfile.TemporaryDirectory(prefix="pydupgram-", dir=self._options.get("tmp_dir")) as work:
            output = Path(work) / "ngrams.tsv"
            summary = Path(work) / "summary.json"
            run("ngrams", self._inputs, **dict(self._options, output=output, stats_json=summary))
            self.summary = json.loads(summary.read_text())
            with open(output, encoding="utf-8", errors="surrogateescape", newline="\n") as lines:
                for line in lines:
                    ngram, _, count = line.rstrip("\n").rpartition("\t")
                    yield ngram, int(count)


def pairs(inputs: PathLike | list[PathLike], *, output: PathLike | None = None, **options: Any) -> Any:
    """Near-duplicate document pairs, scored exactly (``dupgram pairs``).

    Without ``output``, returns a ``pyarrow.Table`` with the columns ``a``,
    ``b`` (document IDs), the float64 scores ``sscr``, ``ssr``,
    ``contain_a_in_b``, ``contain_b_in_a``, ``cover_a``, ``cover_b`` and the
    int64 ``shared``; the summary is in the schema metadata under
    ``b"dupgram"`` (JSON). The table is built in memory: for millions of
    pairs, give ``output``. With ``output``, writes the pairs there as the
    command line does (``clusters=`` too) and returns the summary as a dict.
    """
    if output is not None:
        return _with_summary("pairs", inputs, dict(options, output=output))
    import pyarrow as pa
    import pyarrow.json as pa_json

    for reserved in ("output_format", "stats_json"):
        if options.get(reserved) is not None:
            raise TypeError(f"pairs(): {reserved} is not taken when returning a table; give output= for files")
    fields = [pa.field("a", pa.string()), pa.field("b", pa.string())]
    fields += [pa.field(name, pa.float64()) for name in PAIR_SCORES]
    schema = pa.schema(fields + [pa.field("shared", pa.int64())])
    with tempfile.TemporaryDirectory(prefix="pydupgram-", dir=options.get("tmp_dir")) as work:
        path = Path(work) / "pairs.jsonl"
        summary = _with_summary("pairs", inputs, dict(options, output=path, output_format="jsonl"))
        if path.stat().st_size == 0:
            table = schema.empty_table()
        else:
            parse = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
            table = pa_json.read_json(path, parse_options=parse)
    return table.replace_schema_metadata({"dupgram": json.dumps(summary)})


def dedup(inputs: PathLike | list[PathLike], *, output: PathLike | None = None, **options: Any) -> dict[str, Any]:
    """Keeps the first instance of repeated text (``dupgram dedup``).

    Writes ``output`` as the command line does (the input's format, marked,
    or with ``strip=True`` cut), and ``attributes`` (Dolma-style attribute
    records) when given, and returns the summary as a dict. One of the two
    is needed.
    """
    if output is None and options.get("attributes") is None:
        raise TypeError("dedup: give output=, attributes= or both")
    if output is not None:
        options = dict(options, output=output)
    return _with_summary("dedup", inputs, options)


def overlap(
    query: PathLike | list[PathLike],
    reference: PathLike | list[PathLike],
    *,
    output: PathLike | None = None,
    **options: Any,
) -> Any:
    """How much of each query document occurs in the reference (``dupgram overlap``).

    Without ``output``, returns a ``pyarrow.Table``, a row per query
    document in corpus order: ``id``, ``tokens``, ``ngrams``,
    ``ngrams_found``, ``covered_tokens`` (uint64), ``coverage`` (float64);
    with ``top=K``, ``ref_1``, ``covered_1`` … ``ref_K``, ``covered_K``; with
    ``spans=True``, ``spans`` and ``char_spans`` (lists of ``[start, end]``).
    The summary is in the schema metadata under ``b"dupgram"`` (JSON). With
    ``output``, writes the rows there as the command line does and returns
    the summary as a dict. ``mark_reference=`` and ``drop_reference=`` write
    the reference's marks and the reference without the marked documents.
    """
    if isinstance(reference, (str, os.PathLike)):
        reference = [reference]
    if not reference:
        raise TypeError("overlap(): give at least one reference file")
    if options.get("reference") is not None:
        raise TypeError("overlap(): the reference is the second argument")
    args = [f"--reference={os.fspath(r)}" for r in reference]
    if output is not None:
        return _with_summary("overlap", query, dict(options, output=output), args)
    import pyarrow.parquet as pq

    for reserved in ("output_format", "stats_json"):
        if options.get(reserved) is not None:
            raise TypeError(f"overlap(): {reserved} is not taken when returning a table; give output= for files")
    with tempfile.TemporaryDirectory(prefix="pydupgram-", dir=options.get("tmp_dir")) as work:
        path = Path(work) / "overlap.parquet"
        summary = _with_summary("overlap", query, dict(options, output=path), args)
        table = pq.read_table(path)
    return table.replace_schema_metadata({"dupgram": json.dumps(summary)})


def _with_summary(
    command: str, inputs: PathLike | list[PathLike], options: dict[str, Any], extra: list[str] | None = None
) -> dict[str, Any]:
    """Runs `command` (with the `extra` arguments before the inputs) and
    returns its summary, read from --stats-json (the caller's file when
    given, else a temporary one)."""

    def job(options: dict[str, Any]) -> None:
        args = command_line(command, inputs, options)
        cut = args.index("--")
        _run(args[:cut] + (extra or []) + args[cut:])

    if options.get("stats_json") is not None:
        job(options)
        return json.loads(Path(options["stats_json"]).read_text())
    with tempfile.TemporaryDirectory(prefix="pydupgram-", dir=options.get("tmp_dir")) as work:
        summary = Path(work) / "summary.json"
        job(dict(options, stats_json=summary))
        return json.loads(summary.read_text())
