"""JSON lines, plain, gzip or zstd: one object per line, the text in `text_field`."""

import gzip
import io
import json
import zlib
from pathlib import Path
from typing import Iterator

import zstandard

from curation.document import Record
from curation.readers.fields import check_header, record_from_fields
from loom.io import open_input

MAGIC = {"gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd"}


class JsonLinesReader:
    shard_kind = "file"
    html = False

    def __init__(self, compression: str | None = None):
        self.compression = compression

    def check(self, source, shard: Path) -> None:
        if self.compression:
            check_header(source, shard, MAGIC[self.compression])

    def _open(self, shard: Path):
        raw = open_input(shard)
        if self.compression == "gzip":
            return gzip.open(raw)
        if self.compression == "zstd":
            return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True))
        return raw

    def read(self, source, shard: Path) -> Iterator[Record]:
        index = 0
        with self._open(shard) as lines:
            try:
                for line in lines:
                    if not line.strip():
                        continue
                    yield parse_line(source, line, index)
                    index += 1
            except (EOFError, OSError, zlib.error, zstandard.ZstdError) as err:
                yield Record(index=index, problem="truncated_file", detail=f"stopped reading {shard.name}: {err}")


def parse_line(source, line: bytes, index: int) -> Record:
    try:
        decoded = line.decode("utf-8")
    except UnicodeDecodeError as err:
        return Record(index=index, problem="invalid_utf8", detail=str(err), raw=line.decode("utf-8", "replace"))
    try:
        obj = json.loads(decoded)
    except json.JSONDecodeError as err:
        return Record(index=index, problem="malformed_json", detail=str(err), raw=decoded)
    if not isinstance(obj, dict):
        return Record(index=index, problem="malformed_json", detail="line is not a JSON object", raw=decoded)
    return record_from_fields(source, obj, index, raw=decoded)
