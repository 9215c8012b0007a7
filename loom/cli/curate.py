"""`loom curate`: the curation job on a Dask cluster, with a progress bar per stage and the funnel at the end."""

import time
from contextlib import contextmanager
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from base.atomic_files import remove_temporary_files
from base.store import as_path
from base.workspace import (CURATED_DIR, MANIFEST_DIR, MODELS_DIR, PART_GLOB, PART_TABLES, QUALITY_MODEL_FILE,
                            QUARANTINE_DIR, SOURCES_FILE, TOKENIZER_FILE, WORK_DIR, Workspace)
from loom.cli.console import console, note, workspace_lock
from loom.cli.options import registry, sources_option, sources_path, workers_option


class CurateCommand(click.Command):
    """`loom curate`, whose help ends with the formats, filters and annotator kinds sources.toml may name (read
    from their registries only when the help is shown)."""

    def format_epilog(self, ctx, formatter) -> None:
        for title, path in (("Formats (a source's `format`)", "curation.readers:READERS"),
                            ("Filters (a source's `filters`)", "curation.steps.filters:FILTERS"),
                            ("Annotators (an [[annotate]] kind)", "curation.steps.annotate:ANNOTATORS")):
            with formatter.section(title):
                formatter.write_dl([(name, entry.help) for name, entry in registry(path).items()])


@click.command(cls=CurateCommand)
@sources_option
@click.option("--scheduler", metavar="tcp://HOST:PORT", help="Run on an existing Dask cluster instead of a local one")
@workers_option
@click.option("--tokenizer", metavar="FILE",
              help=f"A {TOKENIZER_FILE} [default: {SOURCES_FILE}'s `tokenizer`, else "
                   f"WORKSPACE/{MODELS_DIR}/{TOKENIZER_FILE}]")
@click.option("--quality-model", metavar="FILE",
              help=f"A `loom quality train` model [default: WORKSPACE/{MODELS_DIR}/{QUALITY_MODEL_FILE} when it "
                   "exists]")
@click.pass_obj
def curate(ws: Workspace, sources, scheduler, workers, tokenizer, quality_model):
    """Filter, score, deduplicate and tokenize the sources into WORKSPACE/curated, with a manifest."""
    run_curation(ws, sources_path(ws, sources), as_path(tokenizer) if tokenizer else None,
                 quality_model_path(ws, quality_model), scheduler, workers)
    print_outputs(ws)


def quality_model_path(ws: Workspace, value: str | None) -> Path | None:
    if value:
        return as_path(value)
    return ws.quality_model if ws.quality_model.exists() else None


def run_curation(ws: Workspace, sources_file: Path, tokenizer: Path | None, quality_model: Path | None,
                 scheduler: str | None, workers: int | None):
    """Curates the sources; `tokenizer` None: sources.toml's `tokenizer`, else the workspace's."""
    from curation.config import load_config
    from curation.job import curation_tokenizer, plan_job
    from curation.run import curate as curate_shards
    from curation.run import dask_client

    started = time.monotonic()
    config = load_config(sources_file)  # before the lock: a folder with no sources.toml gets no locks/ either
    with workspace_lock(ws):
        shards, ctx = plan_job(config, ws, curation_tokenizer(tokenizer, config, sources_file, ws), quality_model)
        if removed := remove_temporary_files(ws.work, ws.generations, ws.models):
            note(f"removed {len(removed)} temporary files that killed runs left in {ws.root}")
        note_ignored_folders(ws, {s.source.name for s in shards})
        if quality_model:
            console.print(f"Scoring quality with {quality_model}")
        with dask_client(scheduler, workers, on_start=announce_cluster) as client, stage_progress() as progress:
            summary = curate_shards(shards, ctx, client, progress)
    print_summary(summary)
    console.print(f"Curated in {time.monotonic() - started:.1f}s")
    return summary


def note_ignored_folders(ws: Workspace, sources: set[str]) -> None:
    """Says what this curation leaves out: folders of sources no longer in sources.toml, and the curated data
    of a workspace curated before generations (no view or mixture reads either)."""
    # a source's folder holds its shards' parts; a global stage's `parts/` holds only folders of partitions
    old = sorted({p.name for p in ws.work.glob("*/*") if p.is_dir() and p.name not in sources and any(p.glob(PART_GLOB))})
    if old:
        note(f"sources no longer in sources.toml are left out: {', '.join(old)} (their {WORK_DIR}/STAGE/NAME folders "
             "can be removed)")
    legacy = [name for name in (CURATED_DIR, MANIFEST_DIR, QUARANTINE_DIR) if (ws.root / name).is_dir()]
    if legacy:
        note(f"{', '.join(legacy)} at the top of {ws.root} are from an older Loom and are no longer read; "
             "remove them once this run has published")


@contextmanager
def stage_progress():
    """Yields `progress(stage, total) -> advance(n)`: one rich bar per stage, counted in shards."""
    with Progress(TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TextColumn("shards"),
                  TimeElapsedColumn(), console=console) as bars:
        def progress(stage: str, total: int):
            task = bars.add_task(stage, total=total)
            return lambda n=1: bars.advance(task, n)

        yield progress


def announce_cluster(client) -> None:
    workers = len(client.scheduler_info().get("workers", {}))
    console.print(f"Dask: {client.scheduler.address} with {workers} workers; dashboard {client.dashboard_link}")


def print_summary(summary: list[dict]) -> None:
    from curation.document import SUMMARY_FATES

    table = Table(title="Curation funnel")
    counts = ("docs_in", *SUMMARY_FATES, "tokens")
    table.add_column("source")
    for column in counts:
        table.add_column(column.replace("_", " "), justify="right")
    table.add_column("top removal reasons")
    for row in summary:
        table.add_row(row["source"], *(f"{row[k]:,}" for k in counts), row["top_reasons"])
    console.print(table)
    for row in summary:
        for line in row["warnings"]:
            console.print(f"warning: {line}", soft_wrap=True, markup=False)


def print_outputs(ws: Workspace) -> None:
    gen = ws.published()
    console.print(f"Curated Parquet: {gen.curated}/<source>/{PART_GLOB}.parquet")
    console.print(f"Manifest:        {gen.manifest_table('shards')}, {{{','.join(PART_TABLES)}}}/{PART_GLOB}.parquet")
    console.print(f"Quarantine:      {gen.quarantine}/<source>/{PART_GLOB}.jsonl")
