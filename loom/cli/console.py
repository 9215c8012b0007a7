"""What every command shares: the rich console it prints to; a UserError raised anywhere below a command shown
as one line on stderr, with exit status 2; Ctrl-C as one line, with exit status 130; the locks of the targets a
command writes."""

import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path

import click
from rich.console import Console

from base.errors import EXIT_INTERRUPTED, EXIT_USER_ERROR, INTERRUPTED, UserError, error_line
from base.filenames import escaped_path
from base.storage_errors import storage_refusal
from base.store import as_path, path_text
from base.workspace import Workspace

console = Console(width=None if sys.stdout.isatty() else 150)


class UserFacingError(click.ClickException):
    exit_code = EXIT_USER_ERROR

    def show(self, file=None):
        click.echo(error_line(escaped_path(self.message)), err=True)  # a file it names spelled as tables do


class Interrupted(click.ClickException):
    """Ctrl-C: one line saying how to go on (by default, the same command again)."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, message: str = INTERRUPTED):
        super().__init__(message)

    def show(self, file=None):
        click.echo(self.message, err=True)


class LoomGroup(click.Group):
    """Turns a UserError anywhere below, or an object store refusing us (base.storage_errors.storage_refusal,
    naming the workspace), into one line on stderr and exit status 2, and Ctrl-C into one line and exit status 130."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UserError as err:
            raise UserFacingError(str(err)) from None
        except KeyboardInterrupt:
            raise Interrupted() from None
        except Exception as err:
            if interrupted_query(err):
                raise Interrupted() from None
            ws = ctx.find_root().obj
            refusal = storage_refusal(err, ws.root) if isinstance(ws, Workspace) else None
            if refusal is None:
                raise
            raise UserFacingError(str(refusal)) from None


def interrupted_query(err: Exception) -> bool:
    """DuckDB's answer to a Ctrl-C during a query: its InterruptException, or a RuntimeError from a query reading
    through Python. Told by name, so that the CLI's start does not import duckdb."""
    return type(err).__name__ == "InterruptException" or (isinstance(err, RuntimeError)
                                                            and str(err) == "Query interrupted")


def note(line: str) -> None:
    console.print(f"note: {line}", soft_wrap=True, markup=False)  # one line, whatever the width: paths stay whole


def api_workspace(ws: Workspace):
    """The workspace as loom.api has it, its notes printed as `note: ...` lines."""
    from loom.api import Workspace as ApiWorkspace

    return ApiWorkspace(ws, note)


def workspace_lock(ws: Workspace):
    """curation's lock (what curation writes: work/, generations/, published.json and the models), telling `note` of
    a lock taken over."""
    from curation.publish import curation_lock

    return curation_lock(ws, note)


def writes_models(ws: Workspace, output: Path):
    """The workspace's lock when `output` is one of its models (curation reads them), else nothing to hold."""
    return workspace_lock(ws) if path_text(as_path(output).parent) == path_text(ws.models) else nullcontext()


@contextmanager
def progress_bars(*columns):
    """Yields `progress(stage, total) -> advance(n)` (the shape loom.api takes): a rich bar per stage, with these
    columns, shown from the first stage on, so that lines printed before it (a cluster's start) stand above."""
    from rich.progress import Progress

    bars = None

    def progress(stage: str, total: int):
        nonlocal bars
        if bars is None:
            bars = Progress(*columns, console=console)
            bars.start()
        task = bars.add_task(stage, total=total)
        return lambda n=1: bars.advance(task, n)

    try:
        yield progress
    finally:
        if bars is not None:
            bars.stop()


def counting_bars():
    """progress_bars for work whose total is unknown: each bar a count of documents read, with its time."""
    from rich.progress import TextColumn, TimeElapsedColumn

    return progress_bars(TextColumn("{task.description:<12}"), TextColumn("{task.completed:>9,.0f} documents"),
                         TimeElapsedColumn())
