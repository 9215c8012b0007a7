"""`loom mix rm NAME`, `loom runs rm RUN` and `loom gc`: what goes (paths, bytes freed) and what is kept and why,
over loom.api's cleanup (which refuses what a live process holds, and, unless --force, what a sweep needs)."""

import click

from base.workspace import Workspace
from loom.cli.console import LoomGroup, api_workspace, console

FORCE_HELP = "Remove it even though a ladder or search still needs it (never what a live process holds)"
DRY_RUN_HELP = "List what would be removed, and the bytes freed; remove nothing"


@click.command("rm")
@click.argument("name")
@click.option("--force", is_flag=True, help=FORCE_HELP)
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@click.pass_obj
def mix_rm(ws: Workspace, name, force, dry_run):
    """Remove mixture NAME: its compiled folder mixtures/NAME/ and the workspace's spec mixtures/NAME.toml."""
    print_cleanup(ws, api_workspace(ws).remove_mixture(name, force=force, dry_run=dry_run))


@click.group(cls=LoomGroup)
def runs():
    """Training runs (WORKSPACE/runs/RUN/); `loom status` lists them."""


@runs.command("rm")
@click.argument("name")
@click.option("--force", is_flag=True, help=FORCE_HELP + "; also needed to remove a run with cooldown runs")
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@click.pass_obj
def runs_rm(ws: Workspace, name, force, dry_run):
    """Remove run NAME (runs/NAME/) and its cooldown runs (NAME-cooldown-STEPS)."""
    print_cleanup(ws, api_workspace(ws).remove_run(name, force=force, dry_run=dry_run))


@click.command()
@click.option("--force", is_flag=True, help="Also remove stale mixtures an existing ladder or search made")
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@click.pass_obj
def gc(ws: Workspace, force, dry_run):
    """Remove what the workspace no longer needs: stale mixtures' builds (their specs are kept), old builds, the
    mixtures and runs of removed ladders and searches, temporary files of writers that died."""
    print_cleanup(ws, api_workspace(ws).gc(force=force, dry_run=dry_run))


def print_cleanup(ws: Workspace, cleanup) -> None:
    verb = "would remove" if cleanup.dry_run else "removed"
    for item in cleanup.removals:
        say(f"{verb} {shown(ws, item)} ({item.bytes:,} bytes; {item.what})")
    for line in cleanup.kept:
        say(f"kept {line}")
    count = len(cleanup.removals)
    total = f"{cleanup.freed:,} bytes in {count} path{'s' if count != 1 else ''}"
    say(f"Would free {total} (--dry-run: nothing removed)" if cleanup.dry_run else
        f"Freed {total}" if count else "Nothing to remove")


def shown(ws: Workspace, item) -> str:
    """A removal's path relative to the workspace, a folder with a trailing /."""
    return str(item.path)[len(str(ws.root)) + 1:] + ("/" if item.folder else "")


def say(line: str) -> None:
    console.print(line, soft_wrap=True, markup=False, highlight=False)
