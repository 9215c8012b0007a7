"""The manifest: Parquet tables that describe the curated data without its text.

- shards:    one row per curated Parquet part;
- documents: one row per kept document (no text, no token ids);
- funnel:    one row per input record with its fate, so that inputs == sum of fates per source;
- contamination: one row per contaminated document and eval set it overlaps (empty without [decontaminate]);
- domains:   one row per topic domain and clustered source (empty without [domains]);
- pii:       one row per source and kind of personal data its pii step looked for (curation.steps.pii);
- provenance: one row per source: its licence, origin and citation, as sources.toml says (curation.licenses).

documents and funnel are folders of parts, one per shard, written on the workers (curation.manifest_parts); the
small tables here are written by one task once those are in place.
"""

import datetime
import json
from pathlib import Path

import pyarrow as pa

from base.atomic_files import atomic_path, write_text
from base.filenames import escaped_path
from base.parquet_files import write_parquet
from base.small_files import read_text
from base.sql import duckdb_connect, literal
from base.workspace import DEDUP_REPORT_FILE, PROVENANCE_TABLE, Generation, SUCCESS_FILE
from curation.document import SUMMARY_FATES
from curation.funnel_warnings import curation_warnings
from curation.schema import (CONTAMINATION, DOMAINS_TABLE, NEAR_DUPLICATE_CLUSTERS, PII_COLUMNS, PII_TABLE, PROVENANCE,
                             empty_relation)
from curation.stages.annotate_buckets import annotators_record
from curation.stages.decontaminate import DECONTAMINATE, stage_stats
from curation.stages.domains import DOMAINS
from curation.stages.domains import stage_stats as domain_stats
from curation.stages.minhash_dedup import MINHASH_DEDUP
from curation.stages.quality_select import QUALITY_SELECT
from curation.steps.pii import TOTAL, PersonalData
from curation.tokenizer import tokenizer_fingerprint

SHARDS = pa.schema(
    [
        ("path", pa.string()),  # relative to the generation's folder
        ("source", pa.string()),
        ("input", pa.string()),
        ("n_docs", pa.int64()),
        ("n_tokens", pa.int64()),
        ("bytes", pa.int64()),
        ("created", pa.timestamp("s", tz="UTC")),
        ("fingerprint", pa.string()),
    ]
)


def write_manifest(ctx, gen: Generation, shards: list, stats: dict[str, dict], counts: list[dict]) -> None:
    """The manifest's small tables, of a generation being built in `gen.root` whose curated parts and per-document
    tables (curation.manifest_parts) are in place: run as one task on a worker. `counts` are the shards' counts."""
    ws = ctx.workspace
    configs = {s.source.name: s.source for s in shards}
    sources = {name: {"tags": list(s.tags), "format": s.format} for name, s in configs.items()}
    decontaminated = ctx.config.decontaminate is not None
    domains = domain_stats(ws) if DOMAINS.enabled(ctx) else None
    con = duckdb_connect(ws.root)
    curation = {"tokenizer": ctx.tokenizer, "tokenizer_fingerprint": tokenizer_fingerprint(ctx.tokenizer),
                "quality_model": ctx.quality_model, "sources": sources,
                "limit": ctx.limit,  # `loom curate --limit N`: a sample of at most N records per source
                "decontamination": decontamination_info(stage_stats(ws)) if decontaminated else None,
                "domains": domains and {key: domains[key] for key in ("k", "sources", "names", "model_digest")},
                "annotators": annotators_record(ctx),
                "warnings": curation_warnings(con, gen.manifest_files("funnel"), list(configs.values()))}
    write_text(json.dumps(curation, indent=2), gen.curation_info)
    write_parquet(_shards_table(gen, shards, stats), gen.manifest_table("shards"))
    write_parquet(domains_table(con, gen, domains), gen.manifest_table("domains"))
    write_parquet(pii_table(con, gen, list(configs.values())), gen.manifest_table("pii"))
    write_parquet(provenance_table(list(configs.values())), gen.manifest_table(PROVENANCE_TABLE))
    if decontaminated:
        _copy(con, f"SELECT * FROM read_parquet({literal(DECONTAMINATE.evidence_path(ws))}) ORDER BY ALL",
              gen.manifest_table("contamination"))
    else:
        write_parquet(CONTAMINATION.empty_table(), gen.manifest_table("contamination"))
    _copy(con, f"""
        SELECT cluster_id, member_id, source, is_survivor, jaccard_to_survivor, removed, cluster_size, oversized
        FROM {near_clusters(ctx)} ORDER BY cluster_id, member_id
    """, gen.manifest_table("dedup_clusters"))
    write_text(json.dumps(dedup_report(con, ctx, counts), indent=2), gen.manifest / DEDUP_REPORT_FILE)
    quality = json.loads(read_text(QUALITY_SELECT.marker(ws)))
    cuts = quality["cut_points"]
    bounds = ", ".join(f"({i}, {lo}, {hi})" for i, (lo, hi) in enumerate(zip([0.0, *cuts], [*cuts, 1.0])))
    _copy(con, f"""
        SELECT b.bucket::SMALLINT AS quality_bucket, b.lower::DOUBLE AS lower, b.upper::DOUBLE AS upper, count(q.record) AS n_docs
        FROM (VALUES {bounds}) AS b(bucket, lower, upper)
        LEFT JOIN read_parquet({literal(QUALITY_SELECT.buckets_path(ws))}) q ON q.quality_bucket = b.bucket
        WHERE {literal(bool(quality["scored"]))}
        GROUP BY ALL ORDER BY 1
    """, gen.manifest_table("quality_buckets"))
    for source in sorted({s.source.name for s in shards}):
        fingerprints = [stats[s.key]["fingerprint"] for s in shards if s.source.name == source]
        write_text("\n".join(fingerprints) + "\n", gen.curated / source / SUCCESS_FILE)


def domains_table(con, gen: Generation, domains: dict | None) -> pa.Table:
    """A row per domain and clustered source: its documents and tokens, the domain's name and top terms, the ids of
    the source's 3 documents of it closest to the centre, and the model's digest. `domains` is the stage's stats."""
    if not domains:
        return DOMAINS_TABLE.empty_table()
    found = con.sql(f"""
        SELECT domain, source, count(*), sum(n_tokens), list(id ORDER BY domain_distance, id)[1:3]
        FROM read_parquet({literal(gen.manifest_files("documents"))}) WHERE domain IS NOT NULL GROUP BY ALL
    """).fetchall()
    counts = {(domain, source): (n, tokens, examples) for domain, source, n, tokens, examples in found}
    rows = [{"domain": d, "name": domains["names"].get(str(d)), "source": source,
             **dict(zip(("documents", "tokens", "examples"), counts.get((d, source), (0, 0, [])))),
             "top_terms": domains["top_terms"][d], "model_digest": domains["model_digest"]}
            for d in range(domains["k"]) for source in domains["sources"]]
    return pa.Table.from_pylist(rows, schema=DOMAINS_TABLE)


def pii_table(con, gen: Generation, sources: list) -> pa.Table:
    """A row per source whose pii step ran and kind it looked for, then its "total": kept documents with a span of
    the kind, the spans in them, and the documents max_pii removed for it."""
    documents, funnel = literal(gen.manifest_files("documents")), literal(gen.manifest_files("funnel"))
    spans = " + ".join(PII_COLUMNS.values())
    kinds = ", ".join(f"({literal(kind)}, {column})" for kind, column in [*PII_COLUMNS.items(), (TOTAL, spans)])
    found = con.sql(f"""
        SELECT source, k.kind, count(*) FILTER (k.n > 0), sum(k.n)
        FROM read_parquet({documents}), LATERAL (VALUES {kinds}) AS k(kind, n) GROUP BY ALL
    """).fetchall()
    removed = con.sql(f"""
        SELECT source, reason[5:], count(*) FROM read_parquet({funnel}) WHERE stage = {literal(PersonalData.name)} GROUP BY ALL
    """).fetchall()
    counts = {(source, kind): (n, total) for source, kind, n, total in found}
    removals = {(source, kind): n for source, kind, n in removed}
    rows = [{"source": s.name, "kind": kind, "mode": s.pii, "documents": counts.get((s.name, kind), (0, 0))[0],
             "spans": counts.get((s.name, kind), (0, 0))[1], "removed": removals.get((s.name, kind), 0)}
            for s in sources if s.pii != "off" for kind in (*s.pii_kinds, TOTAL)]
    return pa.Table.from_pylist(rows, schema=PII_TABLE)


def provenance_table(sources: list) -> pa.Table:
    """A row per source: its licence (SPDX, or "unknown"), origin and citation."""
    return pa.Table.from_pylist([{"source": s.name, "license": s.license, "origin": s.origin, "citation": s.citation}
                                 for s in sources], schema=PROVENANCE)


def decontamination_info(stats: dict) -> dict:
    """The decontaminate stage's settings and filters (each set's n-grams, the capacity its filter was sized for,
    its false positive rate and bits), as curation.json records them."""
    return {k: v for k, v in stats.items() if k not in ("fingerprint", "finished")}


def near_clusters(ctx) -> str:
    """SQL for minhash_dedup's clusters table; with dedup off (the stage not run), no rows."""
    if not MINHASH_DEDUP.enabled(ctx):
        return empty_relation(NEAR_DUPLICATE_CLUSTERS)
    return f"read_parquet({literal(MINHASH_DEDUP.clusters_path(ctx.workspace))})"


def dedup_report(con, ctx, counts: list[dict], largest: int = 10) -> dict:
    """The numbers a report's dedup section shows: removed fraction per source (of the documents that reached
    MinHash dedup, summed from the shards' counts), the cluster size histogram and the largest clusters; with
    dedup off, none of each."""
    clusters = near_clusters(ctx)
    stats = json.loads(read_text(MINHASH_DEDUP.marker(ctx.workspace))) if MINHASH_DEDUP.enabled(ctx) else \
        {"candidate_pairs": 0, "verified_pairs": 0, "oversized": []}
    removed: dict[str, list[int]] = {}
    for shard in counts:
        totals = removed.setdefault(shard["source"], [0, 0])
        totals[0] += shard["considered"]
        totals[1] += shard["near_duplicates"]
    sizes = con.sql(f"SELECT cluster_size, count(DISTINCT cluster_id) FROM {clusters} GROUP BY 1 ORDER BY 1").fetchall()
    top = con.sql(f"""
        SELECT cluster_id, any_value(cluster_size) AS size, string_agg(DISTINCT source, ',' ORDER BY source) AS sources,
               min(jaccard_to_survivor) AS min_jaccard, bool_or(oversized) AS oversized
        FROM {clusters} GROUP BY 1 ORDER BY size DESC, cluster_id LIMIT {largest}
    """).fetchall()
    return {
        "removed_fraction": {s: {"considered": n, "removed": r, "fraction": round(r / n, 6) if n else 0.0}
                             for s, (n, r) in sorted(removed.items()) if n},
        "cluster_sizes": {str(size): n for size, n in sizes},
        "largest_clusters": [{"cluster_id": c, "size": n, "sources": src.split(","), "min_jaccard": j, "oversized": o}
                             for c, n, src, j, o in top],
        "candidate_pairs": stats["candidate_pairs"], "verified_pairs": stats["verified_pairs"],
        "oversized_clusters": stats["oversized"],
    }


def _shards_table(gen: Generation, shards: list, stats: dict[str, dict]) -> pa.Table:
    rows = []
    for shard in shards:
        s = stats[shard.key]
        rows.append({
            "path": gen.relative(gen.curated_part(shard.source.name, shard.index)),
            "source": shard.source.name, "input": escaped_path(shard.input), "n_docs": s["docs"], "n_tokens": s["tokens"],
            "bytes": s["bytes"], "created": datetime.datetime.fromtimestamp(int(s["finished"]), datetime.UTC),
            "fingerprint": s["fingerprint"],
        })
    return pa.Table.from_pylist(rows, schema=SHARDS)


def _copy(con, query: str, path: Path) -> None:
    with atomic_path(path) as tmp:
        con.execute(f"COPY ({query}) TO {literal(tmp)} (FORMAT parquet, COMPRESSION zstd)")


def source_summary(gen: Generation) -> list[dict]:
    """Per source: records in, each fate's count, tokens kept, the top removal reasons and the warnings of
    curation.json (curation.funnel_warnings)."""
    funnel = literal(gen.manifest_files("funnel"))
    shards = literal(gen.manifest_table("shards"))
    counts = ", ".join(f"count(*) FILTER (fate = {literal(fate)}) AS {fate}" for fate in SUMMARY_FATES)
    con = duckdb_connect(gen.root)
    rows = con.sql(f"""
        WITH fates AS (
            SELECT source, count(*) AS docs_in, {counts}, min(rowid) AS first_row
            FROM (SELECT *, row_number() OVER () AS rowid FROM read_parquet({funnel}))
            GROUP BY source
        ), reasons AS (
            SELECT source, string_agg(reason || ' ' || n, ', ' ORDER BY n DESC, reason) AS top_reasons
            FROM (SELECT source, reason, count(*) AS n,
                         row_number() OVER (PARTITION BY source ORDER BY count(*) DESC, reason) AS place
                  FROM read_parquet({funnel}) WHERE fate <> 'kept' GROUP BY source, reason)
            WHERE place <= 3 GROUP BY source
        ), tokens AS (SELECT source, sum(n_tokens) AS tokens FROM read_parquet({shards}) GROUP BY source)
        SELECT f.source, docs_in, {", ".join(SUMMARY_FATES)}, coalesce(t.tokens, 0) AS tokens,
               coalesce(r.top_reasons, '') AS top_reasons
        FROM fates f LEFT JOIN reasons r USING (source) LEFT JOIN tokens t USING (source)
        ORDER BY first_row
    """).fetchall()
    columns = ["source", "docs_in", *SUMMARY_FATES, "tokens", "top_reasons"]
    warnings = json.loads(read_text(gen.curation_info)).get("warnings") or {}
    return [{**dict(zip(columns, row)), "warnings": warnings.get(row[0], [])} for row in rows]
