"""Which part of an input file a shard reads, planned from sizes and metadata only (never the data), so that a
40 GB input plans in seconds. A shard with no span reads its whole input.

- ByteRange: the JSON lines that START in [start, end) of the uncompressed stream (Hadoop's split rule: a shard
  reads past `end` to finish its last line, and a line starting before `start` is the shard before's). Reading
  begins at `seek` in the stored file, which is uncompressed offset `seek_offset` (a zstd frame boundary, or
  start - 1 in a plain file: that byte says whether a line starts at `start`).
- RowGroups: row groups [first, stop) of a Parquet file, whose first row is row `first_row` of the file.
- FileGroup: some files of a folder or glob (`*-dir` formats), never one file split; `first_index` is the
  place of the first in the listing of everything the path matched.

Every cut keeps the funnel's `record` of a record what it is when the file is one shard: the line's byte offset
in the uncompressed stream, the row's number in the Parquet file, the file's place in its folder or glob.
"""

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class ByteRange:
    start: int
    end: int | None  # None: to the end of the file
    seek: int = 0
    seek_offset: int = 0


@dataclass(frozen=True)
class RowGroups:
    first: int
    stop: int
    first_row: int


@dataclass(frozen=True)
class FileGroup:
    files: tuple[str, ...]
    first_index: int
    root: str  # a file's `path` in the document's meta is relative to this folder


def by_size(sizes: Iterable[int], target: int, most: int | None = None) -> list[tuple[int, int]]:
    """Consecutive pieces grouped in order into [first, stop) runs of about `target` bytes: a run is closed as
    soon as it reaches the target (or holds `most` pieces), so none is much larger than target plus one piece."""
    runs, first, total, n = [], 0, 0, 0
    for n, size in enumerate(sizes, start=1):
        total += size
        if total >= target or most is not None and n - first >= most:
            runs.append((first, n))
            first, total = n, 0
    if first < n:
        runs.append((first, n))
    return runs
