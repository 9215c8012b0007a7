"""Every reader fed a few hundred damaged copies of a small valid file (bit flips, cuts, number fields set to
-1, huge values or words), read as planning cuts it, each read under a time limit: none hangs, none lets an
exception out, and every record is accounted for.

"Accounted for", per format (decompression, lines and Parquet footers are checked against Python's zlib,
zstandard and pyarrow, not the readers' code; WARC offsets come from the framing the reader uses):
- JSON lines, plain: the records of all shards are exactly the non-blank lines of the file, by byte offset;
- gzip and zstd: the file decompressed independently, as far as it goes: where it decompresses whole, exactly
  its non-blank lines; where it is damaged, every non-blank line before the damage record (a damage record,
  truncated_file or corrupt_file, ends its shard and is its last record);
- Parquet: a footer that cannot be read is one corrupt_file record; else each row group gives its rows in order,
  or the rows before its damage and one corrupt_file record;
- WARC and WET: each document record of the original file that the damage did not touch comes out at its own
  offset, or lies inside the extent of the item read before it that the damage did touch (a damaged record, or
  a record whose changed Content-Length claims the bytes): one counted record, never a silent loss;
- text-dir and html-dir: one record per file, whatever is in it.
A file refused at planning with one line (a UserError: its first bytes now say another kind of file) counts as
accounted for too. `pytest -s` prints the outcomes by reason."""

import gzip
import io
import json
import random
import re
import threading
import time
import zlib
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from base.errors import UserError
from base.store import as_path
from curation.config import SourceConfig
from curation.job import plan_shards
from curation.readers import read_shard
from curation.readers.warc_framing import Damaged, frames

SEED = 36
MUTATIONS = 300  # per format
TIME_LIMIT = 10.0  # seconds for one file's planning and reading (each takes milliseconds)
LIMIT = 600  # max_doc_bytes: one line of the JSON-lines files is over it
DAMAGE = ("truncated_file", "corrupt_file")
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def texts(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choices(WORDS, k=rng.randint(3, 20))) for _ in range(n)]


def jsonl_bytes(rng: random.Random) -> bytes:
    rows = [{"text": t, "n": rng.randint(0, 10**6), "f": rng.random()} for t in texts(rng, 24)]
    rows[5]["text"] = "long " * 150  # over LIMIT
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def zstd_frames_of(data: bytes, pieces: int) -> bytes:
    """Several frames, each stating its content size, so that planning cuts the file."""
    step = len(data) // pieces + 1
    return b"".join(zstandard.ZstdCompressor().compress(data[i : i + step]) for i in range(0, len(data), step))


def frame_layout(stored: bytes) -> list[tuple[int, int, int, int]]:
    """(stored start, stored end, content start, content end) of each frame of an undamaged zstd file."""
    layout, at, content = [], 0, 0
    while at < len(stored):
        reader = zstandard.ZstdDecompressor().decompressobj()
        size = len(reader.decompress(stored[at:]))
        end = len(stored) - len(reader.unused_data)
        layout.append((at, end, content, content + size))
        at, content = end, content + size
    return layout


def parquet_bytes(rng: random.Random) -> bytes:
    table = pa.table({"text": texts(rng, 30), "n": list(range(30)), "f": [rng.random() for _ in range(30)]})
    out = io.BytesIO()
    pq.write_table(table, out, row_group_size=8)
    return out.getvalue()


def warc_bytes(rng: random.Random, wet: bool) -> bytes:
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=wet)  # the WET file: gzip, a member per record, as Common Crawl writes it

    def fixed(i: int) -> dict:  # warcio would take the time and a random id: the same bytes every run
        return {"WARC-Date": "2024-05-06T07:08:09Z", "WARC-Record-ID": f"<urn:uuid:00000000-0000-0000-0000-{i:012d}>"}

    info = writer.create_warcinfo_record("crawl.warc", {"software": "fuzz"})
    info.rec_headers.replace_header("WARC-Date", fixed(99)["WARC-Date"])
    info.rec_headers.replace_header("WARC-Record-ID", fixed(99)["WARC-Record-ID"])
    writer.write_record(info)
    for i, text in enumerate(texts(rng, 5)):
        url = f"https://example.com/{i}.html"
        if wet:
            record = writer.create_warc_record(url, "conversion", payload=io.BytesIO(text.encode()),
                                               warc_content_type="text/plain", warc_headers_dict=fixed(i))
        else:
            body = f"<html><body><p>{text}</p></body></html>".encode()
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))],
                                    protocol="HTTP/1.1")
            record = writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http,
                                               warc_headers_dict=fixed(i))
        writer.write_record(record)
    return out.getvalue()


def html_bytes(rng: random.Random) -> bytes:
    return "<html><body>{}</body></html>".format("".join(f"<p>{t}</p>" for t in texts(rng, 4))).encode()


def originals() -> dict[str, tuple[str, str, bytes]]:
    """format name -> (source format, file name, bytes)."""
    rng = random.Random(SEED)
    lines = jsonl_bytes(rng)
    return {
        "jsonl": ("jsonl", "a.jsonl", lines),
        "jsonl.gz": ("jsonl", "a.jsonl.gz", gzip.compress(lines[:900], mtime=0) + gzip.compress(lines[900:], mtime=0)),
        "jsonl.zst": ("jsonl", "a.jsonl.zst", zstd_frames_of(lines, 4)),
        "parquet": ("parquet", "a.parquet", parquet_bytes(rng)),
        "warc": ("warc", "a.warc", warc_bytes(rng, wet=False)),
        "wet": ("warc", "a.warc.wet.gz", warc_bytes(rng, wet=True)),
        "html-dir": ("html-dir", "b.html", html_bytes(rng)),
        "text-dir": ("text-dir", "b.txt", gzip.compress(" ".join(texts(rng, 6)).encode(), mtime=0)),
    }


NUMBERS = [b"-1", b"-5", b"0", b"99999999999", b"18446744073709551616", b"abc", b"", b"1e9", b"+5", b"0x10"]
BINARY_NUMBERS = [b"\xff" * 4, b"\x00" * 4, b"\x7f\xff\xff\xff", b"\x00\x00\x00\x80", b"\xff" * 8, b"\x01\x00\x00\x00"]


def mutate(rng: random.Random, data: bytes) -> tuple[bytes, str, int, int | None]:
    """A damaged copy: (bytes, what was done, first byte changed, end of the change in the copy or None when
    the bytes after it moved)."""
    kind = rng.choice(["flip", "flip", "cut", "number", "number", "binary", "splice"])
    if kind == "flip":
        at = rng.randrange(len(data))
        copy = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            spot = min(len(data) - 1, at + rng.randrange(16))
            copy[spot] ^= 1 << rng.randrange(8)
        return bytes(copy), f"bit flips at byte {at}", at, at + 16
    if kind == "cut":
        at = rng.randrange(len(data))
        return data[:at], f"cut at byte {at}", at, None
    if kind == "number" and (fields := [m.span() for m in re.finditer(rb"\d+", data)]):
        start, end = rng.choice([f for f in fields if data[max(0, f[0] - 16) : f[0]].endswith(b"Length: ")]
                                or fields) if rng.random() < 0.5 else rng.choice(fields)
        value = rng.choice(NUMBERS)
        return data[:start] + value + data[end:], f"number at byte {start} -> {value!r}", start, None
    if kind in ("binary", "number"):
        value = rng.choice(BINARY_NUMBERS)
        at = rng.choice([len(data) - 8, 4, 5, 8, rng.randrange(len(data)), len(data) - rng.randrange(1, 200)])
        at = max(0, min(at, len(data) - len(value)))
        return data[:at] + value + data[at + len(value):], f"{value.hex()} at byte {at}", at, at + len(value)
    at, length = rng.randrange(len(data)), rng.randint(1, 64)
    src = rng.randrange(len(data))
    return data[:at] + data[src : src + length] + data[at:], f"{length} bytes of byte {src} inserted at {at}", at, None


def read_planned(fmt: str, path: Path) -> list[tuple[int, object, list]] | UserError:
    """(shard index, span, its records) of every shard planning makes, or the UserError that refused the file.
    Shards of 256 bytes: the JSON lines, zstd frames, row groups and folder files are cut into several."""
    paths = (str(path.parent),) if fmt.endswith("-dir") else (str(path),)
    src = SourceConfig(name="s", format=fmt, paths=paths, max_doc_bytes=LIMIT, shard_bytes=256)
    try:
        shards = plan_shards([src])
    except UserError as err:
        return err
    return [(shard.index, shard.span, list(read_shard(src, as_path(shard.input), shard.span))) for shard in shards]


def within_limit(read, *args):
    """read(*args) in a thread; what it returned, or raises AssertionError when it outlives TIME_LIMIT."""
    outcome = {}

    def run():
        try:
            outcome["value"] = read(*args)
        except BaseException as err:  # noqa: BLE001  (reported with the mutation that caused it)
            outcome["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(TIME_LIMIT)
    if thread.is_alive():
        raise TimeoutError(f"still reading after {TIME_LIMIT} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def line_starts(data: bytes) -> list[int]:
    """Offsets of the non-blank lines (a line over LIMIT counts even when blank), after a byte order mark."""
    at = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    starts = []
    for line in data[at:].split(b"\n"):
        if line.strip() or len(line) > LIMIT:
            starts.append(at)
        at += len(line) + 1
    return starts


def inflated(data: bytes, kind: str) -> tuple[bytes, bool]:
    """As much of a gzip or zstd stream as decompresses, fed a little at a time; whether it is whole."""
    new = (lambda: zlib.decompressobj(wbits=31)) if kind == "gzip" else (
        lambda: zstandard.ZstdDecompressor().decompressobj())
    out, stream, pending = bytearray(), new(), data
    try:
        while pending:
            piece, pending = pending[:64], pending[64:]
            out += stream.decompress(piece)
            if stream.eof:
                pending, stream = stream.unused_data + pending, new()
                if not pending:
                    return bytes(out), True
        return bytes(out), False
    except (zlib.error, zstandard.ZstdError):
        return bytes(out), False


def stored_as(data: bytes) -> str:
    """What the first bytes say, as the README documents it (a damaged magic number makes it plain)."""
    if data.startswith(b"\x1f\x8b"):
        return "gzip"
    if data.startswith(b"\x28\xb5\x2f\xfd") or (len(data) >= 4 and data[0] & 0xF0 == 0x50 and data[1:4] == b"\x2a\x4d\x18"):
        return "zstd"
    return "plain"


def check_lines(data: bytes, shards: list) -> None:
    kind = stored_as(data)
    records = [r for _, _, rs in shards for r in rs]
    indices = [r.index for r in records]
    assert indices == sorted(set(indices)), "records out of order or repeated"
    for _, _, rs in shards:
        assert all(r.problem not in DAMAGE for r in rs[:-1]), "a damage record that does not end its shard"
    content, whole = (data, True) if kind == "plain" else inflated(data, kind)
    expected = line_starts(content)
    damage = [r.index for r in records if r.problem in DAMAGE]
    if whole:
        assert not damage, "a damage record in a stream that decompresses whole"
        assert indices == expected or (not expected and [r.problem for r in records] == ["empty_file"])
        return
    assert damage, "a damaged stream without a damage record"
    before = [i for i in expected if i < damage[0] and content.find(b"\n", i) >= 0]
    assert [i for i in indices if i < damage[0]] == before, "lines before the damage were lost"


def check_later_frames(original: bytes, changed: int, end: int | None, shards: list) -> None:
    """Of a cut zstd file damaged in place inside one frame's data (its headers, so the cut, unchanged): every
    line of the shards after the damaged frame's is read (a damaged frame costs the rest of its own shard)."""
    layout = frame_layout(original)
    hit = [f for f in layout if f[0] < (end or len(original)) and changed < f[1]]
    if end is None or len(hit) != 1 or changed < hit[0][0] + 18 or end > hit[0][1] - 4:
        return  # a header or the checksum touched, or the bytes after moved: the cut itself changes
    damaged_end = hit[0][3]
    content = b"".join(zstandard.ZstdDecompressor().decompress(original[a:b]) for a, b, _, _ in layout)
    later = [span.start for _, span, _ in shards if span is not None and span.start >= damaged_end]
    if not later:
        return
    expected = [i for i in line_starts(content) if i >= later[0]]
    read = {r.index for _, _, rs in shards for r in rs}
    assert set(expected) <= read, f"lines after the damaged frame lost: {sorted(set(expected) - read)[:5]}"


def check_parquet(data: bytes, shards: list) -> None:
    records = [r for _, _, rs in shards for r in rs]
    try:
        meta = pq.ParquetFile(io.BytesIO(data)).metadata
    except Exception:  # noqa: BLE001  (the oracle's own view: a footer that pyarrow cannot read)
        assert [r.problem for r in records] in (["corrupt_file"], ["empty_file"]), "a damaged footer"
        return
    first = 0
    by_index = {r.index: r for r in records}
    assert len(by_index) == len(records), "a row numbered twice"
    for g in range(meta.num_row_groups):
        rows = meta.row_group(g).num_rows
        mine = sorted(i for i in by_index if first <= i < first + max(rows, 1))
        assert mine == list(range(first, first + len(mine))), f"row group {g}: a row lost"
        if len(mine) < rows:
            assert mine and by_index[mine[-1]].problem == "corrupt_file", f"row group {g}: rows lost silently"
        first += max(rows, len(mine))


def warc_items(path: Path) -> list:
    """The framing's items, holding blocks as the reader does (a damaged block of a record that is not a
    document, a warcinfo's, is not checked: it is no record of the funnel)."""
    return list(frames(path, lambda headers: 1 << 20 if headers.get("warc-type") in ("response", "conversion") else 0))


def is_document(item) -> bool:
    return isinstance(item, Damaged) or item.type in ("response", "conversion")


def check_warc(original: list, path: Path, changed: int, end: int | None, shards: list) -> None:
    """`original`: the undamaged file's items; the damage changed bytes [changed, end) (end None: to the end)."""
    records = [r for _, _, rs in shards for r in rs]
    assert [r.index for r in records] == list(range(len(records)))
    items = warc_items(path)
    assert len(records) == sum(map(is_document, items)) or [r.problem for r in records] == ["empty_file"]
    found = {item.offset: item for item in items}
    size = path.stat().st_size
    for item, after in zip(original, [*original[1:], None]):
        record_end = after.offset if after else float("inf")
        untouched = record_end <= changed or (end is not None and item.offset >= end)
        if not is_document(item) or not untouched or item.offset >= size:
            continue
        if item.offset in found and not isinstance(found[item.offset], Damaged):
            continue  # read at its own offset
        before = [offset for offset in found if offset <= item.offset]
        assert before, f"the record at byte {item.offset} is lost"
        claimed = found[max(before)]
        assert isinstance(claimed, Damaged) or claimed.offset <= changed, (
            f"the record at byte {item.offset} is lost inside an undamaged record at byte {claimed.offset}")


def outcomes(shards) -> Counter:
    if isinstance(shards, UserError):
        return Counter({"refused at planning (UserError)": 1})
    return Counter(r.problem or "good" for _, _, rs in shards for r in rs)


@pytest.mark.parametrize("name", list(originals()))
def test_damaged_copies_never_hang_never_raise_and_every_record_is_accounted_for(tmp_path, name, fuzz_summary):
    fmt, file_name, original = originals()[name]
    rng = random.Random(f"{SEED}-{name}")
    folder = tmp_path / "in"
    folder.mkdir()
    if fmt.endswith("-dir"):  # the damaged file between two good ones
        for other in ("a", "c"):
            (folder / f"{other}{Path(file_name).suffix}").write_text(f"a good file, {other}")
    path = folder / file_name
    if fmt == "warc":
        (tmp_path / "original").write_bytes(original)
        original_items = warc_items(tmp_path / "original")
    seen, started = Counter(), time.monotonic()
    for n in range(MUTATIONS):
        data, what, changed, end = mutate(rng, original)
        path.write_bytes(data)
        try:
            shards = within_limit(read_planned, fmt, path)
            if not isinstance(shards, UserError):
                if fmt == "jsonl":
                    check_lines(data, shards)
                    if name == "jsonl.zst" and stored_as(data) == "zstd":
                        check_later_frames(original, changed, end, shards)
                elif fmt == "parquet":
                    check_parquet(data, shards)
                elif fmt == "warc":
                    check_warc(original_items, path, changed, end, shards)
                else:
                    assert [r.index for _, _, rs in shards for r in rs] == [0, 1, 2], "one record per file"
        except Exception as err:
            raise AssertionError(f"{name}, mutation {n} ({what}): {type(err).__name__}: {err}") from err
        seen.update(outcomes(shards))
    fuzz_summary[name] = (MUTATIONS, time.monotonic() - started, seen)


@pytest.fixture(scope="module")
def fuzz_summary():
    summary = {}
    yield summary
    print(f"\nreaders fuzzed: seed {SEED}, {MUTATIONS} damaged copies per format, {TIME_LIMIT:.0f} s limit per file")
    for name, (count, seconds, seen) in summary.items():
        print(f"  {name:10} {count} files, {seconds:5.1f} s: " + ", ".join(f"{k} {v}" for k, v in seen.most_common()))
