"""One writer per target. A lock is a file holding who took it (pid, host, command, since when) under an
exclusive `flock`: the kernel releases it when the holder dies, however it dies, so a lock is never stuck, and a
holder's record still in the file says the last holder died without letting go. A reader asks `is_held`
whether the holder still lives (a run whose process is gone reads `interrupted`).

On an object store (no flock) a lock is an object created only if absent (a conditional PUT, `If-None-Match: *`)
holding the same record, and deleted on release. A holder killed without releasing leaves it behind: one on this
host whose pid is gone is taken over; one on another host must be removed by hand (the error names it)."""

import errno
import fcntl
import json
import os
import socket
import stat
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from base.errors import UserError
from base.store import as_path, is_remote


def holder_record() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(),
            "command": " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]])[:200]}


def describe(holder: dict) -> str:
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("since", 0)))
    return f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} since {since} (`{holder.get('command', '?')}`)"


def _read_holder(fd: int, path: Path) -> dict | None:
    """The record in the lock file (None when it is empty); refused when the file holds anything else, which
    may be someone's data: Loom never overwrites what it did not write."""
    os.lseek(fd, 0, os.SEEK_SET)
    raw = os.read(fd, 4096)
    if not raw.strip(b" \t\r\n\x00"):  # empty, or the zeros a crash can leave in a file being written
        return None
    try:
        holder = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        holder = None
    if not isinstance(holder, dict) or "pid" not in holder:
        raise UserError(f"{path} is not a Loom lock (it holds other data), so Loom leaves it alone; move it "
                        "elsewhere if it is yours, or remove it, and run again")
    return holder


LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC


def open_lock_file(path: Path) -> int:
    """The lock file opened for reading and writing, created if absent. Neither it nor its folder is followed if
    a symbolic link, and anything but a regular file of its own (a folder, a device, a FIFO, a hard link to
    another file) is refused, so taking a lock never writes outside the workspace or over someone's file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        raise lock_error(path.parent, err) from None
    try:
        fd = os.open(path.name, LOCK_FLAGS, 0o644, dir_fd=folder)
    except OSError as err:
        raise lock_error(path, err) from None
    finally:
        os.close(folder)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        kind = "a hard link to another file" if stat.S_ISREG(info.st_mode) else "not a regular file"
        raise UserError(f"{path} is {kind}, so Loom will not use it as a lock; remove it (Loom creates its lock "
                        "anew) and run again")
    return fd


def lock_error(path: Path, err: OSError) -> UserError:
    """Why a lock (or its folder) cannot be opened, and what to do, as one line."""
    if err.errno == errno.ELOOP or (err.errno == errno.ENOTDIR and path.is_symlink()):
        return UserError(f"{path} is a symbolic link; Loom never follows one for a lock (it could write outside "
                         "the workspace): remove the link and run again")
    if err.errno == errno.EISDIR:
        return UserError(f"{path} is a folder, not a lock file; remove it (Loom creates its lock anew) and run again")
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return UserError(f"cannot open the lock {path}: {err.strerror} (it may belong to another user, or be "
                         "read-only or immutable); ask its owner to let you write it (chmod g+w, or chattr -i), or "
                         "work in a copy of the workspace")
    return UserError(f"cannot open the lock {path}: {err.strerror or err}")


@contextmanager
def exclusive(path: Path, what: str, note: Callable[[str], None] = lambda line: None):
    """Holds the lock at `path` for the block. A second writer gets a UserError naming the holder; a lock whose
    holder died is taken over, and `note` is told so."""
    if is_remote(as_path(path)):
        with exclusive_object(as_path(path), what, note):
            yield
        return
    fd = open_lock_file(Path(path))
    try:
        if not _flock_exclusive(fd):
            holder = _holder_if_any(fd, path)
            raise UserError(f"{what} is in use by {describe(holder)}; wait for it to finish, or stop it "
                            f"(its lock: {path})") from None
        previous = _read_holder(fd, path)
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


def _holder_if_any(fd: int, path: Path) -> dict:
    """The holder's record as far as it can be read (a holder may be writing it right now)."""
    try:
        return _read_holder(fd, path) or {}
    except UserError:
        return {}


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
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO there: no wait
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


def holder(path) -> dict:
    """The record of whoever holds (or last held) the local lock at `path`, for a message; {} when unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        return _holder_if_any(fd, Path(path))
    finally:
        os.close(fd)


@contextmanager
def exclusive_object(path, what: str, note: Callable[[str], None]):
    """The lock as an object on a store: created if absent or not at all, so two writers never both hold it."""
    fs, key = path.fs, path.path
    taken_from = None
    while not _create_if_absent(fs, key, json.dumps(holder_record()).encode()):
        holder = _object_holder(fs, key)
        if holder is None:
            continue  # released between our PUT and our read: try again
        if not _died_here(holder):
            raise UserError(f"{what} is in use by {describe(holder)}; wait for it to finish, or stop it "
                            f"(its lock: {path}; remove it only if that process is gone)")
        fs.rm_file(key)
        taken_from = holder
    if taken_from is not None:  # said only now that the lock is ours: another may have taken it first
        note(f"took over the lock of {what} from {describe(taken_from)}, which ended without releasing it")
    try:
        yield
    except BaseException:
        release_after_failure(fs, key, path, note)
        raise
    fs.rm_file(key)


def release_after_failure(fs, key: str, path, note: Callable[[str], None]) -> None:
    """The lock released after its block failed; a release that fails too (the store is gone) must not hide
    the block's error, so it is only noted, with what becomes of the lock left behind."""
    try:
        fs.rm_file(key)
    except Exception as err:  # noqa: BLE001 - whatever the store says, the block's error is the one to report
        reason = " ".join(f"{type(err).__name__}: {err}".split())[:300]
        note(f"the lock {path} could not be released ({reason}); the next run on this host takes it over, or "
             "remove it by hand")


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
