"""JSON lines, plain, gzip or zstd (whichever the file's first bytes say): one object per line, the text in
`text_field`. A line longer than the source's `max_doc_bytes` is set aside unread, holding only its start. A large
plain file is cut into byte ranges, a large multi-frame zstd file into runs of frames (curation.readers.spans)."""

import json
import re
from typing import Iterator

from base.inputs import file_size
from curation.document import Record
from curation.readers.fields import RAW_PREVIEW_CHARS, name_of, record_from_fields, too_large, wrong_container
from curation.readers.spans import ByteRange, by_size
from curation.readers.streams import BOM, Corrupt, Line, Truncated, decompressed, lines, sniff
from curation.readers.zstd_frames import zstd_frames

# A JSON escape of a UTF-16 surrogate: the only way a lone one (not valid Unicode) gets into a decoded line
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class JsonLinesReader:
    shard_kind = "file"
    html = False

    def check(self, source, shard) -> None:
        if sniff(shard) == "parquet":
            raise wrong_container(source, shard, "is a Parquet file, not JSON lines", "parquet")

    def cut(self, source, path) -> list[ByteRange | None]:
        """A plain file cut into byte ranges of `shard_bytes`, a zstd one into runs of whole frames; a gzip file,
        a zstd file whose frames do not state their sizes, or a small file, is read whole."""
        size, target = file_size(path), source.shard_bytes
        if size <= target:
            return [None]
        kind = sniff(path)
        if kind == "plain":
            starts = range(0, size, target)
            return [ByteRange(start, start + target if start + target < size else None, max(start - 1, 0),
                              max(start - 1, 0)) for start in starts]
        frames = zstd_frames(path, size) if kind == "zstd" else None
        runs = by_size([frame.size for frame in frames], target) if frames else []
        if len(runs) < 2:
            return [None]
        spans = []
        for first, stop in runs:
            before = frames[max(first - 1, 0)]  # its last byte says whether a line starts at the run's start
            end = frames[stop].content_offset if stop < len(frames) else None
            spans.append(ByteRange(frames[first].content_offset, end, before.offset if first else 0,
                                   before.content_offset if first else 0))
        return spans

    def read(self, source, shard, span: ByteRange | None = None) -> Iterator[Record]:
        """The records of the lines that start in the span; `record` is the line's offset in the uncompressed
        stream (after a byte order mark), so that it is the same however the file is cut."""
        span = span or ByteRange(0, None)
        position, owned = span.seek_offset, 0  # where the line being read starts; records yielded
        found = lines(decompressed(shard, span.seek), source.max_doc_bytes, RAW_PREVIEW_CHARS, at=span.seek_offset)
        try:
            for line in found:
                position = line.offset + line.size + 1
                if line.offset == 0 and line.data.startswith(BOM):
                    line = Line(line.data[len(BOM):], line.size - len(BOM), len(BOM))
                if line.offset < span.start:
                    continue
                if span.end is not None and line.offset >= span.end:
                    break
                if line.size <= source.max_doc_bytes and not line.data.strip():
                    continue
                yield parse_line(source, line, line.offset)
                owned += 1
            if span.start == 0 and span.end is not None and not owned and not any_record(found, source.max_doc_bytes):
                yield Record(index=0, problem="empty_file", detail=f"{shard} holds no records")  # the file's first shard
        except (Truncated, Corrupt) as err:
            if position < span.start:  # the frame before a cut zstd shard's first, read for its last byte
                yield from self.read_after_damaged_frame(source, shard, span)
            elif span.start <= position and (span.end is None or position < span.end):
                problem = "truncated_file" if isinstance(err, Truncated) else "corrupt_file"
                yield Record(index=position, problem=problem, detail=f"{name_of(shard)}: {err}; read up to byte {position}")


    def read_after_damaged_frame(self, source, shard, span: ByteRange) -> Iterator[Record]:
        """A cut zstd shard whose frame before is damaged (the shard owning that frame counts it): read from its
        own first frame, taking a line to start there."""
        frames = zstd_frames(shard, file_size(shard)) or ()
        first = next((frame for frame in frames if frame.content_offset == span.start), None)
        if first is None:
            yield Record(index=span.start, problem="corrupt_file",
                         detail=f"{name_of(shard)}: the frames before byte {span.start} cannot be read")
            return
        yield from self.read(source, shard, ByteRange(span.start, span.end, first.offset, span.start))


def any_record(found: Iterator[Line], limit: int) -> bool:
    """Whether the rest of a file holds a line that is not blank (a truncated or damaged rest: the shard it
    belongs to reports it, so this one does not say the file is empty)."""
    try:
        return any(line.size > limit or line.data.strip() for line in found)
    except (Truncated, Corrupt):
        return True


def parse_line(source, line: Line, index: int) -> Record:
    if line.size > source.max_doc_bytes:
        return too_large(index, line.size, source.max_doc_bytes, line.data)
    try:
        decoded = line.data.decode("utf-8")
    except UnicodeDecodeError as err:
        return Record(index=index, problem="invalid_utf8", detail=str(err), raw=line.data.decode("utf-8", "replace"))
    try:
        obj = json.loads(decoded)
    except (ValueError, RecursionError) as err:  # ValueError: bad JSON, or an integer of over 4300 digits
        return Record(index=index, problem="malformed_json", detail=str(err), raw=decoded)
    if not isinstance(obj, dict):
        return Record(index=index, problem="malformed_json", detail="line is not a JSON object", raw=decoded)
    if SURROGATE_ESCAPE.search(line.data) and not encodable(obj):
        return Record(index=index, problem="invalid_unicode", detail="a \\u escape gives a lone UTF-16 surrogate",
                      raw=decoded)
    return record_from_fields(source, obj, index, raw=decoded)


def encodable(obj: dict) -> bool:
    """Whether every string of an object (keys too) is valid Unicode, so that it can be written as UTF-8."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
