"""`loom report [mixture|curation|run|compare|open]`: the self-contained HTML pages, written or opened; with no
command, every page the workspace has data for and its index page. Also what each command that writes pages prints:
their paths and the command to run next."""

import os
import sys
import webbrowser

import click

from base.names import check_name
from base.store import is_remote
from base.workspace import INDEX_FILE, Workspace
from loom.cli.console import LoomGroup, console


@click.group(cls=LoomGroup, invoke_without_command=True)
@click.pass_context
def report(ctx):
    """Self-contained HTML pages; with no command, every page the workspace has data for (the curation report,
    each mixture's, run's, ladder's and search's), then WORKSPACE/index.html, linking them all."""
    if ctx.invoked_subcommand is None:
        from reports.pages import every_page

        written = every_page(ctx.obj.root)
        for line in written.skipped:
            console.print(f"skipped: {line}", soft_wrap=True, markup=False)
        print_pages(ctx.obj, written.pages, f"`{ctx.obj.loom_command()} report open` (opens the index where a browser "
                                            "is)")


@report.command("mixture")
@click.argument("name")
@click.pass_obj
def report_mixture(ws: Workspace, name):
    """Write WORKSPACE/mixtures/NAME/report.html (`loom mix build` writes it too)."""
    from reports.build import mixture_report

    console.print(f"Report: {mixture_report(ws.root, check_name('mixture', name))}")


@report.command("curation")
@click.pass_obj
def report_curation(ws: Workspace):
    """Write WORKSPACE/manifest/report.html: funnel, distributions and spot checks of every source."""
    from reports.build import curation_report

    console.print(f"Report: {curation_report(ws.root)}")


@report.command("run")
@click.argument("run")
@click.pass_obj
def report_run(ws: Workspace, run):
    """Write WORKSPACE/runs/RUN/report.html (training rewrites it as it goes)."""
    from reports.run import run_report

    console.print(f"Report: {run_report(ws.run_dir(check_name('run', run)))}")


@report.command("compare")
@click.argument("runs", nargs=-1)
@click.option("--name", default=None, help="The page's name (default: from the run names).")
@click.pass_obj
def report_compare(ws: Workspace, runs, name):
    """Write WORKSPACE/reports/compare/NAME.html: the RUNS' losses overlaid and their settings side by side."""
    from reports.compare import compare_report

    console.print(f"Report: {compare_report(ws.root, list(runs), name)}", soft_wrap=True, markup=False)


@report.command("open")
@click.argument("name", required=False)
@click.pass_obj
def report_open(ws: Workspace, name):
    """Print the path of the page of NAME, a mixture, run, ladder, search or comparison (none: the workspace's
    index, rewritten), and open it where a browser is."""
    from reports.index import named_page, workspace_index

    path = named_page(ws.root, check_name("page", name)) if name else workspace_index(ws.root)
    click.echo(str(path))
    if is_remote(path):
        return  # no browser opens a store's URL: fetch the page first
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform == "darwin":
        webbrowser.open(path.as_uri())


def print_pages(ws: Workspace, pages: list, next_step: str) -> None:
    """The paths of the pages just written, the index last, and the command to run next."""
    for path in pages:
        label = "Index:" if path == ws.root / INDEX_FILE else "Report:"
        console.print(f"{label:<8}{path}", soft_wrap=True, markup=False)
    console.print(f"Next: {next_step}", soft_wrap=True, markup=False)


def write_curation_pages(ws: Workspace) -> None:
    """After a curation: its report and the index written, their paths and what to run next."""
    from reports.pages import curation_pages

    loom = ws.loom_command()
    print_pages(ws, curation_pages(ws.root), f"`{loom} mix build NAME` (a mixture of {ws.mixtures}/NAME.toml); "
                                             f"`{loom} report open` (the index)")


def write_index(ws: Workspace, next_step: str) -> None:
    """After a command that wrote a page of its own: the index rewritten to link it, its path and what to run
    next."""
    from reports.index import workspace_index

    print_pages(ws, [workspace_index(ws.root)], next_step)
