"""`loom sql`: read-only SQL over the workspace's views, in DuckDB (the work itself is in reports.sql)."""

import sys
from pathlib import Path

import click

from base.errors import UserError
from base.workspace import Workspace
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
    from reports.sql import materialize, one_line_errors, open_views, read_only_query
    from reports.views import available_views

    if show_views:
        click.echo("\n".join(statement for _, statement in available_views(ws.root)))
        return
    views = open_views(ws.root)
    for note in views.notes:
        click.echo(f"note: {note}", err=True)
    if db:
        with one_line_errors(views.names):
            materialize(views.con, views.names, Path(db), force)
        console.print(f"Wrote {len(views.names)} tables to {Path(db)}: {', '.join(views.names)}")
        return
    if query is None:
        query = sys.stdin.read()
    with one_line_errors(views.names):
        relation = read_only_query(views.con, query)
        if relation is not None:
            print_result(relation, fmt, output, limit, force)


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
