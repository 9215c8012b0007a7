"""`loom train`: a model trained on a compiled mixture, in this process or in ranks started by torchrun."""

import click

from base.atomic_files import remove_temporary_files
from base.workspace import Workspace
from loom.cli.console import Interrupted, console, note
from trainer.options import config_from_options, train_options


RESUME_RUN = "interrupted; run the same command with --resume to go on from the last checkpoint"


@click.command()
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True,
              help="Ranks to start on this machine (through torchrun); 1 trains in this process")
@train_options
@click.pass_obj
def train(ws: Workspace, nproc, **options):
    """Train a model on a compiled mixture; WORKSPACE/runs/RUN/ gets metrics.jsonl, checkpoints/ and report.html."""
    train_run(config_from_options(ws.root, options), nproc)


def train_run(config, nproc: int) -> None:
    from reports.html import REPORT_FILE
    from reports.run import run_report
    from trainer import launch_ranks
    from trainer import train as train_here
    from trainer.launch import run_lock
    from trainer.metrics import METRICS_FILE

    with run_lock(config, note):
        remove_temporary_files(config.run_dir)
        try:
            if nproc == 1:
                train_here(config, report=run_report, log=console.print)
            else:
                launch_ranks(config, nproc, report=run_report)
        except KeyboardInterrupt:
            raise Interrupted(RESUME_RUN) from None
    print_evaluation(config.run_dir)
    console.print(f"Run report: {config.run_dir / REPORT_FILE}")
    console.print(f"Metrics:    {config.run_dir / METRICS_FILE} (or `loom sql \"SELECT step, loss FROM metrics\"`)")


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
