"""`loom quickstart`: the bundled corpora curated, the `sample` mixture built and a tiny model trained on it."""

import dataclasses

import click

from base.workspace import EVALS_DIR, REPORT_FILE, SOURCES_FILE, Workspace, examples_dir
from loom.cli.console import console, workspace_lock
from loom.cli.curate import print_outputs, run_curation
from loom.cli.mix import build_mixture
from loom.cli.options import workers_option
from loom.cli.quality import train_quality
from loom.cli.report import print_pages
from loom.cli.tokenizer import train_tokenizer
from loom.cli.train import train_run

QUICKSTART_STEPS = 60  # about a minute of the tiny model on two CPU cores


@click.command()
@workers_option
@click.pass_obj
def quickstart(ws: Workspace, workers):
    """Curate the bundled sample corpora, build the `sample` mixture, train a tiny model on it for a short run, and
    write every page (the curation report and the index; building and training write the mixture's and the run's)."""
    from reports.pages import curation_pages

    write_bundled_sources(ws)
    with workspace_lock(ws):
        if not ws.tokenizer.exists():
            train_tokenizer(ws.sources_file, 8192, 2000, ws.tokenizer)
        if not ws.quality_model.exists():
            from curation.quality import TrainingConfig

            train_quality(ws.sources_file, None, None, TrainingConfig(), ws.quality_model)
    run_curation(ws, ws.sources_file, ws.tokenizer, ws.quality_model, None, workers)
    build_mixture(ws, "sample")
    train_quickstart_run(ws)
    console.print(f"Workspace:       {ws.root}")
    print_outputs(ws)
    curation, index = curation_pages(ws.root)
    loom = ws.loom_command()
    print_pages(ws, [curation, ws.mixture_dir("sample") / REPORT_FILE, ws.run_dir("quickstart") / REPORT_FILE, index],
                f"`{loom} report open` (the index links every page); `{loom} status` (what the workspace holds)")


def write_bundled_sources(ws: Workspace) -> None:
    """The workspace's sources.toml, unless it has one: the bundled corpora, where Loom is installed."""
    examples = examples_dir()
    ws.root.mkdir(parents=True, exist_ok=True)
    if not ws.sources_file.exists():
        text = (examples / SOURCES_FILE).read_text(encoding="utf-8")
        ws.sources_file.write_text(f'root = "{examples}"\n\n{text}', encoding="utf-8")
        console.print(f"Wrote {ws.sources_file} (the bundled sample corpora)")
    for bundled in sorted((examples / EVALS_DIR).glob("*.jsonl")):  # the `sample` mixture's eval set
        copy = ws.root / EVALS_DIR / bundled.name
        if not copy.exists():
            copy.parent.mkdir(exist_ok=True)
            copy.write_bytes(bundled.read_bytes())


def train_quickstart_run(ws: Workspace) -> None:
    """runs/quickstart, resumed when it exists (then, at its end, it trains nothing)."""
    from trainer.checkpoint import latest
    from trainer.config import TrainConfig

    run = TrainConfig(ws.root, "sample", run_name="quickstart", max_steps=QUICKSTART_STEPS, eval_every=20)
    train_run(ws, dataclasses.replace(run, resume=latest(run.run_dir) is not None), nproc=1)
