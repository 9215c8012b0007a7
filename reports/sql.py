"""`loom sql`: read-only queries over a workspace's views (views.py), their results as an aligned table, CSV,
JSON or a file, and the views materialized into a DuckDB database file."""

import csv
import json
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import duckdb

from loom.errors import UserError
from loom.sql import literal
from reports.views import connect, is_read_only

COPY_OPTIONS = {"csv": "FORMAT csv, HEADER", "json": "FORMAT json, ARRAY true", "parquet": "FORMAT parquet",
                "table": "FORMAT csv, HEADER"}  # a table written to a file is CSV
CELL_WIDTH = 60  # an aligned table cuts longer values


def open_views(root: Path) -> tuple[duckdb.DuckDBPyConnection, list[str]]:
    """A connection with the workspace's views, and their names; refused when there is nothing to query."""
    con, views = connect(root)
    if not views:
        raise UserError(f"{root} has nothing to query yet; run `loom curate` (or `loom quickstart`) first")
    return con, views


def materialize(con: duckdb.DuckDBPyConnection, views: list[str], path: Path) -> None:
    """Every view as a table of a new DuckDB database file."""
    path.unlink(missing_ok=True)
    con.execute(f"ATTACH {literal(path)} AS target")
    for name in views:
        con.execute(f"CREATE TABLE target.{name} AS SELECT * FROM {name}")
    con.execute("DETACH target")


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


def copy_to(con: duckdb.DuckDBPyConnection, relation: duckdb.DuckDBPyRelation, fmt: str, output: str) -> None:
    relation.to_view("loom_result")
    con.execute(f"COPY (SELECT * FROM loom_result) TO {literal(output)} ({COPY_OPTIONS[fmt]})")


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
