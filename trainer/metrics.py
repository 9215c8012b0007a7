"""What a training run writes, defined once: runs/<run>/metrics.jsonl, a line per step, and runs/<run>/run.json,
what the run is and how it stands. The training loop writes these keys and the run report reads them; this
module imports no torch, so the report (and `loom sql`) can use it without. The run folder may be on an object
store (see MetricsLog for what a reader sees there while the run goes on)."""

import json
import sys
import tempfile
import time
from pathlib import Path

from base.atomic_files import copy_file, write_text
from base.lock import is_held
from base.small_files import read_text
from base.store import as_path, is_remote
from base.workspace import METRICS_FILE, RUN_FILE, Workspace, run_lock

# ---- a metrics.jsonl line, in the order it holds its keys ----
STEP = "step"
PHASE = "phase"
LR = "lr"
LOSS = "loss"
LOSS_BY_SOURCE = "loss_by_source"  # token-weighted, summed over ranks: they average back to LOSS
TOKENS_BY_SOURCE = "tokens_by_source"
SHARE_BY_COMPONENT = "share_by_component"
TARGET_SHARE_BY_COMPONENT = "target_share_by_component"
GRAD_NORM = "grad_norm"  # before clipping
GRAD_NORM_BY_GROUP = "grad_norm_by_group"
PARAM_NORM_BY_GROUP = "param_norm_by_group"
UPDATE_NORM_BY_GROUP = "update_norm_by_group"
TOKENS_SEEN = "tokens_seen"
# only with experts: per MoE layer ("layers.0.ffn"), each expert's fraction of the layer's token slots summed over
# ranks, and its max violation, max_i load_i / mean load - 1 (0 balanced, n_experts / top_k - 1 at worst); and
# the worst layer's
EXPERT_LOAD_BY_LAYER = "expert_load_by_layer"
EXPERT_MAX_VIOLATION_BY_LAYER = "expert_max_violation_by_layer"
EXPERT_MAX_VIOLATION = "expert_max_violation"
SPIKE = "spike"  # only on a spike: the group whose update moved most
VAL_LOSS_BY_SOURCE = "val_loss_by_source"  # only on evaluation steps, with VAL_LOSS
VAL_LOSS = "val_loss"
EVAL_LOSS_BY_SET = "eval_loss_by_set"  # only on evaluation steps, with a mixture's [eval.NAME] sets: nats per token
EVAL_BPB_BY_SET = "eval_bpb_by_set"  # bits per UTF-8 byte of the text the scored tokens cover (mixtures.evalsets)
STEP_SECONDS = "step_seconds"
TOKENS_PER_SECOND = "tokens_per_second"
DATA_WAIT_FRACTION = "data_wait_fraction"
FLOPS_PER_SECOND = "flops_per_second"  # achieved, all devices: the model's training FLOPs per token x tokens/s
FLOPS_PER_SECOND_PER_DEVICE = "flops_per_second_per_device"
MFU = "mfu"  # per device against PEAK_FLOPS; null without a known peak, or where the peak is below what was achieved
PEAK_FLOPS = "peak_flops"  # one device's; null when unknown
PEAK_SOURCE = "peak_source"  # where PEAK_FLOPS comes from, or why there is none

# ---- run.json, in the order it holds its keys ----
RUN = "run"
MIXTURE = "mixture"
STEPS = "steps"  # the mixture's
BUDGET_STEPS = "budget_steps"  # the steps the run's LR schedule spans: its budget (--budget-steps), else STEPS
END_STEP = "end_step"
SEQ_LEN = "seq_len"
GLOBAL_BATCH = "global_batch"
MODEL = "model"  # the model's config: d_model, n_layers, n_heads, n_experts, top_k, ...
PARAMETERS = "parameters"
ACTIVE_PARAMETERS = "active_parameters"
PHASES = "phases"  # the schedule's: name, start_step, end_step, counts
MIDTRAIN_START = "midtrain_start"
DECAY_START = "decay_start"
WARMUP_STEPS = "warmup_steps"
SOURCES = "sources"
COMPONENTS = "components"
TARGET_SHARES = "target_shares"  # per phase, a share per component
SCHEDULE_FINGERPRINT = "schedule_fingerprint"
BUILD = "build"  # the id of the mixture build the run trains on (mixtures.builds); "" before builds
CONFIG = "config"
BRANCH = "branch"  # a cooldown's: {RUN: the run it branched from, STEP: the branch step}
COOLDOWNS = "cooldowns"  # a WSD run's: [{RUN: the cooldown's run, STEPS: its budget, BRANCH_STEP: ...}, ...]
BRANCH_STEP = "branch_step"
STATUS = "status"  # RUNNING, then FINISHED, STOPPED (at --max-steps) or FAILED; readers see run_status
WORLD_SIZE = "world_size"
DEVICE = "device"
PRECISION = "precision"  # fp32, bf16-autocast or bf16-fsdp2 (trainer.distributed.precision)
STARTED_AT = "started_at"
ENDED_AT = "ended_at"

RUNNING, FINISHED, STOPPED, FAILED = "running", "finished", "stopped", "failed"
# never written: what a reader sees of a run that says RUNNING while no live process holds its lock (killed with
# kill -9, its machine lost, a crash past every handler); `loom train --resume` goes on and it is RUNNING again
INTERRUPTED = "interrupted"


def run_lock_file(run_dir: Path) -> Path:
    """The run's one-writer lock (trainer.launch.run_lock): the workspace's locks/run-NAME.lock."""
    run_dir = as_path(run_dir)
    return Workspace(run_dir.parent.parent).lock_file(run_lock(run_dir.name))


def run_status(run_dir: Path, info: dict | None = None) -> str:
    """How the run stands, for every reader that shows or decides on it: run.json's status ("?" without one),
    except that RUNNING whose lock no live process holds is INTERRUPTED. `info`: run.json, if already read."""
    status = (read_run(run_dir) if info is None else info).get(STATUS, "?")
    if status == RUNNING and not is_held(run_lock_file(run_dir)):
        return INTERRUPTED
    return status


def read_metrics(run_dir: Path) -> list[dict]:
    return read_metrics_counted(run_dir)[0]


def read_metrics_counted(run_dir: Path) -> tuple[list[dict], int]:
    """The records of metrics.jsonl, and how many of its lines could not be read and were skipped: a killed
    writer leaves its last line torn (`{"step": 12, "lo`), and a reader may meet the line being written."""
    lines, unreadable = _whole_lines(as_path(run_dir) / METRICS_FILE)
    return [record for _, record in lines], unreadable


def keep_metrics_before(run_dir: Path, step: int) -> int:
    """On resume, keep the whole lines of the steps before the checkpoint (later steps are trained again, and
    appended after them) and drop any torn line, so the file is whole again and each step appears once.
    Returns the number of unreadable lines dropped, said once on stderr."""
    path = as_path(run_dir) / METRICS_FILE
    if not path.exists():
        return 0
    lines, unreadable = _whole_lines(path)
    write_text("".join(line + "\n" for line, record in lines if record[STEP] < step), path)
    if unreadable:
        print(f"warning: dropped {unreadable} unreadable line(s) of {path} (torn by a killed run); kept the whole "
              f"lines of steps before {step}", file=sys.stderr)
    return unreadable


def copy_metrics_before(source_dir: Path, run_dir: Path, step: int) -> None:
    """A cooldown's metrics.jsonl begins as the whole lines of the steps before its branch step of the run it
    branches from: they are its own trajectory, so its curves are whole."""
    lines, _ = _whole_lines(as_path(source_dir) / METRICS_FILE)
    write_text("".join(line + "\n" for line, record in lines if record[STEP] < step), as_path(run_dir) / METRICS_FILE)


def _whole_lines(path: Path) -> tuple[list[tuple[str, dict]], int]:
    """(line, record) for each line that is a whole record with a step; and the count of the other lines."""
    if not path.exists():
        return [], 0
    whole, unreadable = [], 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict) and type(record.get(STEP)) is int:
            whole.append((line, record))
        else:
            unreadable += 1
    return whole, unreadable


def read_run(run_dir: Path) -> dict:
    return json.loads(read_text(as_path(run_dir) / RUN_FILE))


def write_run(run_dir: Path, info: dict) -> None:
    """Whole or not at all: the report reads run.json while the run goes on."""
    write_text(json.dumps(info, indent=2), as_path(run_dir) / RUN_FILE)


def finish(run_dir: Path, status: str) -> None:
    if (as_path(run_dir) / RUN_FILE).exists():
        write_run(run_dir, {**read_run(run_dir), STATUS: status, ENDED_AT: time.time()})


class MetricsLog:
    """metrics.jsonl as the main rank writes it, a line per step. In a local run folder each line is appended and
    flushed as it comes. A store has no append: the lines go to a local copy, and `publish` uploads it whole (one
    PUT), which the loop does at every report, before every checkpoint and at the end. A reader of the store's
    copy sees every step up to the last of those; and a run killed after a checkpoint has every step before it
    there, so its resume (which keeps the steps before the checkpoint) leaves no step out."""

    def __init__(self, run_dir):
        self.target = as_path(run_dir) / METRICS_FILE
        self.remote = is_remote(self.target)
        self._folder = tempfile.TemporaryDirectory(prefix="loom-metrics-") if self.remote else None
        local = Path(self._folder.name) / METRICS_FILE if self._folder else self.target
        if self.remote and self.target.exists():  # the steps a resumed run keeps (keep_metrics_before)
            local.write_text(read_text(self.target), encoding="utf-8")
        self.local = local
        self._file = open(local, "a")
        self._unpublished = False

    def write(self, record: dict) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        self._unpublished = self.remote

    def publish(self) -> None:
        if self._unpublished:
            copy_file(self.local, self.target)
            self._unpublished = False

    def close(self) -> None:
        self._file.close()
        if self._folder:
            self._folder.cleanup()
