"""Tables that a global stage writes by shard: its removals, its bucket or cluster of each document. Later stages
and the manifest read them one shard at a time (tokenize the buckets of its shard, prepare's survivors the
removals of theirs), so each is written as one part per shard, folder/<source>/part-NNNNN.parquet, sorted, the
same whichever worker wrote it. A stage that computes one as a Dask frame shuffles it by shard: no task reads
another shard's rows, and no process holds more than a partition."""

from pathlib import Path

import pandas as pd
import pyarrow as pa

from base.atomic_files import remove_tree
from base.digests import text_digest
from base.parquet_files import write_parquet
from base.store import as_path, path_text
from base.workspace import PART_GLOB, part_name

WRITTEN = pd.DataFrame({"source": pd.Series(dtype=object), "shard": pd.Series(dtype="int32"),
                        "rows": pd.Series(dtype="int64")})


def shard_part(folder: Path, source: str, index: int) -> Path:
    """The part of a by-shard table that holds the rows of shard `index` of `source`."""
    return as_path(folder) / source / part_name(index)


def all_parts(folder: Path) -> str:
    """Every part of a by-shard table, as a glob that DuckDB's read_parquet takes."""
    return f"{path_text(folder)}/*/{PART_GLOB}.parquet"


def write_shard_rows(rows: pd.DataFrame | pa.Table, folder: Path, source: str, index: int, schema: pa.Schema,
                     order: list[str]) -> int:
    """One shard's rows (possibly none), sorted by `order`, as its part; returns the number of rows."""
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_pandas(rows[schema.names], schema=schema,
                                                                          preserve_index=False)
    table = table.sort_by([(column, "ascending") for column in order]) if table.num_rows else table
    write_parquet(table.cast(schema), shard_part(folder, source, index))
    return table.num_rows


def write_partition(part: pd.DataFrame, folder: str, schema: pa.Schema, order: list[str]) -> pd.DataFrame:
    """A shuffled partition: every shard's rows in it (all of that shard's rows are here) as that shard's part."""
    written = []
    for (source, index), rows in part.groupby(["source", "shard"], sort=True):
        written.append((source, int(index), write_shard_rows(rows, folder, source, int(index), schema, order)))
    return pd.DataFrame(written, columns=list(WRITTEN.columns)).astype(WRITTEN.dtypes.to_dict())


def write_by_shard(client, frame, folder: Path, shards: list, schema: pa.Schema, order: list[str], stage: str,
                   partitions: int | None = None) -> int:
    """Writes a Dask frame with `source` and `shard` columns as a by-shard table in a fresh `folder`: shuffled by
    shard, each partition writes the parts of the shards it holds, then an empty part for every shard without
    rows, so that a reader finds a part for every shard. Returns the number of rows; the client gets counts.
    The writing tasks are named after the `stage`, as the dashboard lists them."""
    remove_tree(folder)
    keyed = frame.assign(shard_key=frame["source"] + "/" + frame["shard"].astype(str))
    shuffled = keyed.shuffle(on="shard_key", npartitions=partitions or len(shards))
    written = client.compute(shuffled.map_partitions(write_partition, str(folder), schema, order, meta=WRITTEN,
                                                     token=stage), sync=True)
    done = set(zip(written["source"], written["shard"]))
    empty = schema.empty_table()
    client.gather([client.submit(write_shard_rows, empty, folder, s.source.name, s.index, schema, order,
                                 key=f"{stage}-empty-{text_digest(str(folder), s.key)}")
                   for s in shards if (s.source.name, s.index) not in done])
    return int(written["rows"].sum())
