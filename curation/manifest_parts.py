"""The per-document tables of the manifest (documents, funnel), written per shard by one Dask task each, with the
shard's curated part and quarantine copied into the generation by the same task.

A shard's funnel rows are `prepare`'s funnel rows with each removed record's row taken from the removals tables
the global stages wrote. Those tables are read a row group at a time and shuffled on the shard's ordinal (its
place in publish order: source rank, then shard index), so each task gets its own shard's removals and nothing
more; no process reads every removal, and the client gets counts only."""

import json

import numpy as np
import pandas as pd
import pyarrow as pa

from curation.schema import REMOVALS
from curation.stages.base import removals_frame
from curation.stages.minhash import MINHASH
from curation.stages.minhash_dedup import MINHASH_DEDUP
from curation.stages.prepare import PREPARE
from curation.stages.tokenize import TOKENIZE
from loom.io import copy_file, duckdb_connect, parquet_file, read_text, write_parquet
from loom.sql import literal
from loom.workspace import Generation

ORDINAL = "ordinal"
ORDERED_REMOVALS = removals_frame().assign(**{ORDINAL: pd.Series(dtype=np.int64)})


def publish_shards(client, ctx, gen: Generation, shards: list) -> list[dict]:
    """One task per shard (see publish_shard), each fed its own removals; returns each shard's counts in order."""
    import dask

    removals = removals_by_shard(ctx, shards)
    tasks = [dask.delayed(publish_shard)(ctx, gen, shard, ordinal, removals[ordinal],
                                         dask_key_name=f"publish_shard-{gen.id}-{ordinal:05d}")
             for ordinal, shard in enumerate(shards)]
    return list(client.compute(tasks, sync=True))


def removals_by_shard(ctx, shards: list) -> list:
    """Per shard in publish order, a lazy frame of its rows of every removals table (None when the job wrote no
    removals table): the tables' row groups, each tagged with its rows' ordinals, shuffled on the ordinal into one
    partition per shard. The client reads only the tables' footers."""
    import dask
    import dask.dataframe as dd

    ordinals = dask.delayed(shard_ordinals)([(s.source.name, s.index) for s in shards])  # one task, not one copy each
    pieces = [dask.delayed(removals_piece)(path, group, ordinals)
              for path in ctx.removals for group in range(parquet_file(path).num_row_groups)]
    if not pieces:
        return [None] * len(shards)
    frame = dd.from_delayed(pieces, meta=ORDERED_REMOVALS, verify_meta=False)
    by_shard = frame.set_index(ORDINAL, divisions=list(range(len(shards) + 1)))  # partition i: ordinal i only
    return by_shard.to_delayed()


def shard_ordinals(keys: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """(source, shard index) -> the shard's place in publish order."""
    return {key: ordinal for ordinal, key in enumerate(keys)}


def removals_piece(path: str, group: int, ordinals: dict) -> pd.DataFrame:
    """One row group of a removals table, each row with its shard's ordinal."""
    rows = parquet_file(path).read_row_group(group).cast(REMOVALS).to_pandas()
    keys = zip(rows["source"].tolist(), rows["shard"].tolist())
    return rows.assign(**{ORDINAL: np.array([ordinals[key] for key in keys], dtype=np.int64)})


def publish_shard(ctx, gen: Generation, shard, ordinal: int, removals: pd.DataFrame | None) -> dict:
    """A shard's curated part and quarantine into the generation, its documents and funnel parts; returns the
    counts the dedup report needs: documents that reached MinHash dedup, and those it removed."""
    ws = ctx.workspace
    copy_file(TOKENIZE.part_path(ws, shard), gen.curated_part(shard.source.name, shard.index))
    copy_file(PREPARE.quarantine_path(ws, shard), gen.quarantine_part(shard.source.name, shard.index))
    removed = removals_table(removals)
    con = duckdb_connect(ws.root)
    con.register("removals", removed)
    write_query(con, documents_query(gen, TOKENIZE.part_path(ws, shard), gen.curated_part(shard.source.name, shard.index)),
               gen.manifest_part("documents", ordinal))
    write_query(con, funnel_query(PREPARE.funnel_path(ws, shard)), gen.manifest_part("funnel", ordinal))
    signatures = json.loads(read_text(MINHASH.marker(ws, shard))).get("signatures", 0)
    near = sum(1 for stage in removed["stage"].to_pylist() if stage == MINHASH_DEDUP.name)
    return {"source": shard.source.name, "considered": int(signatures), "near_duplicates": near}


def removals_table(removals: pd.DataFrame | None) -> pa.Table:
    if removals is None:
        return REMOVALS.empty_table()
    return pa.Table.from_pandas(removals.reset_index(drop=True)[REMOVALS.names], schema=REMOVALS, preserve_index=False)


def documents_query(gen: Generation, part, published_part) -> str:
    """A curated part's rows without text, in row order, `shard` naming the part as the generation holds it."""
    return f"""
        SELECT id, source, {literal(gen.relative(published_part))} AS shard, file_row_number AS row, lang, lang_score,
               n_chars, n_tokens, quality, quality_bucket, dup_cluster
        FROM read_parquet({literal(part)}, file_row_number = true)
        ORDER BY file_row_number
    """


def funnel_query(funnel) -> str:
    """A shard's every input record with its fate: what `prepare` recorded, unless a later stage removed the
    document (the shard's rows of the removals tables, registered as `removals`), in record order."""
    later = lambda column: f"CASE WHEN x.fate IS NOT NULL THEN x.{column} ELSE f.{column} END AS {column}"  # noqa: E731
    return f"""
        SELECT f.source, f.shard, f.input, f.record, f.doc_id, {later("fate")}, {later("stage")}, {later("reason")},
               {later("detail")}, x.dup_cluster, f.lang
        FROM read_parquet({literal(funnel)}) f
        LEFT JOIN removals x USING (source, shard, record)
        ORDER BY f.record
    """


def write_query(con, query: str, path) -> None:
    """A query's rows (one shard's) as a Parquet part, every column nullable as in the table over all shards:
    DuckDB calls a column NOT NULL when one file's statistics show no null, and parts must share a schema."""
    table = con.sql(query).to_arrow_table()
    write_parquet(table.cast(pa.schema([field.with_nullable(True) for field in table.schema])), path)
