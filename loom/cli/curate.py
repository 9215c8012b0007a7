"""`loom curate`: the curation job (loom.api.curate) on a Dask cluster, with a progress bar per stage and the
funnel at the end."""

import time
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from base.store import as_path
from base.workspace import (MODELS_DIR, PART_GLOB, PART_TABLES, PROVENANCE_TABLE, QUALITY_MODEL_FILE, SOURCES_FILE,
                            TOKENIZER_FILE, Workspace)
from loom.cli.console import api_workspace, console, progress_bars
from loom.cli.options import registry, sources_option, workers_option
from loom.cli.report import write_curation_pages


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
@click.option("--limit", metavar="N",
              help="Curate a sample: at most N records per source, the first ones of each of its shards (the rest "
                   "is never read), to try settings in seconds; the funnel's `docs in` counts the records read")
@click.pass_obj
def curate(ws: Workspace, sources, scheduler, workers, tokenizer, quality_model, limit):
    """Filter, score, deduplicate and tokenize the sources into WORKSPACE/curated, with a manifest."""
    run_curation(ws, as_path(sources) if sources else None, as_path(tokenizer) if tokenizer else None,
                 quality_model, scheduler, workers, limit)
    print_outputs(ws)
    write_curation_pages(ws)


def run_curation(ws: Workspace, sources_file: Path | None, tokenizer: Path | None, quality_model, scheduler: str | None,
                 workers: int | None, limit=None) -> list[dict]:
    """loom.api's curate with a progress bar per stage, then the funnel; `sources_file` None: the workspace's;
    `tokenizer` None: sources.toml's `tokenizer`, else the workspace's; `quality_model` None: the workspace's when
    it has one."""
    from loom.api.curate import quality_model_path

    started = time.monotonic()
    model = quality_model_path(ws, quality_model)

    def announce(client) -> None:
        if model:
            console.print(f"Scoring quality with {model}")
        announce_cluster(client)

    with stage_progress() as progress:
        summary = api_workspace(ws).curate(sources_file, workers, scheduler, limit, tokenizer, model, progress,
                                           announce)
    print_summary(summary)
    print_personal_data(ws)
    print_unlicensed(ws)
    console.print(f"Curated in {time.monotonic() - started:.1f}s")
    if limit is not None:
        console.print(f"A sample: at most {int(limit):,} records per source (--limit); `loom curate` without it "
                      "curates every record")
    return summary


def stage_progress():
    """One rich bar per stage, counted in shards."""
    return progress_bars(TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TextColumn("shards"),
                         TimeElapsedColumn())


def announce_cluster(client) -> None:
    workers = len(client.scheduler_info().get("workers", {}))
    console.print(f"Dask: {client.scheduler.address} with {workers} workers; dashboard {client.dashboard_link}")


def print_summary(summary: list[dict]) -> None:
    from curation.document import SUMMARY_FATES
    from curation.funnel_warnings import percent

    table = Table(title="Curation funnel")
    counts = ("docs_in", *SUMMARY_FATES, "kept %", "tokens")
    table.add_column("source")
    for column in counts:
        table.add_column(column.replace("_", " "), justify="right")
    table.add_column("top removal reasons")
    for row in summary:
        share = percent(row["kept"], row["docs_in"]) if row["docs_in"] else "-"
        table.add_row(row["source"], *(share if k == "kept %" else f"{row[k]:,}" for k in counts), row["top_reasons"])
    console.print(table)
    for row in summary:
        for line in row["warnings"]:
            console.print(f"warning: {line}", soft_wrap=True, markup=False)


def print_personal_data(ws: Workspace) -> None:
    """A line per source whose pii step ran: the spans it redacted (or counted) by kind, in how many documents,
    and the documents max_pii removed (the published manifest's pii table)."""
    from itertools import groupby

    from base.parquet_files import read_parquet
    from curation.steps.pii import TOTAL
    from reports.pii import MODE_WORDS

    table = ws.published().manifest_table("pii")
    if not table.exists():
        return
    for source, rows in groupby(read_parquet(table).to_pylist(), key=lambda row: row["source"]):  # rows by source
        rows = list(rows)
        found = [f"{r['kind']} {r['spans']:,} in {r['documents']:,} document{'' if r['documents'] == 1 else 's'}"
                 for r in rows if r["kind"] != TOTAL and r["spans"]]
        removed = sum(r["removed"] for r in rows if r["kind"] != TOTAL)
        console.print(f"Personal data: '{source}' {MODE_WORDS[rows[0]['mode']]} {', '.join(found) or 'none'}"
                      + (f"; max_pii removed {removed:,} documents" if removed else ""), markup=False)


def print_unlicensed(ws: Workspace) -> None:
    """One line naming every source whose licence sources.toml does not record (the published provenance table)."""
    from base.parquet_files import read_parquet
    from curation.licenses import UNKNOWN

    table = ws.published().manifest_table(PROVENANCE_TABLE)
    unknown = [row["source"] for row in read_parquet(table).to_pylist() if row["license"] == UNKNOWN] \
        if table.exists() else []
    if unknown:
        console.print(f"warning: no licence recorded for {', '.join(repr(name) for name in unknown)}: set `license` "
                      "(an SPDX id such as \"MIT\", or an expression) and `origin` in its [[source]] in sources.toml; "
                      "until then its mixtures and exports say \"unknown\"", soft_wrap=True, markup=False)


def print_outputs(ws: Workspace) -> None:
    gen = ws.published()
    console.print(f"Curated Parquet: {gen.curated}/<source>/{PART_GLOB}.parquet")
    console.print(f"Manifest:        {gen.manifest_table('shards')}, {{{','.join(PART_TABLES)}}}/{PART_GLOB}.parquet")
    console.print(f"Quarantine:      {gen.quarantine}/<source>/{PART_GLOB}.jsonl")
