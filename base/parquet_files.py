"""Parquet read and written the same way locally and on a store: written whole (zstd) through an atomic file; read
whole, in batches, or a few row groups by ranged reads."""

from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from base.atomic_files import atomic_path
from base.filenames import arrow_source
from base.store import as_path, fs_and_path, is_remote

COMPRESSION = "zstd"  # of every Parquet file Loom writes: parquet_bytes' bytes are write_parquet's file


@contextmanager
def parquet_writer(path, schema: pa.Schema):
    """A ParquetWriter whose file appears at `path` only once it is complete."""
    with atomic_path(path) as tmp:
        writer = pq.ParquetWriter(tmp, schema, compression=COMPRESSION)
        try:
            yield writer
        finally:
            writer.close()


def write_parquet(table: pa.Table, path) -> None:
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression=COMPRESSION)


def parquet_bytes(table: pa.Table) -> bytes:
    """The file write_parquet writes for `table`, as bytes: made once, for a table written to many paths."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=COMPRESSION)
    return sink.getvalue().to_pybytes()


def read_parquet(path, columns: list[str] | None = None, where_in: tuple[str, list] | None = None) -> pa.Table:
    """A Parquet file or a folder of parts (or some of their columns), read whole; with `where_in` (column, values),
    only a file's rows whose column holds one of the values, filtered batch by batch. Every read of a workspace's
    Parquet goes through here or `parquet_file`, so that a workspace on object storage is read the same way. A
    local file is read as a ParquetFile: pq.read_table builds a dataset, ~1.3 ms more for each small part, which a
    corpus of many small shards pays in every stage for every table by shard."""
    path = as_path(path)
    if where_in is not None:
        return rows_where_in(parquet_file(path), columns, *where_in)
    if is_remote(path):
        fs, spelled = fs_and_path(path)
        return pq.read_table(spelled, columns=columns, filesystem=fs)
    return pq.read_table(path, columns=columns) if path.is_dir() else parquet_file(path).read(columns=columns)


def rows_where_in(file: pq.ParquetFile, columns: list[str] | None, column: str, values: list) -> pa.Table:
    """The file's rows whose `column` holds one of `values`, read only from the row groups whose statistics admit
    one of them: a shard's shingle sets are a row group per batch of records, and a partition's pairs want a few."""
    names = columns or file.schema_arrow.names
    wanted = pa.array(values, type=file.schema_arrow.field(column).type)
    read = list(dict.fromkeys([*names, column]))
    schema = pa.schema([file.schema_arrow.field(name) for name in names])

    def kept_rows(group_index: int) -> pa.Table:  # each group filtered as it is read: one unfiltered group held at a time
        group = file.read_row_group(group_index, columns=read)
        return group.filter(pc.is_in(group[column], value_set=wanted)).select(names)

    return pa.concat_tables([kept_rows(i) for i in row_groups_holding(file, column, wanted)] or [schema.empty_table()])


def row_groups_holding(file: pq.ParquetFile, column: str, values: pa.Array) -> list[int]:
    """The row groups whose min-max statistics of `column` admit one of `values` (every group without them)."""
    metadata = file.metadata
    if not metadata.num_row_groups or not len(values):
        return []
    index = [metadata.row_group(0).column(j).path_in_schema for j in range(metadata.num_columns)].index(column)
    ordered = np.sort(values.to_numpy(zero_copy_only=False))
    groups = []
    for i in range(metadata.num_row_groups):
        stats = metadata.row_group(i).column(index).statistics
        first = np.searchsorted(ordered, stats.min) if stats is not None and stats.has_min_max else None
        if first is None or first < len(ordered) and ordered[first] <= stats.max:
            groups.append(i)
    return groups


def parquet_file(path) -> pq.ParquetFile:
    """A Parquet file opened for reading in batches or row groups."""
    path = as_path(path)
    if is_remote(path):
        fs, spelled = fs_and_path(path)
        return pq.ParquetFile(spelled, filesystem=fs)
    return pq.ParquetFile(arrow_source(path))


def parquet_row_groups(path) -> pq.ParquetFile:
    """A Parquet file opened to read a few of its row groups: on a store each read pyarrow makes (the footer, a
    column chunk) is one ranged GET of just those bytes, with no read-ahead (s3fs's default reads 50 MB ahead)."""
    path = as_path(path)
    if not is_remote(path):
        return pq.ParquetFile(path)
    fs, spelled = fs_and_path(path)
    return pq.ParquetFile(fs.open(spelled, "rb", cache_type="none"))


def parquet_row(path, row: int, columns: list[str] | None = None) -> pa.Table | None:
    """The file's row number `row` (some of its columns) as a table of one row, reading only the row group that holds
    it; None past the file's end."""
    file, first = parquet_row_groups(path), 0
    for group in range(file.metadata.num_row_groups):
        size = file.metadata.row_group(group).num_rows
        if row < first + size:
            return file.read_row_group(group, columns=columns).slice(row - first, 1)
        first += size
    return None
