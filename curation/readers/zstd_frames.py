"""The frames of a zstd file, found from frame and block headers alone (a few bytes per block, no data
decompressed): where each starts in the file and in the uncompressed stream. A file is cut at frame boundaries
only when every frame states its content size (the zstd CLI writes it; a streaming writer may not)."""

from dataclasses import dataclass

import zstandard

from base.inputs import open_input

FRAME_MAGIC = 0xFD2FB528
SKIPPABLE_MAGIC = 0x184D2A50  # its low 4 bits may be anything
MAX_HEADER_BYTES = 18
RLE_BLOCK, RESERVED_BLOCK = 1, 3


@dataclass(frozen=True)
class Frame:
    offset: int  # in the file
    size: int  # stored bytes
    content_offset: int  # in the uncompressed stream
    content_size: int


def zstd_frames(path, file_bytes: int) -> list[Frame] | None:
    """The file's data frames in order, or None when one does not state its content size or the file is not a
    clean run of frames (truncated, damaged): such a file is read whole, where its problem is reported."""
    frames, at, content = [], 0, 0
    with open_input(path) as fh:
        while at < file_bytes:
            fh.seek(at)
            head = fh.read(MAX_HEADER_BYTES)
            magic = int.from_bytes(head[:4], "little")
            if magic & 0xFFFFFFF0 == SKIPPABLE_MAGIC and len(head) >= 8:
                at += 8 + int.from_bytes(head[4:8], "little")
                continue
            if magic != FRAME_MAGIC:
                return None
            try:
                params = zstandard.get_frame_parameters(head)
                end = _blocks_end(fh, at + zstandard.frame_header_size(head))
            except zstandard.ZstdError:
                return None
            if end is None or params.content_size >= zstandard.CONTENTSIZE_ERROR:
                return None
            end += 4 if params.has_checksum else 0
            if end > file_bytes:
                return None
            frames.append(Frame(at, end - at, content, params.content_size))
            content += params.content_size
            at = end
    return frames if at == file_bytes else None  # a skippable frame's size ran past the end


def _blocks_end(fh, at: int) -> int | None:
    """Where a frame's blocks end, walking their 3-byte headers."""
    while True:
        fh.seek(at)
        raw = fh.read(3)
        if len(raw) < 3:
            return None
        header = int.from_bytes(raw, "little")
        last, kind, size = header & 1, (header >> 1) & 3, header >> 3
        if kind == RESERVED_BLOCK:
            return None
        at += 3 + (1 if kind == RLE_BLOCK else size)
        if last:
            return at
