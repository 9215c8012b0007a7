"""A Parquet file of sequences written directly: `input_ids`, a list of int32 of one fixed length a row, and `step`,
int64, nothing null, one row group. The one layout `loom mix export --format parquet` writes.

Why not pyarrow's writer: it derives a list column's repetition and definition levels value by value, ~8 ns a token
here (as much as decoding the curated tokens costs): most of a Parquet export's time. With every list the same
length and nothing null, the levels are the same bytes for every row (repetition: one 0, then width - 1 ones, two
RLE runs) and one RLE run a page (definition: all 1), and the values are the tokens' own little-endian int32 bytes:
~1 ns a token. pyarrow, DuckDB and Hugging Face datasets read the files back in tests/mixtures/test_export.py.

The file, after parquet-format's parquet.thrift: "PAR1"; each column chunk as v1 data pages (a PageHeader, the
levels, PLAIN values); the FileMetaData; its length (uint32); "PAR1". Headers and metadata are Thrift structs in
the compact protocol, of which only what these structs use is here: field headers, zigzag varints, binaries,
lists and nested structs."""

import struct
from typing import BinaryIO

import numpy as np

MAGIC = b"PAR1"
PAGE_BYTES = 1 << 20  # of values a data page, about: what pyarrow writes too

# Thrift compact protocol: field and element types
I32, I64, BINARY, LIST, STRUCT = 5, 6, 8, 9, 12
# parquet.thrift's enums
INT32, INT64 = 1, 2  # Type
REQUIRED, REPEATED = 0, 2  # FieldRepetitionType
CONVERTED_LIST = 3  # ConvertedType.LIST
PLAIN, RLE = 0, 3  # Encoding
DATA_PAGE = 0  # PageType
UNCOMPRESSED = 0  # CompressionCodec
LOGICAL_LIST = 3  # LogicalType's field for ListType


def write_sequences(file: BinaryIO, tokens: np.ndarray, steps: np.ndarray) -> None:
    """`tokens` (rows, width) as `input_ids`, `steps` (rows) as `step`, into a file open for binary writing at 0."""
    rows = len(tokens)
    file.write(MAGIC)
    ids_chunk = write_ids(file, np.ascontiguousarray(tokens, dtype="<i4"))
    step_chunk = write_steps(file, np.ascontiguousarray(steps, dtype="<i8"))
    columns_bytes = file.tell() - len(MAGIC)  # both column chunks, as they are (nothing is compressed)
    group = thrift_struct((1, LIST, (STRUCT, [ids_chunk, step_chunk])), (2, I64, columns_bytes), (3, I64, rows))
    footer = thrift_struct((1, I32, 1), (2, LIST, (STRUCT, SCHEMA)), (3, I64, rows), (4, LIST, (STRUCT, [group])),
                           (6, BINARY, "loom"), (7, LIST, (STRUCT, [TYPE_ORDER] * 2)))
    file.write(footer + struct.pack("<I", len(footer)) + MAGIC)


def write_ids(file: BinaryIO, tokens: np.ndarray) -> bytes:
    """The `input_ids` column chunk's pages, written; its ColumnChunk returned."""
    rows, width = tokens.shape
    start = file.tell()
    row_repetition = rle_run(1, 0) + rle_run(width - 1, 1)  # a row's first value starts a list
    rows_a_page = max(1, PAGE_BYTES // (width * 4))
    for first in range(0, rows, rows_a_page):
        page = tokens[first : first + rows_a_page]
        levels = with_length(row_repetition * len(page)) + with_length(rle_run(page.size, 1))
        file.write(page_header(page.size, len(levels) + page.nbytes) + levels)
        file.write(memoryview(page).cast("B"))
    return column_chunk(INT32, ["input_ids", "list", "element"], tokens.size, start, file.tell() - start)


def write_steps(file: BinaryIO, steps: np.ndarray) -> bytes:
    """The `step` column chunk: one page of PLAIN int64 (a required column: no levels), with its min and max."""
    start = file.tell()
    file.write(page_header(steps.size, steps.nbytes) + steps.tobytes())
    statistics = None
    if steps.size:
        low, high = (struct.pack("<q", int(v)) for v in (steps.min(), steps.max()))
        statistics = thrift_struct((3, I64, 0), (5, BINARY, high), (6, BINARY, low))
    return column_chunk(INT64, ["step"], steps.size, start, file.tell() - start, statistics)


def page_header(values: int, size: int) -> bytes:
    data_page = thrift_struct((1, I32, values), (2, I32, PLAIN), (3, I32, RLE), (4, I32, RLE))
    return thrift_struct((1, I32, DATA_PAGE), (2, I32, size), (3, I32, size), (5, STRUCT, data_page))


def column_chunk(kind: int, path: list[str], values: int, start: int, size: int, statistics: bytes | None = None):
    meta = thrift_struct((1, I32, kind), (2, LIST, (I32, [PLAIN, RLE])), (3, LIST, (BINARY, path)),
                         (4, I32, UNCOMPRESSED), (5, I64, values), (6, I64, size), (7, I64, size), (9, I64, start),
                         (12, STRUCT, statistics))
    return thrift_struct((2, I64, start), (3, STRUCT, meta))


def schema_element(name: str, kind: int | None = None, repetition: int | None = None, children: int | None = None,
                   converted: int | None = None, logical: bytes | None = None) -> bytes:
    return thrift_struct((1, I32, kind), (3, I32, repetition), (4, BINARY, name), (5, I32, children),
                         (6, I32, converted), (10, STRUCT, logical))


def rle_run(count: int, value: int) -> bytes:
    """A run of the RLE/bit-packed hybrid encoding of levels of bit width 1 (none for a count of 0)."""
    return varint(count << 1) + bytes([value]) if count else b""


def with_length(levels: bytes) -> bytes:
    return struct.pack("<I", len(levels)) + levels


def thrift_struct(*fields: tuple[int, int, object]) -> bytes:
    """A struct of (field id, type, value) in increasing id; a field whose value is None is left out."""
    out, last = bytearray(), 0
    for field_id, kind, value in fields:
        if value is None:
            continue
        delta = field_id - last
        out += bytes([delta << 4 | kind]) if 0 < delta <= 15 else bytes([kind]) + varint(zigzag(field_id))
        out += thrift_value(kind, value)
        last = field_id
    return bytes(out + b"\x00")


def thrift_value(kind: int, value) -> bytes:
    if kind in (I32, I64):
        return varint(zigzag(value))
    if kind == BINARY:
        data = value.encode() if isinstance(value, str) else value
        return varint(len(data)) + data
    if kind == STRUCT:  # encoded already, by thrift_struct
        return value
    if kind == LIST:
        element, items = value
        size = bytes([len(items) << 4 | element]) if len(items) < 15 else bytes([0xF0 | element]) + varint(len(items))
        return size + b"".join(thrift_value(element, item) for item in items)
    raise ValueError(f"no Thrift type {kind} here")


def varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def zigzag(n: int) -> int:
    return n << 1 ^ n >> 63


TYPE_ORDER = thrift_struct((1, STRUCT, thrift_struct()))  # a leaf's ColumnOrder: min and max as its type sorts
SCHEMA = [  # parquet.thrift's flattened schema: the root, then each node depth first
    schema_element("schema", children=2),
    schema_element("input_ids", repetition=REQUIRED, children=1, converted=CONVERTED_LIST,
                   logical=thrift_struct((LOGICAL_LIST, STRUCT, thrift_struct()))),
    schema_element("list", repetition=REPEATED, children=1),
    schema_element("element", kind=INT32, repetition=REQUIRED),
    schema_element("step", kind=INT64, repetition=REQUIRED),
]
