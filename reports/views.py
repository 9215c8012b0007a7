"""DuckDB views over a workspace: the manifests, the curated data, compiled mixtures and training runs.
A view exists only when the files behind it do, so the list grows as a workspace does."""

import glob
from dataclasses import dataclass
from pathlib import Path

import duckdb

from loom.sql import literal

READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN", "PRAGMA"}


@dataclass(frozen=True)
class View:
    name: str
    pattern: str  # files that must exist, relative to the workspace
    sql: str  # the view's query; {ws:REL} is the path REL inside the workspace, as a quoted SQL string


class WorkspacePaths:
    """Formats `{ws:REL}` in a view's query as a SQL string of the path REL inside the workspace."""

    def __init__(self, root: Path):
        self.root = root

    def __format__(self, relative: str) -> str:
        return literal(f"{self.root}/{relative}")


VIEWS = (
    View("documents", "curated/*/part-*.parquet",
         "SELECT * FROM read_parquet({ws:curated/*/part-*.parquet}, union_by_name = true)"),
    View("doc_stats", "manifest/documents.parquet", "SELECT * FROM read_parquet({ws:manifest/documents.parquet})"),
    View("shards", "manifest/shards.parquet", "SELECT * FROM read_parquet({ws:manifest/shards.parquet})"),
    View("funnel", "manifest/funnel.parquet", "SELECT * FROM read_parquet({ws:manifest/funnel.parquet})"),
    View("quarantine", "quarantine/*/*.jsonl", """
        SELECT split_part(filename, '/', -2) AS source, input, record, reason, detail, raw
        FROM read_json({ws:quarantine/*/*.jsonl}, format = 'newline_delimited', filename = true,
                       columns = {{input: 'VARCHAR', record: 'BIGINT', reason: 'VARCHAR', detail: 'VARCHAR',
                                   raw: 'VARCHAR'}})"""),
    View("dedup_clusters", "manifest/dedup_clusters.parquet",
         "SELECT * FROM read_parquet({ws:manifest/dedup_clusters.parquet})"),
    View("quality_buckets", "manifest/quality_buckets.parquet",
         "SELECT * FROM read_parquet({ws:manifest/quality_buckets.parquet})"),
    View("mixtures", "mixtures/*/schedule.json", """
        SELECT name, steps, tokens, seq_len, global_batch, seed, len(phases) AS n_phases,
               len(components) AS n_components, manifest_fingerprint, tokenizer_fingerprint
        FROM read_json({ws:mixtures/*/schedule.json})"""),
    View("mixture_plan", "mixtures/*/plan.parquet", """
        SELECT split_part(filename, '/', -2) AS mixture, * EXCLUDE (filename)
        FROM read_parquet({ws:mixtures/*/plan.parquet}, filename = true)"""),
    View("mixture_documents", "mixtures/*/sequences/*.parquet", """
        WITH components AS (
            SELECT name AS mixture, unnest(components, recursive := true)
            FROM read_json({ws:mixtures/*/schedule.json}))
        SELECT c.mixture, c.key AS component, d.shard, d.row, d.n_tokens, d.offset
        FROM read_parquet({ws:mixtures/*/sequences/*.parquet}, filename = true) d
        JOIN components c ON d.filename = {ws:mixtures/} || c.mixture || '/' || c.file"""),
    View("metrics", "runs/*/metrics.jsonl", """
        SELECT split_part(filename, '/', -2) AS run, * EXCLUDE (filename)
        FROM read_json_auto({ws:runs/*/metrics.jsonl}, format = 'newline_delimited', filename = true,
                            union_by_name = true, ignore_errors = true)
        WHERE step IS NOT NULL"""),  # a torn line (a killed writer) reads as nulls: skipped, as read_metrics does
    View("runs", "runs/*/metrics.jsonl", """
        SELECT run, count(*) AS records, max(step) AS last_step, arg_max(loss, step) AS last_loss
        FROM metrics GROUP BY run"""),
)


def available_views(root: Path) -> list[tuple[str, str]]:
    """(name, CREATE VIEW statement) of each view whose files exist, in dependency order."""
    root = Path(root).resolve()
    statements = []
    for view in VIEWS:
        if glob.glob(str(root / view.pattern)):
            body = " ".join(view.sql.format(ws=WorkspacePaths(root)).split())
            statements.append((view.name, f"CREATE OR REPLACE VIEW {view.name} AS {body};"))
    return statements


def connect(root: Path) -> tuple[duckdb.DuckDBPyConnection, list[str]]:
    """An in-memory DuckDB connection with the workspace's views defined; and their names."""
    con = duckdb.connect()
    views = available_views(root)
    for _, statement in views:
        con.execute(statement)
    return con, [name for name, _ in views]


def is_read_only(con: duckdb.DuckDBPyConnection, query: str) -> bool:
    return all(s.type.name in READ_ONLY_STATEMENTS for s in con.extract_statements(query))
