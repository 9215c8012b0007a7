"""The start of one input record's raw bytes, found from the funnel's `input` and `record` as each reader numbers
its records (`loom show`): for JSON lines the line at that byte offset of the uncompressed stream, for Parquet
that row of the file (as JSON: a row has no bytes of its own), for a folder format the file itself, for WARC the
record-th document record (a response or conversion, or what a damaged stretch of the file was counted as)."""

import json
import os
from itertools import islice
from pathlib import Path

from base.filenames import unescaped_path
from base.inputs import file_size, open_input
from base.parquet_files import parquet_row
from base.store import as_path, is_url
from curation.readers.folder import FolderReader
from curation.readers.jsonl import JsonLinesReader
from curation.readers.parquet import ParquetReader
from curation.readers.streams import decompressed, sniff
from curation.readers.warc import DOCUMENT_TYPES, WarcReader
from curation.readers.warc_framing import Damaged, frames
from curation.readers.zstd_frames import zstd_frames

RAW_BYTES = 400


def input_path(text: str):
    """The file a funnel `input` names: a URL as it is, a local name as its bytes (escaped_path undone)."""
    return as_path(text) if is_url(text) else Path(os.fsdecode(unescaped_path(text)))


def raw_start(reader, path, record: int, limit: int = RAW_BYTES) -> bytes | None:
    """At most `limit` bytes of the record (None for a reader this module does not know). Raises OSError when the
    input cannot be read (gone, moved)."""
    for kind, read in RAW_READS.items():
        if isinstance(reader, kind):
            return read(path, record, limit)
    return None


def jsonl_line(path, offset: int, limit: int) -> bytes:
    """The line starting at `offset` of the uncompressed stream, up to its newline: a plain file is entered there,
    a zstd file at the frame holding it (when its frames state their sizes), a gzip one read from its start."""
    kind, seek, skip = sniff(path), 0, offset
    if kind == "plain":
        seek, skip = offset, 0
    elif kind == "zstd":
        before = [f for f in zstd_frames(path, file_size(path)) or [] if f.content_offset <= offset]
        if before:
            seek, skip = before[-1].offset, offset - before[-1].content_offset
    head = bytearray()
    for chunk in decompressed(path, seek):
        if skip >= len(chunk):
            skip -= len(chunk)
            continue
        head += chunk[skip:]
        skip = 0
        if len(head) >= limit or b"\n" in head:
            break
    return bytes(head.split(b"\n", 1)[0][:limit])


def parquet_row_json(path, row: int, limit: int) -> bytes:
    """The row as one line of JSON (its columns' values; bytes shown as text where they decode)."""
    found = parquet_row(path, row)
    if found is None:
        return b""
    return json.dumps(found.to_pylist()[0], ensure_ascii=False, default=str).encode("utf-8")[:limit]


def file_start(path, _record: int, limit: int) -> bytes:
    with open_input(path) as fh:
        return fh.read(limit)


def warc_record(path, record: int, limit: int) -> bytes:
    """The WARC record counted `record`-th as the reader counts them (document records and damaged stretches),
    from its first byte (of a gzip file, its member inflated)."""
    counted = (item for item in frames(path, lambda headers: 0)
               if isinstance(item, Damaged) or item.type in DOCUMENT_TYPES)
    found = next(islice(counted, record, None), None)
    if found is None:
        return b""
    return bytes(next(decompressed(path, found.offset), b"")[:limit])


RAW_READS = {JsonLinesReader: jsonl_line, ParquetReader: parquet_row_json, FolderReader: file_start,
             WarcReader: warc_record}


def escaped_bytes(data: bytes) -> str:
    """Bytes as text a terminal shows safely: UTF-8 where they decode, other bytes as \\xNN, control characters but
    newline and tab as Python escapes them; a character the end of `data` cuts is left out."""
    text = without_cut_character(data).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() or c in "\n\t" else c.encode("unicode_escape").decode("ascii") for c in text)


def without_cut_character(data: bytes) -> bytes:
    """`data` less a UTF-8 character's first bytes at its end (the rest of it was cut off)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:  # a continuation byte: look further back for the character's first
            continue
        needs = 2 if 0xC0 <= byte < 0xE0 else 3 if 0xE0 <= byte < 0xF0 else 4 if 0xF0 <= byte < 0xF8 else 1
        return data[:-back] if needs > back else data
    return data
