"""One writer per target. A lock is a file holding who took it (pid, host, command, since when) under an
exclusive `flock`: the kernel releases it when the holder dies, however it dies, so a lock is never stuck, and a
holder's record still in the file says the last holder died without letting go.

On an object store (no flock) a lock is an object created only if absent (a conditional PUT, `If-None-Match: *`)
holding the same record, and deleted on release. A holder killed without releasing leaves it behind: one on this
host whose pid is gone is taken over; one on another host must be removed by hand (the error names it)."""

import fcntl
import json
import os
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from loom.errors import UserError
from loom.io import as_path, is_remote


def holder_record() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(),
            "command": " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]])[:200]}


def describe(holder: dict) -> str:
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("since", 0)))
    return f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} since {since} (`{holder.get('command', '?')}`)"


def _read_holder(fd: int) -> dict | None:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = os.read(fd, 4096)
    try:
        return json.loads(raw) if raw.strip() else None
    except json.JSONDecodeError:
        return {}


@contextmanager
def exclusive(path: Path, what: str, note: Callable[[str], None] = lambda line: None):
    """Holds the lock at `path` for the block. A second writer gets a UserError naming the holder; a lock whose
    holder died is taken over, and `note` is told so."""
    if is_remote(as_path(path)):
        with exclusive_object(as_path(path), what, note):
            yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd) or {}
            raise UserError(f"{what} is in use by {describe(holder)}; wait for it to finish, or stop it "
                            f"(its lock: {path})") from None
        previous = _read_holder(fd)
        if previous is not None:
            note(f"took over the lock of {what} from {describe(previous)}, which ended without releasing it")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder_record()).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the descriptor releases the flock


@contextmanager
def exclusive_object(path, what: str, note: Callable[[str], None]):
    """The lock as an object on a store: created if absent or not at all, so two writers never both hold it."""
    fs, key = path.fs, path.path
    while not _create_if_absent(fs, key, json.dumps(holder_record()).encode()):
        holder = _object_holder(fs, key)
        if holder is None:
            continue  # released between our PUT and our read: try again
        if not _died_here(holder):
            raise UserError(f"{what} is in use by {describe(holder)}; wait for it to finish, or stop it "
                            f"(its lock: {path}; remove it only if that process is gone)")
        fs.rm_file(key)
        note(f"took over the lock of {what} from {describe(holder)}, which ended without releasing it")
    try:
        yield
    finally:
        fs.rm_file(key)


def _create_if_absent(fs, key: str, data: bytes) -> bool:
    try:
        fs.pipe_file(key, data, mode="create")
        return True
    except (FileExistsError, OSError) as err:
        if isinstance(err, FileExistsError) or "pre-condition" in str(err) or "PreconditionFailed" in str(err):
            return False
        raise


def _object_holder(fs, key: str) -> dict | None:
    try:
        raw = fs.cat_file(key)
    except FileNotFoundError:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return {}


def _died_here(holder: dict) -> bool:
    """The holder ran on this host and its process is gone."""
    if holder.get("host") != socket.gethostname() or not isinstance(holder.get("pid"), int):
        return False
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
