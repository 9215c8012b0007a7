"""Training a ladder's rungs: each a normal `loom train` run in a process of its own, forked from a zygote that
imported torch once (sweeps.zygote), its output in the ladder's logs/, with its cooldowns when the ladder has them
(`--cooldowns`: each a run of its own, branched from the rung's stable phase), one after another or several at
once, with a progress line per rung (step and ETA) and one for the whole ladder (in FLOPs). Every rung is started
with --resume: a finished rung (its run and every cooldown) is skipped, a killed one goes on from its last
checkpoints, a new one starts; so a killed ladder, rerun, trains only what is unfinished."""

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from base.errors import UserError
from base.procs import dying_with_this_process, loom_pythonpath
from base.workspace import Workspace
from sweeps.plan import LadderPlan, RungPlan
from sweeps.progress import SweepProgress
from sweeps.progress import steps_done as metrics_steps_done
from sweeps.results import run_status
from sweeps.zygote import ForkedRun, Zygote
from trainer import checkpoint, metrics
from trainer.config import TrainConfig
from trainer.options import config_to_args

POLL_SECONDS = 1.0  # how often the progress display is updated while every rung trains on
STOP_GRACE_SECONDS = 60  # a rung stopped by Ctrl-C writes no more than its run.json in this time


@dataclass
class Rung:
    plan: RungPlan
    run_dir: Path
    log: Path
    process: ForkedRun | None = None
    started: float = 0.0

    def steps(self) -> tuple[int, int]:
        """(steps trained, steps to train), its cooldowns' included: what a progress display counts."""
        return rung_steps(self.run_dir.parent, self.plan)

    def flops(self) -> tuple[float, float]:
        """(FLOPs trained, FLOPs to train), its cooldowns' included."""
        done, total = self.steps()
        per_step = self.plan.flops / self.plan.steps
        return per_step * min(done, total), per_step * total

    def finished(self) -> bool:
        """Whether its run and each of its cooldowns' runs have finished."""
        return all(finished(path) for path in self.run_dirs())

    def run_dirs(self) -> list[Path]:
        """Its run's folder and each cooldown's."""
        return [self.run_dir.parent / b.run for b in self.plan.budgets]


def rung_config(workspace: Path, ladder: LadderPlan, rung: RungPlan, train: dict) -> TrainConfig:
    shape = rung.shape
    schedule = {}  # only what the ladder sets: a spec without cooldowns trains as it always has
    if rung.cooldown_steps:
        schedule["cooldowns"] = ladder.cooldowns
    if ladder.decay_fraction is not None:
        schedule["decay_fraction"] = ladder.decay_fraction
    return TrainConfig(workspace=workspace, mixture=rung.name, run_name=rung.name, model="tiny",
                       d_model=shape.d_model, n_layers=shape.n_layers, n_heads=shape.n_heads,
                       n_experts=shape.n_experts, top_k=shape.top_k, lr=rung.lr, warmup_steps=rung.warmup_steps,
                       min_lr_ratio=ladder.min_lr_ratio, resume=True, **schedule, **train)


def finished(run_dir: Path) -> bool:
    return run_status(run_dir) == metrics.FINISHED


def rung_steps(runs: Path, rung: RungPlan) -> tuple[int, int]:
    """(steps trained, steps to train) of a rung whose runs are in `runs`, its cooldowns' included: a cooldown
    trains from its branch step (its metrics count steps from the start of the rung's run, as the run's own do)."""
    done = total = 0
    for budget in rung.budgets:
        start = budget.branch_step or 0
        total += budget.steps - start
        done += max(0, min(budget.steps, steps_done(runs / budget.run)) - start)
    return done, total


def steps_done(run_dir: Path) -> int:
    """Steps the run's metrics.jsonl has recorded (its last line's step + 1), read from the file's end."""
    return metrics_steps_done(run_dir)


def train_rungs(workspace: Path, ladder: LadderPlan, train: dict, logs: Path, parallel: int, nproc: int,
                console: Console, on_finished=lambda: None, noun: str = "rung",
                progress_seconds: float | None = None) -> None:
    """Trains every unfinished rung, calling `on_finished` as each one ends well; raises UserError naming a
    failed rung once the others have stopped. `noun` names a rung in what is printed (a search's proxies);
    where the output is not a terminal a line per running rung is printed every `progress_seconds`
    (sweeps.progress; default its PROGRESS_SECONDS)."""
    rungs = [Rung(r, Workspace(workspace).run_dir(r.name), logs / f"{r.rung}.log") for r in ladder.rungs]
    pending = [r for r in rungs if not r.finished()]
    for rung in rungs:
        if rung not in pending:
            console.print(f"{noun} {rung.plan.rung}: finished already ({rung.steps()[1]:,} steps)")
    if not pending:
        return
    logs.mkdir(parents=True, exist_ok=True)
    threads = max(1, (os.cpu_count() or 1) // (parallel * nproc))
    whole = "ladder" if noun == "rung" else "search"
    env = dying_with_this_process({  # a ladder killed (kill -9 too) takes its rungs with it
        **os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(threads)),
        "PYTHONPATH": loom_pythonpath()})
    with SweepProgress(console, ladder.name, noun, whole, rungs, progress_seconds) as progress, Zygote(env) as zygote:
        running, failed = [], []
        try:
            while pending or running:
                while pending and len(running) < parallel and not failed:
                    running.append(_start(pending.pop(0), zygote, env, workspace, ladder, train, nproc, console,
                                          noun))
                    progress.started(running[-1])
                _wait_for_an_end(zygote, running, POLL_SECONDS)
                for rung in list(running):
                    if rung.process.poll() is not None:
                        running.remove(rung)
                        progress.ended(rung)
                        if _ended(rung, console, noun, progress):
                            on_finished()
                        else:
                            failed.append(rung)
                progress.poll()
                if failed and not running:
                    break
        except BaseException:  # Ctrl-C, or an error in this process: no rung is left running without the ladder
            _stop(running)
            raise
    if failed:
        rung = failed[0]
        raise UserError(f"{noun} '{rung.plan.rung}' failed (exit {rung.process.returncode}): {_last_line(rung.log)}; "
                        f"its log: {rung.log}. Fix it and run the same command: finished ones are kept")


def _start(rung: Rung, zygote: Zygote, env: dict[str, str], workspace: Path, ladder: LadderPlan, train: dict,
           nproc: int, console: Console, noun: str) -> Rung:
    config = rung_config(workspace, ladder, rung.plan, train)
    argv = ["-w", str(workspace), "train", "--nproc", str(nproc),
            *config_to_args(config)[2:]]  # [2:]: the workspace is the group's option
    p = rung.plan
    console.print(f"{noun} {p.rung}: {_how_it_starts(rung.run_dir)} "
                  f"(d_model {p.shape.d_model}, {p.shape.n_layers} layers, {p.active_parameters:,} active "
                  f"parameters, {p.tokens:,} tokens, {p.flops:.3g} FLOPs"
                  + (f"; cooldowns at steps {', '.join(map(str, p.cooldown_steps))}" if p.cooldown_steps else "")
                  + f"); log: {rung.log}")
    with open(rung.log, "a") as log:
        log.write(f"$ {' '.join([sys.executable, '-m', 'loom', *argv])}\n")  # what the zygote's fork runs
    rung.process = zygote.start("loom", argv, env, rung.log)
    rung.started = time.time()
    return rung


def _wait_for_an_end(zygote: Zygote, running: list[Rung], seconds: float) -> None:
    """Until one of the running rungs' processes ends (the zygote reports it at once), or `seconds` pass: a tiny
    proxy's run is over in a second or two, and a poll once a second left each start waiting half a second."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0 and all(rung.process.poll() is None for rung in running):
        zygote.wait_for_news(left)


def _how_it_starts(run_dir: Path) -> str:
    found = checkpoint.latest(run_dir)
    if found is not None:
        return f"resumed at step {checkpoint.read_state(found)['step']}"
    return "started again (no checkpoint yet)" if steps_done(run_dir) else "started"


def _ended(rung: Rung, console: Console, noun: str, progress: SweepProgress) -> bool:
    """Whether the rung's run (and each cooldown's) finished."""
    seconds = time.time() - rung.started
    if rung.process.returncode == 0 and rung.finished():
        progress.finished(rung)
        return True
    console.print(f"{noun} {rung.plan.rung}: failed after {seconds:,.0f} s (exit {rung.process.returncode})")
    return False


def _stop(running: list[Rung]) -> None:
    """Ctrl-C: the rungs got it too when it came from the terminal; a signal sent to the ladder alone is passed on.
    Each rung checkpoints nothing more but marks its run; the ladder waits for them, so their locks are free."""
    for rung in running:
        if rung.process.poll() is None:
            rung.process.send_signal(signal.SIGINT)
    deadline = time.time() + STOP_GRACE_SECONDS
    for rung in running:
        try:
            rung.process.wait(timeout=max(1.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            rung.process.kill()
            rung.process.wait()


def _last_line(log: Path) -> str:
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"
