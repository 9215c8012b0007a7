"""`loom status`: what a workspace holds, from its small files: the published curation and whether sources.toml
changed since, each mixture and whether it is compiled on the published data, each run, ladder and search."""

import json
import time
import tomllib

import click
from rich.table import Table

from base.workspace import Generation, SPEC_GLOB, Workspace
from loom.cli.console import console
from loom.cli.mix import build_state

MIXTURE_STATES = {"yes": "current", "no": "not compiled"}  # and mix.STALE as it is


@click.command()
@click.pass_obj
def status(ws: Workspace):
    """What the workspace holds: its curated data and whether sources.toml changed since, its mixtures (current or
    stale), runs (status, last step), ladders and searches."""
    if not ws.root.is_dir():
        console.print(f"No workspace at {ws.root} yet: `loom init` starts one (or `loom quickstart` curates the "
                      "bundled sample corpora)", soft_wrap=True, markup=False)
        return
    console.print(f"Workspace {ws.root}", soft_wrap=True, markup=False)
    print_curation(ws)
    print_mixtures(ws)
    print_runs(ws)
    print_sweeps(ws)


def print_curation(ws: Workspace) -> None:
    from curation.manifest import source_summary

    gen = ws.published()
    if not gen.manifest_table("shards").exists():
        say(f"Nothing curated yet: {first_steps(ws)}")
        return
    published = published_at(ws, gen)
    say(f"Curated data: generation {gen.id or '(before generations)'}, published {when(published)}")
    table = Table()
    for column in ("source", "docs in", "kept", "tokens"):
        table.add_column(column, justify="left" if column == "source" else "right")
    for row in source_summary(gen):
        table.add_row(row["source"], f"{row['docs_in']:,}", f"{row['kept']:,}", f"{row['tokens']:,}")
    console.print(table)
    say(sources_change(ws, gen, published))


def first_steps(ws: Workspace) -> str:
    if not ws.sources_file.exists():
        return "`loom init` writes a starter sources.toml (or `loom quickstart` curates the bundled sample corpora)"
    if not ws.tokenizer.exists():
        return "`loom tokenizer train`, then `loom curate`"
    return "`loom curate`"


def published_at(ws: Workspace, gen: Generation) -> float:
    """When the generation was published: published.json says; a workspace curated before generations has only
    its manifest's modification time."""
    if ws.published_file.exists():
        return json.loads(ws.published_file.read_text(encoding="utf-8"))["published"]
    return gen.manifest_table("shards").stat().st_mtime


def sources_change(ws: Workspace, gen: Generation, published: float) -> str:
    """Whether sources.toml changed since the published curation, told cheaply: the sources it names against
    those curated (curation.json), then its modification time against the publication's."""
    if not ws.sources_file.exists():
        return f"No sources.toml in {ws.root} (this curation was given another file)"
    try:
        config = tomllib.loads(ws.sources_file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        return f"sources.toml is not valid TOML ({err}); `loom curate` will say where"
    configured = [source.get("name") for source in config.get("source", [])]
    curated = list(json.loads(gen.curation_info.read_text(encoding="utf-8"))["sources"])
    added = [name for name in configured if name not in curated]
    dropped = [name for name in curated if name not in configured]
    if added or dropped:
        change = "; ".join(part for part in (f"adds {', '.join(map(str, added))}" if added else "",
                                             f"drops {', '.join(dropped)}" if dropped else "") if part)
        return f"sources.toml changed since this curation ({change}): `loom curate` brings the curated data up to date"
    modified = ws.sources_file.stat().st_mtime
    if modified > published:
        return (f"sources.toml was modified after this curation (at {when(modified)}): `loom curate` redoes what "
                "changed, and only that (nothing, if nothing did)")
    return "sources.toml: the same sources, not modified since this curation"


def print_mixtures(ws: Workspace) -> None:
    from mixtures import compiled_mixtures, reading

    compiled = compiled_mixtures(ws.mixtures)
    specs_only = sorted(p.stem for p in ws.mixtures.glob(SPEC_GLOB) if p.stem not in compiled)
    if not compiled and not specs_only:
        say("Mixtures: none yet (`loom mix list` shows the built-in ones; `loom mix build NAME` compiles one)")
        return
    table = Table(title="Mixtures")
    for column in ("mixture", "compiled", "steps", "tokens", "compiled at"):
        table.add_column(column, justify="right" if column in ("steps", "tokens") else "left")
    for name in compiled:
        with reading(ws.mixture_dir(name)) as build:  # held: a rebuild meanwhile removes no file of it
            meta = json.loads(build.schedule.read_text(encoding="utf-8"))
            compiled_at = when(build.schedule.stat().st_mtime)
            state = build_state(ws, build)
        table.add_row(name, MIXTURE_STATES.get(state, state), f"{meta['steps']:,}", f"{meta['tokens']:,}", compiled_at)
    for name in specs_only:
        table.add_row(name, f"not compiled (`loom mix build {name}`)", "", "", "")
    console.print(table)


def print_runs(ws: Workspace) -> None:
    from reports.index import run_summaries

    runs = run_summaries(ws)
    if not runs:
        say("Runs: none yet (`loom train --mixture NAME`)")
        return
    table = Table(title="Runs")
    for column in ("run", "mixture", "status", "step", "last loss", "last val loss", "started"):
        table.add_column(column, justify="right" if column in ("step", "last loss", "last val loss") else "left")
    for run in runs:
        status = run["status"] + (" (the mixture was rebuilt since: not resumable)" if on_a_replaced_build(ws, run) else "")
        table.add_row(run["run"], run["mixture"], status, f"{run['steps_done']:,} of {run['steps'] or 0:,}",
                      decimal(run["loss"]), decimal(run["val_loss"]), when(run["started"]))
    console.print(table)



def on_a_replaced_build(ws: Workspace, run: dict) -> bool:
    """Whether the run trained on a build of its mixture that a rebuild replaced (`loom train --resume` refuses it)."""
    from loom.cli.mix import build_fingerprint
    from trainer.metrics import SCHEDULE_FINGERPRINT, read_run

    now = build_fingerprint(ws.mixture_dir(run["mixture"])) if run["mixture"] else None
    return now is not None and read_run(run["dir"]).get(SCHEDULE_FINGERPRINT) not in (None, now)


def print_sweeps(ws: Workspace) -> None:
    from reports.index import SWEEPS, sweep_states

    rows = [(sweep.one, *state) for kind, sweep in SWEEPS.items() for state in sweep_states(ws, kind)]
    if not rows:
        say("Ladders and searches: none yet (`loom ladder NAME --mixture MIX`, `loom mix search NAME --from MIX`)")
        return
    table = Table(title="Ladders and searches")
    for column in ("kind", "name", "mixture", "state"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def say(line: str) -> None:
    console.print(line, soft_wrap=True, markup=False)


def when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds)) if seconds else ""


def decimal(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else ""
