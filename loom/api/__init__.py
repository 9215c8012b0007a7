"""Loom from Python: `loom.open(workspace)` gives a Workspace whose methods do what the `loom` commands do
(curate, sql, mixtures.build/export, train, status, card), with the same checks and one-line UserErrors, and print
nothing: progress and notes go to the callbacks the caller gives. The CLI (loom.cli) is a thin layer over it.
Importing it is cheap: Dask, DuckDB and torch load only when a method needs them."""

from base.errors import UserError
from loom.api.workspace import Workspace, open

__all__ = ["UserError", "Workspace", "open"]
