"""One writer per target. A lock is a file holding who took it (pid, host, command, since when) under an
exclusive `flock`: the kernel releases it when the holder dies, however it dies, so a lock is never stuck, and a
holder's record still in the file says the last holder died without letting go."""

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
