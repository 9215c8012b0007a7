"""Parquet files: one row per record, the text in `text_field`, the other columns kept as metadata. A text over
the source's `max_doc_bytes` is set aside without being made a Python string; a row holding a string that is
not valid UTF-8 is a malformed record. A large file is cut into runs of row groups (curation.readers.spans).
A file whose footer cannot be read is one `corrupt_file` record, and so is each row group that cannot be read
(the row groups after it are read, their rows numbered as the footer says)."""

import json
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from base.inputs import file_size
from base.parquet_files import parquet_file
from curation.document import Record
from curation.readers.fields import RAW_PREVIEW_CHARS, name_of, record_from_fields, too_large, wrong_container
from curation.readers.spans import RowGroups, by_size
from curation.readers.streams import sniff

BATCH_ROWS = 1024
DAMAGED_DATA = (OSError, pa.ArrowException, ValueError, IndexError)  # what pyarrow raises on a damaged row group
NOT_PARQUET = {  # what the file is, and the likely fix: it holds JSON lines
    "gzip": ("is gzip-compressed, not a Parquet file", "jsonl.gz"),
    "zstd": ("is zstd-compressed, not a Parquet file", "jsonl.zst"),
    "plain": ("is not a Parquet file (it has no PAR1 header)", "jsonl"),
}


class ParquetReader:
    shard_kind = "file"
    html = False

    def check(self, source, shard) -> None:
        if file_size(shard) == 0:
            return
        kind = sniff(shard)
        if kind != "parquet":
            raise wrong_container(source, shard, *NOT_PARQUET[kind])

    def cut(self, source, path) -> list[RowGroups | None]:
        """A large file cut into runs of whole row groups of about `shard_bytes` (their compressed sizes, from
        the footer)."""
        if file_size(path) <= source.shard_bytes or (meta := footer(path)) is None:
            return [None]  # a damaged footer: read whole, where it is counted
        groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
        sizes = [sum(group.column(j).total_compressed_size for j in range(group.num_columns)) for group in groups]
        runs = by_size(sizes, source.shard_bytes)
        if len(runs) < 2:
            return [None]
        rows_before = [0]
        for group in groups:
            rows_before.append(rows_before[-1] + group.num_rows)
        return [RowGroups(first, stop, rows_before[first]) for first, stop in runs]

    def read(self, source, shard, span: RowGroups | None = None) -> Iterator[Record]:
        """The rows of the span's row groups; `record` is the row's number in the file."""
        if file_size(shard) == 0:
            return
        try:
            file = parquet_file(shard)
            meta = file.metadata
        except Exception as err:  # pyarrow raises several types for a damaged footer
            yield Record(index=span.first_row if span else 0, problem="corrupt_file",
                         detail=f"{name_of(shard)}: its footer cannot be read: {err}"[:500])
            return
        span = span or RowGroups(0, meta.num_row_groups, 0)
        index = span.first_row
        for group in range(span.first, span.stop):
            first, batches = index, file.iter_batches(batch_size=BATCH_ROWS, row_groups=[group])
            while True:
                try:
                    batch = next(batches, None)
                except DAMAGED_DATA as err:
                    yield Record(index=index, problem="corrupt_file", detail=f"{name_of(shard)}: row group {group} "
                                                                             f"cannot be read from row {index}: {err}"[:500])
                    index += 1
                    break
                if batch is None:
                    break
                for record in batch_records(source, batch, index):
                    yield record
                    index += 1
            index = max(index, first + meta.row_group(group).num_rows)


def footer(path):
    """A Parquet file's metadata, or None when its footer cannot be read."""
    try:
        return parquet_file(path).metadata
    except Exception:  # pyarrow raises several types for a damaged footer
        return None


def batch_records(source, batch: pa.RecordBatch, index: int) -> Iterator[Record]:
    """The records of one batch of rows, the first numbered `index`."""
    batch, large = set_aside_large_texts(batch, source.text_field, source.max_doc_bytes)
    for offset, row in enumerate(rows(batch), start=index):
        if offset - index in large:
            size, start = large[offset - index]
            yield too_large(offset, size, source.max_doc_bytes, start)
        elif isinstance(row, Record):
            yield Record(index=offset, problem=row.problem, detail=row.detail, raw=row.raw)
        else:
            record = record_from_fields(source, dict(row), offset)
            if record.problem:
                record.raw = preview(row)
            yield record


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
