"""`loom sql`: read-only queries over a workspace's views (views.py), their results as an aligned table, CSV,
JSON or a file, and the views materialized into a DuckDB database file. The query runs on the sandboxed
connection; the files the user names (--output, --db) are written from Python, their paths never part of SQL."""

import csv
import json
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import duckdb
import pyarrow.parquet as pq

from loom.errors import UserError
from loom.io import atomic_path
from reports.views import WorkspaceViews, is_read_only, workspace_views

CELL_WIDTH = 60  # an aligned table cuts longer values
BATCH_ROWS = 100_000  # rows a file is written in at a time


def open_views(root: Path) -> WorkspaceViews:
    """The workspace's views on a sandboxed connection; refused when there is nothing to query."""
    views = workspace_views(root)
    if not views.names:
        raise UserError(f"{root} has nothing to query yet; run `loom curate` (or `loom quickstart`) first")
    return views


def materialize(con: duckdb.DuckDBPyConnection, views: list[str], path: Path) -> None:
    """Every view as a table of a new DuckDB database file. A second connection opens only that file and is given
    each view's rows as Arrow batches: it runs no SQL the user wrote, and the sandbox stays shut."""
    with writing(path) as tmp:
        with duckdb.connect(str(tmp)) as target:
            for name in views:
                target.from_arrow(con.table(name).to_arrow_reader(BATCH_ROWS)).create(name)


@contextmanager
def one_line_errors(views: list[str]):
    """A failing query becomes a UserError: DuckDB's message on one line, with the names of the views."""
    try:
        yield
    except duckdb.Error as err:
        message = " ".join(str(err).split())
        raise UserError(f"{message} (views: {', '.join(views)})") from None


def read_only_query(con: duckdb.DuckDBPyConnection, query: str) -> duckdb.DuckDBPyRelation | None:
    """The query's result (None for a statement without one); refused unless every statement only reads."""
    if not query.strip():
        raise UserError("no query: give one as an argument or on standard input")
    if not is_read_only(con, query):
        raise UserError("loom sql only reads: use SELECT (or EXPLAIN); --db FILE gives you a database to change")
    return con.sql(query)


def write_file(relation: duckdb.DuckDBPyRelation, fmt: str, path: Path) -> None:
    """The result as a file, whole or not at all: Parquet, JSON as on stdout, CSV otherwise (a table too)."""
    with writing(path) as tmp:
        if fmt == "parquet":
            batches = relation.to_arrow_reader(BATCH_ROWS)
            with pq.ParquetWriter(tmp, batches.schema, compression="zstd") as writer:
                for batch in batches:
                    writer.write_batch(batch)
        elif fmt == "json":
            tmp.write_text(as_json(relation) + "\n", encoding="utf-8")
        else:
            with tmp.open("w", encoding="utf-8", newline="") as out:
                write_csv(relation, out)


@contextmanager
def writing(path: Path):
    """A temporary path next to `path`, renamed onto it when the block finishes; a file that cannot be written
    is the user's to fix, said in one line. Its folder must exist: a mistyped path creates no folders."""
    if not Path(path).parent.is_dir():
        raise UserError(f"cannot write {path}: the folder {Path(path).parent} does not exist")
    try:
        with atomic_path(Path(path)) as tmp:
            yield tmp
    except OSError as err:
        raise UserError(f"cannot write {path}: {err.strerror or err}") from None


def write_csv(relation: duckdb.DuckDBPyRelation, out: TextIO) -> None:
    rows = relation.fetchall()  # before the header: a query failing as it runs prints nothing
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(relation.columns)
    writer.writerows(rows)


def as_json(relation: duckdb.DuckDBPyRelation) -> str:
    return json.dumps([dict(zip(relation.columns, row)) for row in relation.fetchall()], default=str, indent=1)


def as_table(relation: duckdb.DuckDBPyRelation, limit: int) -> tuple[str, bool]:
    """The first `limit` rows as an aligned table, and whether more rows exist."""
    rows = relation.limit(limit + 1).fetchall()
    return aligned(relation.columns, rows[:limit]), len(rows) > limit


def aligned(columns: list[str], rows: list[tuple]) -> str:
    """Columns padded to their widest value, numbers on the right; long values cut, NULL spelled out."""
    def cell(value) -> str:
        if isinstance(value, float):
            return f"{value:.6g}"
        text = "NULL" if value is None else str(value)
        return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 3] + "..."

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [any(isinstance(row[i], (int, float)) for row in rows)
               and all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) for i in range(len(columns))]
    line = lambda values: "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric)).rstrip()  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells])
