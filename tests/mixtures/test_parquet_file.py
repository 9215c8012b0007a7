"""mixtures/export/parquet_file.py: the Parquet it writes by hand, read back by pyarrow and DuckDB (Hugging Face
datasets reads a whole export in test_export.py), against what pyarrow's own writer makes of the same table."""

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mixtures.export import parquet_file
from mixtures.export.parquet_file import write_sequences

NOT_NULL = pa.schema([pa.field("input_ids", pa.list_(pa.field("element", pa.int32(), nullable=False)), nullable=False),
                      pa.field("step", pa.int64(), nullable=False)])


def sequences(rows: int, width: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 2**31 - 1, size=(rows, width), dtype=np.int64).astype(np.int32)
    tokens[:, 0] = rng.integers(0, 8, size=rows)  # small and large ids, one column of repeats
    return tokens, 100 + np.arange(rows) // 3


def written(tmp_path, tokens: np.ndarray, steps: np.ndarray):
    path = tmp_path / "part.parquet"
    with open(path, "wb") as file:
        write_sequences(file, tokens, steps)
    return path


@pytest.mark.parametrize("rows, width", [(1, 1), (1, 2), (7, 3), (300, 257), (40, 5000)])
def test_pyarrow_reads_back_the_table_its_own_writer_was_given(tmp_path, rows, width):
    tokens, steps = sequences(rows, width)
    table = pq.read_table(written(tmp_path, tokens, steps))
    want = pa.table([pa.ListArray.from_arrays(pa.array(np.arange(0, tokens.size + 1, width, dtype=np.int32)),
                                              pa.array(tokens.reshape(-1))).cast(NOT_NULL.field(0).type),
                     pa.array(steps)], schema=NOT_NULL)
    assert table.schema.equals(want.schema) and table.equals(want)
    pq.write_table(want, tmp_path / "by-pyarrow.parquet")
    assert pq.read_table(tmp_path / "by-pyarrow.parquet").equals(table)


def test_rows_span_many_pages_and_are_read_in_batches_across_them(tmp_path, monkeypatch):
    monkeypatch.setattr(parquet_file, "PAGE_BYTES", 3 * 11 * 4)  # three rows a page
    tokens, steps = sequences(50, 11)
    path = written(tmp_path, tokens, steps)
    group = pq.ParquetFile(path).metadata.row_group(0)
    assert group.total_byte_size == sum(group.column(i).total_uncompressed_size for i in range(group.num_columns))
    batches = list(pq.ParquetFile(path).iter_batches(batch_size=4))
    assert len(batches) == 13
    got = np.concatenate([np.stack(b.column("input_ids").to_numpy(zero_copy_only=False)) for b in batches])
    assert np.array_equal(got, tokens)


def test_duckdb_reads_the_lists_and_both_read_the_steps_min_and_max(tmp_path):
    tokens, steps = sequences(30, 9)
    path = written(tmp_path, tokens, steps)
    rows = duckdb.sql(f"SELECT input_ids, step FROM read_parquet('{path}')").fetchall()
    assert [ids for ids, _ in rows] == tokens.tolist() and [step for _, step in rows] == steps.tolist()
    column = pq.ParquetFile(path).metadata.row_group(0).column(1)
    assert column.path_in_schema == "step" and column.statistics.has_min_max
    assert (column.statistics.min, column.statistics.max, column.statistics.null_count) == (100, 109, 0)
    assert duckdb.sql(f"SELECT stats_min_value, stats_max_value FROM parquet_metadata('{path}') "
                      "WHERE path_in_schema = 'step'").fetchall() == [("100", "109")]  # a reader of some steps skips parts
