"""Folders of files, one document per file: `text-dir` (*.txt) and `html-dir` (*.html, *.htm, extracted later).
A file may be gzip or zstd compressed (its first bytes say); a byte order mark is dropped; of a file over the
source's `max_doc_bytes` no more than that is held."""

from pathlib import Path
from typing import Iterator

from curation.document import Record
from curation.readers.fields import RAW_PREVIEW_CHARS, too_large
from curation.readers.streams import BOM, BoundedBytes, Corrupt, Truncated, decompressed
from loom.io import files_under


class FolderReader:
    shard_kind = "folder"

    def __init__(self, suffixes: tuple[str, ...], html: bool = False):
        self.suffixes, self.html = suffixes, html

    def check(self, source, shard: Path) -> None:
        pass  # a folder's files are read one by one; a bad one is a malformed record, not a bad shard

    def read(self, source, shard: Path) -> Iterator[Record]:
        files = [p for p in files_under(shard) if p.suffix.lower() in self.suffixes]
        for index, path in enumerate(files):
            yield read_file(source, path, index, str(path.relative_to(shard.parent)))


def read_file(source, path: Path, index: int, relative: str) -> Record:
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
