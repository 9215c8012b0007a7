"""Readers: one input shard -> an iterator of records, good or malformed; one module per format, and the
registry below that maps each `format` of sources.toml to its reader.

A malformed record is never dropped here: it comes out with `problem` set, and the shard runner counts it in
the funnel and writes it to quarantine. Compression is taken from a file's first bytes (streams.py), so the
three JSON-lines formats read the same files; a shard whose first bytes say it is another container (a Parquet
file in a jsonl source, JSON lines in a parquet one) is caught before the job starts by `check_readable`, so
the user gets one clear line instead of a failed task.
"""

from typing import Iterator

from curation.document import Record
from curation.readers.folder import FolderReader
from curation.readers.jsonl import JsonLinesReader
from curation.readers.parquet import ParquetReader
from curation.readers.warc import WarcReader

READERS = {
    "jsonl": JsonLinesReader(),  # one reader: compression comes from the bytes; the three names stay valid
    "jsonl.gz": JsonLinesReader(),
    "jsonl.zst": JsonLinesReader(),
    "parquet": ParquetReader(),
    "text-dir": FolderReader((".txt",)),
    "html-dir": FolderReader((".html", ".htm"), html=True),
    "warc": WarcReader(),  # WARC/WET, plain or gzip: one document per response or conversion record
}
FORMATS = tuple(READERS)


def reader_for(fmt: str):
    return READERS[fmt]


def read_shard(source, shard: str, span=None) -> Iterator[Record]:
    """The records of a shard: its input read whole, or the part `span` names (curation.readers.spans)."""
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
    for path, files in source.inputs():
        check_readable(source, path)
        if not hasattr(reader, "cut"):
            spans = [None]
        else:
            spans = reader.cut(source, path, files) if files is not None else reader.cut(source, path)
        shards.extend((str(path), span) for span in spans)
    return shards
