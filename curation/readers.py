"""Readers: one input shard -> an iterator of records, good or malformed.

A malformed record is never dropped here: it comes out with `problem` set, and the shard runner counts it in
the funnel and writes it to quarantine. A shard that cannot be opened at all is caught before the job starts
by `check_readable`, so the user gets one clear line instead of a failed task.
"""

import gzip
import io
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pyarrow.parquet as pq
import zstandard

from curation.config import SourceConfig
from loom.errors import UserError

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
PARQUET_MAGIC = b"PAR1"
RAW_PREVIEW_CHARS = 2000


@dataclass
class Record:
    index: int  # position in the shard, counting malformed records too
    text: str | None = None
    meta: dict = field(default_factory=dict)
    problem: str | None = None  # why the record is malformed, or None
    detail: str = ""
    raw: str = ""


def read_shard(source: SourceConfig, shard: Path) -> Iterator[Record]:
    if source.format == "parquet":
        records = _read_parquet(source, shard)
    elif source.format in ("text-dir", "html-dir"):
        records = _read_folder(source, shard)
    else:
        records = _read_jsonl(source, shard)
    empty = True
    for record in records:
        empty = False
        yield record
    if empty:
        yield Record(index=0, problem="empty_file", detail=f"{shard} holds no records")


def check_readable(source: SourceConfig, shard: Path) -> None:
    """Fail fast, before any compute, on a shard whose container is not what `format` says."""
    if source.format in ("text-dir", "html-dir") or shard.stat().st_size == 0:
        return
    with open(shard, "rb") as fh:
        head = fh.read(4)
    expected = {"jsonl.gz": GZIP_MAGIC, "jsonl.zst": ZSTD_MAGIC, "parquet": PARQUET_MAGIC}.get(source.format)
    if expected and not head.startswith(expected):
        raise UserError(
            f"source '{source.name}': {shard} is not a readable {source.format} file (wrong header); "
            "re-create it or fix `format` in sources.toml"
        )
    if source.format == "parquet":
        try:
            pq.read_metadata(shard)
        except Exception as err:  # pyarrow raises several types for a damaged footer
            raise UserError(f"source '{source.name}': {shard} is not a readable Parquet file ({err}); re-create it") from None


def _open_lines(source: SourceConfig, shard: Path):
    raw = open(shard, "rb")
    if source.format == "jsonl.gz":
        return gzip.open(raw)
    if source.format == "jsonl.zst":
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True))
    return raw


def _read_jsonl(source: SourceConfig, shard: Path) -> Iterator[Record]:
    index = 0
    with _open_lines(source, shard) as lines:
        try:
            for line in lines:
                if not line.strip():
                    continue
                yield _parse_json_line(source, line, index)
                index += 1
        except (EOFError, OSError, zlib.error, zstandard.ZstdError) as err:
            yield Record(index=index, problem="truncated_file", detail=f"stopped reading {shard.name}: {err}")


def _parse_json_line(source: SourceConfig, line: bytes, index: int) -> Record:
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
    return _record_from_fields(source, obj, index, raw=decoded)


def _record_from_fields(source: SourceConfig, obj: dict, index: int, raw: str = "") -> Record:
    if source.text_field not in obj:
        return Record(index=index, problem="missing_text_field", detail=f"no field '{source.text_field}'", raw=raw)
    text = obj.pop(source.text_field)
    if not isinstance(text, str):
        return Record(index=index, problem="missing_text_field", detail=f"'{source.text_field}' is not a string", raw=raw)
    if not text.strip():
        return Record(index=index, problem="empty_text", detail="text is empty", raw=raw)
    if source.id_field and source.id_field in obj:
        obj["source_id"] = obj.pop(source.id_field)
    return Record(index=index, text=text, meta=obj)


def _read_parquet(source: SourceConfig, shard: Path) -> Iterator[Record]:
    index = 0
    for batch in pq.ParquetFile(shard).iter_batches(batch_size=1024):
        for row in batch.to_pylist():
            yield _record_from_fields(source, row, index, raw=_preview(row))
            index += 1


def _read_folder(source: SourceConfig, shard: Path) -> Iterator[Record]:
    suffixes = (".html", ".htm") if source.format == "html-dir" else (".txt",)
    files = sorted(p for p in shard.rglob("*") if p.is_file() and p.suffix.lower() in suffixes)
    for index, path in enumerate(files):
        relative = str(path.relative_to(shard.parent))
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            yield Record(index=index, problem="invalid_utf8", detail=f"{relative}: {err}", raw=data[:RAW_PREVIEW_CHARS].decode("utf-8", "replace"))
            continue
        if not text.strip():
            yield Record(index=index, problem="empty_text", detail=f"{relative} is empty")
            continue
        yield Record(index=index, text=text, meta={"path": relative})


def _preview(row: dict) -> str:
    return json.dumps(row, default=str, ensure_ascii=False)[:RAW_PREVIEW_CHARS]
