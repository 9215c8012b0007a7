"""The per-document tables of the manifest (documents, funnel, removed), written per shard by one Dask task for
each shard or run of small shards (parts.shard_groups), with the shard's curated part and quarantine copied into
the generation by the same task.

A shard's funnel rows are `prepare`'s funnel rows with each removed record's row taken from the removals the
global stages wrote. Those are tables by shard (curation.stages.parts), so each task reads its own shard's
removals and nothing more; no process reads every removal, and the client gets counts only."""

import json

import pyarrow as pa

from base.atomic_files import copy_file
from base.parquet_files import write_parquet
from base.small_files import read_text
from base.sql import duckdb_connect, literal
from base.workspace import Generation
from curation.schema import PII_COLUMNS, REMOVALS, REMOVED_SAMPLE, annotator_fields, bucket_fields
from curation.stages.base import shared_context
from curation.stages.minhash import MINHASH
from curation.stages.minhash_dedup import MINHASH_DEDUP
from curation.stages.parts import shard_groups
from curation.stages.prepare import PREPARE
from curation.stages.survivors import partitions_for, shard_rows
from curation.stages.tokenize import TOKENIZE


def publish_shards(client, ctx, gen: Generation, shards: list) -> list[dict]:
    """A task per shard, or per run of small shards (at least two per worker thread); returns each shard's counts
    in order."""
    import dask

    n = max(partitions_for(ctx, shards), 2 * sum(client.nthreads().values()))
    groups = shard_groups(list(enumerate(shards)), n)
    shared = shared_context(client, ctx)
    tasks = [dask.delayed(publish_group)(shared, gen, group, dask_key_name=f"publish_shard-{gen.id}-{group[0][0]:05d}")
             for group in groups]
    return [counts for group in client.compute(tasks, sync=True) for counts in group]


def publish_group(ctx, gen: Generation, group: list[tuple[int, object]]) -> list[dict]:
    """publish_shard for each (ordinal, shard) of a run, on one DuckDB connection."""
    con = duckdb_connect(ctx.workspace.root)
    return [publish_shard(ctx, gen, shard, ordinal, con) for ordinal, shard in group]


def publish_shard(ctx, gen: Generation, shard, ordinal: int, con=None) -> dict:
    """A shard's curated part and quarantine into the generation, its documents, funnel and removed parts; returns the
    counts the dedup report needs: documents that reached MinHash dedup, and those it removed."""
    ws = ctx.workspace
    copy_file(TOKENIZE.part_path(ws, shard), gen.curated_part(shard.source.name, shard.index))
    copy_file(PREPARE.quarantine_path(ws, shard), gen.quarantine_part(shard.source.name, shard.index))
    removed = pa.concat_tables([shard_rows(path, shard, REMOVALS.names).cast(REMOVALS) for path in ctx.removals]
                               or [REMOVALS.empty_table()])
    con = con or duckdb_connect(ws.root)
    con.register("removals", removed)
    annotator_columns = [f.name for f in (*annotator_fields(ctx.config.annotators), *bucket_fields(ctx.config.annotators))]
    write_query(con, documents_query(gen, TOKENIZE.part_path(ws, shard), gen.curated_part(shard.source.name, shard.index),
                                     annotator_columns), gen.manifest_part("documents", ordinal))
    write_query(con, funnel_query(PREPARE.funnel_path(ws, shard)), gen.manifest_part("funnel", ordinal))
    write_query(con, removed_query(ws, shard, ctx.config.inspect.removed_sample), gen.manifest_part("removed", ordinal),
                REMOVED_SAMPLE)
    signatures = json.loads(read_text(MINHASH.marker(ws, shard))).get("signatures", 0) if MINHASH.enabled(ctx) else 0
    near = sum(1 for stage in removed["stage"].to_pylist() if stage == MINHASH_DEDUP.name)
    return {"source": shard.source.name, "considered": int(signatures), "near_duplicates": near}


def documents_query(gen: Generation, part, published_part, annotator_columns: list[str] = ()) -> str:
    """A curated part's rows without text, in row order, `shard` naming the part as the generation holds it; the
    spans of personal data per kind, then the annotators' columns (their scores and buckets) last."""
    annotators = "".join(f", {name}" for name in annotator_columns)  # names checked: lowercase letters, digits, _
    pii = "".join(f", {name}" for name in PII_COLUMNS.values())
    return f"""
        SELECT id, source, license, origin, {literal(gen.relative(published_part))} AS shard, file_row_number AS row,
               lang, lang_score, n_chars, n_tokens, quality, quality_bucket, dup_cluster, dup_count, domain, domain_distance{pii}{annotators}
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


def removed_query(ws, shard, sample: int | None) -> str:
    """A shard's removed sample: `prepare`'s (its first `sample` removed documents per reason, None: all) and the
    first `sample` per reason by record of those the global stages removed (the shard's removals, registered as
    `removals`), their text as `prepare` wrote it; in record order."""
    first = ("" if sample is None
             else f"QUALIFY row_number() OVER (PARTITION BY x.reason ORDER BY x.record) <= {int(sample)}")
    return f"""
        SELECT * FROM read_parquet({literal(PREPARE.removed_sample_path(ws, shard))})
        UNION ALL
        SELECT x.source, x.shard, f.input, x.record, p.id AS doc_id, x.fate, x.stage, x.reason, x.detail, p.text
        FROM removals x
        JOIN read_parquet({literal(PREPARE.part_path(ws, shard))}) p ON p.record = x.record
        JOIN read_parquet({literal(PREPARE.funnel_path(ws, shard))}) f ON f.record = x.record
        {first}
        ORDER BY record
    """


def write_query(con, query: str, path, schema: pa.Schema | None = None) -> None:
    """A query's rows (one shard's) as a Parquet part, in `schema` if given, every column nullable as in the table
    over all shards: DuckDB calls a column NOT NULL when one file's statistics show no null, and parts must share a
    schema."""
    table = con.sql(query).to_arrow_table()
    table = table if schema is None else table.select(schema.names).cast(schema)
    write_parquet(table.cast(pa.schema([field.with_nullable(True) for field in table.schema])), path)
