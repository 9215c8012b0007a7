"""The manifest: Parquet tables that describe the curated data without its text.

- shards:    one row per curated Parquet part;
- documents: one row per kept document (no text, no token ids);
- funnel:    one row per input record with its fate, so that inputs == sum of fates per source.
"""

import datetime
import json
from pathlib import Path

import duckdb
import pyarrow as pa

from curation.atomic import atomic_path, write_parquet, write_text
from curation.job import Shard, exact_duplicates_path, quality_selection_path
from curation.layout import CurationLayout

SHARDS = pa.schema(
    [
        ("path", pa.string()),  # relative to the workspace
        ("source", pa.string()),
        ("input", pa.string()),
        ("n_docs", pa.int64()),
        ("n_tokens", pa.int64()),
        ("bytes", pa.int64()),
        ("created", pa.timestamp("s", tz="UTC")),
        ("fingerprint", pa.string()),
    ]
)


def write_manifest(layout: CurationLayout, shards: list[Shard], stats: dict[str, dict]) -> None:
    layout.manifest.mkdir(parents=True, exist_ok=True)
    write_parquet(_shards_table(layout, shards, stats), layout.manifest / "shards.parquet")
    con = duckdb.connect()
    curated = [str(layout.curated_part(s.source.name, s.index)) for s in shards]
    root = str(layout.root.resolve()) + "/"
    _copy(con, f"""
        SELECT id, source, replace(filename, '{root}', '') AS shard, lang, lang_score, n_chars, n_tokens,
               quality, quality_bucket, dup_cluster
        FROM read_parquet({curated!r}, filename = true, file_row_number = true)
        ORDER BY filename, file_row_number
    """, layout.manifest / "documents.parquet")
    funnel = [str(layout.stage_part("funnel", s.source.name, s.index)) for s in shards]
    ranks = ", ".join(f"('{s.source.name}', {s.rank})" for s in {s.source.name: s for s in shards}.values())
    _copy(con, f"""
        SELECT f.source, f.shard, f.input, f.record, f.doc_id,
               CASE WHEN q.low_quality IS NOT NULL THEN 'low_quality' WHEN d.record IS NOT NULL THEN 'duplicate'
                    ELSE f.fate END AS fate,
               CASE WHEN q.low_quality IS NOT NULL THEN 'quality' WHEN d.record IS NOT NULL THEN 'exact_dedup'
                    ELSE f.stage END AS stage,
               CASE WHEN q.low_quality IS NOT NULL THEN q.low_quality WHEN d.record IS NOT NULL THEN 'exact_duplicate'
                    ELSE f.reason END AS reason,
               CASE WHEN q.low_quality IS NOT NULL THEN q.detail WHEN d.record IS NOT NULL THEN 'same text as ' || d.survivor
                    ELSE f.detail END AS detail,
               f.lang
        FROM read_parquet({funnel!r}) f
        LEFT JOIN read_parquet('{exact_duplicates_path(layout)}') d USING (source, shard, record)
        LEFT JOIN read_parquet('{quality_selection_path(layout)}') q USING (source, shard, record)
        JOIN (VALUES {ranks}) AS r(source, rank) USING (source)
        ORDER BY r.rank, f.shard, f.record
    """, layout.manifest / "funnel.parquet")
    quality = json.loads((layout.work / "quality_select" / "_done").read_text())
    cuts = quality["cut_points"]
    bounds = ", ".join(f"({i}, {lo}, {hi})" for i, (lo, hi) in enumerate(zip([0.0, *cuts], [*cuts, 1.0])))
    _copy(con, f"""
        SELECT b.bucket::SMALLINT AS quality_bucket, b.lower::DOUBLE AS lower, b.upper::DOUBLE AS upper, count(q.record) AS n_docs
        FROM (VALUES {bounds}) AS b(bucket, lower, upper)
        LEFT JOIN read_parquet('{quality_selection_path(layout)}') q ON q.quality_bucket = b.bucket
        WHERE {bool(quality["scored"])}
        GROUP BY ALL ORDER BY 1
    """, layout.manifest / "quality_buckets.parquet")
    for source in sorted({s.source.name for s in shards}):
        fingerprints = [stats[s.key]["fingerprint"] for s in shards if s.source.name == source]
        write_text("\n".join(fingerprints) + "\n", layout.curated / source / "_SUCCESS")


def _shards_table(layout: CurationLayout, shards: list[Shard], stats: dict[str, dict]) -> pa.Table:
    rows = []
    for shard in shards:
        s = stats[shard.key]
        rows.append({
            "path": str(layout.curated_part(shard.source.name, shard.index).relative_to(layout.root)),
            "source": shard.source.name, "input": shard.input, "n_docs": s["docs"], "n_tokens": s["tokens"],
            "bytes": s["bytes"], "created": datetime.datetime.fromtimestamp(int(s["finished"]), datetime.UTC),
            "fingerprint": s["fingerprint"],
        })
    return pa.Table.from_pylist(rows, schema=SHARDS)


def _copy(con, query: str, path: Path) -> None:
    with atomic_path(path) as tmp:
        con.execute(f"COPY ({query}) TO '{tmp}' (FORMAT parquet, COMPRESSION zstd)")


def remove_stale_parts(layout: CurationLayout, shards: list[Shard]) -> list[Path]:
    """Curated parts left by an earlier run of a declared source whose inputs have since shrunk."""
    current = {layout.curated_part(s.source.name, s.index) for s in shards}
    stale = [p for name in {s.source.name for s in shards}
             for p in (layout.curated / name).glob("part-*.parquet") if p not in current]
    for path in stale:
        path.unlink()
    return stale


def source_summary(layout: CurationLayout) -> list[dict]:
    """Per source: records in, each fate's count, tokens kept and the top removal reasons."""
    funnel = layout.manifest / "funnel.parquet"
    shards = layout.manifest / "shards.parquet"
    con = duckdb.connect()
    rows = con.sql(f"""
        WITH fates AS (
            SELECT source, count(*) AS docs_in,
                   count(*) FILTER (fate = 'malformed') AS malformed,
                   count(*) FILTER (fate = 'filtered') AS filtered,
                   count(*) FILTER (fate = 'duplicate') AS duplicate,
                   count(*) FILTER (fate = 'low_quality') AS low_quality,
                   count(*) FILTER (fate = 'kept') AS kept,
                   min(rowid) AS first_row
            FROM (SELECT *, row_number() OVER () AS rowid FROM read_parquet('{funnel}'))
            GROUP BY source
        ), reasons AS (
            SELECT source, string_agg(reason || ' ' || n, ', ' ORDER BY n DESC, reason) AS top_reasons
            FROM (SELECT source, reason, count(*) AS n,
                         row_number() OVER (PARTITION BY source ORDER BY count(*) DESC, reason) AS place
                  FROM read_parquet('{funnel}') WHERE fate <> 'kept' GROUP BY source, reason)
            WHERE place <= 3 GROUP BY source
        ), tokens AS (SELECT source, sum(n_tokens) AS tokens FROM read_parquet('{shards}') GROUP BY source)
        SELECT f.source, docs_in, malformed, filtered, duplicate, low_quality, kept, coalesce(t.tokens, 0) AS tokens,
               coalesce(r.top_reasons, '') AS top_reasons
        FROM fates f LEFT JOIN reasons r USING (source) LEFT JOIN tokens t USING (source)
        ORDER BY first_row
    """).fetchall()
    columns = ["source", "docs_in", "malformed", "filtered", "duplicate", "low_quality", "kept", "tokens", "top_reasons"]
    return [dict(zip(columns, row)) for row in rows]
