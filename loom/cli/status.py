"""`loom status`: what a workspace holds (loom.api.status), as tables: the published curation and whether
sources.toml changed since, each mixture and whether it is compiled on the published data, each run, ladder and
search."""

import click
from rich.table import Table

from base.workspace import Workspace
from loom.api.status import when
from loom.cli.console import api_workspace, console


@click.command()
@click.pass_obj
def status(ws: Workspace):
    """What the workspace holds: its curated data and whether sources.toml changed since, its mixtures (current or
    stale), runs (status, last step), ladders and searches."""
    state = api_workspace(ws).status()
    if not state["exists"]:
        say(f"No workspace at {ws.root} yet: {state['next_step']}")
        return
    say(f"Workspace {ws.root}")
    print_curation(state)
    print_mixtures(state["mixtures"])
    print_runs(state["runs"])
    print_sweeps(state["sweeps"])


def print_curation(state: dict) -> None:
    curated = state["curation"]
    if curated is None:
        say(f"Nothing curated yet: {state['next_step']}")
        return
    say(f"Curated data: generation {curated['generation'] or '(before generations)'}, published "
        f"{when(curated['published'])}")
    if curated["limit"] is not None:
        say(f"A sample: at most {curated['limit']:,} records per source (`loom curate --limit`); `loom curate` "
            "without it curates every record")
    table = Table()
    for column in ("source", "docs in", "kept", "tokens"):
        table.add_column(column, justify="left" if column == "source" else "right")
    for row in curated["sources"]:
        table.add_row(row["source"], f"{row['docs_in']:,}", f"{row['kept']:,}", f"{row['tokens']:,}")
    console.print(table)
    say(curated["sources_change"])


def print_mixtures(mixtures: list[dict]) -> None:
    if not mixtures:
        say("Mixtures: none yet (`loom mix list` shows the built-in ones; `loom mix build NAME` compiles one)")
        return
    table = Table(title="Mixtures")
    for column in ("mixture", "compiled", "steps", "tokens", "compiled at"):
        table.add_column(column, justify="right" if column in ("steps", "tokens") else "left")
    for row in mixtures:
        if row["steps"] is None:
            table.add_row(row["mixture"], f"not compiled (`loom mix build {row['mixture']}`)", "", "", "")
        else:
            table.add_row(row["mixture"], row["state"], f"{row['steps']:,}", f"{row['tokens']:,}",
                          when(row["compiled_at"]))
    console.print(table)


def print_runs(runs: list[dict]) -> None:
    if not runs:
        say("Runs: none yet (`loom train --mixture NAME`)")
        return
    table = Table(title="Runs")
    for column in ("run", "mixture", "status", "step", "last loss", "last val loss", "started"):
        table.add_column(column, justify="right" if column in ("step", "last loss", "last val loss") else "left")
    for run in runs:
        status = run["status"] + (" (the mixture was rebuilt since: not resumable)" if run["replaced_build"] else "")
        table.add_row(run["run"], run["mixture"], status, f"{run['steps_done']:,} of {run['steps'] or 0:,}",
                      decimal(run["loss"]), decimal(run["val_loss"]), when(run["started"]))
    console.print(table)


def print_sweeps(sweeps: list[dict]) -> None:
    if not sweeps:
        say("Ladders and searches: none yet (`loom ladder NAME --mixture MIX`, `loom mix search NAME --from MIX`)")
        return
    table = Table(title="Ladders and searches")
    for column in ("kind", "name", "mixture", "state"):
        table.add_column(column)
    for row in sweeps:
        table.add_row(row["kind"], row["name"], row["mixture"], row["state"])
    console.print(table)


def say(line: str) -> None:
    console.print(line, soft_wrap=True, markup=False)


def decimal(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else ""
