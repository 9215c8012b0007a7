"""One writer per target. A lock is a file holding who took it (pid, host, command, since when) under an
exclusive `flock`: the kernel releases it when the holder dies, however it dies, so a lock is never stuck, and a
holder's record still in the file says the last holder died without letting go. A reader asks `is_held`
whether the holder still lives (a run whose process is gone reads `interrupted`).

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
        if not _flock_exclusive(fd):
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


PROBE_GRACE_SECONDS = 0.5  # a reader's `is_held` holds the flock shared for an instant: a writer tries again


def _flock_exclusive(fd: int) -> bool:
    deadline = time.monotonic() + PROBE_GRACE_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def is_held(path) -> bool:
    """Whether a live process holds the lock at `path`, for a reader (it writes nothing): locally, whether the
    flock is taken (tried shared for an instant, and let go); on a store, whether the lock object is there and its
    holder is not a process of this host that is gone. A holder on another host counts as live. A lock that
    cannot be read counts as held: the reader cannot tell."""
    path = as_path(path)
    if is_remote(path):
        holder = _object_holder(path.fs, path.path)
        return holder is not None and not _died_here(holder)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError:  # BlockingIOError: taken; another refusal: cannot tell
        return True
    finally:
        os.close(fd)  # lets go of the shared flock, if it was taken


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
