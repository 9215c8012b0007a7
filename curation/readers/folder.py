"""Folders of files, one document per file: `text-dir` (*.txt) and `html-dir` (*.html, *.htm, extracted later).
A file may be gzip or zstd compressed (its first bytes say); a byte order mark is dropped; of a file over the
source's `max_doc_bytes` no more than that is held. `paths` may name folders or globs of files; either is
grouped into shards of about `shard_bytes`, one file never split (curation.readers.spans)."""

from pathlib import PurePosixPath
from typing import Iterator

from base.filenames import escaped_path
from base.inputs import file_size, files_under
from curation.document import Record
from curation.readers.fields import RAW_PREVIEW_CHARS, too_large
from curation.readers.spans import FileGroup, by_size
from curation.readers.streams import BOM, BoundedBytes, Corrupt, Truncated, decompressed


class FolderReader:
    shard_kind = "folder"

    def __init__(self, suffixes: tuple[str, ...], html: bool = False):
        self.suffixes, self.html = suffixes, html

    def check(self, source, shard) -> None:
        pass  # a folder's files are read one by one; a bad one is a malformed record, not a bad shard

    def documents(self, files) -> list[str]:
        """The files of a folder or glob that are documents of this format (by suffix), in the order given."""
        return [str(f) for f in files if PurePosixPath(str(f)).suffix.lower() in self.suffixes]

    def cut(self, source, path, files: list[str] | None = None) -> list[FileGroup | None]:
        """A folder's files (or a glob's: `files`) grouped in order into shards of about `shard_bytes`; a
        folder that small is one shard, as is an empty one (its one record says it is empty)."""
        folder = files is None
        if folder:
            files, root = self.documents(files_under(path)), parent(path)
        else:
            root = parent(glob_base(path))
        sizes = [file_size(f) for f in files]
        if folder and sum(sizes) <= source.shard_bytes:
            return [None]
        return [FileGroup(tuple(files[first:stop]), first, root) for first, stop in by_size(sizes, source.shard_bytes)]

    def read(self, source, shard, span: FileGroup | None = None) -> Iterator[Record]:
        """One record per file; `record` is the file's place in its folder (or glob), `input` the file itself."""
        span = span or FileGroup(tuple(self.documents(files_under(shard))), 0, parent(shard))
        for index, path in enumerate(span.files, start=span.first_index):
            relative = path[len(span.root) + 1:] if span.root else path
            record = read_file(source, path, index, escaped_path(relative))
            record.input = path
            yield record


def is_glob(path) -> bool:
    return any(c in str(path) for c in "*?[")


def glob_base(pattern: str) -> str:
    """The folder a glob starts from: its path up to the first part holding a wildcard (a file's own folder)."""
    parts = str(pattern).split("/")
    fixed = next((i for i, part in enumerate(parts) if is_glob(part)), len(parts) - 1)
    return "/".join(parts[:fixed])


def parent(path) -> str:
    return str(path).rstrip("/").rsplit("/", 1)[0] if "/" in str(path) else ""


def read_file(source, path, index: int, relative: str) -> Record:
    content = BoundedBytes(source.max_doc_bytes, RAW_PREVIEW_CHARS)
    try:
        for chunk in decompressed(path):
            content.add(chunk)
    except Truncated as err:
        return Record(index=index, problem="truncated_file", detail=f"{relative}: {err}")
    except Corrupt as err:
        return Record(index=index, problem="corrupt_file", detail=f"{relative}: {err}")
    whole = content.take()
    if whole.size > source.max_doc_bytes:
        return too_large(index, whole.size, source.max_doc_bytes, whole.data, where=f"{relative}: ")
    data = whole.data.removeprefix(BOM)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        return Record(index=index, problem="invalid_utf8", detail=f"{relative}: {err}",
                      raw=data[:RAW_PREVIEW_CHARS].decode("utf-8", "replace"))
    if not text.strip():
        return Record(index=index, problem="empty_text", detail=f"{relative} is empty")
    return Record(index=index, text=text, meta={"path": relative})
