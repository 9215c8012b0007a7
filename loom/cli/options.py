"""Options several commands share, and the workspace files they default to."""

from pathlib import Path

import click

from loom.io import as_path
from loom.workspace import Workspace

sources_option = click.option("--sources", metavar="FILE", help="Sources config [default: WORKSPACE/sources.toml]")
workers_option = click.option("--workers", type=click.IntRange(min=1),
                              help="Local worker processes [default: one per core]")


def sources_path(ws: Workspace, value: str | None) -> Path:
    return as_path(value) if value else ws.sources_file


def tokenizer_path(ws: Workspace, value: str | None) -> Path:
    return as_path(value) if value else ws.tokenizer
