"""An input file's bytes as its first bytes say they are stored: what kind of file it is (gzip, zstd, Parquet or
plain), its content decompressed in bounded chunks, and that content cut into lines no longer than a limit.

Compression is taken from the bytes, never from the declared format or the file's name, so a `.jsonl.gz` in a
`jsonl` source is read like any other. A compressed stream that stops before its end raises `Truncated`; one
whose data is damaged raises `Corrupt`: a reader turns either into one malformed record."""

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import zstandard

from base.inputs import open_input

MAGIC = {"gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd", "parquet": b"PAR1"}
BOM = b"\xef\xbb\xbf"
READ_BYTES = 1 << 20  # of the file at a time
FEED_BYTES = 1 << 16  # of compressed input per call: zstd's output cannot be capped; text expands 3-20x
OUT_BYTES = 1 << 20  # of gzip's output per call


class Truncated(Exception):
    """The file ends inside a compressed stream."""


class Corrupt(Exception):
    """A compressed stream's data cannot be decompressed."""


def sniff(path: Path) -> str:
    """What a file's first bytes say it is: "gzip", "zstd", "parquet" or "plain" (an empty file too)."""
    with open_input(path) as fh:
        head = fh.read(4)
    if len(head) == 4 and int.from_bytes(head, "little") & 0xFFFFFFF0 == 0x184D2A50:
        return "zstd"  # a zstd skippable frame first, as pzstd writes before every frame
    return next((kind for kind, magic in MAGIC.items() if head.startswith(magic)), "plain")


def decompressed(path: Path, seek: int = 0) -> Iterator[bytes]:
    """A file's content in chunks: gzip and zstd (any number of members or frames) decompressed, else as is.
    `seek`: where in the stored file to begin (a zstd frame's first byte, or any byte of a plain file)."""
    kind = sniff(path)
    with open_input(path) as fh:
        if seek:
            fh.seek(seek)
        raw = iter(lambda: fh.read(READ_BYTES), b"")
        if kind == "gzip":
            yield from _inflate(raw, Gunzip, zlib.error)
        elif kind == "zstd":
            yield from _inflate(raw, Unzstd, zstandard.ZstdError)
        else:
            yield from raw


def _inflate(raw: Iterable[bytes], new_stream, error) -> Iterator[bytes]:
    stream = new_stream()
    try:
        for block in raw:
            for start in range(0, len(block), FEED_BYTES):
                pending = block[start : start + FEED_BYTES]
                while True:
                    if stream.eof:  # the next gzip member or zstd frame
                        stream = new_stream()
                    out = stream.decompress(pending)
                    yield out
                    pending = stream.unused_data if stream.eof else stream.unconsumed_tail
                    if not pending and (stream.eof or len(out) < OUT_BYTES):
                        break
    except error as err:
        raise Corrupt(str(err)) from None
    if not stream.eof:
        raise Truncated("the file ends inside its compressed stream")


class Gunzip:
    """One gzip member, its output capped at OUT_BYTES per call (the rest of the input waits in the tail)."""

    def __init__(self):
        self.stream = zlib.decompressobj(wbits=31)

    def decompress(self, data: bytes) -> bytes:
        return self.stream.decompress(data, OUT_BYTES)

    eof = property(lambda self: self.stream.eof)
    unused_data = property(lambda self: self.stream.unused_data)
    unconsumed_tail = property(lambda self: self.stream.unconsumed_tail)


class Unzstd:
    """One zstd frame. zstd takes no output cap, hence the small FEED_BYTES of input per call."""

    def __init__(self):
        self.stream = zstandard.ZstdDecompressor().decompressobj()

    def decompress(self, data: bytes) -> bytes:
        return self.stream.decompress(data)

    eof = property(lambda self: self.stream.eof)
    unused_data = property(lambda self: self.stream.unused_data)
    unconsumed_tail = b""


def without_bom(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks, less a UTF-8 byte order mark at the start."""
    chunks, head = iter(chunks), b""
    for chunk in chunks:
        head += chunk
        if len(head) >= len(BOM):
            break
    yield head.removeprefix(BOM)
    yield from chunks


@dataclass(slots=True)
class Line:
    """A line (without its newline) or a file; of one longer than the limit only its first bytes are kept."""

    data: bytes
    size: int  # the whole line's length in bytes
    offset: int = 0  # where the line starts in the stream


def lines(chunks: Iterable[bytes], limit: int, preview: int, at: int = 0) -> Iterator[Line]:
    """The lines of a stream of chunks that begins at offset `at`; the last one needs no newline. Truncated or
    Corrupt raised by the chunks passes through, and the line they cut is not yielded."""
    splitter = LineSplitter(limit, preview, at)
    for chunk in chunks:
        yield from splitter.feed(chunk)
    if (last := splitter.rest()) is not None:
        yield last


class BoundedBytes:
    """Bytes added piece by piece, held whole up to `limit`; past it, only the first `preview` bytes are held."""

    def __init__(self, limit: int, preview: int):
        self.limit, self.preview = limit, preview
        self.head, self.size = bytearray(), 0

    def add(self, piece: bytes) -> None:
        self.size += len(piece)
        keep = self.limit if self.size <= self.limit else self.preview
        if len(self.head) < keep:
            self.head += piece[: keep - len(self.head)]
        else:
            del self.head[keep:]

    def take(self, offset: int = 0) -> Line:
        line = Line(bytes(self.head), self.size, offset)
        self.head, self.size = bytearray(), 0
        return line


class LineSplitter:
    """Cuts chunks of bytes into lines, holding at most `limit` bytes of the line being read."""

    def __init__(self, limit: int, preview: int, at: int = 0):
        self.limit = limit
        self.current = BoundedBytes(limit, preview)
        self.offset = at  # where the line being read starts

    def feed(self, chunk: bytes) -> Iterator[Line]:
        *complete, rest = chunk.split(b"\n")
        for piece in complete:
            if not self.current.size and len(piece) <= self.limit:
                line = Line(piece, len(piece), self.offset)  # the common case: a whole line inside one chunk
            else:
                self.current.add(piece)
                line = self.current.take(self.offset)
            self.offset += line.size + 1
            yield line
        self.current.add(rest)

    def rest(self) -> Line | None:
        """The last line, when the input does not end with a newline."""
        return self.current.take(self.offset) if self.current.size else None
