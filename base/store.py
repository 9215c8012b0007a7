"""A path that is local or on an object store, read the same way: a local path (`file://` URLs included) is a
`pathlib.Path`; a URL (s3://, gs://, https:// read-only) is a `UPath` (universal_pathlib) carrying its storage
options, so `/` joins and `exists`/`glob`/`read_text` read the same in both."""

from pathlib import Path


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


def fs_and_path(path):
    """The fsspec filesystem of a remote path and the path as that filesystem spells it."""
    return path.fs, path.path


def on_store(like, name: str):
    """A name an fsspec filesystem listed, as a UPath with the storage options of `like`."""
    from upath import UPath

    return UPath(name if "://" in name else f"{like.protocol}://{name}", **like.storage_options)
