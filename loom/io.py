"""Listing, opening, writing and fingerprinting files, in one place (local paths today; the one module a remote
filesystem has to change). Every output appears whole or not at all (a temporary name beside the target, then a
rename), and a done-marker holding a fingerprint, written last, says a piece of work is finished."""

import glob
import hashlib
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def expand_glob(pattern: str, folders: bool = False) -> list[Path]:
    """The files (or folders) a glob matches, `**` included, in a stable order."""
    matches = [Path(p) for p in sorted(glob.glob(pattern, recursive=True))]
    return [p for p in matches if (p.is_dir() if folders else p.is_file())]


def files_under(folder: Path) -> list[Path]:
    """Every file below a folder, at any depth, in a stable order."""
    return sorted(p for p in Path(folder).rglob("*") if p.is_file())


def open_input(path: Path):
    """An input file, opened for reading bytes."""
    return open(path, "rb")


def local_file(path) -> Path:
    """A file as a local path that a library can only open by name (a fastText model, a tokenizer). A local file
    is itself; a remote one is fetched once per process into a local cache."""
    return Path(path)


def file_size(path: Path) -> int:
    return Path(path).stat().st_size


def listing(path: Path) -> list[str]:
    """`name:size:mtime` of a file, or of every file under a folder: what says an input changed."""
    files = files_under(path) if Path(path).is_dir() else [Path(path)]
    return [f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files]


TEMPORARY_GLOB = ".*.tmp-*"  # what atomic_path's temporary names look like


@contextmanager
def atomic_path(path: Path):
    """Yields a temporary path; renames it onto `path` only if the block finishes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def remove_temporary_files(*folders: Path) -> list[Path]:
    """The temporary files that writers killed before their rename left below `folders`, removed. Only safe for
    a caller that holds the lock of everything written there."""
    stale = sorted(p for folder in folders if Path(folder).is_dir() for p in Path(folder).rglob(TEMPORARY_GLOB)
                   if p.is_file())
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


@contextmanager
def parquet_writer(path: Path, schema: pa.Schema):
    """A ParquetWriter whose file appears at `path` only once it is complete."""
    with atomic_path(path) as tmp:
        writer = pq.ParquetWriter(tmp, schema, compression="zstd")
        try:
            yield writer
        finally:
            writer.close()


def write_parquet(table: pa.Table, path: Path) -> None:
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_parquet(path: Path, columns: list[str] | None = None, filters=None) -> pa.Table:
    """A Parquet file (or some of its columns or rows), read whole. Every read of a workspace's Parquet goes
    through here or `parquet_file`, so that a workspace on object storage is read the same way."""
    return pq.read_table(path, columns=columns, filters=filters)


def parquet_file(path: Path) -> pq.ParquetFile:
    """A Parquet file opened for reading in batches or row groups."""
    return pq.ParquetFile(path)


def write_text(text: str, path: Path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def mark_done(marker: Path, fingerprint: str, stats: dict) -> None:
    write_text(json.dumps({"fingerprint": fingerprint, "finished": time.time(), **stats}), marker)


def done_stats(marker: Path, fingerprint: str) -> dict | None:
    """The stats a finished run recorded, or None when the marker is missing or for other inputs."""
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return recorded if recorded.get("fingerprint") == fingerprint else None


def file_digest(path: Path, length: int = 16) -> str:
    """The first `length` hex digits of a file's SHA-256: models and tokenizers are fingerprinted by content."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:length]


def text_digest(*parts: str, length: int = 24) -> str:
    """A fingerprint of several strings (joined by a separator no config or path holds)."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:length]
