"""Checkpoints with torch.distributed.checkpoint: each rank writes its own part of the model and optimizer
(whole tensors under DDP, shards under FSDP2), so a run can resume on another number of ranks. The trainer's
own state (step, tokens seen, the schedule's fingerprint) is a JSON file written last: a checkpoint without it
is incomplete and is never resumed from."""

import hashlib
import json
import shutil
import warnings
from pathlib import Path

import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from loom.io import write_text
from trainer.distributed import in_group

STATE_FILE = "trainer_state.json"
KEEP = 2


def schedule_fingerprint(meta: dict) -> str:
    return hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:24]


def checkpoint_dir(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / "checkpoints" / f"step-{step:07d}"


def latest(run_dir: Path) -> Path | None:
    complete = sorted(p.parent for p in (Path(run_dir) / "checkpoints").glob(f"step-*/{STATE_FILE}"))
    return complete[-1] if complete else None


def read_state(path: Path) -> dict:
    return json.loads((path / STATE_FILE).read_text())


def _barrier() -> None:
    if in_group():
        dist.barrier()


def _single_process_is_intended():
    """DCP warns that it assumes one process when there is no group; for `loom train` that is the intent."""
    warnings.filterwarnings("ignore", message="torch.distributed is disabled, unavailable or uninitialized")


def save(model, optimizer, path: Path, state: dict, is_main: bool) -> None:
    _single_process_is_intended()
    model_state, optimizer_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=str(path))
    _barrier()
    if is_main:
        write_text(json.dumps(state, indent=2), path / STATE_FILE)
        for old in sorted(p for p in path.parent.glob("step-*") if p != path)[:-(KEEP - 1) or None]:
            shutil.rmtree(old, ignore_errors=True)
    _barrier()


def load(model, optimizer, path: Path) -> dict:
    _single_process_is_intended()
    model_state, optimizer_state = get_state_dict(model, optimizer)
    loaded = {"model": model_state, "optimizer": optimizer_state}
    dcp.load(loaded, checkpoint_id=str(path))
    set_state_dict(model, optimizer, model_state_dict=loaded["model"], optim_state_dict=loaded["optimizer"])
    return read_state(path)
