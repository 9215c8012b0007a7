"""Listing, opening, writing and fingerprinting files, in one place, for local paths and fsspec URLs alike
(s3://, gs://, https:// read-only, file://). A local path is a `pathlib.Path`; a URL is a `UPath` (universal_pathlib),
so `/` joins and `exists`/`glob`/`read_text` read the same in both.

Every output appears whole or not at all: locally a temporary name beside the target, then a rename; on an
object store the object is written by one PUT (or one completed multipart upload), which is already all or
nothing. A done-marker holding a fingerprint, written last, says a piece of work is finished: it is the commit,
and readers trust only marked outputs."""

import functools
import glob
import gzip
import hashlib
import json
import os
import shutil
import tempfile
import time
import tomllib
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from loom.errors import UserError
from loom.filenames import arrow_source

LOCAL_PROTOCOLS = ("", "file", "local")
# Other processes (Dask workers) write the same store: a listing cached in this one would hide their outputs.
UNCACHED_LISTINGS = ("s3", "s3a", "gs", "gcs", "az", "abfs")
_STORAGE_OPTIONS: dict[str, dict] = {}  # URL prefix -> fsspec options (a source's `storage_options`)


def is_url(value) -> bool:
    return "://" in str(value) and not str(value).startswith("file://")


def register_storage_options(prefix: str, options: dict) -> None:
    """fsspec options (credentials, endpoint) for every URL under `prefix`, in this process. A URL with none
    registered gets the usual chain: environment variables, ~/.aws and the like."""
    _STORAGE_OPTIONS[prefix.rstrip("/")] = dict(options)


def storage_options_for(url: str) -> dict:
    matches = [p for p in _STORAGE_OPTIONS if url == p or url.startswith(p + "/") or url.startswith(p + "*")]
    return dict(_STORAGE_OPTIONS[max(matches, key=len)]) if matches else {}


def as_path(value, **storage_options):
    """A local path (`file://` URLs included) as a Path, a URL as a UPath carrying its storage options."""
    if isinstance(value, Path) or (hasattr(value, "protocol") and is_remote(value)):
        return value
    text = str(value)
    if text.startswith("file://"):
        return Path(text[len("file://"):])
    if not is_url(text):
        return Path(text)
    from upath import UPath

    options = storage_options or storage_options_for(text)
    if text.split("://")[0] in UNCACHED_LISTINGS:
        options = {"use_listings_cache": False, **options}
    return UPath(text, **options)


def is_remote(path) -> bool:
    return getattr(path, "protocol", "") not in LOCAL_PROTOCOLS


def path_text(path) -> str:
    """A path as text a reader can turn back into the same path: an absolute local path, or the URL."""
    path = as_path(path)
    return str(path) if is_remote(path) else str(Path(path).resolve())


def _fs_path(path):
    """The fsspec filesystem of a remote path and the path as that filesystem spells it."""
    return path.fs, path.path


def expand_glob(pattern: str, folders: bool = False) -> list:
    """The files (or folders) a glob matches, `**` included, in a stable order."""
    if not is_url(pattern):
        matches = [Path(p) for p in sorted(glob.glob(as_path(pattern).as_posix(), recursive=True))]
        return [p for p in matches if (p.is_dir() if folders else p.is_file())]
    root = as_path(pattern)
    fs, spelled = _fs_path(root)
    found = fs.glob(spelled, detail=True) if glob.has_magic(spelled) else _one(fs, spelled)
    kind = "directory" if folders else "file"
    return [_on_store(root, name) for name, info in sorted(found.items())
            if info.get("type") == kind]


def _on_store(like, name: str):
    """A name an fsspec filesystem listed, as a UPath with the storage options of `like`."""
    from upath import UPath

    return UPath(name if "://" in name else f"{like.protocol}://{name}", **like.storage_options)


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
    fs, spelled = _fs_path(folder)
    return [_on_store(folder, name) for name in sorted(fs.find(spelled))]


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
    fs, spelled = _fs_path(path)
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
        fs, spelled = _fs_path(path)
        return fs.size(spelled)
    return Path(path).stat().st_size


def listing(path) -> list[str]:
    """`name:size:version` of a file, or of every file under a folder: what says an input changed (locally the
    modification time, on a store the object's ETag)."""
    path = as_path(path)
    if is_remote(path):
        fs, spelled = _fs_path(path)
        found = fs.find(spelled, detail=True) if fs.isdir(spelled) else {spelled: fs.info(spelled)}
        return [f"{_on_store(path, name)}:{info.get('size')}:{info.get('ETag') or info.get('mtime') or ''}"
                for name, info in sorted(found.items())]
    files = files_under(path) if Path(path).is_dir() else [Path(path)]
    return [f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files]


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
            fs, spelled = _fs_path(path)
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


@contextmanager
def parquet_writer(path, schema: pa.Schema):
    """A ParquetWriter whose file appears at `path` only once it is complete."""
    with atomic_path(path) as tmp:
        writer = pq.ParquetWriter(tmp, schema, compression="zstd")
        try:
            yield writer
        finally:
            writer.close()


def write_parquet(table: pa.Table, path) -> None:
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_parquet(path, columns: list[str] | None = None, filters=None) -> pa.Table:
    """A Parquet file (or some of its columns or rows), read whole. Every read of a workspace's Parquet goes
    through here or `parquet_file`, so that a workspace on object storage is read the same way."""
    path = as_path(path)
    if is_remote(path):
        fs, spelled = _fs_path(path)
        return pq.read_table(spelled, columns=columns, filters=filters, filesystem=fs)
    return pq.read_table(path, columns=columns, filters=filters)


def parquet_file(path) -> pq.ParquetFile:
    """A Parquet file opened for reading in batches or row groups."""
    path = as_path(path)
    if is_remote(path):
        fs, spelled = _fs_path(path)
        return pq.ParquetFile(spelled, filesystem=fs)
    return pq.ParquetFile(arrow_source(path))


def write_text(text: str, path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def read_text(path) -> str:
    return as_path(path).read_text(encoding="utf-8")


def read_toml(path) -> dict:
    """A TOML config file's tables; text that is not TOML (or not UTF-8) is one line naming the file."""
    try:
        return tomllib.loads(read_text(path))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{path}: not valid TOML ({err}); fix the syntax") from None


RECORD_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")  # what `read_records` reads


def read_records(file, field: str) -> list[dict]:
    """Every record of a small JSON-lines (optionally gzip) or Parquet file, read whole (eval sets); of a
    Parquet file only `field`, or an empty record per row when it has no such column."""
    if str(file).endswith(".parquet"):
        table = read_parquet(file)
        return table.select([field]).to_pylist() if field in table.column_names else [{}] * max(1, table.num_rows)
    with open_input(file) as raw:
        data = gzip.decompress(raw.read()) if str(file).endswith(".gz") else raw.read()
    try:
        return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    except (ValueError, UnicodeDecodeError) as err:
        raise UserError(f"{file} is not UTF-8 JSON lines ({err}); fix the file") from None


def mark_done(marker, fingerprint: str, stats: dict) -> None:
    write_text(json.dumps({"fingerprint": fingerprint, "finished": time.time(), **stats}), marker)


def done_stats(marker, fingerprint: str) -> dict | None:
    """The stats a finished run recorded, or None when the marker is missing or for other inputs."""
    try:
        recorded = json.loads(as_path(marker).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return recorded if recorded.get("fingerprint") == fingerprint else None


def file_digest(path, length: int = 16) -> str:
    """The first `length` hex digits of a file's SHA-256: models and tokenizers are fingerprinted by content."""
    digest = hashlib.sha256()
    with as_path(path).open("rb") as file:
        while chunk := file.read(1 << 20):  # a model may be hundreds of MB: never held whole
            digest.update(chunk)
    return digest.hexdigest()[:length]


def text_digest(*parts: str, length: int = 24) -> str:
    """A fingerprint of several strings (joined by a separator no config or path holds); a path's as its bytes."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:length]


# ---- whole folders, and SQL over remote files ----

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
        fs, spelled = _fs_path(source)
        fs.copy(spelled, target.path)
    else:
        with atomic_path(target) as tmp:
            tmp.write_bytes(source.read_bytes())


def remove_tree(folder) -> None:
    folder = as_path(folder)
    if is_remote(folder):
        fs, spelled = _fs_path(folder)
        if fs.exists(spelled):
            fs.rm(spelled, recursive=True)
    else:
        shutil.rmtree(folder, ignore_errors=True)


def duckdb_connect(*paths):
    """A DuckDB connection that also reads the remote files under `paths` (a workspace's root): their fsspec
    filesystems are registered with it, credentials and all, so SQL names them by URL."""
    import duckdb

    con = duckdb.connect()
    for fs in {id(p.fs): p.fs for p in map(as_path, paths) if is_remote(p)}.values():
        con.register_filesystem(fs)
    return con


@contextmanager
def storage_errors(where):
    """An object store refusing us (no such endpoint, wrong or missing credentials) as one UserError line that
    names `where` and the fix; the reason is the store's own words, which never hold a secret."""
    try:
        yield
    except Exception as err:
        refusal = storage_refusal(err, where)
        if refusal is None:
            raise
        raise refusal from None


def storage_refusal(err: Exception, where):
    """The UserError that says `err` in one line, when it is an object store refusing us; else None."""

    if not _is_storage_error(err):
        return None
    if isinstance(err, ImportError):  # fsspec's "Please install gcsfs to access Google Storage"
        return UserError(f"cannot use {where}: {err} (pip install it into Loom's environment)")
    if isinstance(err, FileNotFoundError):
        return UserError(f"cannot use {where}: {err}; create the bucket, or fix the URL")
    reason = "access denied" if isinstance(err, PermissionError) else type(err).__name__
    detail = str(err).strip() or reason
    return UserError(f"cannot use {where}: {reason} ({detail}); check the endpoint (AWS_ENDPOINT_URL, or "
                     "`endpoint_url` in a source's storage_options) and the credentials (AWS_ACCESS_KEY_ID and "
                     "AWS_SECRET_ACCESS_KEY, ~/.aws, or storage_options)")


def _is_storage_error(err: BaseException) -> bool:
    missing_bucket = isinstance(err, FileNotFoundError) and "bucket does not exist" in str(err)
    missing_driver = isinstance(err, ImportError) and "to access" in str(err)
    refused = isinstance(err, PermissionError) and err.filename is None  # s3fs's refusal, not a local file's
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        return missing_bucket or missing_driver or refused
    return isinstance(err, (BotoCoreError, ClientError)) or missing_bucket or missing_driver or refused


def parquet_row_groups(path) -> pq.ParquetFile:
    """A Parquet file opened to read a few of its row groups: on a store each read pyarrow makes (the footer, a
    column chunk) is one ranged GET of just those bytes, with no read-ahead (s3fs's default reads 50 MB ahead)."""
    path = as_path(path)
    if not is_remote(path):
        return pq.ParquetFile(path)
    fs, spelled = _fs_path(path)
    return pq.ParquetFile(fs.open(spelled, "rb", cache_type="none"))


def check_reachable(root) -> None:
    """Lists a workspace on a store once, so that a refusal (no credentials, a wrong key or endpoint, no such bucket)
    is raised for `storage_errors` to word before a reader takes it for an empty workspace. A prefix with nothing
    under it yet passes, as does a local path."""
    root = as_path(root)
    if is_remote(root):
        fs, spelled = _fs_path(root)
        try:
            fs.ls(spelled)
        except FileNotFoundError as err:
            if "bucket does not exist" in str(err):
                raise
