"""`loom.open(workspace)` and the Workspace it gives: one method per command, each in a module of its own."""

import logging
from pathlib import Path
from typing import Callable

from base.errors import UserError
from base.workspace import Workspace as WorkspaceFiles
from loom.api.mixtures import Mixtures

LOGGER = logging.getLogger("loom")


def log_note(line: str) -> None:
    """Where notes go unless the caller asks for them: the `loom` logger, silent by default."""
    LOGGER.info(line)


def open(workspace: str | Path | None = None, note: Callable[[str], None] | None = None) -> "Workspace":
    """The workspace at `workspace` (a folder or a URL such as s3://bucket/prefix; default $LOOM_WORKSPACE, else
    ./loom-work), as the CLI's -w takes it. `note(line)` hears what the CLI prints as `note: ...` (temporary files
    removed, folders left out, a lock taken over); without it they go to the `loom` logger."""
    files = WorkspaceFiles.locate(None if workspace is None else str(workspace))
    check_location(files)
    return Workspace(files, note)


def check_location(files: WorkspaceFiles) -> None:
    """A workspace on a store must be reachable (a wrong bucket or key said once); a local one's path must be
    UTF-8, which pyarrow and DuckDB need."""
    from base.filenames import escaped_path
    from base.storage_errors import check_reachable

    if files.remote:
        check_reachable(files.root)
    elif escaped_path(files.root) != str(files.root):
        raise UserError(f"the workspace path {escaped_path(files.root)} is not valid UTF-8, which Parquet and "
                        "DuckDB need; rename the folder")


class Workspace:
    """A Loom workspace from Python. `files` names its files (base.workspace.Workspace); `mixtures` builds and
    exports mixtures."""

    def __init__(self, files: WorkspaceFiles, note: Callable[[str], None] | None = None):
        self.files = files
        self.note = note or log_note
        self.mixtures = Mixtures(self)

    @property
    def root(self) -> Path:
        return self.files.root

    def __repr__(self) -> str:
        return f"loom.Workspace({str(self.root)!r})"

    def curate(self, sources=None, workers: int | None = None, scheduler: str | None = None, limit: int | None = None,
               tokenizer=None, quality_model=None, progress=None, on_cluster=None) -> list[dict]:
        """`loom curate`; returns the funnel, one dict per source. See loom.api.curate."""
        from loom.api.curate import curate

        return curate(self, sources, workers, scheduler, limit, tokenizer, quality_model, progress, on_cluster)

    def sql(self, query: str):
        """`loom sql QUERY`: the result as a pyarrow.Table. See loom.api.sql."""
        from loom.api.sql import sql

        return sql(self, query)

    def card(self, mixture: str | None = None) -> Path:
        """`loom card [MIXTURE]`: the data card (Hugging Face's dataset-card layout) written; its path. See
        loom.api.card."""
        from loom.api.card import card

        return card(self, mixture)

    def train(self, mixture: str, *, nproc: int = 1, log: Callable[[str], None] | None = None, **options):
        """`loom train --mixture MIXTURE`, TrainConfig's fields as keywords; returns the run. See loom.api.train."""
        from loom.api.train import train

        return train(self, mixture, nproc=nproc, log=log, **options)

    def reproduce(self, run: str | Path, *, workers: int | None = None, anyway: bool = False,
                  log: Callable[[str], None] | None = None, progress=None):
        """`loom reproduce RUN`: run folder `run` made again in this (new or empty) workspace from its recorded
        inputs, and its losses compared with the recorded ones. See loom.api.reproduce."""
        from loom.api.reproduce import reproduce

        return reproduce(self, run, workers, anyway, log, progress)

    def status(self) -> dict:
        """What `loom status` shows, as a dict. See loom.api.status."""
        from loom.api.status import status

        return status(self)

    def remove_mixture(self, name: str, force: bool = False, dry_run: bool = False):
        """`loom mix rm NAME`: mixtures/NAME/ and mixtures/NAME.toml; returns the Cleanup (what went, bytes freed).
        See loom.api.cleanup for what is refused."""
        from loom.api.cleanup import remove_mixture

        return remove_mixture(self, name, force, dry_run)

    def remove_run(self, name: str, force: bool = False, dry_run: bool = False):
        """`loom runs rm NAME`: runs/NAME/ and its cooldown runs; returns the Cleanup. See loom.api.cleanup."""
        from loom.api.cleanup import remove_run

        return remove_run(self, name, force, dry_run)

    def gc(self, force: bool = False, dry_run: bool = False):
        """`loom gc`: stale mixtures' builds, old builds, what removed sweeps left, dead writers' temporary files;
        returns the Cleanup (removed, and what was kept and why). See loom.api.cleanup."""
        from loom.api.cleanup import gc

        return gc(self, force, dry_run)

    def publish(self, name: str):
        """`loom publish NAME`: every page, the manifest's tables and each run's metrics as a static site in
        sites/NAME; returns the Site (folder, files, bytes, skipped). See loom.api.publish."""
        from loom.api.publish import publish

        return publish(self, name)

    def publish_watch(self, name: str, every: float = 5.0, published: Callable | None = None) -> None:
        """`loom publish NAME --watch`: publishes, then again whenever an input changes (polled every `every`
        seconds), calling `published(site, changed_paths)`; runs until interrupted. See loom.api.publish."""
        from loom.api.publish import publish_watch

        publish_watch(self, name, every, published or (lambda site, changed: None))

    def show(self, record: str, text_chars: int = 2000):
        """`loom show INPUT#RECORD` (or a doc id): that record's story as a RecordStory (`.as_dict()` for JSON).
        See loom.api.show."""
        from loom.api.show import show

        return show(self, record, text_chars)
