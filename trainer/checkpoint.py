"""Checkpoints with torch.distributed.checkpoint: each rank writes its own part of the model and optimizer
(whole tensors under DDP, shards under FSDP2), so a run can resume on another number of ranks. The trainer's
own state (step, tokens seen, the schedule's fingerprint) is a JSON file written last: a checkpoint without it
is incomplete and is never resumed from.

A WSD run with cooldowns also keeps, in its branches/ folder, the checkpoints of the steps its cooldowns branch
from: complete the same way, never rotated, never resumed from by the run itself (trainer.cooldowns).

A run folder on an object store gets the same objects through DCP's fsspec writer and reader: each rank's file
is one upload, the state file is one PUT after every rank has finished (the commit, as locally), and old
checkpoints are removed object by object."""

import json
import warnings
from pathlib import Path

from base.atomic_files import remove_tree, write_text
from base.small_files import read_text
from base.store import as_path, is_remote
from base.workspace import BRANCHES_DIR, CHECKPOINT_GLOB, CHECKPOINTS_DIR, TRAINER_STATE_FILE, checkpoint_name

# torch and DCP are imported where a checkpoint is written or read: `loom ladder` and `loom mix search` find their
# runs' checkpoints with the helpers below and train nothing themselves (DCP's import takes ~1.5 s of each).

SPIKES = "spike_detector"  # the spike detector's running history, in the state file
KEEP = 2


def checkpoint_dir(run_dir: Path, step: int) -> Path:
    return as_path(run_dir) / CHECKPOINTS_DIR / checkpoint_name(step)


def branch_dir(run_dir: Path, step: int) -> Path:
    return as_path(run_dir) / BRANCHES_DIR / checkpoint_name(step)


def is_complete(path: Path) -> bool:
    return (path / TRAINER_STATE_FILE).exists()


def latest(run_dir: Path) -> Path | None:
    states = (as_path(run_dir) / CHECKPOINTS_DIR).glob(f"{CHECKPOINT_GLOB}/{TRAINER_STATE_FILE}")
    complete = sorted((p.parent for p in states), key=lambda p: p.name)
    return complete[-1] if complete else None


def read_state(path: Path) -> dict:
    return json.loads(read_text(path / TRAINER_STATE_FILE))


def _barrier() -> None:
    import torch.distributed as dist

    from trainer.distributed import in_group

    if in_group():
        dist.barrier()


def _single_process_is_intended():
    """DCP warns that it assumes one process when there is no group; for `loom train` that is the intent."""
    warnings.filterwarnings("ignore", message="torch.distributed is disabled, unavailable or uninitialized")


def _storage(path, writing: bool) -> dict:
    """DCP's storage for a checkpoint folder: its own local file writer, or on a store the fsspec one with the
    folder's credentials. Not synced with os.sync() (DCP's fallback for a file with no descriptor, which would
    flush the whole machine): an object is durable once its upload has finished."""
    if not is_remote(path):
        return {"checkpoint_id": str(path)}
    from torch.distributed.checkpoint._fsspec_filesystem import FsspecReader, FsspecWriter

    if writing:
        return {"storage_writer": FsspecWriter(str(path), sync_files=False, **path.storage_options)}
    return {"storage_reader": FsspecReader(str(path), **path.storage_options)}


def save(model, optimizer, path: Path, state: dict, is_main: bool, rotate: bool = True) -> None:
    """`rotate`: then remove all but the KEEP latest checkpoints of the folder (not for branch checkpoints)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    _single_process_is_intended()
    model_state, optimizer_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, **_storage(path, writing=True))
    _barrier()
    if is_main:
        write_text(json.dumps(state, indent=2), path / TRAINER_STATE_FILE)
    if is_main and rotate:
        others = sorted((p for p in path.parent.glob(CHECKPOINT_GLOB) if p.name != path.name), key=lambda p: p.name)
        for old in others[:-(KEEP - 1) or None]:
            remove_tree(old)
    _barrier()


def save_branch(model, optimizer, path: Path, state: dict, is_main: bool) -> None:
    """A branch checkpoint, written afresh: one left by a killed run is removed first, so that its old state file
    never makes a half-rewritten checkpoint look complete."""
    if is_main and path.exists():
        remove_tree(path)
    _barrier()
    save(model, optimizer, path, state, is_main, rotate=False)


def load(model, optimizer, path: Path) -> dict:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    _single_process_is_intended()
    model_state, optimizer_state = get_state_dict(model, optimizer)
    loaded = {"model": model_state, "optimizer": optimizer_state}
    dcp.load(loaded, **_storage(path, writing=False))
    set_state_dict(model, optimizer, model_state_dict=loaded["model"], optim_state_dict=loaded["optimizer"])
    return read_state(path)
