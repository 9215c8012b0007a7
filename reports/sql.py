"""`loom sql`: read-only queries over a workspace's views (views.py), their results as an aligned table, CSV,
JSON or a file, and the views materialized into a DuckDB database file. The query runs on the sandboxed
connection; the files the user names (--output, --db) are written from Python, their paths never part of SQL,
by base.outputs' rules (nothing there is replaced but a file with --force; a device or pipe is written to)."""

import csv
import io
import json
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import duckdb
import pyarrow.parquet as pq

from base.errors import UserError
from base.outputs import output_file, output_stream
from reports.views import WorkspaceViews, is_read_only, workspace_views

CELL_WIDTH = 60  # an aligned table cuts longer values
BATCH_ROWS = 100_000  # rows a file is written in at a time


def open_views(root: Path) -> WorkspaceViews:
    """The workspace's views on a sandboxed connection; refused when there is nothing to query."""
    views = workspace_views(root)
    if not views.names:
        raise UserError(f"{root} has nothing to query yet; run `loom curate` (or `loom quickstart`) first")
    return views


def materialize(con: duckdb.DuckDBPyConnection, views: list[str], path: Path, force: bool = False) -> None:
    """Every view as a table of a new DuckDB database file. A second connection opens only that file and is given
    each view's rows as Arrow batches: it runs no SQL the user wrote, and the sandbox stays shut."""
    with output_file(path, "--db", force) as tmp:
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


def write_file(relation: duckdb.DuckDBPyRelation, fmt: str, path: Path, force: bool = False) -> None:
    """The result as a file, whole or not at all (or into the device or pipe `path` is): Parquet, JSON as on
    stdout, CSV otherwise (a table too)."""
    with output_stream(path, "--output", force) as out:
        if fmt == "parquet":
            batches = relation.to_arrow_reader(BATCH_ROWS)
            with pq.ParquetWriter(out, batches.schema, compression="zstd") as writer:
                for batch in batches:
                    writer.write_batch(batch)
        elif fmt == "json":
            out.write((as_json(relation) + "\n").encode("utf-8"))
        else:
            text = io.TextIOWrapper(out, encoding="utf-8", newline="")
            write_csv(relation, text)
            text.detach()  # flushed; `out` is closed by its owner


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


def cut(text: str) -> str:
    """A value of at most CELL_WIDTH characters: a path (or URL) loses its start, where its file name is not, from
    a '/' on; any other value loses its end."""
    if len(text) <= CELL_WIDTH:
        return text
    if "/" in text and len(text.split()) == 1:  # a file's path or a URL: a '/' and no space
        tail = text[3 - CELL_WIDTH:]
        return "..." + (tail[tail.index("/"):] if "/" in tail[:-1] else tail)
    return text[: CELL_WIDTH - 3] + "..."


LINE_BREAKS = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})  # shown escaped: a row stays one line


def aligned(columns: list[str], rows: list[tuple]) -> str:
    """Columns padded to their widest value, numbers on the right; long values cut, NULL spelled out, line breaks
    and tabs escaped."""
    def cell(value) -> str:
        if isinstance(value, float):
            return f"{value:.6g}"
        return cut("NULL" if value is None else str(value).translate(LINE_BREAKS))

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [any(isinstance(row[i], (int, float)) for row in rows)
               and all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) for i in range(len(columns))]
    line = lambda values: "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric)).rstrip()  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells])
