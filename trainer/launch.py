"""`loom train --nproc N`: N ranks on this machine, started by torchrun, each running `python -m trainer`; the
lock that keeps a run to one writer; and a run's cooldowns, checked before it trains."""

import os
import subprocess
import sys

from base.errors import UserError
from base.lock import exclusive
from base.procs import dying_with_this_process, loom_pythonpath
from base.store import as_path
from base.workspace import Workspace
from mixtures import reading
from trainer import metrics
from trainer.config import Cooldown, TrainConfig
from trainer.loop import ReportHook, Run, write_report
from trainer.options import config_to_args


RUN_LOCK_HELD = "LOOM_RUN_LOCK_HELD"  # set for ranks whose launcher holds the run's lock
MIXTURE_BUILD = "LOOM_MIXTURE_BUILD"  # the mixture build every rank reads: the one the launcher holds


def run_lock(config: TrainConfig, note=lambda line: print(f"note: {line}")):
    """The run's one-writer lock: a second `loom train` of the same run is refused while this one lives."""
    ws = Workspace(as_path(config.workspace))
    return exclusive(metrics.run_lock_file(ws.run_dir(config.name)), f"run '{config.name}' in {ws.root}", note)


def planned_cooldowns(config: TrainConfig) -> list[Cooldown]:
    """The cooldowns `config` trains after itself, shortest first; the run and they are checked (trainer.loop.Run)
    before any compute."""
    if not config.cooldowns:
        return []
    with reading(config.mixture_dir) as build:
        return Run(config, build).cooldowns


def launch_ranks(config: TrainConfig, nproc: int, report: ReportHook | None = None) -> None:
    """The ranks read one build of the mixture, which the launcher holds until they are gone."""
    with reading(config.mixture_dir) as build:
        Run(config, build).check_world_size(nproc)  # bad input is refused here, once, before any rank starts
        run_ranks(config, nproc, build.id, report)


def run_ranks(config: TrainConfig, nproc: int, build_id: str, report: ReportHook | None) -> None:
    threads = max(1, (os.cpu_count() or 1) // nproc)  # the cores shared out, unless the user chose
    command = [sys.executable, "-m", "trainer.torchrun", "--standalone", f"--nproc-per-node={nproc}",
               "-m", "trainer", *config_to_args(config)]
    env = dying_with_this_process({  # torchrun, and through it the ranks, end with this process
        **os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(threads)),
        "PYTHONPATH": loom_pythonpath(),
        RUN_LOCK_HELD: "1", MIXTURE_BUILD: build_id})
    with subprocess.Popen(command, env=env) as torchrun:
        try:
            returncode = torchrun.wait()
        except KeyboardInterrupt:
            # torchrun got the same Ctrl-C and stops the ranks; the run's lock is held until they are gone
            torchrun.wait()
            raise
    if returncode:
        mark_failed(config, report)
        raise UserError(f"training failed in one of its {nproc} processes (exit {returncode}); "
                        "see their output above")


def mark_failed(config: TrainConfig, report: ReportHook | None) -> None:
    """A rank killed (a signal, an abort in a collective) cannot mark its run failed itself: run.json would say
    "running" for ever and the report reload for ever. The launcher does it, and rewrites the report."""
    run_dir = config.run_dir
    if (run_dir / metrics.RUN_FILE).exists() and metrics.read_run(run_dir).get(metrics.STATUS) == metrics.RUNNING:
        metrics.finish(run_dir, metrics.FAILED)
        write_report(report, run_dir, print)
