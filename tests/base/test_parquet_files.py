"""Reading the rows of a Parquet file whose column holds given values: only the row groups that may hold them."""

import random

import pyarrow as pa
import pyarrow.parquet as pq

from base.parquet_files import parquet_file, read_parquet, row_groups_holding


def three_row_groups(path) -> None:
    with pq.ParquetWriter(path, pa.schema([("key", pa.int64()), ("value", pa.binary())])) as writer:
        for start in (0, 10, 20):
            keys = list(range(start, start + 10))
            writer.write_table(pa.table({"key": pa.array(keys, pa.int64()), "value": [str(k).encode() for k in keys]}))


def test_only_the_row_groups_whose_statistics_admit_a_value_are_read(tmp_path):
    path = tmp_path / "part.parquet"
    three_row_groups(path)
    assert row_groups_holding(parquet_file(path), "key", pa.array([12, 15, 40], pa.int64())) == [1]
    assert row_groups_holding(parquet_file(path), "key", pa.array([-1, 9, 30], pa.int64())) == [0]
    assert row_groups_holding(parquet_file(path), "key", pa.array([29, 0, 10], pa.int64())) == [0, 1, 2]
    rows = read_parquet(path, where_in=("key", [15, 40, 12]))
    assert rows.to_pylist() == [{"key": 12, "value": b"12"}, {"key": 15, "value": b"15"}]  # in the file's order
    assert read_parquet(path, ["value"], where_in=("key", [21])).to_pylist() == [{"value": b"21"}]
    none = read_parquet(path, where_in=("key", []))
    assert none.num_rows == 0 and none.schema.names == ["key", "value"]


def test_the_rows_are_those_a_filtered_read_table_returns(tmp_path):
    rng = random.Random(0)
    path = tmp_path / "part.parquet"
    keys = sorted(rng.sample(range(100_000), 5_000))
    table = pa.table({"key": pa.array(keys, pa.int64()), "n": pa.array(range(5_000), pa.int32())})
    pq.write_table(table, path, row_group_size=256)
    for size in (0, 1, 7, 300, 5_000):
        wanted = rng.sample(keys, size) + rng.sample(range(100_000, 100_100), 3)
        expected = pq.read_table(path, filters=[("key", "in", wanted)])
        assert read_parquet(path, where_in=("key", wanted)).equals(expected), size
