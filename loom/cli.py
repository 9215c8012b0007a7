"""The `loom` command."""

import dataclasses
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from loom.errors import UserError
from loom.workspace import Workspace, examples_dir
from trainer.options import config_from_options, config_to_args, train_options

console = Console(width=None if sys.stdout.isatty() else 150)


class UserFacingError(click.ClickException):
    exit_code = 2

    def show(self, file=None):
        click.echo(f"error: {self.message}", err=True)


class LoomGroup(click.Group):
    """Turns a UserError anywhere below into one line on stderr and exit status 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UserError as err:
            raise UserFacingError(str(err)) from None


@click.group(cls=LoomGroup)
@click.option("--workspace", "-w", metavar="DIR", help="Workspace folder [default: $LOOM_WORKSPACE or ./loom-work]")
@click.pass_context
def cli(ctx, workspace):
    """Loom: curate raw corpora into tokenized Parquet, build mixtures, train on them."""
    ctx.obj = Workspace.locate(workspace)


# ---- curate -------------------------------------------------------------------------------------------


@contextmanager
def stage_progress():
    """Yields `progress(stage, total) -> advance(n)`: one rich bar per stage, counted in shards."""
    with Progress(TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TextColumn("shards"),
                  TimeElapsedColumn(), console=console) as bars:
        def progress(stage: str, total: int):
            task = bars.add_task(stage, total=total)
            return lambda n=1: bars.advance(task, n)

        yield progress


def _announce_cluster(client) -> None:
    workers = len(client.scheduler_info().get("workers", {}))
    console.print(f"Dask: {client.scheduler.address} with {workers} workers; dashboard {client.dashboard_link}")


def _run_curation(ws: Workspace, sources_file: Path, tokenizer: Path, quality_model: Path | None,
                  scheduler: str | None, workers: int | None):
    from curation.config import load_config
    from curation.run import curate, dask_client, plan_job

    started = time.monotonic()
    shards, ctx = plan_job(load_config(sources_file), ws, tokenizer, quality_model)
    if quality_model:
        console.print(f"Scoring quality with {quality_model}")
    with dask_client(scheduler, workers, on_start=_announce_cluster) as client, stage_progress() as progress:
        summary = curate(shards, ctx, client, progress)
    _print_summary(summary)
    console.print(f"Curated in {time.monotonic() - started:.1f}s")
    return summary


def _print_summary(summary: list[dict]) -> None:
    table = Table(title="Curation funnel")
    counts = ("docs_in", "malformed", "filtered", "duplicate", "low_quality", "kept", "tokens")
    table.add_column("source")
    for column in counts:
        table.add_column(column.replace("_", " "), justify="right")
    table.add_column("top removal reasons")
    for row in summary:
        table.add_row(row["source"], *(f"{row[k]:,}" for k in counts), row["top_reasons"])
    console.print(table)


def _sources_option(ws: Workspace, value: str | None) -> Path:
    return Path(value) if value else ws.sources_file


def _tokenizer_option(ws: Workspace, value: str | None) -> Path:
    return Path(value) if value else ws.tokenizer


@cli.command()
@click.option("--sources", metavar="FILE", help="Sources config [default: WORKSPACE/sources.toml]")
@click.option("--scheduler", metavar="tcp://HOST:PORT", help="Run on an existing Dask cluster instead of a local one")
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes [default: one per core]")
@click.option("--tokenizer", metavar="FILE", help="A tokenizer.json [default: WORKSPACE/models/tokenizer.json]")
@click.option("--quality-model", metavar="FILE",
              help="A `loom quality train` model [default: WORKSPACE/models/quality.bin when it exists]")
@click.pass_obj
def curate(ws: Workspace, sources, scheduler, workers, tokenizer, quality_model):
    """Filter, score, deduplicate and tokenize the sources into WORKSPACE/curated, with a manifest."""
    _run_curation(ws, _sources_option(ws, sources), _tokenizer_option(ws, tokenizer),
                  _quality_model_option(ws, quality_model), scheduler, workers)
    _print_outputs(ws)


def _quality_model_option(ws: Workspace, value: str | None) -> Path | None:
    if value:
        return Path(value)
    default = ws.quality_model
    return default if default.exists() else None


def _print_outputs(ws: Workspace) -> None:
    layout = ws
    console.print(f"Curated Parquet: {layout.curated}/<source>/part-*.parquet")
    console.print(f"Manifest:        {layout.manifest}/{{shards,documents,funnel}}.parquet")
    console.print(f"Quarantine:      {layout.quarantine}/<source>/part-*.jsonl")


# ---- tokenizer ----------------------------------------------------------------------------------------


@cli.group(cls=LoomGroup)
def tokenizer():
    """Train the BPE tokenizer that curation uses."""


@tokenizer.command("train")
@click.option("--sources", metavar="FILE", help="Sources config [default: WORKSPACE/sources.toml]")
@click.option("--vocab-size", type=int, default=8192, show_default=True)
@click.option("--max-docs", type=click.IntRange(min=1), default=2000, show_default=True, help="Documents read per source")
@click.option("--output", metavar="FILE", help="Where to save it [default: WORKSPACE/models/tokenizer.json]")
@click.pass_obj
def tokenizer_train(ws: Workspace, sources, vocab_size, max_docs, output):
    """Train a byte-level BPE on the sources' text."""
    _train_tokenizer(ws, _sources_option(ws, sources), vocab_size, max_docs, _tokenizer_option(ws, output))


def _train_tokenizer(ws: Workspace, sources_file: Path, vocab_size: int, max_docs: int, output: Path) -> None:
    from curation.config import load_sources
    from curation.tokenizer import train_tokenizer, training_texts

    sources = load_sources(sources_file)
    started = time.monotonic()
    with console.status(f"Training a {vocab_size}-token BPE on up to {max_docs} documents per source"):
        trained = train_tokenizer(training_texts(sources, max_docs), output, vocab_size)
    console.print(f"Tokenizer: {output} ({trained.get_vocab_size()} tokens, {time.monotonic() - started:.1f}s)")


# ---- quality ------------------------------------------------------------------------------------------


@cli.group(cls=LoomGroup)
def quality():
    """Train the fastText quality classifier that scores documents."""


def _names(value: str | None) -> list[str] | None:
    return [name.strip() for name in value.split(",") if name.strip()] if value else None


@quality.command("train")
@click.option("--positive", metavar="SRC[,SRC...]", help="High-quality sources or files [default: [quality] positive]")
@click.option("--negative", metavar="SRC[,SRC...]", help="Low-quality sources or files [default: [quality] negative]")
@click.option("--sources", metavar="FILE", help="Sources config [default: WORKSPACE/sources.toml]")
@click.option("--max-per-class", type=click.IntRange(min=20), default=5000, show_default=True)
@click.option("--valid-fraction", type=click.FloatRange(0.05, 0.5), default=0.2, show_default=True)
@click.option("--epoch", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=0.3, show_default=True)
@click.option("--word-ngrams", type=click.IntRange(1, 5), default=2, show_default=True)
@click.option("--dim", type=click.IntRange(min=2), default=64, show_default=True)
@click.option("--min-count", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--output", metavar="FILE", help="Where to save it [default: WORKSPACE/models/quality.bin]")
@click.pass_obj
def quality_train(ws: Workspace, positive, negative, sources, output, **hyperparameters):
    """Train on balanced positive and negative examples; print validation precision, recall, F1 and ROC AUC."""
    from curation.quality import TrainingConfig

    _train_quality(ws, _sources_option(ws, sources), _names(positive), _names(negative),
                   TrainingConfig(**hyperparameters), Path(output) if output else ws.quality_model)


def _train_quality(ws: Workspace, sources_file: Path, positive, negative, config, output: Path) -> None:
    from curation.config import load_config
    from curation.quality import train_quality_model
    from curation.samples import quality_examples

    with console.status("Reading training examples"):
        texts, data = quality_examples(load_config(sources_file), positive, negative, config.max_per_class)
    with console.status("Training the fastText quality classifier"):
        card = train_quality_model(texts["positive"], texts["negative"], output, config, data)
    positive, negative = list(data["positive"]), list(data["negative"])
    metrics = card["validation"]
    console.print(f"Quality model: {output} (card {output.with_suffix('.json')})")
    console.print(f"  trained on {card['sizes']['train']} documents, validated on {card['sizes']['valid']} "
                  f"(positive: {', '.join(positive)}; negative: {', '.join(negative)})")
    console.print(f"  validation: precision {metrics['precision']:.3f}  recall {metrics['recall']:.3f}  "
                  f"F1 {metrics['f1']:.3f}  ROC AUC {metrics['roc_auc']:.4f}")


# ---- mixtures -----------------------------------------------------------------------------------------


@cli.group(cls=LoomGroup)
def mix():
    """Named mixtures: token shares per source, tag or slice, in pre-training and mid-training phases."""


@mix.command("list")
@click.pass_obj
def mix_list(ws: Workspace):
    """Built-in and workspace mixtures, and whether each is compiled."""
    table = Table(title="Mixtures")
    for column in ("name", "spec", "compiled"):
        table.add_column(column)
    seen = set()
    for folder in (ws.mixtures, examples_dir() / "mixtures"):
        for spec in sorted(folder.glob("*.toml")):
            if spec.stem in seen:
                continue
            seen.add(spec.stem)
            compiled = ws.mixtures / spec.stem / "schedule.json"
            table.add_row(spec.stem, str(spec), "yes" if compiled.exists() else "no")
    console.print(table)


@mix.command("build")
@click.argument("name")
@click.option("--total-tokens", type=click.IntRange(min=1), help="Override the spec's token budget")
@click.option("--steps", type=click.IntRange(min=1), help="Override the budget as steps of global_batch sequences")
@click.pass_obj
def mix_build(ws: Workspace, name, total_tokens, steps):
    """Compile NAME (a mixture name or a path to a spec) into WORKSPACE/mixtures/NAME/."""
    _build_mixture(ws, name, total_tokens, steps)


def _build_mixture(ws: Workspace, name: str, total_tokens=None, steps=None) -> None:
    from mixtures import compile_mixture, find_spec, load_spec

    spec = load_spec(find_spec(name, ws.mixtures, examples_dir() / "mixtures"))
    if total_tokens or steps:
        spec = dataclasses.replace(spec, total_tokens=total_tokens, steps=steps)
    out = ws.mixtures / spec.name
    meta = compile_mixture(spec, ws, out)
    _print_plan(out)
    switch = ", ".join(f"{p['name']} from step {p['start_step']}" for p in meta["phases"])
    console.print(f"Mixture '{spec.name}': {meta['steps']:,} steps x {spec.global_batch} sequences of "
                  f"{spec.seq_len} tokens = {meta['tokens']:,} tokens; {switch}")
    from reports.build import mixture_report

    console.print(f"Schedule: {out}/schedule.json, plan.parquet, sequences/")
    console.print(f"Report:   {mixture_report(ws.root, spec.name)}")


def _print_plan(out: Path) -> None:
    import pyarrow.parquet as pq

    table = Table(title=f"Plan of {out.name}")
    columns = ("phase", "component", "target_share", "realized_share", "tokens", "epochs_cumulative", "available_tokens")
    for column in columns:
        table.add_column(column.replace("_", " "), justify="left" if column in ("phase", "component") else "right")
    for row in pq.read_table(out / "plan.parquet").to_pylist():
        table.add_row(row["phase"], row["component"], f"{row['target_share']:.3f}", f"{row['realized_share']:.3f}",
                      f"{row['tokens']:,}", f"{row['epochs_cumulative']:.2f}", f"{row['available_tokens']:,}")
    console.print(table)


@mix.command("show")
@click.argument("name")
@click.pass_obj
def mix_show(ws: Workspace, name):
    """The compiled plan of NAME: per phase and component, share, tokens and epochs."""
    out = ws.mixtures / name
    if not (out / "plan.parquet").exists():
        raise UserError(f"mixture '{name}' is not compiled in {ws.root}; run `loom mix build {name}`")
    _print_plan(out)


# ---- reports ------------------------------------------------------------------------------------------


@cli.group(cls=LoomGroup)
def report():
    """Self-contained HTML pages: a mixture's composition, the curation funnel."""


@report.command("mixture")
@click.argument("name")
@click.pass_obj
def report_mixture(ws: Workspace, name):
    """Write WORKSPACE/mixtures/NAME/report.html (`loom mix build` writes it too)."""
    from reports.build import mixture_report

    console.print(f"Report: {mixture_report(ws.root, name)}")


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

    console.print(f"Report: {run_report(ws.root / 'runs' / run)}")


@report.command("open")
@click.argument("name", required=False)
@click.pass_obj
def report_open(ws: Workspace, name):
    """Print the path of mixture NAME's report (or the curation report), and open it where a browser is."""
    import os
    import webbrowser

    path = ws.mixtures / name / "report.html" if name else ws.manifest / "report.html"
    if not path.is_file():
        fix = f"loom report mixture {name}" if name else "loom report curation"
        raise UserError(f"no report at {path}; write it with `{fix}`")
    click.echo(str(path))
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform == "darwin":
        webbrowser.open(path.as_uri())


# ---- sql ----------------------------------------------------------------------------------------------


@cli.command()
@click.argument("query", required=False)
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default="table",
              show_default=True)
@click.option("--output", "-o", metavar="FILE", help="Write the result here instead of printing it")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Rows a table shows")
@click.option("--views", "show_views", is_flag=True, help="Print the CREATE VIEW statements and exit")
@click.option("--db", metavar="FILE", help="Materialize every view into this DuckDB database file and exit")
@click.pass_obj
def sql(ws: Workspace, query, fmt, output, limit, show_views, db):
    """Run a read-only SQL QUERY (or one from stdin) over the workspace's views, in DuckDB."""
    import duckdb

    from reports.views import available_views, connect, is_read_only

    if show_views:
        click.echo("\n".join(statement for _, statement in available_views(ws.root)))
        return
    con, views = connect(ws.root)
    if not views:
        raise UserError(f"{ws.root} has nothing to query yet; run `loom curate` (or `loom quickstart`) first")
    if db:
        _materialize(con, views, Path(db))
        return
    if query is None:
        query = sys.stdin.read()
    if not query.strip():
        raise UserError("no query: give one as an argument or on standard input")
    try:
        if not is_read_only(con, query):
            raise UserError("loom sql only reads: use SELECT (or EXPLAIN); --db FILE gives you a database to change")
        relation = con.sql(query)
        if relation is None:
            return
        _write_result(con, relation, fmt, output, limit)
    except duckdb.Error as err:
        message = " ".join(str(err).split())
        raise UserError(f"{message} (views: {', '.join(views)})") from None


def _materialize(con, views: list[str], path: Path) -> None:
    path.unlink(missing_ok=True)
    con.execute(f"ATTACH '{path}' AS target")
    for name in views:
        con.execute(f"CREATE TABLE target.{name} AS SELECT * FROM {name}")
    con.execute("DETACH target")
    console.print(f"Wrote {len(views)} tables to {path}: {', '.join(views)}")


def _write_result(con, relation, fmt: str, output: str | None, limit: int) -> None:
    if fmt == "parquet" and not output:
        raise UserError("--format parquet needs --output FILE")
    if output:
        options = {"csv": "FORMAT csv, HEADER", "json": "FORMAT json, ARRAY true", "parquet": "FORMAT parquet",
                   "table": "FORMAT csv, HEADER"}[fmt]
        relation.to_view("loom_result")
        con.execute(f"COPY (SELECT * FROM loom_result) TO '{output}' ({options})")
        console.print(f"Wrote {output}")
        return
    if fmt in ("csv", "json"):
        import csv
        import json

        rows = relation.fetchall()
        if fmt == "csv":
            writer = csv.writer(sys.stdout, lineterminator="\n")
            writer.writerow(relation.columns)
            writer.writerows(rows)
        else:
            click.echo(json.dumps([dict(zip(relation.columns, row)) for row in rows], default=str, indent=1))
        return
    rows = relation.limit(limit + 1).fetchall()
    click.echo(_aligned(relation.columns, rows[:limit]))
    if len(rows) > limit:
        click.echo(f"(first {limit} rows shown; more exist: --limit N, or --format csv for all)")


def _aligned(columns: list[str], rows: list[tuple]) -> str:
    def cell(value) -> str:
        if isinstance(value, float):
            return f"{value:.6g}"
        text = "NULL" if value is None else str(value)
        return text if len(text) <= 60 else text[:57] + "..."

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [any(isinstance(row[i], (int, float)) for row in rows)
               and all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) for i in range(len(columns))]
    line = lambda values: "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric)).rstrip()  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells])


# ---- train --------------------------------------------------------------------------------------------


@cli.command()
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True,
              help="Ranks to start on this machine (through torchrun); 1 trains in this process")
@train_options
@click.pass_obj
def train(ws: Workspace, nproc, **options):
    """Train a model on a compiled mixture; WORKSPACE/runs/RUN/ gets metrics.jsonl, checkpoints/ and report.html."""
    _train(config_from_options(ws.root, options), nproc)


def _train(config, nproc: int) -> None:
    import os
    import subprocess

    from reports.run import run_report
    from trainer import Run, train as train_run

    if nproc == 1:
        train_run(config, report=run_report, log=console.print)
    else:
        Run(config).check_world_size(nproc)  # bad input is refused here, once, before any rank starts
        threads = max(1, (os.cpu_count() or 1) // nproc)
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
                   "-m", "trainer", *config_to_args(config)]
        result = subprocess.run(command, env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(threads))})
        if result.returncode:
            raise UserError(f"training failed in one of its {nproc} processes (exit {result.returncode}); "
                            "see their output above")
    console.print(f"Run report: {config.run_dir / 'report.html'}")
    console.print(f"Metrics:    {config.run_dir / 'metrics.jsonl'} (or `loom sql \"SELECT step, loss FROM metrics\"`)")


# ---- quickstart ---------------------------------------------------------------------------------------

QUICKSTART_STEPS = 60  # about a minute of the tiny model on two CPU cores


@cli.command()
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes [default: one per core]")
@click.pass_obj
def quickstart(ws: Workspace, workers):
    """Curate the bundled sample corpora, build the `sample` mixture, train a tiny model on it for a short run."""
    examples = examples_dir()
    ws.root.mkdir(parents=True, exist_ok=True)
    if not ws.sources_file.exists():
        text = (examples / "sources.toml").read_text(encoding="utf-8")
        ws.sources_file.write_text(f'root = "{examples}"\n\n{text}', encoding="utf-8")
        console.print(f"Wrote {ws.sources_file} (the bundled sample corpora)")
    if not ws.tokenizer.exists():
        _train_tokenizer(ws, ws.sources_file, 8192, 2000, ws.tokenizer)
    quality_model = ws.quality_model
    if not quality_model.exists():
        from curation.quality import TrainingConfig

        _train_quality(ws, ws.sources_file, None, None, TrainingConfig(), quality_model)
    _run_curation(ws, ws.sources_file, ws.tokenizer, quality_model, None, workers)
    _build_mixture(ws, "sample")
    from trainer.checkpoint import latest
    from trainer.config import TrainConfig

    run = TrainConfig(ws.root, "sample", run_name="quickstart", max_steps=QUICKSTART_STEPS, eval_every=20)
    _train(dataclasses.replace(run, resume=latest(run.run_dir) is not None), nproc=1)
    from reports.build import curation_report

    console.print(f"Curation report: {curation_report(ws.root)}")
    console.print(f"Workspace:       {ws.root}")
    _print_outputs(ws)


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="loom")


if __name__ == "__main__":
    sys.exit(main())
