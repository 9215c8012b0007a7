"""Options several commands share, and the workspace files they default to."""

from pathlib import Path

import click

from loom.io import as_path
from loom.workspace import SOURCES_FILE, Workspace

sources_option = click.option("--sources", metavar="FILE", help=f"Sources config [default: WORKSPACE/{SOURCES_FILE}]")
workers_option = click.option("--workers", type=click.IntRange(min=1),
                              help="Local worker processes [default: one per core]")


def sources_path(ws: Workspace, value: str | None) -> Path:
    return as_path(value) if value else ws.sources_file


force_option = click.option("--force", is_flag=True, help="Replace the file --output names if it exists")


def named_output(value: str, force: bool):
    """The file --output names, checked by loom.outputs' rules: an existing file needs --force, a symbolic link
    is followed, a device or folder is refused. (A workspace's own model, the default, is simply replaced.)"""
    from loom.outputs import file_to_write

    return file_to_write(as_path(value), "--output", force)


def tokenizer_path(ws: Workspace, value: str | None) -> Path:
    return as_path(value) if value else ws.tokenizer
