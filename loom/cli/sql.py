"""`loom sql`: read-only SQL over the workspace's views, in DuckDB (the query is loom.api.sql's; the views and
formats are reports.sql's)."""

import sys
from pathlib import Path

import click

from base.errors import UserError
from base.workspace import Workspace
from loom.api import Workspace as ApiWorkspace
from loom.cli.console import console


@click.command()
@click.argument("query", required=False)
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default="table",
              show_default=True)
@click.option("--output", "-o", metavar="FILE",
              help="Write the result here instead of printing it (a device or FIFO is written to; a symbolic link "
                   "is followed; an existing file needs --force)")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Rows a table shows")
@click.option("--views", "show_views", is_flag=True, help="Print the CREATE VIEW statements and exit")
@click.option("--db", metavar="FILE", help="Materialize every view into this DuckDB database file and exit")
@click.option("--force", is_flag=True, help="Replace the file --output or --db names if it exists")
@click.pass_obj
def sql(ws: Workspace, query, fmt, output, limit, show_views, db, force):
    """Run a read-only SQL QUERY (or one from stdin) over the workspace's views, in DuckDB."""
    from loom.api.sql import query_result
    from reports.sql import materialize, one_line_errors, open_views
    from reports.views import available_views

    if show_views:
        click.echo("\n".join(statement for _, statement in available_views(ws.root)))
        return
    if db:
        views = open_views(ws.root)
        for line in views.notes:
            stderr_note(line)
        with one_line_errors(views.names):
            materialize(views.con, views.names, Path(db), force)
        console.print(f"Wrote {len(views.names)} tables to {Path(db)}: {', '.join(views.names)}")
        return
    if query is None:
        query = sys.stdin.read()
    with query_result(ApiWorkspace(ws, stderr_note), query) as relation:
        if relation is not None:
            print_result(relation, fmt, output, limit, force)


def stderr_note(line: str) -> None:
    click.echo(f"note: {line}", err=True)  # on stderr: stdout is the result


def print_result(relation, fmt: str, output: str | None, limit: int, force: bool = False) -> None:
    from base.outputs import is_standard_output
    from reports.sql import as_json, as_table, write_csv, write_file

    if fmt == "parquet" and not output:
        raise UserError("--format parquet needs --output FILE")
    if output:
        write_file(relation, fmt, Path(output), force)
        if not is_standard_output(output):  # a line after the result would be part of it
            console.print(f"Wrote {output}")
    elif fmt == "csv":
        write_csv(relation, sys.stdout)
    elif fmt == "json":
        click.echo(as_json(relation))
    else:
        text, more = as_table(relation, limit)
        click.echo(text)
        if more:
            click.echo(f"(first {limit} rows shown; more exist: --limit N, or --format csv for all)")
