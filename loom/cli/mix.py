"""`loom mix list|build|show`: named mixtures, compiled into schedules, and their plans."""

from pathlib import Path

import click
from rich.table import Table

from base.names import check_name
from base.workspace import LICENSES_FILE, PLAN_FILE, SEQUENCES_DIR, VALIDATION_FILE, Workspace
from loom.api.mixtures import builtin_mixtures, compiled_state
from loom.cli.console import LoomGroup, api_workspace, console
from loom.cli.report import write_index


@click.group(cls=LoomGroup)
def mix():
    """Named mixtures: token shares per source, tag or slice, in pre-training and mid-training phases."""


@mix.command("list")
@click.pass_obj
def mix_list(ws: Workspace):
    """Built-in and workspace mixtures, every compiled one too, and whether each is compiled on the published data."""
    table = Table(title="Mixtures")
    for column in ("name", "spec", "compiled"):
        table.add_column(column)
    for name, spec in mixture_specs(ws).items():
        table.add_row(name, str(spec), compiled_state(ws, name))
    console.print(table)


def mixture_specs(ws: Workspace) -> dict[str, Path]:
    """Every mixture by name: the named specs (the workspace's, then the built-in ones), then each compiled mixture
    that none names (one built from a path), with the spec as its current build resolved it (relative to the
    workspace: a build's path is long)."""
    from mixtures import compiled_mixtures, spec_files

    specs = spec_files(ws.mixtures, builtin_mixtures())
    for name, build in compiled_mixtures(ws.mixtures).items():
        specs.setdefault(name, Path(str(build.spec)[len(str(ws.root)) + 1:]))
    return specs


@mix.command("build")
@click.argument("name")
@click.option("--total-tokens", type=click.IntRange(min=1), help="Override the spec's token budget")
@click.option("--steps", type=click.IntRange(min=1), help="Override the budget as steps of global_batch sequences")
@click.option("--target-tokens", type=click.IntRange(min=1),
              help="Simulate the epochs of a run of this many tokens: each component's pool is cut to this "
                   "mixture's tokens / target tokens of its sequences (overrides the spec's target_tokens)")
@click.pass_obj
def mix_build(ws: Workspace, name, total_tokens, steps, target_tokens):
    """Compile NAME (a mixture name or a path to a spec) into WORKSPACE/mixtures/NAME/."""
    mixture = build_mixture(ws, name, total_tokens, steps, target_tokens)
    write_index(ws, f"`{ws.loom_command()} train --mixture {mixture}`")


def build_mixture(ws: Workspace, name: str, total_tokens=None, steps=None, target_tokens=None) -> str:
    """loom.api's mixtures.build, then what it built: the plan, the schedule's shape, cells, validation and eval
    sets, the build's files and report; the mixture's name."""
    build = api_workspace(ws).mixtures.build(name, total_tokens, steps, target_tokens)
    meta = build.meta
    print_plan(build.mixture, build.plan, meta)
    switch = ", ".join(f"{p['name']} from step {p['start_step']}" for p in meta["phases"])
    console.print(f"Mixture '{build.mixture}': {meta['steps']:,} steps x {build.global_batch} sequences of "
                  f"{build.seq_len} tokens = {meta['tokens']:,} tokens; {switch}")
    if build.simulates_epochs:
        console.print(f"Simulated epoching: each component reads {meta['tokens']:,} / {build.target_tokens:,} of its "
                      "sequences, as often as the target run reads all of them")
    print_cells(meta)
    if build.licenses:
        from mixtures.licenses import licenses_line

        console.print(f"Licences (tokens): {licenses_line(build.licenses)}", markup=False)
    held_out = ", ".join(f"{name} {v['tokens']:,}" for name, v in meta["validation"]["sources"].items())
    console.print(f"Validation: whole documents held out per source (tokens): {held_out}")
    for e in meta["evals"]:
        console.print(f"Eval set '{e['name']}': {e['documents']:,} documents, {e['sequences']:,} sequences, "
                      f"{e['scored_bytes']:,} bytes scored")
    console.print(f"Build {build.id}: {build.schedule}, {PLAN_FILE}, {LICENSES_FILE}, {SEQUENCES_DIR}/, {VALIDATION_FILE}")
    console.print(f"Report:   {build.report}")
    return build.mixture


@mix.command("show")
@click.argument("name")
@click.pass_obj
def mix_show(ws: Workspace, name):
    """The compiled plan of NAME: per phase and component, share, tokens and epochs."""
    from mixtures import load_meta, read_plan, reading

    with reading(ws.mixture_dir(check_name("mixture", name))) as build:
        print_plan(build.mixture, read_plan(build.root), load_meta(build))


def print_plan(mixture: str, rows: list[dict], meta: dict) -> None:
    """The plan of a build (its rows and schedule meta) as a table, with a `pool` column (sequences read of those
    available) where simulated epoching cut a pool, and a `rehydration` column (available tokens with
    [rehydrate]'s repeats over without) where a component is rehydrated; a wildcard key's cells under a row of
    the key's totals, each named domain's name beside its number."""
    pooled = any(row.get("pool_sequences", row["available_sequences"]) != row["available_sequences"] for row in rows)
    rehydrated = any((row.get("rehydration") or 1.0) != 1.0 for row in rows)
    table = Table(title=f"Plan of {mixture}")
    columns = ("phase", "component", "target_share", "realized_share", "tokens", "epochs_cumulative", "available_tokens",
               "validation_tokens") + (("rehydration",) if rehydrated else ()) + (("pool",) if pooled else ())
    for column in columns:
        table.add_column(column.replace("_", " "), justify="left" if column in ("phase", "component") else "right")
    for row, shown in plan_lines(rows, meta):
        if row is None:
            table.add_row(*shown, *[""] * (len(columns) - len(shown)))
            continue
        cells = [row["phase"], shown, f"{row['target_share']:.3f}", f"{row['realized_share']:.3f}",
                 f"{row['tokens']:,}", f"{row['epochs_cumulative']:.2f}", f"{row['available_tokens']:,}",
                 f"{row.get('validation_tokens') or 0:,}"]
        if rehydrated:
            cells.append(f"x{row.get('rehydration') or 1.0:.3f}")
        if pooled:
            cells.append(f"{row['pool_sequences']:,} of {row['available_sequences']:,} seq")
        table.add_row(*cells)
    console.print(table)


def plan_lines(rows: list[dict], meta: dict) -> list[tuple[dict | None, object]]:
    """The plan's rows with how each component is shown; before a wildcard key's first cell in a phase, a line of
    its own (row None) with the key and the cells' totals."""
    from mixtures import cell_label, cell_wildcards

    wildcard_of, names = cell_wildcards(meta), meta.get("domain_names")
    lines, started = [], set()
    for row in rows:
        wildcard = wildcard_of.get(row["component"])
        if wildcard is None:
            lines.append((row, cell_label(row["component"], names)))
            continue
        if (row["phase"], wildcard) not in started:
            started.add((row["phase"], wildcard))
            cells = [r for r in rows if r["phase"] == row["phase"] and wildcard_of.get(r["component"]) == wildcard]
            lines.append((None, (row["phase"], f"{wildcard} ({len(cells)} cells)",
                                 f"{sum(r['target_share'] for r in cells):.3f}",
                                 f"{sum(r['realized_share'] for r in cells):.3f}", f"{sum(r['tokens'] for r in cells):,}",
                                 "", f"{sum(r['available_tokens'] for r in cells):,}")))
        lines.append((row, "  " + cell_label(row["component"], names)))
    return lines


def print_cells(meta: dict) -> None:
    """Each wildcard key's cells, and the training tokens it selects that none holds."""
    for key, record in meta.get("cells", {}).items():
        left_out = record["left_out_tokens"]
        console.print(f"Cells of '{key}': {len(record['cells'])}" + (
            f"; {left_out:,} training tokens in none (a null value in its columns, or a cell under one sequence or one per batch)"
            if left_out else ""))
