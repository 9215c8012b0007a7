"""Parquet files: one row per record, the text in `text_field`, the other columns kept as metadata. A text over
the source's `max_doc_bytes` is set aside without being made a Python string; a row holding a string that is
not valid UTF-8 is a malformed record."""

import json
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from curation.document import Record
from curation.readers.fields import RAW_PREVIEW_CHARS, record_from_fields, too_large, wrong_container
from curation.readers.streams import sniff
from loom.errors import UserError
from loom.io import file_size, parquet_file

BATCH_ROWS = 1024
NOT_PARQUET = {  # what the file is, and the likely fix: it holds JSON lines
    "gzip": ("is gzip-compressed, not a Parquet file", "jsonl.gz"),
    "zstd": ("is zstd-compressed, not a Parquet file", "jsonl.zst"),
    "plain": ("is not a Parquet file (it has no PAR1 header)", "jsonl"),
}


class ParquetReader:
    shard_kind = "file"
    html = False

    def check(self, source, shard: Path) -> None:
        if file_size(shard) == 0:
            return
        kind = sniff(shard)
        if kind != "parquet":
            raise wrong_container(source, shard, *NOT_PARQUET[kind])
        try:
            parquet_file(shard).metadata
        except Exception as err:  # pyarrow raises several types for a damaged footer
            raise UserError(f"source '{source.name}': {shard} is not a readable Parquet file ({err}); re-create it") from None

    def read(self, source, shard: Path) -> Iterator[Record]:
        if file_size(shard) == 0:
            return
        index = 0
        for batch in parquet_file(shard).iter_batches(batch_size=BATCH_ROWS):
            batch, large = set_aside_large_texts(batch, source.text_field, source.max_doc_bytes)
            for offset, row in enumerate(rows(batch)):
                if offset in large:
                    size, start = large[offset]
                    yield too_large(index, size, source.max_doc_bytes, start)
                elif isinstance(row, Record):
                    yield Record(index=index, problem=row.problem, detail=row.detail, raw=row.raw)
                else:
                    record = record_from_fields(source, dict(row), index)
                    if record.problem:
                        record.raw = preview(row)
                    yield record
                index += 1


def is_string(column) -> bool:
    return pa.types.is_string(column.type) or pa.types.is_large_string(column.type)


def set_aside_large_texts(batch: pa.RecordBatch, field: str, limit: int) -> tuple[pa.RecordBatch, dict]:
    """The batch with every text over `limit` bytes made null, and {row offset: (its size, its first bytes)}."""
    if field not in batch.schema.names or not is_string(batch.column(field)):
        return batch, {}
    column = batch.column(field)
    sizes = pc.binary_length(column)
    over = pc.fill_null(pc.greater(sizes, limit), False)
    offsets = pc.indices_nonzero(over).to_pylist()
    if not offsets:
        return batch, {}
    starts = pc.binary_slice(column.cast(pa.large_binary()), 0, RAW_PREVIEW_CHARS)
    large = {i: (sizes[i].as_py(), starts[i].as_py()) for i in offsets}
    kept = pc.if_else(over, pa.nulls(len(column), column.type), column)
    return batch.set_column(batch.schema.get_field_index(field), field, kept), large


def rows(batch: pa.RecordBatch) -> list:
    """The batch's rows as dicts; a row holding a string that is not valid UTF-8 is an `invalid_utf8` Record."""
    try:
        return batch.to_pylist()
    except UnicodeDecodeError:
        return [row_or_problem(batch.slice(i, 1)) for i in range(batch.num_rows)]


def row_or_problem(row: pa.RecordBatch):
    try:
        return row.to_pylist()[0]
    except UnicodeDecodeError as err:
        values = {name: readable_value(column) for name, column in zip(row.schema.names, row.columns)}
        return Record(index=0, problem="invalid_utf8", detail=str(err), raw=preview(values))


def readable_value(column: pa.Array):
    """A one-row column's value for a preview, with bytes that are not UTF-8 shown as U+FFFD."""
    try:
        return column[0].as_py()
    except UnicodeDecodeError:
        if is_string(column):
            return column.cast(pa.large_binary())[0].as_py().decode("utf-8", "replace")
        return "<not valid UTF-8>"


def preview(row: dict) -> str:
    return json.dumps(row, default=str, ensure_ascii=False)[:RAW_PREVIEW_CHARS]
