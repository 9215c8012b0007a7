"""`loom reproduce RUN`: a run made again from its folder alone into a new workspace (loom.api.reproduce), a line per
step, then whether its losses are bit-identical to the recorded run's; exit 0 only when they are."""

import click

from base.workspace import Workspace
from loom.cli.console import Interrupted, api_workspace, console, progress_bars
from loom.cli.options import workers_option

NOT_IDENTICAL = 1  # the run was made again and its losses differ (2 is a user's mistake, as for every command)


@click.command()
@click.argument("run", metavar="RUN_FOLDER")
@workers_option
@click.option("--anyway", is_flag=True,
              help="Rebuild and train even when recorded inputs differ (they are listed; the result is not identical)")
@click.pass_obj
def reproduce(ws: Workspace, run: str, workers, anyway: bool):
    """Make a run again from its folder (WORKSPACE/runs/NAME: its inputs.json) into a new or empty workspace (-w):
    check every recorded input, curate, build the mixture and train as recorded, and compare the losses step by
    step. Stopped part way, the same command goes on."""
    try:
        with step_progress() as progress:
            done = api_workspace(ws).reproduce(run, workers=workers, anyway=anyway, log=console.print,
                                               progress=progress)
    except KeyboardInterrupt:
        raise Interrupted("interrupted; run the same command again to go on where it stopped") from None
    console.print(done.comparison.line)
    if done.differences:
        console.print(f"not a reproduction: {len(done.differences)} input(s) differed (--anyway)")
    seconds = ", ".join(f"{step} {value:.1f} s" for step, value in done.seconds.items())
    console.print(f"Run:      {done.run} ({seconds})")
    if not done.identical:
        raise SystemExit(NOT_IDENTICAL)


def step_progress():
    """A rich bar per step: the inputs checked (files), then each curation stage (shards)."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    return progress_bars(TextColumn("{task.description:<14}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
