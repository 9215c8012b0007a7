"""JSON lines, plain, gzip or zstd (whichever the file's first bytes say): one object per line, the text in
`text_field`. A line longer than the source's `max_doc_bytes` is set aside unread, holding only its start."""

import json
import re
from pathlib import Path
from typing import Iterator

from curation.document import Record
from curation.readers.fields import RAW_PREVIEW_CHARS, record_from_fields, too_large, wrong_container
from curation.readers.streams import Corrupt, Line, Truncated, decompressed, lines, sniff, without_bom

# A JSON escape of a UTF-16 surrogate: the only way a lone one (not valid Unicode) gets into a decoded line
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class JsonLinesReader:
    shard_kind = "file"
    html = False

    def check(self, source, shard: Path) -> None:
        if sniff(shard) == "parquet":
            raise wrong_container(source, shard, "is a Parquet file, not JSON lines", "parquet")

    def read(self, source, shard: Path) -> Iterator[Record]:
        index = 0
        try:
            for line in lines(without_bom(decompressed(shard)), source.max_doc_bytes, RAW_PREVIEW_CHARS):
                if line.size <= source.max_doc_bytes and not line.data.strip():
                    continue
                yield parse_line(source, line, index)
                index += 1
        except Truncated as err:
            yield Record(index=index, problem="truncated_file", detail=f"{shard.name}: {err}; read {index} records")
        except Corrupt as err:
            yield Record(index=index, problem="corrupt_file", detail=f"{shard.name}: {err}; read {index} records")


def parse_line(source, line: Line, index: int) -> Record:
    if line.size > source.max_doc_bytes:
        return too_large(index, line.size, source.max_doc_bytes, line.data)
    try:
        decoded = line.data.decode("utf-8")
    except UnicodeDecodeError as err:
        return Record(index=index, problem="invalid_utf8", detail=str(err), raw=line.data.decode("utf-8", "replace"))
    try:
        obj = json.loads(decoded)
    except (ValueError, RecursionError) as err:  # ValueError: bad JSON, or an integer of over 4300 digits
        return Record(index=index, problem="malformed_json", detail=str(err), raw=decoded)
    if not isinstance(obj, dict):
        return Record(index=index, problem="malformed_json", detail="line is not a JSON object", raw=decoded)
    if SURROGATE_ESCAPE.search(line.data) and not encodable(obj):
        return Record(index=index, problem="invalid_unicode", detail="a \\u escape gives a lone UTF-16 surrogate",
                      raw=decoded)
    return record_from_fields(source, obj, index, raw=decoded)


def encodable(obj: dict) -> bool:
    """Whether every string of an object (keys too) is valid Unicode, so that it can be written as UTF-8."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
