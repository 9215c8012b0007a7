"""Publishing a compiled mixture as a build, and reading one whole.

`loom mix build` (holding the mixture's lock) compiles into a new build folder: locally under a temporary name,
renamed into builds/<id>/ when complete; on an object store (no rename) in place, then its `_SUCCESS` marker.
Only then does current.json, replaced atomically, name it. A rebuild never changes a file of a published build,
so a reader that resolved the pointer once (a trainer for its run's length, an export while it runs) reads one
build whole while the next is published. A rebuild that compiles the same schedule from the same spec as the
current build keeps that build (the runs on it stay resumable) and drops the new one.

Old builds are removed by the next `loom mix build`: locally each one whose readers.lock it can take exclusively
(a reader holds it shared), renamed away first so a reader resolving it meanwhile sees it gone and resolves the
pointer again. On a store (no flock) the KEEP_ON_STORE newest builds stay, the current one always."""

import fcntl
import json
import os
import secrets
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from base.atomic_files import remove_tree, write_text
from base.errors import UserError
from base.small_files import read_text
from base.store import as_path, is_remote
from base.workspace import removing_name, staging_name
from mixtures.compiled import (BUILD_FILES, READERS_LOCK, SCHEDULE_FILE, SUCCESS_FILE, Build, builds_dir,
                               current_build, current_file, mixture_build)
from mixtures.schedule import schedule_fingerprint

KEEP_ON_STORE = 3  # builds kept on an object store, where a reader cannot be seen: the newest, the current one always


def new_build_id() -> str:
    """Ordered by time (what a store's clean-up keeps the newest by), unique however close two builds are."""
    return "b-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def publish_build(folder: Path, write: Callable[[Path], dict]) -> tuple[Build, dict]:
    """Compiles a new build of the mixture in `folder` with `write(build_root) -> schedule meta`, publishes it, and
    removes the builds no reader holds. Call it holding the mixture's lock."""
    folder = as_path(folder)
    previous = current_build(folder)
    build = mixture_build(folder, new_build_id())
    staging = build.root if is_remote(folder) else builds_dir(folder) / staging_name(build.id)
    try:
        meta = write(staging)
    except BaseException:
        remove_tree(staging)  # a refused spec leaves nothing behind
        raise
    if is_remote(folder):
        write_text(build.id + "\n", build.success_marker)
    else:
        (staging / READERS_LOCK).touch()
        staging.rename(build.root)
    if previous is not None and previous.id and same_build(previous, build):
        remove_tree(build.root)
        build = previous
    else:
        write_text(json.dumps({"build": build.id, "published": time.time()}), current_file(folder))
    if (folder / SCHEDULE_FILE).exists():
        remove_unbuilt_files(folder)
    remove_old_builds(folder, keep=build.id)
    return build, meta


def load_meta(build: Build) -> dict:
    return json.loads(read_text(build.schedule))


def same_build(previous: Build, new: Build) -> bool:
    """The same schedule from the same resolved spec (a spec setting that binds nothing, such as a looser
    max_epochs, still makes a new build: what a sweep compares its spec with is the build's mixture.toml)."""
    return (schedule_fingerprint(load_meta(previous)) == schedule_fingerprint(load_meta(new))
            and spec_text(previous) == spec_text(new))


def spec_text(build: Build) -> str | None:
    try:
        return read_text(build.spec)
    except FileNotFoundError:
        return None


def current_schedule(folder: Path) -> dict | None:
    """The current build's schedule.json (None where the mixture is not compiled), read while the build is held,
    so a rebuild meanwhile removes nothing of it."""
    if current_build(folder) is None:
        return None
    with reading(folder) as build:
        return load_meta(build)


def remove_unbuilt_files(folder: Path) -> None:
    """The files a mixture compiled before builds kept in its own folder, once a build replaces them; left for a
    later build while a reader holds them (its shared flock on the folder's readers.lock)."""
    fd = None if is_remote(folder) else _take_unheld(folder / READERS_LOCK)
    if fd is False:
        return
    try:
        for name in BUILD_FILES:
            path = folder / name
            if path.is_dir():
                remove_tree(path)
            elif path.exists():
                path.unlink()
    finally:
        if fd is not None:
            os.close(fd)


def remove_old_builds(folder: Path, keep: str) -> None:
    """Removes the builds other than `keep` that no reader holds, and what killed builds left."""
    root = builds_dir(folder)
    if not root.exists():
        return
    if is_remote(root):
        _remove_old_builds_on_store(root, keep)
        return
    for entry in sorted(root.iterdir()):
        if entry.name == keep:
            continue
        if entry.name.startswith("."):  # a killed build's staging folder, or a removal cut short
            remove_tree(entry)
        else:
            _remove_unheld(entry)


def being_read(folder: Path) -> bool:
    """Whether a reader holds the readers.lock in `folder` (a local build, or a mixture's own folder) now."""
    fd = _take_unheld(folder / READERS_LOCK)
    if fd is False:
        return True
    if fd is not None:
        os.close(fd)
    return False


def remove_build(root: Path) -> bool:
    """A local build removed unless a reader holds it (see _remove_unheld); whether it was."""
    _remove_unheld(root)
    return not root.exists()


def _remove_unheld(root: Path) -> None:
    """Removes a local build unless a reader holds its lock: renamed away under the exclusive lock (a reader that
    opened the lock meanwhile finds its path gone and resolves the pointer again), then deleted."""
    fd = _take_unheld(root / READERS_LOCK)
    if fd is False:
        return
    trash = root.with_name(removing_name(root.name))
    try:
        root.rename(trash)
    except OSError:  # not ours to move (a shared workspace): kept, as a held one is
        return
    finally:
        if fd is not None:
            os.close(fd)
    remove_tree(trash)


def _take_unheld(lock: Path) -> int | None | bool:
    """The lock of what is about to be removed, taken exclusively: its descriptor, None where there is no lock
    file, False where a reader holds it (or it cannot be taken: then what it guards is kept)."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)  # RDWR: NFS's flock needs it
    except FileNotFoundError:
        return None
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    return fd


def _remove_old_builds_on_store(root, keep: str) -> None:
    builds = sorted(p.name for p in root.iterdir())
    complete = [b for b in builds if (root / b / SUCCESS_FILE).exists()]
    kept = set(complete[-KEEP_ON_STORE:]) | {keep}
    for name in builds:
        if name not in kept:
            remove_tree(root / name)


@contextmanager
def reading(folder: Path, build_id: str | None = None) -> Iterator[Build]:
    """The mixture's current build (or build `build_id`), held for the block so that no rebuild removes it: a
    shared flock on its readers.lock (for build "", the mixture folder's); nothing on a store (no flock)."""
    folder = as_path(folder)
    missed = None
    while True:
        try:
            build = mixture_build(folder, build_id) if build_id is not None else current_build(folder)
        except FileNotFoundError as err:  # on a store: current.json names a build without its _SUCCESS
            raise UserError(f"mixture '{folder.name}' cannot be read: {err}; run `loom mix build {folder.name}` "
                            "again") from None
        if build is None or (build_id is not None and not build.schedule.exists()):
            raise not_compiled(folder, build_id)
        if is_remote(folder):
            yield build
            return
        fd = _hold(build)
        if fd is not None:
            break
        if build_id is not None:
            raise not_compiled(folder, build_id)
        if build == missed:  # the pointer names the same build again: it is missing, not replaced meanwhile
            raise UserError(f"mixture '{folder.name}': {current_file(folder)} names build {build.id}, which is "
                            f"missing; run `loom mix build {folder.name}` again")
        missed = build
    try:
        yield build
    finally:
        if fd != UNHELD:
            os.close(fd)


UNHELD = -1  # a build read without holding it: its lock cannot be opened or made (a workspace this user may only read)


def _hold(build: Build) -> int | None:
    """A descriptor holding the build's lock shared (made if missing: a build copied from a store has none), or
    None where the build was removed before it was held."""
    path = build.readers_lock
    if not build.schedule.exists():  # before a lock is made in what may be a removed build's folder
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except FileNotFoundError:  # its folder renamed away meanwhile
        return None
    except OSError:  # not ours to make (a read-only workspace), or not a file: read as it is
        return UNHELD
    fcntl.flock(fd, fcntl.LOCK_SH)  # waits only while a rebuild renames the build away
    try:
        if os.stat(path).st_ino == os.fstat(fd).st_ino and build.schedule.exists():
            return fd
    except FileNotFoundError:
        pass
    os.close(fd)
    return None


def not_compiled(folder: Path, build_id: str | None) -> UserError:
    name, workspace = folder.name, folder.parent.parent
    if build_id is not None:
        return UserError(f"build {build_id or '(before builds)'} of mixture '{name}' is gone from {workspace} (a "
                         "rebuild replaced it); run the command again to read the current build")
    return UserError(f"mixture '{name}' is not compiled in {workspace}; run `loom mix build {name}` first")
