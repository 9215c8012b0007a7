"""Folders of files, one document per file: `text-dir` (*.txt) and `html-dir` (*.html, *.htm, extracted later)."""

from pathlib import Path
from typing import Iterator

from curation.document import Record
from curation.readers.fields import RAW_PREVIEW_CHARS
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
            relative = str(path.relative_to(shard.parent))
            data = path.read_bytes()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as err:
                yield Record(index=index, problem="invalid_utf8", detail=f"{relative}: {err}",
                             raw=data[:RAW_PREVIEW_CHARS].decode("utf-8", "replace"))
                continue
            if not text.strip():
                yield Record(index=index, problem="empty_text", detail=f"{relative} is empty")
                continue
            yield Record(index=index, text=text, meta={"path": relative})
