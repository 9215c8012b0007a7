"""`Workspace.train`: a model trained on a compiled mixture (`loom train`), TrainConfig's fields as keywords;
returns the run's name, folder and last metrics."""

import logging
from dataclasses import dataclass
from pathlib import Path

from base.atomic_files import remove_temporary_files
from base.errors import UserError

TRAIN_LOGGER = logging.getLogger("loom.train")


@dataclass(frozen=True)
class TrainedRun:
    """A run after training: its folder (runs/NAME), its last metrics record, its last evaluation (validation
    loss, eval sets' losses and bits per byte; None where it was never evaluated) and its report."""

    name: str
    folder: Path
    metrics: dict
    evaluation: dict | None
    report: Path
    metrics_file: Path


def train(ws, mixture: str, nproc: int = 1, log=None, **options) -> TrainedRun:
    """Trains on compiled mixture `mixture`: `options` are TrainConfig's fields (model="tiny", max_steps=20,
    run_name=..., ...; `loom train --help` lists them), checked as the command-line options are; nproc > 1 starts
    ranks through torchrun. `log(line)` hears the trainer's lines [default: the `loom.train` logger]."""
    from trainer.config import TrainConfig
    from trainer.options import checked_options

    if isinstance(nproc, bool) or not isinstance(nproc, int) or nproc < 1:
        raise UserError(f"nproc {nproc!r}: give a number of ranks, 1 or more (1 trains in this process)")
    config = TrainConfig(workspace=ws.files.root, mixture=mixture, **checked_options(options))
    return run_training(ws, config, nproc, log or TRAIN_LOGGER.info)


def run_training(ws, config, nproc: int = 1, log=None) -> TrainedRun:
    """Trains `config` under its run's lock (a second trainer of the run is refused in one line)."""
    from reports.html import REPORT_FILE
    from reports.run import run_report
    from trainer import launch_ranks
    from trainer import train as train_here
    from trainer.launch import run_lock
    from trainer.metrics import METRICS_FILE, VAL_LOSS, read_metrics

    with run_lock(config, ws.note):
        remove_temporary_files(config.run_dir)
        if nproc == 1:
            train_here(config, report=run_report, log=log or TRAIN_LOGGER.info)
        else:
            launch_ranks(config, nproc, report=run_report)
    records = read_metrics(config.run_dir)
    evaluated = [r for r in records if VAL_LOSS in r]
    return TrainedRun(name=config.name, folder=config.run_dir, metrics=records[-1] if records else {},
                      evaluation=evaluated[-1] if evaluated else None, report=config.run_dir / REPORT_FILE,
                      metrics_file=config.run_dir / METRICS_FILE)
