"""The records of a WARC file, plain or gzip (one member per record, as Common Crawl writes them, or any other
cut), read forward in bounded memory, and what is left of a damaged one.

warcio's own iterator reads a cut plain WARC as a shorter last record and fails on a bad gzip member with no
way on, so the framing is done here: a record is its header lines and `Content-Length` bytes of block. A file
that ends inside a record gives one `Damaged` ("truncated_file") and stops; a gzip member that does not
inflate ("corrupt_file"), a header that is not a WARC record's ("malformed_record") or a Content-Length that is
not a byte count or runs past the end of the file while records follow ("bad_length") gives one `Damaged`, and
reading goes on at the next place a record can start (the next gzip member whose content starts "WARC/", or
the next line starting "WARC/1." of a plain file). A block's digest (`WARC-Block-Digest`, sha1) is checked when
the block is held whole, so damage inside a plain file's record is caught too."""

import base64
import hashlib
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from base.inputs import open_input
from curation.readers.streams import MAGIC, OUT_BYTES, READ_BYTES, Corrupt, Truncated

MAX_HEADER_BYTES = 1 << 16  # of a record's WARC header lines together
GZIP_MEMBER = MAGIC["gzip"] + b"\x08"  # a gzip member's first bytes (deflate)
PLAIN_RECORD = b"\nWARC/1."  # a record's first line, at the start of a line
BYTE_COUNT = re.compile(r"[0-9]{1,15}")  # digits only: int() also takes "-5", "+5" and "1_000"


@dataclass
class Frame:
    offset: int  # where the record starts in the file (of a gzip file: where its member starts)
    headers: dict[str, str]  # WARC header names lowercased
    block: bytes  # the block, whole when it is at most the `keep` asked for, else its first `keep` bytes
    size: int  # the block's length in bytes

    @property
    def type(self) -> str:
        return self.headers.get("warc-type", "")


@dataclass
class Damaged:
    offset: int
    problem: str  # truncated_file, corrupt_file, malformed_record, bad_length, digest_mismatch
    detail: str


class BadRecord(Exception):
    """What should be a record's header is not one."""

    problem = "malformed_record"


class BadLength(BadRecord):
    """A record's Content-Length is not a byte count."""

    problem = "bad_length"


class ShortBlock(Truncated):
    """The file ends inside a record's block."""


def frames(path: Path, keep: Callable[[dict], int]) -> Iterator[Frame | Damaged]:
    """Every record of a WARC file in order, holding at most `keep(headers)` bytes of each block."""
    with open_input(path) as fh:
        content = Content(fh)
        while True:
            content.record = content.offset()
            try:
                frame = next_frame(content, keep)
                if frame is None:
                    return
                yield checked(frame)
                continue
            except ShortBlock as err:
                if content.resync(content.record):  # records follow: the length was wrong, not the file cut
                    at = content.record
                    yield Damaged(at, "bad_length", f"{path.name}: record at byte {at}: its Content-Length "
                                                    f"runs past the records after it ({err})")
                    continue
                at = content.where()
                yield Damaged(at, "truncated_file", f"{path.name}: {err} (record at byte {at})")
                return
            except Truncated as err:
                at = content.where()
                yield Damaged(at, "truncated_file", f"{path.name}: {err} (record at byte {at})")
                return
            except Corrupt as err:
                at = content.where()
                yield Damaged(at, "corrupt_file", f"{path.name}: gzip member at byte {at}: {err}")
                after = at
            except BadRecord as err:
                at = content.where()
                yield Damaged(at, err.problem, f"{path.name}: record at byte {at}: {err}")
                after = at
            if not content.resync(after):
                return


def next_frame(content: "Content", keep: Callable[[dict], int]) -> Frame | None:
    """The next record, or None at the end of the file."""
    line = content.readline()
    while line in (b"\r\n", b"\n"):  # the blank lines that end the record before
        line = content.readline()
    if not line:
        return None
    offset = content.record = content.offset_of_line(line)
    if not line.startswith(b"WARC/"):
        raise BadRecord(f"it starts {line[:40]!r}, not WARC/")
    headers, total = {}, len(line)
    while (line := content.readline()) not in (b"\r\n", b"\n"):
        total += len(line)
        if total > MAX_HEADER_BYTES:
            raise BadRecord(f"its header is over {MAX_HEADER_BYTES} bytes")
        if not line.endswith(b"\n"):
            raise Truncated("the file ends inside a record's header")
        name, sep, value = line.decode("utf-8", "replace").partition(":")
        if not sep:
            raise BadRecord(f"header line {line[:40]!r} has no ':'")
        headers[name.strip().lower()] = value.strip()
    if "content-length" not in headers:
        raise BadRecord("it has no Content-Length")
    if not BYTE_COUNT.fullmatch(length := headers["content-length"]):
        raise BadLength(f"its Content-Length {length[:40]!r} is not a byte count")
    size = int(length)
    block = content.take(size, keep(headers))
    return Frame(offset, headers, block, size)


def checked(frame: Frame) -> Frame | Damaged:
    """The frame, or Damaged when its whole block is held and does not match its sha1 block digest."""
    algorithm, _, digest = frame.headers.get("warc-block-digest", "").partition(":")
    if algorithm.lower() != "sha1" or len(frame.block) != frame.size:
        return frame
    actual = hashlib.sha1(frame.block).digest()
    if digest.upper() in (base64.b32encode(actual).decode(), actual.hex().upper()):
        return frame
    return Damaged(frame.offset, "digest_mismatch", f"record at byte {frame.offset}: its block does not match "
                                                    f"WARC-Block-Digest {frame.headers['warc-block-digest']}")


class Content:
    """A WARC file's content (inflated if it is gzip), read forward from a buffer of at most a few MB. Only
    `resync` seeks, so an undamaged file is read as a stream."""

    def __init__(self, fh):
        self.fh = fh
        self.first = fh.read(len(MAGIC["gzip"]))  # the raw bytes `_read` hands out before the file's next ones
        self.gzip = self.first == MAGIC["gzip"]
        self.buf = bytearray()
        self.start = 0  # of a plain file: the file offset of buf[0]
        self.fed = 0  # the file offset after the last raw bytes read
        self.member = 0  # of a gzip file: where the member being inflated starts
        self.record = 0  # where the record being read starts, as far as it is known
        self.stream = zlib.decompressobj(wbits=31)

    def offset(self) -> int:
        return self.member if self.gzip else self.start

    def where(self) -> int:
        """Where the record being read starts: of a gzip file, the member being inflated."""
        return self.member if self.gzip else self.record

    def offset_of_line(self, line: bytes) -> int:
        return self.member if self.gzip else self.start - len(line)

    def _more(self) -> bool:
        """Adds content to the buffer; False at the end of the file (Truncated inside a gzip member)."""
        if not self.gzip:
            chunk = self._read()
            self.buf += chunk
            return bool(chunk)
        pending = self.stream.unused_data if self.stream.eof else self.stream.unconsumed_tail
        if not pending:
            pending = self._read()
            if not pending:
                if self.stream.eof:
                    return False
                raise Truncated("the file ends inside a gzip member")
        if self.stream.eof:  # the next member
            self.member = self.fed - len(pending)
            self.stream = zlib.decompressobj(wbits=31)
        try:
            self.buf += self.stream.decompress(pending, OUT_BYTES)
        except zlib.error as err:
            raise Corrupt(str(err)) from None
        return True

    def _read(self) -> bytes:
        raw, self.first = self.first or self.fh.read(READ_BYTES), b""
        self.fed += len(raw)
        return raw

    def _consume(self, n: int) -> bytes:
        out = bytes(self.buf[:n])
        del self.buf[:n]
        self.start += len(out)
        return out

    def readline(self) -> bytes:
        """The next line with its newline (without one at the end of the file), at most MAX_HEADER_BYTES."""
        while (end := self.buf.find(b"\n")) < 0 and len(self.buf) <= MAX_HEADER_BYTES:
            if not self._more():
                return self._consume(len(self.buf))
        return self._consume(end + 1 if end >= 0 else MAX_HEADER_BYTES + 1)

    def take(self, size: int, keep: int) -> bytes:
        """The next `size` bytes, of which only the first `keep` are held."""
        held, left = bytearray(), size
        while left:
            if not self.buf and not self._more():
                raise ShortBlock(f"the file ends inside a record's block ({size - left} of {size} bytes)")
            piece = self._consume(min(left, len(self.buf)))
            left -= len(piece)
            if len(held) < keep:
                held += piece[: keep - len(held)]
        return bytes(held)

    def resync(self, after: int) -> bool:
        """Go to the first place after file offset `after` where a record can start; False when there is none."""
        position = after + 1
        while (found := self._find(GZIP_MEMBER if self.gzip else PLAIN_RECORD, position)) is not None:
            if not self.gzip:
                self._restart(found + 1)
                return True
            self._restart(found)
            try:
                while len(self.buf) < 5 and self._more():
                    pass
                if self.buf.startswith(b"WARC/"):
                    return True
            except (Truncated, Corrupt):
                pass
            position = found + 1
        return False

    def _restart(self, offset: int) -> None:
        self.fh.seek(offset)
        self.first = b""
        self.buf.clear()
        self.start = self.fed = self.member = offset
        self.stream = zlib.decompressobj(wbits=31)

    def _find(self, pattern: bytes, position: int) -> int | None:
        """The file offset of the first `pattern` at or after `position` in the raw file."""
        self.fh.seek(position)
        carry = b""
        while chunk := self.fh.read(READ_BYTES):
            window = carry + chunk
            if (hit := window.find(pattern)) >= 0:
                return position - len(carry) + hit
            position += len(chunk)
            carry = window[-(len(pattern) - 1):]
        return None


def head(path: Path, n: int) -> bytes:
    """The first `n` bytes of a WARC file's content (fewer when it is shorter or damaged there)."""
    with open_input(path) as fh:
        content = Content(fh)
        try:
            while len(content.buf) < n and content._more():
                pass
        except (Truncated, Corrupt):
            pass
        return bytes(content.buf[:n])
