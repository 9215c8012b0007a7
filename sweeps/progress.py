"""Where a sweep's training stands, as its runner sees it: on a terminal, rich bars (a run's steps, the whole
sweep's FLOPs); anywhere else (nohup, a log file, a pipe) plain lines, one per running run every `interval`
seconds (`rung r2: step 340/600 (57%), loss 4.812, ETA 3m10s; ladder 41% of FLOPs, ETA 9m05s`), and a line per
finished run (`rung r2: finished 600 steps in 4m02s, val loss 4.6021`). What a run has done is read from its
metrics.jsonl's end. The runs are duck-typed (sweeps.runner.Rung): `.plan.rung`, `.steps()` and `.flops()` (done,
to do: a ladder's rung counts its cooldowns'), `.run_dirs()` (its runs' folders, the one training newest)."""

import json
import os
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from trainer import metrics

# how often a line per running run is printed when the output is not a terminal (tests set it short)
PROGRESS_SECONDS = float(os.environ.get("LOOM_PROGRESS_SECONDS", "30"))
TAIL_BYTES = 65536


def tail_records(run_dir: Path) -> list[dict]:
    """The metrics.jsonl lines in the file's last TAIL_BYTES, newest first (a line cut at the start or being
    written at the end is skipped)."""
    path = Path(run_dir) / metrics.METRICS_FILE
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - TAIL_BYTES))
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    records = []
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get(metrics.STEP), int):
            records.append(record)
    return records


def steps_done(run_dir: Path) -> int:
    """Steps the run's metrics.jsonl has recorded (its last line's step + 1)."""
    records = tail_records(run_dir)
    return records[0][metrics.STEP] + 1 if records else 0


def newest_records(run) -> list[dict]:
    """The tail of the metrics of the run's folder written last (a rung's run, or the cooldown training now)."""
    written = [((path / metrics.METRICS_FILE).stat().st_mtime, path) for path in run.run_dirs()
               if (path / metrics.METRICS_FILE).exists()]
    return tail_records(max(written)[1]) if written else []


def latest(records: list[dict], key: str) -> float | None:
    """The newest value of `key` in records read newest first."""
    return next((r[key] for r in records if r.get(key) is not None), None)


def duration(seconds: float) -> str:
    """`42s`, `3m10s`, `2h05m`."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class SweepProgress:
    """The progress of a sweep's runs: `started(run)` as each starts, `poll()` as often as the runner looks,
    `finished(run)` as one ends well. A context manager (the bars are drawn while it is open)."""

    def __init__(self, console: Console, title: str, noun: str, whole: str, runs: list,
                 interval: float | None = None):
        self.console, self.noun, self.whole, self.runs = console, noun, whole, runs
        self.interval = PROGRESS_SECONDS if interval is None else interval
        self.terminal = console.is_terminal
        self.began, self.flops_at_start = time.time(), self.flops_done()
        self.starts: dict[str, tuple[float, int]] = {}  # run -> (when it started, steps done then)
        self.running: list = []
        self.last_lines = time.time()
        self.bars = None
        if self.terminal:
            self.bars = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeRemainingColumn(), console=console)
            self.whole_bar = self.bars.add_task(f"{title}: every {noun} (GFLOPs)", total=gflops(self.total_flops()))
            self.run_bars = {r.plan.rung: self.bars.add_task(f"{noun} {r.plan.rung} (steps)", total=r.steps()[1],
                                                             completed=r.steps()[0]) for r in runs}

    def __enter__(self) -> "SweepProgress":
        if self.bars is not None:
            self.bars.start()
        return self

    def __exit__(self, *_exc) -> None:
        if self.bars is not None:
            self.bars.stop()

    def total_flops(self) -> float:
        return sum(r.flops()[1] for r in self.runs)

    def flops_done(self) -> float:
        return sum(r.flops()[0] for r in self.runs)

    def started(self, run) -> None:
        self.starts[run.plan.rung] = (time.time(), run.steps()[0])
        self.running.append(run)

    def ended(self, run) -> None:
        """A run's process ended, well or not."""
        if run in self.running:
            self.running.remove(run)
        if self.terminal:
            self.bars.update(self.run_bars[run.plan.rung], completed=run.steps()[0])

    def poll(self) -> None:
        if self.terminal:
            for run in self.running:
                self.bars.update(self.run_bars[run.plan.rung], completed=run.steps()[0])
            self.bars.update(self.whole_bar, completed=gflops(self.flops_done()))
        elif self.running and time.time() - self.last_lines >= self.interval:
            self.last_lines = time.time()
            whole = self.whole_line()
            for run in self.running:
                self.say(f"{self.run_line(run)}; {whole}")

    def run_line(self, run) -> str:
        records = newest_records(run)
        done, total = run.steps()
        line = f"{self.noun} {run.plan.rung}: step {done:,}/{total:,} ({100 * done / total:.0f}%)"
        loss = latest(records, metrics.LOSS)
        if loss is not None:
            line += f", loss {loss:.3f}"
        since, first = self.starts[run.plan.rung]
        if done > first:
            line += f", ETA {duration((time.time() - since) / (done - first) * (total - done))}"
        return line

    def whole_line(self) -> str:
        total, done = self.total_flops(), self.flops_done()
        line = f"{self.whole} {100 * done / total:.0f}% of FLOPs"
        if done > self.flops_at_start:
            rate = (done - self.flops_at_start) / (time.time() - self.began)
            line += f", ETA {duration((total - done) / rate)}"
        return line

    def finished(self, run) -> None:
        """The summary line of a run that finished: its steps, how long it took here, its last validation loss."""
        since, _ = self.starts[run.plan.rung]
        line = f"{self.noun} {run.plan.rung}: finished {run.steps()[1]:,} steps in {duration(time.time() - since)}"
        val_loss = latest(tail_records(run.run_dir), metrics.VAL_LOSS)  # its own run's: the longest budget
        self.say(line + (f", val loss {val_loss:.4f}" if val_loss is not None else ""))

    def say(self, line: str) -> None:
        self.console.print(line, soft_wrap=True, markup=False, highlight=False)


def gflops(flops: float) -> float:
    return round(flops / 1e9, 1)
