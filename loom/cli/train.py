"""`loom train`: a model trained on a compiled mixture (loom.api.train), in this process or in ranks started by
torchrun."""

import click

from base.workspace import Workspace
from loom.cli.console import Interrupted, api_workspace, console
from loom.cli.report import write_index
from trainer.options import config_from_options, train_options


RESUME_RUN = "interrupted; run the same command with --resume to go on from the last checkpoint"


@click.command()
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True,
              help="Ranks to start on this machine (through torchrun); 1 trains in this process")
@train_options
@click.pass_obj
def train(ws: Workspace, nproc, **options):
    """Train a model on a compiled mixture; WORKSPACE/runs/RUN/ gets metrics.jsonl, checkpoints/ and report.html."""
    config = config_from_options(ws.root, options)
    train_run(ws, config, nproc)
    loom = ws.loom_command()
    write_index(ws, f"`{loom} report open {config.run_dir.name}` (the run's page); `{loom} report compare "
                    f"{config.run_dir.name} RUN` (beside another run)")


def train_run(ws: Workspace, config, nproc: int) -> None:
    """loom.api's training of `config`, its lines printed, then its last evaluation and its files."""
    from loom.api.train import run_training

    try:
        run = run_training(api_workspace(ws), config, nproc, console.print)
    except KeyboardInterrupt:
        raise Interrupted(RESUME_RUN) from None
    print_evaluation(run.folder)
    console.print(f"Run report: {run.report}")
    console.print(f"Metrics:    {run.metrics_file} (or `loom sql \"SELECT step, loss FROM metrics\"`)")


def print_evaluation(run_dir) -> None:
    """The run's last evaluation: validation loss, and each eval set's loss and bits per byte."""
    from trainer.metrics import EVAL_BPB_BY_SET, EVAL_LOSS_BY_SET, STEP, VAL_LOSS, read_metrics

    evaluated = [r for r in read_metrics(run_dir) if VAL_LOSS in r]
    if not evaluated:
        return
    last = evaluated[-1]
    parts = [f"validation loss {last[VAL_LOSS]:.4f}"] if last[VAL_LOSS] is not None else []
    parts += [f"eval set '{name}' loss {loss:.4f}, {last[EVAL_BPB_BY_SET][name]:.4f} bits per byte"
              for name, loss in (last.get(EVAL_LOSS_BY_SET) or {}).items()]
    if parts:
        console.print(f"After step {last[STEP] + 1}: " + "; ".join(parts))
