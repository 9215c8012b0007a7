"""Input files found, sized and opened the same way locally and on a store: globs, the files under a folder, the
listing that says an input changed, and a remote model fetched once per process into a local cache."""

import functools
import glob
import os
import tempfile
from pathlib import Path

from base.digests import text_digest
from base.store import as_path, fs_and_path, is_remote, is_url, on_store


def expand_glob(pattern: str, folders: bool = False) -> list:
    """The files (or folders) a glob matches, `**` included, in a stable order."""
    if not is_url(pattern):
        matches = [Path(p) for p in sorted(glob.glob(as_path(pattern).as_posix(), recursive=True))]
        return [p for p in matches if (p.is_dir() if folders else p.is_file())]
    root = as_path(pattern)
    fs, spelled = fs_and_path(root)
    found = fs.glob(spelled, detail=True) if glob.has_magic(spelled) else _one(fs, spelled)
    kind = "directory" if folders else "file"
    return [on_store(root, name) for name, info in sorted(found.items())
            if info.get("type") == kind]


def _one(fs, spelled: str) -> dict:
    try:
        return {spelled: fs.info(spelled)}
    except FileNotFoundError:
        return {}


def files_under(folder) -> list:
    """Every file below a folder, at any depth, in a stable order."""
    folder = as_path(folder)
    if not is_remote(folder):
        return sorted(p for p in Path(folder).rglob("*") if p.is_file())
    fs, spelled = fs_and_path(folder)
    return [on_store(folder, name) for name in sorted(fs.find(spelled))]


def open_input(path):
    """An input file, opened for reading bytes."""
    path = as_path(path)
    return path.open("rb") if is_remote(path) else open(path, "rb")


def local_file(path) -> Path:
    """A file as a local path that a library can only open by name (a fastText model, a tokenizer). A local file
    is itself; a remote one is fetched once per process into a local cache."""
    path = as_path(path)
    return _fetched(str(path), path) if is_remote(path) else Path(path)


@functools.cache
def _fetched(url: str, path) -> Path:
    fs, spelled = fs_and_path(path)
    info = fs.info(spelled)
    version = text_digest(url, str(info.get("ETag") or info.get("etag") or ""), str(info.get("size")))
    target = Path(tempfile.gettempdir()) / "loom-cache" / version / Path(spelled).name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        fs.get_file(spelled, str(tmp))
        os.replace(tmp, target)
    return target


def file_size(path) -> int:
    path = as_path(path)
    if is_remote(path):
        fs, spelled = fs_and_path(path)
        return fs.size(spelled)
    return Path(path).stat().st_size


def listing(path) -> list[str]:
    """`name:size:version` of a file, or of every file under a folder: what says an input changed (locally the
    modification time, on a store the object's ETag)."""
    path = as_path(path)
    if is_remote(path):
        fs, spelled = fs_and_path(path)
        found = fs.find(spelled, detail=True) if fs.isdir(spelled) else {spelled: fs.info(spelled)}
        return [f"{on_store(path, name)}:{info.get('size')}:{info.get('ETag') or info.get('mtime') or ''}"
                for name, info in sorted(found.items())]
    files = files_under(path) if Path(path).is_dir() else [Path(path)]
    return [f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files]
