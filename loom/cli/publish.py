"""`loom publish NAME [--watch]`: the workspace as a static site in WORKSPACE/sites/NAME (loom.api.publish), its
size on the last line; with --watch, published again whenever a run trains on or a page changes, a line each time,
until Ctrl-C."""

import time
from contextlib import contextmanager

import click

from base.workspace import Workspace
from loom.cli.console import Interrupted, api_workspace, console, interrupted_query

SHOWN_CHANGES = 3  # the changed paths a --watch line names before "and N more"


@click.command()
@click.argument("name")
@click.option("--watch", is_flag=True, help="Stay, and publish again whenever a run's metrics or a page changes")
@click.option("--every", type=click.FloatRange(min=0.1), default=5.0, show_default=True, metavar="SECONDS",
              help="With --watch: how often to look for changes")
@click.pass_obj
def publish(ws: Workspace, name, watch, every):
    """Write WORKSPACE/sites/NAME: every page of the workspace with its links, the data cards, the published
    manifest's tables as Parquet, each run's metrics.jsonl; no curated data. Open its index.html, or copy the
    folder to host it."""
    api = api_workspace(ws)
    if watch:
        with interrupted(f"stopped watching; {ws.site_dir(name)} holds the last site published, whole"):
            api.publish_watch(name, every, print_publish)
        return  # it returns only by Ctrl-C
    with interrupted(f"interrupted; {ws.site_dir(name)} is as it was: run the same command again to publish"):
        site = api.publish(name)
    print_skipped(site.skipped)
    console.print(f"Published {site.files:,} files, {site.bytes:,} bytes to {site.folder} (open index.html; copy "
                  "this folder to host it)", soft_wrap=True, markup=False)


@contextmanager
def interrupted(line: str):
    """Ctrl-C, in Python or inside a DuckDB query (a card's), as `line` and exit status 130."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(line) from None
    except Exception as err:
        if interrupted_query(err):
            raise Interrupted(line) from None
        raise


def print_publish(site, changed: list[str]) -> None:
    print_skipped(site.skipped)
    what = "published" if not changed else "republished after " + ", ".join(changed[:SHOWN_CHANGES]) + (
        f" and {len(changed) - SHOWN_CHANGES} more" if len(changed) > SHOWN_CHANGES else "")
    console.print(f"{time.strftime('%H:%M:%S')} {what}: {site.files:,} files, {site.bytes:,} bytes in {site.folder} "
                  "(copy this folder to host it; Ctrl-C stops watching)", soft_wrap=True, markup=False)


def print_skipped(lines: list[str]) -> None:
    for line in lines:
        console.print(f"skipped: {line}", soft_wrap=True, markup=False)
