"""Tables that a global stage writes by shard: its removals, its bucket or cluster of each document. Later stages
and the manifest read them one shard at a time (tokenize the buckets of its shard, prepare's survivors the
removals of theirs), so each is written as one part per shard, folder/<source>/part-NNNNN.parquet, sorted, the
same whichever worker wrote it. A stage that computes one as a Dask frame shuffles it by shard: no task reads
another shard's rows, and no process holds more than a partition."""

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from base.atomic_files import remove_tree, write_bytes
from base.digests import text_digest
from base.parquet_files import parquet_bytes, parquet_file, read_parquet, write_parquet
from base.store import as_path, path_text
from base.workspace import PART_GLOB, part_name

# Of prepared Parquet per shuffle partition, where shards are smaller: ~7,500 web documents, so that a partition's
# rows (and a worker's memory in the global stages) stay the same size however many small shards a corpus has.
# Shards of the default shard_bytes are larger, and hold a partition each.
PARTITION_BYTES = 4 * 1024 * 1024
# Shards a partition takes before the worker threads share them: a task reads and writes a few files per shard
# (~1 ms each), and each partition more costs every shuffle of a stage its exchange (measured on the quickstart's
# 16 shards: 4 partitions instead of 1 took its curate from 15.6 to 17.5 s; at 300 shards of 5 documents on 2
# threads, minhash_dedup alone took 5.0-5.5 s on 4 partitions, 4.0-4.3 s on 2, 4.1-4.2 s on 1).
SHARDS_PER_PARTITION = 32
EMPTY_PER_TASK = 64  # empty parts one task writes


def shuffle_partitions(prepared_bytes: int, shards: int, fixed: int | None = None, worker_threads: int = 1) -> int:
    """The partitions of a global stage's shuffles: `fixed` if set, else one per PARTITION_BYTES of the shards'
    prepared parts (at least 1, at most one per shard), so that many small shards are not as many partitions and
    tasks in every step; a partition holds max(PARTITION_BYTES, a shard's) prepared rows whatever the corpus's size.
    Many small shards, SHARDS_PER_PARTITION or more a partition, get up to one partition per worker thread, so that
    their files are not read and written by one task on one core. Results do not depend on it."""
    by_threads = min(worker_threads, shards // SHARDS_PER_PARTITION)
    return fixed or max(1, min(shards, max(partitions_by_size(prepared_bytes), by_threads)))


def partitions_by_size(table_bytes: int, most: int | None = None) -> int:
    """One partition per PARTITION_BYTES of a table, at least 1 (and at most `most`): also for a table a stage
    derives, once it has counted its rows (minhash_dedup's verified edges: a few bytes per document, where one
    partition per shard's documents would make every shuffle of its components rounds as many tasks)."""
    by_size = max(1, -(-table_bytes // PARTITION_BYTES))
    return by_size if most is None else min(most, by_size)


def read_parts(files: list[str], partitions: int, columns: list[str] | None = None, file_column: str | None = None):
    """A lazy Dask frame of a stage's per-shard files in at most `partitions` partitions, each read by one task
    from a run of neighbouring files (no shuffle; many small shards are not as many tasks). With `file_column`,
    each row also has there its file's index in `files`."""
    import dask.dataframe as dd

    groups = shard_groups(list(enumerate(files)), partitions)
    meta = indexed_parts(groups[0][:1], columns, file_column, rows=False)
    return dd.from_map(indexed_parts, groups, args=[columns, file_column], meta=meta, label="read-parts")


def indexed_parts(indexed_files: list[tuple[int, str]], fields: list[str] | None, file_column: str | None,
                  rows: bool = True) -> pd.DataFrame:
    """The rows of a run of (index, file) (or none, only their columns) as one frame, with `file_column`
    holding each row's file index. (Not `columns`: Dask's from_map passes a `columns` keyword of its own to a
    function that takes one.)"""
    tables = []
    for index, path in indexed_files:
        table = read_parquet(path, fields) if rows else parquet_file(path).schema_arrow.empty_table()
        table = table.select(fields) if fields else table
        if file_column:
            table = table.append_column(file_column, pa.array(np.full(table.num_rows, index, np.int32)))
        tables.append(table)
    return pa.concat_tables(tables).to_pandas()


def shard_groups(shards: list, groups: int) -> list[list]:
    """The shards in `groups` runs of neighbours (fewer if there are fewer shards), for a task each."""
    n = min(groups, len(shards))
    return [shards[i * len(shards) // n:(i + 1) * len(shards) // n] for i in range(n)]


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
    """A shuffled partition: every shard's rows in it (all of that shard's rows are here) as that shard's part. The
    partition is converted and sorted once, each shard's part a slice of it (a conversion and sort per shard cost
    ~2 ms, four times the write of a small part)."""
    table = pa.Table.from_pandas(part[schema.names], schema=schema, preserve_index=False)
    table = table.sort_by([(column, "ascending") for column in ["source", "shard", *order]])
    runs = shard_runs(table)
    for source, index, start, stop in runs:
        write_parquet(table.slice(start, stop - start), shard_part(folder, source, index))
    return pd.DataFrame([(source, index, stop - start) for source, index, start, stop in runs],
                        columns=list(WRITTEN.columns)).astype(WRITTEN.dtypes.to_dict())


def shard_runs(table: pa.Table) -> list[tuple[str, int, int, int]]:
    """(source, shard, start, stop) of each run of rows of one shard in a table sorted by source and shard."""
    sources, shards = table["source"].to_numpy(zero_copy_only=False), table["shard"].to_numpy()
    starts = np.flatnonzero(np.r_[True, (sources[1:] != sources[:-1]) | (shards[1:] != shards[:-1])]) if len(shards) else []
    stops = [*starts[1:], len(shards)]
    return [(str(sources[a]), int(shards[a]), int(a), int(b)) for a, b in zip(starts, stops)]


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
    missing = [(s.source.name, s.index) for s in shards if (s.source.name, s.index) not in done]
    batches = [missing[i:i + EMPTY_PER_TASK] for i in range(0, len(missing), EMPTY_PER_TASK)]
    client.gather([client.submit(write_empty_parts, batch, folder, schema,
                                 key=f"{stage}-empty-{text_digest(str(folder), repr(batch))}") for batch in batches])
    return int(written["rows"].sum())


def write_empty_parts(keys: list[tuple[str, int]], folder: Path, schema: pa.Schema) -> None:
    """An empty part for each (source, index), so that a reader finds a part for every shard: the bytes of one,
    written once, copied to every path (a Parquet write of its own cost each ~0.5 ms, many small shards' most)."""
    empty = parquet_bytes(schema.empty_table())
    for source, index in keys:
        write_bytes(empty, shard_part(folder, source, index))
