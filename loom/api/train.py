"""`Workspace.train`: a model trained on a compiled mixture (`loom train`), TrainConfig's fields as keywords, then
its cooldowns (--cooldowns: each a run of its own, branched from the run's stable phase); returns the run's name,
folder and last metrics."""

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from base.atomic_files import remove_temporary_files
from base.errors import UserError

TRAIN_LOGGER = logging.getLogger("loom.train")


@dataclass(frozen=True)
class TrainedRun:
    """A run after training: its folder (runs/NAME), its last metrics record, its last evaluation (validation
    loss, eval sets' losses and bits per byte; None where it was never evaluated) and its report; for a run with
    --cooldowns, each finished cooldown's TrainedRun, shortest budget first."""

    name: str
    folder: Path
    metrics: dict
    evaluation: dict | None
    report: Path
    metrics_file: Path
    cooldowns: tuple = ()


def train(ws, mixture: str, nproc: int = 1, log=None, **options) -> TrainedRun:
    """Trains on compiled mixture `mixture`: `options` are TrainConfig's fields (model="tiny", max_steps=20,
    run_name=..., cooldowns=(0.25, 0.5), ...; `loom train --help` lists them), checked as the command-line options
    are; nproc > 1 starts ranks through torchrun. `log(line)` hears the trainer's lines [default: the `loom.train`
    logger]."""
    from trainer.config import TrainConfig
    from trainer.options import checked_options

    if isinstance(nproc, bool) or not isinstance(nproc, int) or nproc < 1:
        raise UserError(f"nproc {nproc!r}: give a number of ranks, 1 or more (1 trains in this process)")
    config = TrainConfig(workspace=ws.files.root, mixture=mixture, **checked_options(options))
    return run_training(ws, config, nproc, log or TRAIN_LOGGER.info)


def run_training(ws, config, nproc: int = 1, log=None) -> TrainedRun:
    """Trains `config` under its run's lock (a second trainer of the run is refused in one line), then each of its
    cooldowns not finished yet, each under its own lock too."""
    from trainer.launch import planned_cooldowns, run_lock

    log = log or TRAIN_LOGGER.info
    with run_lock(config, ws.note):
        cooldowns = planned_cooldowns(config)  # the run's and its cooldowns' refusals, before any compute
        _train_one(config, nproc, log)
        trained = [_train_cooldown(ws, cooldown, nproc, log) for cooldown in cooldowns]
    return _trained_run(config, tuple(run for run in trained if run is not None))


def _train_one(config, nproc: int, log) -> None:
    from reports.run import run_report
    from trainer import launch_ranks
    from trainer import train as train_here

    remove_temporary_files(config.run_dir)
    if nproc == 1:
        train_here(config, report=run_report, log=log)
    else:
        launch_ranks(config, nproc, report=run_report)


def _train_cooldown(ws, cooldown, nproc: int, log) -> TrainedRun | None:
    """A cooldown trained to its budget (or resumed), and its summary line; None where it cannot start yet."""
    from trainer import checkpoint
    from trainer.launch import run_lock
    from trainer.metrics import FINISHED, run_status, RUN_FILE

    config = cooldown.config
    with run_lock(config, ws.note):
        if (config.run_dir / RUN_FILE).exists() and run_status(config.run_dir) == FINISHED:
            log(f"cooldown at {cooldown.budget} steps: finished already")
            return _trained_run(config)
        branch = checkpoint.branch_dir(ws.files.run_dir(config.branch_from), cooldown.branch_step)
        if checkpoint.latest(config.run_dir) is None and not checkpoint.is_complete(branch):
            log(f"cooldown at {cooldown.budget} steps: run '{config.branch_from}' has not reached its branch step "
                f"{cooldown.branch_step} yet; train it further (--resume) and its cooldowns follow")
            return None
        began = time.perf_counter()
        _train_one(config, nproc, log)
        run = _trained_run(config)
    loss = (run.evaluation or {}).get("val_loss")
    log(f"cooldown {config.name} (budget {cooldown.budget} steps, branched at step {cooldown.branch_step}): val loss "
        f"{'-' if loss is None else format(loss, '.4f')} in {time.perf_counter() - began:.0f} s")
    return run


def _trained_run(config, cooldowns: tuple = ()) -> TrainedRun:
    from reports.html import REPORT_FILE
    from trainer.metrics import METRICS_FILE, VAL_LOSS, read_metrics

    records = read_metrics(config.run_dir)
    evaluated = [r for r in records if VAL_LOSS in r]
    return TrainedRun(name=config.name, folder=config.run_dir, metrics=records[-1] if records else {},
                      evaluation=evaluated[-1] if evaluated else None, report=config.run_dir / REPORT_FILE,
                      metrics_file=config.run_dir / METRICS_FILE, cooldowns=cooldowns)
