"""The per-document tables of the manifest (documents, funnel, removed), written per shard by one Dask task for
each shard or run of small shards (parts.shard_groups), with the shard's curated part and quarantine copied into
the generation by the same task: one DuckDB query per table for the whole run, split into the shards' parts.

A shard's funnel rows are `prepare`'s funnel rows with each removed record's row taken from the removals the
global stages wrote. Those are tables by shard (curation.stages.parts), so each task reads its own shards'
removals and nothing more; no process reads every removal, and the client gets counts only."""

import json
from collections import Counter

import numpy as np
import pyarrow as pa

from base.atomic_files import copy_file
from base.parquet_files import write_parquet
from base.small_files import read_text
from base.sql import duckdb_connect, path_list
from base.workspace import Generation
from curation.schema import PII_COLUMNS, REMOVALS, REMOVED_SAMPLE, annotator_fields, bucket_fields
from curation.stages.base import shared_context, worker_threads
from curation.stages.minhash import MINHASH
from curation.stages.minhash_dedup import MINHASH_DEDUP
from curation.stages.parts import shard_groups, shard_part
from curation.stages.prepare import PREPARE
from curation.stages.survivors import partitions_for
from curation.stages.tokenize import TOKENIZE


def publish_shards(client, ctx, gen: Generation, shards: list) -> list[dict]:
    """A task per shard, or per run of small shards (at least two per worker thread); returns each shard's counts
    in order."""
    import dask

    n = max(partitions_for(ctx, shards), 2 * worker_threads(client))
    groups = shard_groups(list(enumerate(shards)), n)
    shared = shared_context(client, ctx)
    tasks = [dask.delayed(publish_group)(shared, gen, group, dask_key_name=f"publish_shard-{gen.id}-{group[0][0]:05d}")
             for group in groups]
    return [counts for group in client.compute(tasks, sync=True) for counts in group]


def publish_group(ctx, gen: Generation, group: list[tuple[int, object]]) -> list[dict]:
    """The shards of a run, each (ordinal, shard): their curated parts and quarantines copied into the generation,
    then each per-document table made by one DuckDB query over all of them and split into the shards' parts (a
    query per table and shard cost ~3 ms, most of publishing a small shard). Returns the counts the dedup report
    needs, by shard: documents that reached MinHash dedup, and those it removed."""
    ws = ctx.workspace
    shards = [shard for _, shard in group]
    for shard in shards:
        copy_file(TOKENIZE.part_path(ws, shard), gen.curated_part(shard.source.name, shard.index))
        copy_file(PREPARE.quarantine_path(ws, shard), gen.quarantine_part(shard.source.name, shard.index))
    con = duckdb_connect(ws.root)
    removed = run_removals(con, ctx, shards)
    counts = [shard_counts(ctx, shard, near) for shard, near in zip(shards, near_duplicates(removed, shards))]
    con.register("removals", removed)
    parts = parts_table(ctx, gen, shards)
    con.register("parts", parts)
    ordinals = [ordinal for ordinal, _ in group]
    annotator_columns = [f.name for f in (*annotator_fields(ctx.config.annotators), *bucket_fields(ctx.config.annotators))]
    write_split(con, documents_query(parts, annotator_columns), gen, "documents", ordinals)
    write_split(con, funnel_query(parts), gen, "funnel", ordinals)
    write_split(con, removed_query(parts, ctx.config.inspect.removed_sample), gen, "removed", ordinals, REMOVED_SAMPLE)
    return counts


def run_removals(con, ctx, shards: list) -> pa.Table:
    """The rows of a run of shards in every removals table, read by one query (DuckDB opens a small part in a
    fraction of what a read of its own costs)."""
    files = [shard_part(folder, shard.source.name, shard.index) for folder in ctx.removals for shard in shards]
    if not files:
        return REMOVALS.empty_table()
    return con.sql(f"SELECT {', '.join(REMOVALS.names)} FROM read_parquet({path_list(files)})").to_arrow_table().cast(REMOVALS)


def near_duplicates(removed: pa.Table, shards: list) -> list[int]:
    """Each shard's documents that MinHash dedup removed, counted in a run's removals."""
    found = Counter(zip(removed["source"].to_pylist(), removed["shard"].to_pylist(), removed["stage"].to_pylist()))
    return [found[(shard.source.name, shard.index, MINHASH_DEDUP.name)] for shard in shards]


def shard_counts(ctx, shard, near: int) -> dict:
    signatures = json.loads(read_text(MINHASH.marker(ctx.workspace, shard))).get("signatures", 0) if MINHASH.enabled(ctx) else 0
    return {"source": shard.source.name, "considered": int(signatures), "near_duplicates": near}


def parts_table(ctx, gen: Generation, shards: list) -> pa.Table:
    """The files of a run of shards, a row each, the queries' `parts`: `_part` the shard's place in the run, its
    source and index, its tokenized, prepared, funnel and removed-sample files, and its curated part's path as the
    generation names it."""
    ws = ctx.workspace
    return pa.table({
        "_part": pa.array(range(len(shards)), pa.int32()),
        "_source": [s.source.name for s in shards], "_shard": pa.array([s.index for s in shards], pa.int32()),
        "_tokenized": [str(TOKENIZE.part_path(ws, s)) for s in shards],
        "_prepared": [str(PREPARE.part_path(ws, s)) for s in shards],
        "_funnel": [str(PREPARE.funnel_path(ws, s)) for s in shards],
        "_removed_sample": [str(PREPARE.removed_sample_path(ws, s)) for s in shards],
        "_published": [gen.relative(gen.curated_part(s.source.name, s.index)) for s in shards]})


def files(parts: pa.Table, column: str, row_numbers: bool = False) -> str:
    """Every file of a column of `parts` in one read_parquet, each row with its `filename` (and its
    `file_row_number`)."""
    return f"read_parquet({path_list(parts[column].to_pylist())}, filename = true{', file_row_number = true' * row_numbers})"


def documents_query(parts: pa.Table, annotator_columns: list[str] = ()) -> str:
    """The curated parts' rows without text, in row order, `shard` naming the part as the generation holds it; the
    spans of personal data per kind, then the annotators' columns (their scores and buckets) last."""
    annotators = "".join(f", {name}" for name in annotator_columns)  # names checked: lowercase letters, digits, _
    pii = "".join(f", {name}" for name in PII_COLUMNS.values())
    return f"""
        SELECT id, source, license, origin, _published AS shard, file_row_number AS row,
               lang, lang_score, n_chars, n_tokens, quality, quality_bucket, dup_cluster, dup_count, domain, domain_distance{pii}{annotators},
               _part
        FROM {files(parts, "_tokenized", row_numbers=True)} d
        JOIN parts ON parts._tokenized = d.filename
        ORDER BY _part, file_row_number
    """


def later(column: str) -> str:
    return f"CASE WHEN x.fate IS NOT NULL THEN x.{column} ELSE f.{column} END AS {column}"


def funnel_query(parts: pa.Table) -> str:
    """Each shard's every input record with its fate: what `prepare` recorded, unless a later stage removed the
    document (the shards' rows of the removals tables, registered as `removals`), in record order."""
    return f"""
        SELECT f.source, f.shard, f.input, f.record, f.doc_id, {later("fate")}, {later("stage")}, {later("reason")},
               {later("detail")}, x.dup_cluster, f.lang, _part
        FROM {files(parts, "_funnel")} f
        JOIN parts ON parts._funnel = f.filename
        LEFT JOIN removals x ON x.source = f.source AND x.shard = f.shard AND x.record = f.record
        ORDER BY _part, f.record
    """


def removed_query(parts: pa.Table, sample: int | None) -> str:
    """Each shard's removed sample: `prepare`'s (its first `sample` removed documents per reason, None: all) and the
    first `sample` per reason by record of those the global stages removed (the shards' removals, registered as
    `removals`), their text as `prepare` wrote it; in record order."""
    first = ("" if sample is None
             else f"QUALIFY row_number() OVER (PARTITION BY x.source, x.shard, x.reason ORDER BY x.record) <= {int(sample)}")
    return f"""
        SELECT r.* EXCLUDE (filename), _part
        FROM {files(parts, "_removed_sample")} r
        JOIN parts ON parts._removed_sample = r.filename
        UNION ALL
        SELECT x.source, x.shard, f.input, x.record, p.id AS doc_id, x.fate, x.stage, x.reason, x.detail, p.text, _part
        FROM removals x
        JOIN parts ON parts._source = x.source AND parts._shard = x.shard
        JOIN {files(parts, "_prepared")} p ON p.filename = parts._prepared AND p.record = x.record
        JOIN {files(parts, "_funnel")} f ON f.filename = parts._funnel AND f.record = x.record
        {first}
        ORDER BY _part, record
    """


def write_split(con, query: str, gen: Generation, table: str, ordinals: list[int], schema: pa.Schema | None = None) -> None:
    """A query's rows over a run of shards, sorted by `_part`, as each shard's part of the manifest's `table`."""
    rows = con.sql(query).to_arrow_table()
    bounds = np.searchsorted(rows["_part"].to_numpy(), np.arange(len(ordinals) + 1))
    rows = rows.drop_columns(["_part"])
    for i, ordinal in enumerate(ordinals):
        write_query_rows(rows.slice(bounds[i], bounds[i + 1] - bounds[i]), gen.manifest_part(table, ordinal), schema)


def write_query_rows(table: pa.Table, path, schema: pa.Schema | None = None) -> None:
    """A query's rows (one shard's) as a Parquet part, in `schema` if given, every column nullable as in the table
    over all shards: DuckDB calls a column NOT NULL when one file's statistics show no null, and parts must share a
    schema."""
    table = table if schema is None else table.select(schema.names).cast(schema)
    write_parquet(table.cast(pa.schema([field.with_nullable(True) for field in table.schema])), path)
