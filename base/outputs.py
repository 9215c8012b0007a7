"""Writing to a path the user named (`loom sql --output` and `--db`, the models' `--output`): what is already
there is never replaced unless it is a regular file the user asked to overwrite.

- nothing there: the file is written whole or not at all (a temporary file beside it, then linked in: a file
  another writer put there meanwhile is not replaced either);
- a regular file: refused unless `--force`, then replaced the same atomic way;
- a terminal, another character device (/dev/null) or a FIFO, and this process's own standard output or error
  (`--output /dev/stdout`, whatever it leads to): written in place, as a shell's `>` would; the entry stays
  what it is. Where a stream cannot be written (a DuckDB database), such a path is refused;
- a symbolic link is followed: what it leads to is what the rules above apply to, and a file is replaced at the
  link's target, so the link stays a link;
- a folder, a block device (a disk) or a socket: refused.
A refusal is one line naming the path and what to do (a UserError, exit status 2)."""

import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from base.atomic_files import atomic_path
from base.errors import UserError
from base.store import as_path, is_remote

ABSENT, FILE, STREAM = "absent", "file", "stream"


def output_kind(path, option: str, force: bool) -> str:
    """ABSENT, FILE (an existing regular file, with `force`) or STREAM (written in place); else a UserError."""
    if is_remote(as_path(path)):
        if as_path(path).exists() and not force:
            raise UserError(f"{path} exists; pass --force to overwrite it")
        return FILE
    try:
        info = os.stat(path)  # follows a symbolic link: its target is what is written
    except FileNotFoundError:
        return ABSENT
    except OSError as err:
        raise UserError(f"cannot write {path} ({option}): {err.strerror or err}") from None
    if standard_stream(info) is not None or stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode):
        return STREAM
    if stat.S_ISREG(info.st_mode):
        if not force:
            raise UserError(f"{path} exists; pass --force to overwrite it")
        return FILE
    what = ("a folder; name a file in it" if stat.S_ISDIR(info.st_mode) else
            "a block device (a disk); Loom writes only to files, terminals and pipes" if stat.S_ISBLK(info.st_mode)
            else "neither a file nor a pipe; name a file")
    raise UserError(f"cannot write {path} ({option}): it is {what}")


def standard_stream(info: os.stat_result) -> int | None:
    """1 or 2 when `info` is this process's standard output or error (say, /dev/stdout while it goes to a
    file), which is written through that descriptor: its offset and append mode are the shell's."""
    for fd in (1, 2):
        try:
            own = os.fstat(fd)
        except OSError:
            continue
        if (own.st_dev, own.st_ino) == (info.st_dev, info.st_ino):
            return fd
    return None


def is_standard_output(path) -> bool:
    """Whether `path` is where this process's standard output goes (nothing else should be printed there)."""
    try:
        return not is_remote(as_path(path)) and standard_stream(os.stat(path)) == 1
    except OSError:
        return False


def target_of(path) -> Path:
    """Where a file at `path` is put: the end of its symbolic links, so that a link stays a link."""
    return Path(os.path.realpath(path))


def file_to_write(path, option: str = "--output", force: bool = False):
    """Where a writer that puts a file atomically itself (a model) should put it: the rules above checked, a
    stream refused, a local symbolic link followed to its target."""
    only_a_file(path, option, output_kind(path, option, force))
    return target_of(path) if not is_remote(as_path(path)) and os.path.islink(path) else path


def only_a_file(path, option: str, kind: str) -> None:
    if kind == STREAM:
        raise UserError(f"cannot write {path} ({option}): it is a device or a pipe, and this output must be a file; "
                        "name a file")


@contextmanager
def output_file(path, option: str = "--output", force: bool = False):
    """Yields a local temporary path for a file-only output (a database), put at `path` when the block
    finishes; the rules above, with a stream refused."""
    kind = output_kind(path, option, force)
    only_a_file(path, option, kind)
    with atomic_output(path, replace=kind == FILE) as tmp:
        yield tmp


@contextmanager
def output_stream(path, option: str = "--output", force: bool = False):
    """Yields a binary file to write the output to: `path` itself when it is a stream, else a temporary file
    put at `path` when the block finishes."""
    kind = output_kind(path, option, force)
    if kind == STREAM:
        with open_in_place(path, option) as stream:
            yield stream
        return
    with atomic_output(path, replace=kind == FILE) as tmp, open(tmp, "wb") as file:
        yield file


@contextmanager
def open_in_place(path, option: str):
    """The stream itself, opened without O_CREAT or O_TRUNC (nothing is replaced); this process's own stdout
    or stderr through its descriptor."""
    try:
        own = standard_stream(os.stat(path))
        fd = os.dup(own) if own is not None else os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as err:
        raise UserError(f"cannot write {path} ({option}): {err.strerror or err}") from None
    with os.fdopen(fd, "wb") as stream:
        yield stream


@contextmanager
def atomic_output(path, replace: bool):
    """A temporary path beside the link's target, put onto it when the block finishes: renamed over a file the
    user let be replaced, else linked in only if nothing appeared there meanwhile (another writer of the same
    name). A folder that must first exist is the user's to make (a mistyped path creates no folders), and a file
    that cannot be written is one line."""
    if is_remote(as_path(path)):
        with atomic_path(path) as tmp:
            yield tmp
        return
    target = target_of(path)
    if not target.parent.is_dir():
        folder = target.parent if os.path.islink(path) else Path(path).parent
        raise UserError(f"cannot write {path}: the folder {folder} does not exist")
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")  # atomic_files' temporary names, which it cleans up
    try:
        yield tmp
        put_in_place(tmp, target, path, replace)
    except OSError as err:
        raise UserError(f"cannot write {path}: {err.strerror or err}") from None
    finally:
        tmp.unlink(missing_ok=True)


def put_in_place(tmp: Path, target: Path, path, replace: bool) -> None:
    if replace:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)  # fails if the name exists: never replaces what another writer just put there
    except FileExistsError:
        raise UserError(f"{path} exists; pass --force to overwrite it") from None
    except OSError:  # a filesystem without hard links
        os.replace(tmp, target)
