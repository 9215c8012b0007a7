"""Readers: one input shard -> an iterator of records, good or malformed; one module per format, and READERS below,
which maps each `format` of sources.toml to a Format: its help text (`loom curate --help`), its reader, whether it
is web text, and the file names it claims when a file is named on the command line.

A malformed record is never dropped here: it comes out with `problem` set, and the shard runner counts it in
the funnel and writes it to quarantine. Compression is taken from a file's first bytes (streams.py), so the
three JSON-lines formats read the same files; a shard whose first bytes say it is another container (a Parquet
file in a jsonl source, JSON lines in a parquet one) is caught before the job starts by `check_readable`, so
the user gets one clear line instead of a failed task.

How to add a format: a module with a reader (read, check, shard_kind, html; `cut` to split a file into spans,
`documents` for a folder format) and one line in READERS.
"""

from contextlib import closing
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Iterator

from curation.document import Record
from curation.readers.folder import FolderReader
from curation.readers.inputs import source_inputs
from curation.readers.jsonl import JsonLinesReader
from curation.readers.parquet import ParquetReader
from curation.readers.warc import WarcReader


@dataclass(frozen=True)
class Format:
    """A `format` of sources.toml."""

    help: str
    reader: object  # read(source, shard[, span]), check(source, shard), shard_kind, html; cut, documents if any
    web: bool = False  # web text: a source of it that does not set `filters` gets the web filters
    file_suffixes: tuple[str, ...] = ()  # a file named on the command line ending so is read as this format


JSON_LINES = JsonLinesReader()  # one reader: compression comes from the bytes; the three names stay valid
READERS = {
    "jsonl": Format("JSON lines, the text in `text_field`; plain, gzip or zstd (the first bytes say)", JSON_LINES,
                    file_suffixes=(".jsonl",)),
    "jsonl.gz": Format("the same as jsonl", JSON_LINES, file_suffixes=(".jsonl.gz", ".gz")),
    "jsonl.zst": Format("the same as jsonl", JSON_LINES, file_suffixes=(".jsonl.zst", ".zst")),
    "parquet": Format("Parquet, the text in the column `text_field`", ParquetReader(), file_suffixes=(".parquet",)),
    "text-dir": Format("folders (or globs) of .txt files, a document per file", FolderReader((".txt",))),
    "html-dir": Format("folders (or globs) of .html/.htm pages, a document per file, its text extracted",
                       FolderReader((".html", ".htm"), html=True), web=True),
    "warc": Format("WARC/WET crawls, plain or gzip: a document per response or conversion record", WarcReader(),
                   web=True, file_suffixes=(".warc", ".warc.gz", ".warc.wet", ".warc.wet.gz")),
}


def reader_for(fmt: str):
    return READERS[fmt].reader


def format_of_file(path: Path) -> str | None:
    """The format a file named on the command line is read as: the one claiming the longest ending of its name."""
    claims = [(len(suffix), name) for name, fmt in READERS.items() for suffix in fmt.file_suffixes
              if path.name.endswith(suffix)]
    return max(claims)[1] if claims else None


def read_shard(source, shard: str, span=None, limit: int | None = None) -> Iterator[Record]:
    """The records of a shard: its input read whole, or the part `span` names (curation.readers.spans); with
    `limit`, only its first `limit` records (the rest is never read)."""
    records = _shard_records(source, shard, span)
    if limit is None:
        yield from records
        return
    with closing(records):  # the reader's file closed as soon as the sample is read
        yield from islice(records, limit)


def _shard_records(source, shard: str, span) -> Iterator[Record]:
    reader = reader_for(source.format)
    empty = True
    for record in reader.read(source, shard) if span is None else reader.read(source, shard, span):
        empty = False
        yield record
    if empty and span is None:  # a cut file's first shard says so itself, when the whole file is empty
        yield Record(index=0, problem="empty_file", detail=f"{shard} holds no records")


def check_readable(source, shard) -> None:
    """Fail fast, before any compute, on a shard whose container is not what `format` says."""
    reader_for(source.format).check(source, shard)


def source_shards(source) -> list[tuple[str, object]]:
    """A source's shards in order, as (input, span): each file or folder `paths` matches, checked to be readable
    and cut into spans of about `shard_bytes` from its size and metadata alone (a format that cannot be cut,
    WARC, reads each file whole)."""
    reader = reader_for(source.format)
    shards = []
    for path, files in source_inputs(source, reader):
        check_readable(source, path)
        if not hasattr(reader, "cut"):
            spans = [None]
        else:
            spans = reader.cut(source, path, files) if files is not None else reader.cut(source, path)
        shards.extend((str(path), span) for span in spans)
    return shards
