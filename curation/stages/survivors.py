"""Reading what `prepare` kept, less what the global stages before have removed since."""

from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from base.parquet_files import parquet_file, read_parquet
from base.store import as_path
from base.sql import duckdb_connect
from curation.stages.base import removals_relation
from curation.stages.parts import shard_part, shuffle_partitions
from curation.stages.prepare import PREPARE


def shard_rows(folder: Path, shard, columns: list[str]) -> pa.Table:
    """The rows of a table by shard that belong to one shard: its own part."""
    return read_parquet(shard_part(folder, shard.source.name, shard.index), columns=columns)


def prepared_sizes(ws, shards: list) -> dict[str, int]:
    """The bytes of each shard's prepared part, by shard key: one stat each (a HEAD request on an object store)."""
    return {s.key: as_path(PREPARE.part_path(ws, s)).stat().st_size for s in shards}


def prepared_size(ws, shards: list) -> int:
    """The bytes of these shards' prepared parts."""
    return sum(prepared_sizes(ws, shards).values())


def partitions_for(ctx, shards: list, fixed: int | None = None) -> int:
    """parts.shuffle_partitions for these shards, from the size of their prepared parts (the job context's, which
    the runner measures once for every global stage and publish, else measured now) and the cluster's threads."""
    size = ctx.prepared_bytes if ctx.prepared_bytes is not None else prepared_size(ctx.workspace, shards)
    return shuffle_partitions(size, len(shards), fixed, ctx.worker_threads)


def prepared_columns(ctx, shards: list, columns: list[str]) -> pa.Table:
    """Some columns of every prepared shard, with the shard's source, index and rank added."""
    parts = []
    for shard in shards:
        table = read_parquet(PREPARE.part_path(ctx.workspace, shard), columns=columns)
        n = table.num_rows
        parts.append(table.append_column("source", pa.array([shard.source.name] * n, pa.string()))
                     .append_column("shard", pa.array([shard.index] * n, pa.int32()))
                     .append_column("rank", pa.array([shard.rank] * n, pa.int32())))
    return pa.concat_tables(parts)


def surviving_columns(ctx, shards: list, columns: list[str]) -> pa.Table:
    """Some columns (`record` among them) of every document still in, over all shards, with source, shard and
    rank: what a global stage that removes documents judges, so that no document is removed twice."""
    con = duckdb_connect(ctx.workspace.root)
    con.register("prepared", prepared_columns(ctx, shards, columns))
    return con.sql(f"SELECT * FROM prepared ANTI JOIN {removals_relation(ctx.removals)} USING (source, shard, record)"
                   ).to_arrow_table()


def removed_records(ctx, shard) -> pa.Array:
    """Records of a shard that the global stages before this one removed (`ctx.removals`)."""
    removed = [shard_rows(path, shard, ["record"])["record"].combine_chunks() for path in ctx.removals]
    return pa.concat_arrays(removed).cast(pa.int64()) if removed else pa.array([], pa.int64())


def surviving_batches(ctx, shard, batch_size: int, columns: list[str] | None = None) -> Iterator[pa.Table]:
    dropped = removed_records(ctx, shard)
    prepared = parquet_file(PREPARE.part_path(ctx.workspace, shard))
    for batch in prepared.iter_batches(batch_size=batch_size, columns=columns):
        docs = pa.Table.from_batches([batch]).filter(pc.invert(pc.is_in(batch["record"], dropped)))
        if docs.num_rows:
            yield docs
