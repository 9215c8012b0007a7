"""Every output appears whole or not at all: locally a temporary name beside the target, then a rename; on an object
store the object is written by one PUT (or one completed multipart upload), which is already all or nothing. Files
are copied whole, and folders removed whole, the same way on both."""

import ctypes
import errno
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from base.store import as_path, fs_and_path, is_remote


TEMPORARY_GLOB = ".*.tmp-*"  # what atomic_path's temporary names look like


@contextmanager
def atomic_path(path):
    """Yields a local temporary path; puts it at `path` only if the block finishes: a rename beside a local
    target, one upload to a remote one."""
    path = as_path(path)
    if is_remote(path):
        with tempfile.TemporaryDirectory(prefix="loom-put-") as folder:
            tmp = Path(folder) / path.name
            yield tmp
            fs, spelled = fs_and_path(path)
            fs.put_file(str(tmp), spelled)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def remove_temporary_files(*folders) -> list[Path]:
    """The temporary files that writers killed before their rename left below `folders`, removed. Only safe for
    a caller that holds the lock of everything written there. A store holds none (its writes are single PUTs)."""
    local = [Path(f) for f in map(as_path, folders) if not is_remote(f)]
    stale = sorted(p for folder in local if folder.is_dir() for p in folder.rglob(TEMPORARY_GLOB) if p.is_file())
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def write_text(text: str, path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes(data: bytes, path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def copy_file(source, target) -> None:
    """`source` to `target` whole: a hard link where both are local on one filesystem (no second copy), a
    server-side copy within one store, else a download and an upload. Work outputs are replaced, never
    rewritten in place, so a published link keeps its bytes."""
    source, target = as_path(source), as_path(target)
    if not is_remote(source) and not is_remote(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
    elif is_remote(source) and is_remote(target) and source.protocol == target.protocol:
        fs, spelled = fs_and_path(source)
        fs.copy(spelled, target.path)
    else:
        with atomic_path(target) as tmp:
            tmp.write_bytes(source.read_bytes())


def remove_tree(folder) -> None:
    """A folder and all below it, or a file. A symbolic link is removed as a link, never followed (neither at the
    top nor below it), so nothing outside the folder is touched."""
    folder = as_path(folder)
    if is_remote(folder):
        fs, spelled = fs_and_path(folder)
        if fs.exists(spelled):
            fs.rm(spelled, recursive=True)
    elif folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink(missing_ok=True)
    else:
        shutil.rmtree(folder, ignore_errors=True)


RENAME_EXCHANGE = 2  # renameat2's flag (linux/fs.h): swap two paths in one step
AT_FDCWD = -100


def replace_folder(staging: Path, target: Path) -> None:
    """The local folder `staging` put at `target` whole, replacing what is there in one step where the kernel can
    (renameat2's exchange: a reader sees the old folder or the new, never neither), else renamed away first. What
    was at `target` is removed after, as a link if it was one (never followed)."""
    if not target.exists() and not target.is_symlink():
        os.rename(staging, target)
        return
    if not _exchange(staging, target):
        old = target.with_name(f"{staging.name}.old")
        os.rename(target, old)
        os.rename(staging, target)
        staging = old
    remove_tree(staging)  # now the old folder


def _exchange(first: Path, second: Path) -> bool:
    """Whether the kernel swapped the two paths (False where renameat2 or its exchange is not supported)."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(AT_FDCWD, os.fsencode(first), AT_FDCWD, os.fsencode(second), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(second))
