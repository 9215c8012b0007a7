"""`loom mix export NAME --format FORMAT` (mixtures.export.formats): a compiled mixture's sequences, in the order
`loom train` reads them, in a file another trainer reads."""


import click
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn

from base.workspace import PART_GLOB, Workspace
from loom.cli.console import Interrupted, api_workspace, console, progress_bars
from loom.cli.options import RegistryOption


@click.command("export")
@click.argument("name")
@click.option("--format", "fmt", cls=RegistryOption, registry="mixtures.export.formats:FORMATS", required=True,
              help="The file format")
@click.option("--phase", metavar="PHASE", help="Export only this phase's steps (e.g. midtrain)")
@click.option("--out", metavar="DIR", help="Output folder inside the workspace [default: WORKSPACE/exports/NAME/"
                                           "FORMAT[-PHASE]]")
@click.option("--chunk-steps", type=click.IntRange(min=1), metavar="N",
              help="Steps written between progress records (what a resumed export redoes at most; one Parquet part "
                   "each) [default: about 8M tokens' worth]")
@click.pass_obj
def export(ws: Workspace, name, fmt, phase, out, chunk_steps):
    """Write the compiled mixture NAME's training sequences in schedule order: step by step, each step's global
    batch, each sequence seq_len + 1 tokens. A killed export resumes when run again."""
    with export_progress() as progress:
        try:
            result = api_workspace(ws).mixtures.export(name, fmt, phase, out, chunk_steps, progress)
        except KeyboardInterrupt:
            raise Interrupted("interrupted; run the same command again to go on from the last chunk") from None
    info = result.info
    if result.finished_already:
        console.print(f"The {fmt} export of '{name}' is finished already for this build of the mixture (schedule "
                      f"{info['schedule_fingerprint']}); nothing to do")
    if result.resumed_at is not None:
        console.print(f"Resumed at step {result.resumed_at:,}")
    console.print(f"Exported {info['sequences']:,} sequences of {info['tokens_per_sequence']} tokens "
                  f"({info['tokens']:,} tokens, steps {info['steps']['start']:,}-{info['steps']['end'] - 1:,}, "
                  f"{info['dtype']}) to {result.out}", soft_wrap=True)
    for shown, size in shown_files(result.files):
        console.print(f"  {shown:<34} {size:>16,} bytes", soft_wrap=True, markup=False)


def shown_files(files: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The files with their sizes; Parquet parts as one line, their count and total."""
    parts = [size for name, size in files if name.endswith(".parquet")]
    others = [(name, size) for name, size in files if not name.endswith(".parquet")]
    from mixtures.export.parquet_parts import PARTS_DIR

    count = f"{len(parts):,} part{'' if len(parts) == 1 else 's'}"
    return ([(f"{PARTS_DIR}/{PART_GLOB}.parquet ({count})", sum(parts))] if parts else []) + others


def export_progress():
    """One rich bar counting steps, shown once an export starts writing (a finished one shows none)."""
    return progress_bars(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("steps"),
                         TimeRemainingColumn())
