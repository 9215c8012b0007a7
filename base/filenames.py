"""File names as text: the one spelling of a path that Loom writes into a table, a JSON file, a report or an
error line. A name on disk is bytes; one that is not UTF-8 comes to Python with each undecodable byte held as a
surrogateescape'd character, which Parquet, JSON and the console refuse or garble."""

import os
import re

import pyarrow as pa


def escaped_path(path) -> str:
    """A path as text that a table, a JSON file or a page can hold (valid UTF-8), the one spelling Loom writes:
    each byte of a file name that is not UTF-8 (Python holds it as a surrogateescape'd character, U+DC80-U+DCFF)
    becomes `\\xNN`, as Python's backslashreplace writes it (`caf\\xe9.txt`); every other name is unchanged.
    `unescaped_path` gives the bytes back. Text that holds a path (a record's detail, an error) goes through it
    whole: a lone surrogate that is no byte of a name is written `\\udNNN`."""
    bytes_escaped = re.sub("[\udc80-\udcff]", lambda m: f"\\x{ord(m[0]) - 0xDC00:02x}", str(path))
    return bytes_escaped.encode("utf-8", "backslashreplace").decode("utf-8")


def unescaped_path(text: str) -> bytes:
    """The file name's bytes that `escaped_path` wrote as `text` (`os.fsencode` of the path). An escape is always
    `\\x80` to `\\xff` (an ASCII byte is valid UTF-8); a name holding such a sequence literally is misread."""
    return re.sub(rb"\\x([89a-f][0-9a-f])", lambda m: bytes([int(m[1], 16)]), text.encode("utf-8"))


def arrow_source(path):
    """A local file as pyarrow opens it: by its path, which pyarrow takes only as UTF-8 text, or, for a name that
    is not UTF-8, as the file opened by its bytes."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return pa.OSFile(os.fsencode(path))
    return path
