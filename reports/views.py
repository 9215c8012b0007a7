"""DuckDB views over a workspace: the manifests, the curated data, compiled mixtures and training runs.
A view exists only when the files behind it do, so the list grows as a workspace does. The connection they are
defined on is sandboxed by DuckDB's own settings: it reaches files under the workspace folder (or, for a workspace on
an object store, its URL prefix, read through the store's fsspec filesystem) and nothing else."""

import glob
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb

from base.errors import UserError
from base.inputs import expand_glob
from base.sql import duckdb_connect, literal
from base.store import as_path, is_remote
from base.workspace import (BUILDS_DIR, CURATED_FILES, LADDER_POINTS, LICENSES_FILE, PLAN_FILE, PROVENANCE_TABLE,
                            QUARANTINE_FILES, RUN_METRICS, SCHEDULE_FILE, SPILL_DIR, SEQUENCE_FILES, VALIDATION_FILE,
                            Workspace, manifest_files)
from curation.schema import PII_TABLE, PROVENANCE, REMOVED_SAMPLE, empty_relation
from mixtures import compiled_mixtures

# What `loom sql` runs, a fence behind the sandbox: SELECT (DESCRIBE, SHOW, SUMMARIZE, FROM and VALUES parse as
# one), EXPLAIN of such a statement (EXPLAIN ANALYZE runs it), and the pragmas that only report.
READ_ONLY_STATEMENTS = {"SELECT"}
READ_ONLY_PRAGMAS = {"database_list", "platform", "show", "show_tables", "show_tables_expanded", "table_info",
                     "version"}
EXPLAINED = re.compile(r"\s*EXPLAIN\s+(?:ANALY[SZ]E\s+)?(?:\([^)'\"]*\)\s*)?(?P<statement>.*)",
                       re.IGNORECASE | re.DOTALL)  # options holding a quote are not skipped: the rest fails to parse
PRAGMA_NAME = re.compile(r"\s*PRAGMA\s+(?P<name>\w+)", re.IGNORECASE)


PUBLISHED, WORKSPACE, BUILDS = "published", "workspace", "builds"  # where a view's files are (View.reads)


@dataclass(frozen=True)
class View:
    name: str
    pattern: str  # files that must exist, relative to the folder(s) the view reads (base.workspace names them)
    sql: str  # the view's query; {files} is `pattern` in that folder, as a quoted SQL string, and {ws:REL} the path
    # REL inside it (a list of them, one per build, for BUILDS)
    reads: str = WORKSPACE  # WORKSPACE: its own folders; PUBLISHED: the published generation of curated data;
    # BUILDS: the current build of every compiled mixture (mixtures.compiled_mixtures)
    older: str = ""  # files of a folder made before the view's files were (a generation published before them):
    empty: str = ""  # there the view is this query, the same columns and no rows


class WorkspacePaths:
    """Formats `{ws:REL}` in a view's query as a SQL string of the path REL inside the folder, or, for a view over
    several folders (the mixtures' builds), as a SQL list of such strings."""

    def __init__(self, roots: list[Path], many: bool = False):
        self.roots, self.many = roots, many

    def __format__(self, relative: str) -> str:
        paths = [literal(f"{root}/{relative}") for root in self.roots]
        return f"[{', '.join(paths)}]" if self.many else paths[0]


def mixture_of(file: str) -> str:
    """SQL for a compiled mixture's name from the path of its file `file` in its build (mixtures/NAME/builds/ID/...)
    or in a folder compiled before builds (mixtures/NAME/...)."""
    return f"regexp_extract(filename, '([^/]+)/(?:{BUILDS_DIR}/[^/]+/)?{re.escape(file)}$', 1)"


def manifest_view(name: str) -> View:
    return View(name, manifest_files(name), "SELECT * FROM read_parquet({files})", reads=PUBLISHED)


def mixture_table_view(name: str, file: str) -> View:
    return View(name, file, f"SELECT {mixture_of(file)} AS mixture, * EXCLUDE (filename) "
                "FROM read_parquet({files}, filename = true, union_by_name = true)", reads=BUILDS)


VIEWS = (
    View("documents", CURATED_FILES, "SELECT * FROM read_parquet({files}, union_by_name = true)", reads=PUBLISHED),
    View("doc_stats", manifest_files("documents"), "SELECT * FROM read_parquet({files})", reads=PUBLISHED),
    manifest_view("shards"),
    manifest_view("funnel"),
    View("removed", manifest_files("removed"), "SELECT * FROM read_parquet({files})", reads=PUBLISHED,
         older=manifest_files("funnel"), empty=f"SELECT * FROM {empty_relation(REMOVED_SAMPLE)}"),
    View("quarantine", QUARANTINE_FILES, """
        SELECT split_part(filename, '/', -2) AS source, input, record, reason, detail, raw
        FROM read_json({files}, format = 'newline_delimited', filename = true,
                       ignore_errors = true, columns = {{input: 'VARCHAR', record: 'BIGINT', reason: 'VARCHAR',
                                                         detail: 'VARCHAR', raw: 'VARCHAR'}})
        WHERE reason IS NOT NULL""", reads=PUBLISHED),
    manifest_view("dedup_clusters"),
    manifest_view("quality_buckets"),
    manifest_view("contamination"),
    manifest_view("domains"),
    View("pii", manifest_files("pii"), "SELECT * FROM read_parquet({files})", reads=PUBLISHED,
         older=manifest_files("funnel"), empty=f"SELECT * FROM {empty_relation(PII_TABLE)}"),
    View("provenance", manifest_files(PROVENANCE_TABLE), "SELECT * FROM read_parquet({files})", reads=PUBLISHED,
         older=manifest_files("funnel"), empty=f"SELECT * FROM {empty_relation(PROVENANCE)}"),
    View("mixtures", SCHEDULE_FILE, """
        SELECT name, steps, tokens, seq_len, global_batch, seed, len(phases) AS n_phases,
               len(components) AS n_components, manifest_fingerprint, tokenizer_fingerprint
        FROM read_json({files})""", reads=BUILDS),
    View("ladder", LADDER_POINTS, "SELECT * FROM read_parquet({files}, union_by_name = true)"),
    mixture_table_view("mixture_plan", PLAN_FILE),
    mixture_table_view("mixture_licenses", LICENSES_FILE),
    View("mixture_validation", VALIDATION_FILE, f"SELECT {mixture_of(VALIDATION_FILE)} AS mixture, "
         "* EXCLUDE (filename) FROM read_parquet({files}, filename = true)", reads=BUILDS),
    View("mixture_documents", SEQUENCE_FILES, f"""
        WITH components AS (
            SELECT name AS mixture, regexp_replace(filename, '/{re.escape(SCHEDULE_FILE)}$', '') AS root,
                   unnest(components, recursive := true)
            FROM read_json({{ws:{SCHEDULE_FILE}}}, filename = true))
        SELECT c.mixture, c.key AS component, d.shard, d.row, d.n_tokens, d.offset
        FROM read_parquet({{files}}, filename = true) d
        JOIN components c ON d.filename = c.root || '/' || c.file""", reads=BUILDS),
    View("metrics", RUN_METRICS, """
        SELECT split_part(filename, '/', -2) AS run, * EXCLUDE (filename)
        FROM read_json_auto({files}, format = 'newline_delimited', filename = true,
                            union_by_name = true, ignore_errors = true)
        WHERE step IS NOT NULL"""),
    View("runs", RUN_METRICS, """
        SELECT run, count(*) AS records, max(step) AS last_step, arg_max(loss, step) AS last_loss
        FROM metrics GROUP BY run"""),
)


def available_views(root: Path, folders: dict[str, list[Path]] | None = None) -> list[tuple[str, str]]:
    """(name, CREATE VIEW statement) of each view whose files exist, in dependency order."""
    root = workspace_root(root)
    folders = folders or view_folders(root)
    statements = []
    for view in VIEWS:
        if with_files(view, folders):
            statements.append((view.name, create_statement(view, with_files(view, folders))))
        elif view.older and with_files(View(view.name, view.older, "", view.reads), folders):
            statements.append((view.name, f"CREATE OR REPLACE VIEW {view.name} AS {view.empty};"))
    return statements


def view_folders(root: Path) -> dict[str, list[Path]]:
    """Where a view's files are, by its `reads`: the published generation's folder and each mixture's current build
    (each asked once, so that every view sees the same generation and builds), or the workspace's."""
    ws = Workspace(root)
    return {PUBLISHED: [ws.published().root], WORKSPACE: [root],
            BUILDS: [build.root for build in compiled_mixtures(ws.mixtures).values()]}


def with_files(view: View, folders: dict[str, list[Path]]) -> list[Path]:
    """The folders a view reads that hold its files."""
    return [folder for folder in folders[view.reads] if has_files(view, folder)]


def workspace_root(root) -> Path:
    """A local workspace as its resolved folder (DuckDB checks resolved paths), a store's as its URL."""
    root = as_path(root)
    return root if is_remote(root) else Path(root).resolve()


def has_files(view: View, folder: Path) -> bool:
    return bool(view_files(view, folder))


def view_files(view: View, folder: Path) -> list:
    if is_remote(folder):
        return expand_glob(f"{folder}/{view.pattern}")
    return glob.glob(os.path.join(glob.escape(str(folder)), view.pattern))


def create_statement(view: View, folders: list[Path]) -> str:
    paths = WorkspacePaths(folders, many=view.reads == BUILDS)
    body = " ".join(view.sql.format(ws=paths, files=format(paths, view.pattern)).split())
    return f"CREATE OR REPLACE VIEW {view.name} AS {body};"


@dataclass
class WorkspaceViews:
    con: duckdb.DuckDBPyConnection  # sandboxed: see sandboxed_connection
    names: list[str]
    notes: list[str]  # what a reader should know: lines skipped, views left out


def connect(root: Path) -> tuple[duckdb.DuckDBPyConnection, list[str]]:
    """A sandboxed in-memory DuckDB connection with the workspace's views defined; and their names."""
    views = workspace_views(root)
    return views.con, views.names


def workspace_views(root: Path) -> WorkspaceViews:
    """The workspace's views on a sandboxed connection. A view its files cannot make (a run's metrics.jsonl with no
    readable line yet) is left out with a note, so the other views still answer; unreadable JSONL lines are noted."""
    root = workspace_root(root)
    folders = view_folders(root)
    con = sandboxed_connection(root, folders)
    names, notes = [], []
    for name, statement in available_views(root, folders):
        try:
            con.execute(statement)
            names.append(name)
        except duckdb.Error as err:
            notes.append(f"left out view {name}: {str(err).splitlines()[0]}")
    jsonl = {(folder, v.pattern) for v in VIEWS if v.pattern.endswith(".jsonl") for folder in with_files(v, folders)}
    for folder, pattern in sorted(jsonl):
        try:
            notes += unreadable_lines(con, root, folder, pattern)
        except duckdb.Error as err:
            notes.append(f"could not check {pattern} for unreadable lines: {str(err).splitlines()[0]}")
    return WorkspaceViews(con, names, notes)


def sandboxed_connection(root: Path, folders: dict[str, list[Path]]) -> duckdb.DuckDBPyConnection:
    """An in-memory connection that reaches files under `root` (and what symlinks in it lead to) and nothing else,
    reading or writing (DuckDB refuses every other path, URLs included: on a store, every URL outside the
    workspace's prefix, though the store's filesystem is registered), installs and loads no extension, and whose
    configuration is locked, so no query can undo any of that. DuckDB spills inside a local workspace, not in `.`
    (for one on a store, in a folder of its own under the system's temporary folder)."""
    check_root(root)
    con = duckdb_connect(root)
    for setting in ("autoinstall_known_extensions", "autoload_known_extensions", "allow_community_extensions"):
        con.execute(f"SET {setting} = false")
    con.execute("SET temp_directory = ?", [str(spill_folder(root))])
    linked, files = linked_targets(root, folders)
    con.execute("SET allowed_directories = ?", [[f"{root}/", *linked]])
    con.execute("SET allowed_paths = ?", [files])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def spill_folder(root: Path) -> Path:
    if is_remote(root):
        return Path(tempfile.gettempdir()) / f"loom-duckdb-{os.getpid()}"
    return root / SPILL_DIR  # inside the workspace


def linked_targets(root: Path, view_roots: dict[str, list[Path]]) -> tuple[list[str], list[str]]:
    """The folders and files outside `root` that the views' files reach through a symlink inside it (curated/ linked
    to another disk): DuckDB resolves links before it checks a path, and they are the workspace's as much. A store
    has no links."""
    folders, files = set(), set()
    if is_remote(root):
        return [], []
    for view in VIEWS:
        for name in (name for folder in view_roots[view.reads] for name in view_files(view, folder)):
            path = Path(name)
            for link in (p for p in [path, *path.parents] if p.is_relative_to(root) and p.is_symlink()):
                if link.is_dir():
                    folders.add(f"{link.resolve()}/")
                else:
                    files.add(str(link.resolve()))
    return sorted(folders), sorted(files)


def check_root(root: Path) -> None:
    """DuckDB takes paths as UTF-8 and reads `[`, `*` and `?` in them as a glob (escaping them would also widen
    the sandbox to another folder's name), so a workspace path must be UTF-8 without those."""
    shown = str(root) if is_remote(root) else os.fsencode(root).decode("utf-8", "backslashreplace")
    if shown != str(root):
        raise UserError(f"the workspace path {shown} is not valid UTF-8, which DuckDB needs; rename the folder")
    if glob.has_magic(str(root)):
        raise UserError(f"the workspace path {root} holds [, * or ?, which DuckDB reads as a pattern; "
                        "rename the folder")


def unreadable_lines(con: duckdb.DuckDBPyConnection, root: Path, folder: Path, pattern: str) -> list[str]:
    """A note per JSONL file under `pattern` in `folder` with lines that do not parse (a writer killed mid-line);
    the views skip those lines."""
    rows = con.execute(f"""SELECT filename, count(*) FROM read_ndjson_objects({format(WorkspacePaths([folder]), pattern)},
                           filename = true, ignore_errors = true)
                           WHERE json IS NULL GROUP BY filename ORDER BY filename""").fetchall()
    return [f"skipped {n} unreadable line{'' if n == 1 else 's'} in {str(name).removeprefix(f'{root}/')}"
            for name, n in rows]


def is_read_only(con: duckdb.DuckDBPyConnection, query: str) -> bool:
    """Whether every statement of `query` only reads (see READ_ONLY_STATEMENTS)."""
    statements = con.extract_statements(query)
    return bool(statements) and all(reads_only(con, statement) for statement in statements)


def reads_only(con: duckdb.DuckDBPyConnection, statement) -> bool:
    kind = statement.type.name
    if kind == "EXPLAIN":
        explained = EXPLAINED.match(statement.query)
        return bool(explained) and is_read_only(con, explained["statement"])
    if kind == "PRAGMA":
        pragma = PRAGMA_NAME.match(statement.query)
        return bool(pragma) and pragma["name"].lower() in READ_ONLY_PRAGMAS
    return kind in READ_ONLY_STATEMENTS
