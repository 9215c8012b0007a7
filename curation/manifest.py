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

from loom.io import atomic_path, write_parquet, write_text
from curation.job import (JobContext, Shard, exact_duplicates_path, near_duplicate_clusters_path, near_duplicates_path,
                          quality_selection_path)
from loom.workspace import Workspace

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


def write_manifest(ctx: JobContext, shards: list[Shard], stats: dict[str, dict]) -> None:
    layout = ctx.layout
    layout.manifest.mkdir(parents=True, exist_ok=True)
    sources = {s.source.name: {"tags": list(s.source.tags), "format": s.source.format} for s in shards}
    curation = {"tokenizer": ctx.tokenizer, "tokenizer_fingerprint": ctx.stage_input("tokenize"),
                "quality_model": ctx.quality_model, "sources": sources}
    write_text(json.dumps(curation, indent=2), layout.manifest / "curation.json")
    write_parquet(_shards_table(layout, shards, stats), layout.manifest / "shards.parquet")
    con = duckdb.connect()
    curated = [str(layout.curated_part(s.source.name, s.index)) for s in shards]
    root = str(layout.root.resolve()) + "/"
    _copy(con, f"""
        SELECT id, source, replace(filename, '{root}', '') AS shard, file_row_number AS row, lang, lang_score,
               n_chars, n_tokens, quality, quality_bucket, dup_cluster
        FROM read_parquet({curated!r}, filename = true, file_row_number = true)
        ORDER BY filename, file_row_number
    """, layout.manifest / "documents.parquet")
    funnel = [str(layout.stage_part("funnel", s.source.name, s.index)) for s in shards]
    ranks = ", ".join(f"('{s.source.name}', {s.rank})" for s in {s.source.name: s for s in shards}.values())
    _copy(con, f"""
        SELECT f.source, f.shard, f.input, f.record, f.doc_id,
               CASE WHEN q.low_quality IS NOT NULL THEN 'low_quality'
                    WHEN d.record IS NOT NULL OR n.record IS NOT NULL THEN 'duplicate' ELSE f.fate END AS fate,
               CASE WHEN q.low_quality IS NOT NULL THEN 'quality' WHEN d.record IS NOT NULL THEN 'exact_dedup'
                    WHEN n.record IS NOT NULL THEN 'minhash_dedup' ELSE f.stage END AS stage,
               CASE WHEN q.low_quality IS NOT NULL THEN q.low_quality WHEN d.record IS NOT NULL THEN 'exact_duplicate'
                    WHEN n.record IS NOT NULL THEN 'near_duplicate' ELSE f.reason END AS reason,
               CASE WHEN q.low_quality IS NOT NULL THEN q.detail WHEN d.record IS NOT NULL THEN 'same text as ' || d.survivor
                    WHEN n.record IS NOT NULL THEN 'cluster ' || n.cluster_id || ', estimated Jaccard '
                         || round(n.jaccard_to_survivor, 3) || ' to its survivor'
                    ELSE f.detail END AS detail,
               n.cluster_id AS dup_cluster,
               f.lang
        FROM read_parquet({funnel!r}) f
        LEFT JOIN read_parquet('{exact_duplicates_path(layout)}') d USING (source, shard, record)
        LEFT JOIN read_parquet('{quality_selection_path(layout)}') q USING (source, shard, record)
        LEFT JOIN read_parquet('{near_duplicates_path(layout)}') n USING (source, shard, record)
        JOIN (VALUES {ranks}) AS r(source, rank) USING (source)
        ORDER BY r.rank, f.shard, f.record
    """, layout.manifest / "funnel.parquet")
    _copy(con, f"""
        SELECT cluster_id, member_id, source, is_survivor, jaccard_to_survivor, removed, cluster_size, oversized
        FROM read_parquet('{near_duplicate_clusters_path(layout)}') ORDER BY cluster_id, member_id
    """, layout.manifest / "dedup_clusters.parquet")
    write_text(json.dumps(dedup_report(con, layout), indent=2), layout.manifest / "dedup_report.json")
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


def dedup_report(con, layout: Workspace, largest: int = 10) -> dict:
    """The numbers a report's dedup section shows: removed fraction per source (of the documents that reached
    MinHash dedup), the cluster size histogram and the largest clusters."""
    clusters = f"read_parquet('{near_duplicate_clusters_path(layout)}')"
    signatures = f"read_parquet('{layout.work}/minhash/*/part-*.parquet')"
    stats = json.loads((layout.work / "minhash_dedup" / "_done").read_text())
    removed = con.sql(f"""
        SELECT s.source, count(*) AS considered, count(c.member_id) AS removed
        FROM {signatures} s LEFT JOIN (SELECT * FROM {clusters} WHERE removed) c ON c.member_id = s.id
        GROUP BY 1 ORDER BY 1
    """).fetchall() if any(layout.work.glob("minhash/*/part-*.parquet")) else []
    sizes = con.sql(f"SELECT cluster_size, count(DISTINCT cluster_id) FROM {clusters} GROUP BY 1 ORDER BY 1").fetchall()
    top = con.sql(f"""
        SELECT cluster_id, any_value(cluster_size) AS size, string_agg(DISTINCT source, ',' ORDER BY source) AS sources,
               min(jaccard_to_survivor) AS min_jaccard, bool_or(oversized) AS oversized
        FROM {clusters} GROUP BY 1 ORDER BY size DESC, cluster_id LIMIT {largest}
    """).fetchall()
    return {
        "removed_fraction": {s: {"considered": n, "removed": r, "fraction": round(r / n, 6) if n else 0.0}
                             for s, n, r in removed},
        "cluster_sizes": {str(size): n for size, n in sizes},
        "largest_clusters": [{"cluster_id": c, "size": n, "sources": src.split(","), "min_jaccard": j, "oversized": o}
                             for c, n, src, j, o in top],
        "candidate_pairs": stats["candidate_pairs"], "verified_pairs": stats["verified_pairs"],
        "oversized_clusters": stats["oversized"],
    }


def _shards_table(layout: Workspace, shards: list[Shard], stats: dict[str, dict]) -> pa.Table:
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


def remove_stale_parts(layout: Workspace, shards: list[Shard]) -> list[Path]:
    """Curated parts left by an earlier run of a declared source whose inputs have since shrunk."""
    current = {layout.curated_part(s.source.name, s.index) for s in shards}
    stale = [p for name in {s.source.name for s in shards}
             for p in (layout.curated / name).glob("part-*.parquet") if p not in current]
    for path in stale:
        path.unlink()
    return stale


def source_summary(layout: Workspace) -> list[dict]:
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
