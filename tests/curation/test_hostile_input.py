"""Hostile and odd input never kills a curation job: each bad record ends as one malformed record with its reason,
compression is read from the bytes, a container of the wrong kind is refused before any compute, and a huge
document is set aside without being held whole."""

import gzip
import hashlib
import json
import os
import random
import tracemalloc
import zlib
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from curation.config import SourceConfig
from curation.job import plan_shards
from curation.readers import read_shard
from curation.readers.fields import RAW_PREVIEW_CHARS
from curation.readers.streams import LineSplitter
from helpers import published, run_loom
from base.digests import text_digest
from base.errors import UserError
from base.filenames import escaped_path, unescaped_path

BOM = b"\xef\xbb\xbf"
WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ro", "si", "tu") for b in ("ba", "de", "fi", "go", "hu", "ja")]


def texts(n: int, seed: int) -> list[str]:
    """Distinct texts that share few word 5-grams, so neither dedup stage removes any."""
    rng = random.Random(seed)
    return [f"Text {seed}-{i}: " + " ".join(rng.choices(WORDS, k=24)) + "." for i in range(n)]


def jsonl(lines: list[str]) -> bytes:
    return b"".join(json.dumps({"text": t}).encode() + b"\n" for t in lines)


def source(fmt: str = "jsonl", **settings) -> SourceConfig:
    return SourceConfig(name="s", format=fmt, paths=("*",), **settings)


def read(path: Path, fmt: str = "jsonl", **settings) -> list:
    return list(read_shard(source(fmt, **settings), path))


COMPRESS = {"plain": lambda data: data, "gzip": gzip.compress, "zstd": zstandard.ZstdCompressor().compress}


def complete_lines(compression: str, cut: bytes) -> int:
    """How many whole lines a decompressor gets out of a cut-short file."""
    if compression == "gzip":
        return zlib.decompressobj(wbits=31).decompress(cut).count(b"\n")
    reader = zstandard.ZstdDecompressor().stream_reader(cut)
    return reader.read().count(b"\n")


def test_a_lone_surrogate_is_invalid_unicode_and_the_other_lines_are_read(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"text": "ok one"}\n{"text": "x \\ud800"}\n{"text": "ok two", "title": "\\udc00"}\n'
                     b'{"text": "a pair \\ud83d\\ude00 is fine"}\n')
    records = read(path)
    assert [r.problem for r in records] == [None, "invalid_unicode", "invalid_unicode", None]
    assert records[3].text == "a pair \U0001F600 is fine"
    assert "\\ud800" in records[1].raw


def test_json_that_breaks_the_parser_is_malformed_json(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"[" * 100_000 + b"\n" + b'{"text": "x", "n": ' + b"7" * 5000 + b"}\n" + b'{"text": "ok"}\n')
    assert [r.problem for r in read(path)] == ["malformed_json", "malformed_json", None]


@pytest.mark.parametrize("compression", ["plain", "gzip", "zstd"])
def test_a_byte_order_mark_costs_no_record(tmp_path, compression):
    path = tmp_path / "a.jsonl"
    path.write_bytes(COMPRESS[compression](BOM + jsonl(["first", "second"])))
    assert [(r.problem, r.text) for r in read(path)] == [(None, "first"), (None, "second")]


@pytest.mark.parametrize("fmt, suffix", [("text-dir", ".txt"), ("html-dir", ".html")])
def test_a_byte_order_mark_is_dropped_from_a_folders_file(tmp_path, fmt, suffix):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / f"a{suffix}").write_bytes(BOM + "<p>héllo</p>".encode())
    [record] = read(tmp_path / "d", fmt)
    assert record.problem is None and record.text == "<p>héllo</p>"


@pytest.mark.parametrize("declared", ["jsonl", "jsonl.gz", "jsonl.zst"])
@pytest.mark.parametrize("compression", ["plain", "gzip", "zstd"])
def test_compression_is_taken_from_the_bytes_whatever_is_declared(tmp_path, declared, compression):
    path = tmp_path / "a.jsonl.gz"  # the name says nothing either
    path.write_bytes(COMPRESS[compression](jsonl(["one", "two", "three"])))
    plan_shards([SourceConfig(name="s", format=declared, paths=(str(path),))])
    assert [(r.problem, r.text) for r in read(path, declared)] == [(None, "one"), (None, "two"), (None, "three")]


def test_a_compressed_file_in_a_text_folder_is_decompressed(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_bytes(gzip.compress("packed text".encode()))
    (tmp_path / "d" / "b.txt").write_bytes(zstandard.ZstdCompressor().compress(b"zstd text"))
    assert [r.text for r in read(tmp_path / "d", "text-dir")] == ["packed text", "zstd text"]


CONTAINER_MISMATCHES = [
    ("jsonl", "parquet", 'is a Parquet file, not JSON lines; set format = "parquet" for source \'s\''),
    ("jsonl.gz", "parquet", 'is a Parquet file, not JSON lines; set format = "parquet" for source \'s\''),
    ("parquet", "gzip", 'is gzip-compressed, not a Parquet file; set format = "jsonl.gz" for source \'s\''),
    ("parquet", "zstd", 'is zstd-compressed, not a Parquet file; set format = "jsonl.zst" for source \'s\''),
    ("parquet", "plain", 'is not a Parquet file (it has no PAR1 header); set format = "jsonl" for source \'s\''),
]


@pytest.mark.parametrize("declared, actual, message", CONTAINER_MISMATCHES)
def test_a_container_of_the_wrong_kind_is_refused_at_planning(tmp_path, declared, actual, message):
    path = tmp_path / "input.data"
    if actual == "parquet":
        pq.write_table(pa.table({"text": ["one"]}), path)
    else:
        path.write_bytes(COMPRESS[actual](jsonl(["one"])))
    with pytest.raises(UserError) as raised:
        plan_shards([SourceConfig(name="s", format=declared, paths=(str(path),))])
    assert str(raised.value).startswith(f"source 's': {path} {message}")
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_a_cut_compressed_file_keeps_what_precedes_the_cut_and_counts_one_truncated_file(tmp_path, compression):
    lines = texts(4000, seed=1)
    full = COMPRESS[compression](jsonl(lines))
    cut = full[: len(full) * 2 // 3]
    path = tmp_path / "a.jsonl"
    path.write_bytes(cut)
    records = read(path)
    before = complete_lines(compression, cut)
    assert 0 < before < len(lines)
    assert [r.text for r in records[:-1]] == lines[:before]
    # `record` is a line's offset in the uncompressed stream: here, where the line the cut ends inside begins
    assert records[-1].problem == "truncated_file" and records[-1].index == len(jsonl(lines[:before]))
    assert Counter(r.problem for r in records) == {None: before, "truncated_file": 1}


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_damaged_compressed_data_is_a_corrupt_file(tmp_path, compression):
    lines = texts(4000, seed=2)
    damaged = bytearray(COMPRESS[compression](jsonl(lines)))
    for i in range(len(damaged) // 2, len(damaged) // 2 + 64):
        damaged[i] ^= 0x5A
    path = tmp_path / "a.jsonl"
    path.write_bytes(bytes(damaged))
    records = read(path)
    assert records[-1].problem == "corrupt_file"
    assert [r.text for r in records[:100]] == lines[:100]  # what lies before the damage; gzip may decode some
    assert Counter(r.problem for r in records)["corrupt_file"] == 1  # garbage before it notices


def test_several_gzip_members_and_zstd_frames_are_read_whole(tmp_path):
    first, second = texts(3, seed=3), texts(3, seed=4)
    for name, compress in (("g", gzip.compress), ("z", zstandard.ZstdCompressor().compress)):
        path = tmp_path / name
        path.write_bytes(compress(jsonl(first)) + compress(jsonl(second)))
        assert [r.text for r in read(path)] == first + second


@pytest.mark.parametrize("compression", ["plain", "gzip", "zstd"])
def test_a_line_over_max_doc_bytes_is_too_large_and_only_its_start_is_kept(tmp_path, compression):
    limit = 10_000
    at_limit = json.dumps({"text": "y" * (limit - 12)})
    assert len(at_limit) == limit
    big = json.dumps({"text": "x" * 300_000})
    lines = [json.dumps({"text": "before"}), big, at_limit, json.dumps({"text": "after"})]
    path = tmp_path / "a.jsonl"
    path.write_bytes(COMPRESS[compression](("\n".join(lines) + "\n").encode()))
    records = read(path, max_doc_bytes=limit)
    assert [r.problem for r in records] == [None, "too_large", None, None]
    assert records[1].detail == f"{len(big)} bytes, over max_doc_bytes = {limit}"
    assert records[1].raw == big[:RAW_PREVIEW_CHARS]


def test_a_parquet_text_and_a_folders_file_over_max_doc_bytes_are_too_large(tmp_path):
    pq.write_table(pa.table({"text": ["small", "z" * 5000, "also small"], "n": [1, 2, 3]}), tmp_path / "a.parquet")
    records = read(tmp_path / "a.parquet", "parquet", max_doc_bytes=4096)
    assert [(r.problem, r.text) for r in records] == [(None, "small"), ("too_large", None), (None, "also small")]
    assert records[1].raw == "z" * RAW_PREVIEW_CHARS and records[2].meta == {"n": 3}
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_bytes(b"w" * 5000)
    (tmp_path / "d" / "b.txt").write_bytes(zstandard.ZstdCompressor().compress(b"q" * 100_000))
    (tmp_path / "d" / "c.txt").write_bytes(b"fits")
    records = read(tmp_path / "d", "text-dir", max_doc_bytes=4096)
    assert [(r.problem, r.detail) for r in records[:2]] == [
        ("too_large", "d/a.txt: 5000 bytes, over max_doc_bytes = 4096"),
        ("too_large", "d/b.txt: 100000 bytes, over max_doc_bytes = 4096")]
    assert records[2].text == "fits"


def test_reading_a_huge_line_holds_about_max_doc_bytes_not_the_line(tmp_path):
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"text": "' + b"abcdefgh " * 4_000_000 + b'"}\n{"text": "after"}\n', 1))
    tracemalloc.start()
    records = read(path, max_doc_bytes=1 << 20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [r.problem for r in records] == ["too_large", None]
    assert peak < 8 << 20, f"peak {peak} bytes for a 36 MB line"


def test_the_line_splitter_never_holds_more_than_the_limit():
    splitter, limit = LineSplitter(limit=1000, preview=100), 1000
    out = []
    for chunk in [b"a" * 700, b"a" * 700 + b"\nshort\n" + b"b" * 999, b"b", b"\nc" * 3]:
        out += list(splitter.feed(chunk))
        assert len(splitter.current.head) <= limit
    out.append(splitter.rest())
    assert [(len(line.data), line.size) for line in out] == [(100, 1400), (5, 5), (1000, 1000), (1, 1), (1, 1),
                                                              (1, 1)]


def test_a_parquet_string_that_is_not_utf8_is_invalid_utf8(tmp_path):
    raw = pa.array([b"good text", b"bad \xff\xfe text", b"more good text"], pa.binary())
    column = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers())  # Parquet writers do not all check UTF-8
    pq.write_table(pa.table({"text": column, "n": [1, 2, 3]}), tmp_path / "a.parquet")
    records = read(tmp_path / "a.parquet", "parquet")
    assert [(r.problem, r.text) for r in records] == [(None, "good text"), ("invalid_utf8", None),
                                                      (None, "more good text")]
    assert "bad \ufffd\ufffd text" in records[1].raw


def test_an_empty_parquet_file_is_one_empty_file_record(tmp_path):
    (tmp_path / "a.parquet").write_bytes(b"")
    plan_shards([SourceConfig(name="s", format="parquet", paths=(str(tmp_path / "a.parquet"),))])
    assert [r.problem for r in read(tmp_path / "a.parquet", "parquet")] == ["empty_file"]


LIMIT = 65_536  # the end-to-end source's max_doc_bytes


def write_hostile_source(root: Path) -> dict:
    """One jsonl source of four files, each hostile in its own way; returns what curation should make of it."""
    (root / "lines").mkdir()
    good = texts(6, seed=10)
    big = json.dumps({"text": "huge " + " ".join(texts(2000, seed=11))})
    assert len(big) > LIMIT
    (root / "lines" / "a.jsonl").write_bytes(
        BOM + jsonl(good[:3]) + b'{"text": "lone \\ud800 surrogate"}\n' + big.encode() + b"\n" + jsonl(good[3:]))
    packed = texts(5, seed=12)
    (root / "lines" / "b.jsonl.gz").write_bytes(gzip.compress(jsonl(packed)))  # declared plain jsonl
    cut_records = 0
    for name, compression, seed in (("c.jsonl.gz", "gzip", 13), ("d.jsonl.zst", "zstd", 14)):
        full = COMPRESS[compression](jsonl(texts(2000, seed=seed)))
        cut = full[: len(full) * 2 // 3]
        (root / "lines" / name).write_bytes(cut)
        cut_records += complete_lines(compression, cut)
    (root / "sources.toml").write_text(f"""
[[source]]
name = "lines"
format = "jsonl"
paths = ["lines/*"]
filters = []
max_doc_bytes = {LIMIT}
""")
    kept = len(good) + len(packed) + cut_records
    return {"records": kept + 4, "kept": kept, "first_text": good[0], "big": big,
            "reasons": {"invalid_unicode": 1, "truncated_file": 2}}


@pytest.mark.slow  # a whole curation (~22 s); each hostile case is read by default above
def test_a_curate_of_hostile_input_keeps_every_good_record_and_accounts_for_every_bad_one(tmp_path, slice_tokenizer):
    expected = write_hostile_source(tmp_path)
    ws = tmp_path / "ws"
    result = run_loom("-w", ws, "curate", "--sources", tmp_path / "sources.toml", "--tokenizer", slice_tokenizer,
                      "--workers", 1, check=False)
    assert result.returncode == 0, result.stderr
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    assert len(funnel) == expected["records"]  # every input record, and the two cuts, in exactly one row
    assert Counter(row["reason"] for row in funnel if row["fate"] == "malformed") == expected["reasons"]
    assert Counter(row["fate"] for row in funnel) == {"kept": expected["kept"], "malformed": 3, "filtered": 1}
    curated = pq.read_table(published(ws) / "curated", columns=["text", "n_chars"]).to_pylist()
    assert len(curated) == expected["kept"] and expected["first_text"] in {row["text"] for row in curated}
    assert max(row["n_chars"] for row in curated) < LIMIT
    quarantined = [json.loads(line) for part in sorted((published(ws) / "quarantine" / "lines").glob("*.jsonl"))
                   for line in part.read_text().splitlines()]
    assert not [row for row in quarantined if row["reason"] == "too_large"]  # a length limit: filtered at read
    [too_large] = pq.read_table(published(ws) / "manifest" / "removed", filters=[("reason", "=", "too_large")]).to_pylist()
    assert (too_large["fate"], too_large["stage"]) == ("filtered", "read")
    assert too_large["text"] == expected["big"][:RAW_PREVIEW_CHARS]


def named(folder: Path, name: bytes) -> Path:
    """A path in `folder` whose name is these bytes (UTF-8 or not), as os.listdir spells it (surrogateescape)."""
    return folder / os.fsdecode(name)


def test_a_file_names_bytes_that_are_not_utf8_are_digested_and_a_utf8_names_digest_is_unchanged():
    def digest_before(*parts):  # text_digest as it was defined before names that are not UTF-8 were taken
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]

    for name in ("in/café.txt", "a b/ü 1.html", "plain.txt", "日本/語.txt"):
        assert text_digest("v", name, "12:34") == digest_before("v", name, "12:34")
    latin1 = os.fsdecode(b"in/caf\xe9.txt")
    assert text_digest(latin1) == hashlib.sha256(b"in/caf\xe9.txt").hexdigest()[:24]
    assert text_digest(latin1) != text_digest(os.fsdecode(b"in/caf\xe8.txt"))


@pytest.mark.parametrize("raw, shown", [(b"caf\xe9.txt", "caf\\xe9.txt"), ("café.txt".encode(), "café.txt"),
                                        (b"d\xff\x80/\xed\xa0\x80", "d\\xff\\x80/\\xed\\xa0\\x80")])
def test_a_file_name_is_written_as_utf8_with_its_other_bytes_escaped_and_read_back(raw, shown):
    assert escaped_path(os.fsdecode(raw)) == shown
    assert unescaped_path(shown) == raw


def test_an_error_naming_a_file_that_is_not_utf8_spells_it_as_the_tables_do(tmp_path, slice_tokenizer):
    named(tmp_path, b"n\xe9.warc").write_text("hello\n")
    (tmp_path / "sources.toml").write_text('[[source]]\nname = "w"\nformat = "warc"\npaths = ["*.warc"]\n')
    result = run_loom("-w", tmp_path / "ws", "curate", "--sources", tmp_path / "sources.toml", "--tokenizer",
                      slice_tokenizer, check=False)
    assert result.returncode == 2 and "n\\xe9.warc is not a WARC file" in result.stderr, result.stderr


def test_a_workspace_whose_path_is_not_utf8_is_refused_in_one_line(tmp_path, slice_tokenizer):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text(texts(1, seed=30)[0])
    (tmp_path / "sources.toml").write_text('[[source]]\nname = "d"\nformat = "text-dir"\npaths = ["d"]\n')
    result = run_loom("-w", named(tmp_path, b"w\xe9"), "curate", "--sources", tmp_path / "sources.toml",
                      "--tokenizer", slice_tokenizer, "--workers", 1, check=False)
    assert (result.returncode, result.stderr) == (2, f"error: the workspace path {tmp_path}/w\\xe9 is not valid "
                                                     "UTF-8, which Parquet and DuckDB need; rename the folder\n")


def write_sources_with_names_not_utf8(root: Path) -> dict[str, str]:
    """A text-dir, an html-dir, a glob through a folder, a jsonl and a Parquet file, each with a name that is not
    UTF-8 among UTF-8 ones; returns each file's funnel `input` -> the fate curation should give it."""
    good = texts(9, seed=20)
    page = "<html><body><p>{}</p><p>{}</p></body></html>".format  # enough text for the extractor to keep
    files = {
        named(root / "txt", b"caf\xe9.txt"): good[0], root / "txt" / "n1.txt": good[1],
        named(root / "txt", b"blank\xff.txt"): " ",
        named(root / "html", b"caf\xe9.html"): page(good[2], good[6]), root / "html" / "n.html": page(good[3], good[7]),
        named(root, b"glob/d\xe9") / "a.txt": good[4],
        named(root / "lines", b"l\xe9.jsonl"): jsonl(good[5:6]).decode(),
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    table = named(root / "tables", b"p\xe9.parquet")
    table.parent.mkdir()
    with table.open("wb") as file:  # pyarrow takes a path only as UTF-8
        pq.write_table(pa.table({"text": good[8:]}), file)
    (root / "sources.toml").write_text("".join(
        f'[[source]]\nname = "{name}"\nformat = "{fmt}"\npaths = ["{paths}"]\nfilters = []\n\n'
        for name, fmt, paths in (("txt", "text-dir", "txt"), ("html", "html-dir", "html"),
                                 ("globbed", "text-dir", "glob/*/*.txt"), ("lines", "jsonl", "lines/*"),
                                 ("tables", "parquet", "tables/*"))))
    fates = {escaped_path(path): "malformed" if text == " " else "kept" for path, text in files.items()}
    return {**fates, escaped_path(table): "kept"}


def stage_markers(ws: Path) -> dict[str, str]:
    return {str(p): p.read_text() for p in (ws / "work").rglob("*") if p.name == "_done" or p.suffix == ".done"}


def test_a_curate_carries_names_that_are_not_utf8_escaped_into_every_table_and_reruns_nothing(tmp_path, slice_tokenizer):
    expected = write_sources_with_names_not_utf8(tmp_path)
    ws = tmp_path / "ws"
    curate = ("-w", ws, "curate", "--sources", tmp_path / "sources.toml", "--tokenizer", slice_tokenizer, "--workers", 1)
    result = run_loom(*curate, check=False)
    assert result.returncode == 0, result.stderr
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    assert {row["input"]: row["fate"] for row in funnel} == expected and len(funnel) == len(expected)
    [part] = (published(ws) / "quarantine" / "txt").glob("*.jsonl")
    [quarantined] = [json.loads(line) for line in part.read_bytes().decode("utf-8").splitlines()]
    assert quarantined["input"].endswith("/txt/blank\\xff.txt")
    assert quarantined["detail"] == "txt/blank\\xff.txt is empty"
    meta = run_loom("-w", ws, "sql", "SELECT meta FROM documents ORDER BY meta", "--format", "json").stdout
    assert {"path": "txt/caf\\xe9.txt"} in [json.loads(row["meta"]) for row in json.loads(meta)]
    run_loom("-w", ws, "report", "curation")
    assert (published(ws) / "manifest" / "report.html").exists()
    run_loom("-w", ws, "status")
    markers = stage_markers(ws)
    rerun = run_loom(*curate).stdout
    assert stage_markers(ws) == markers  # every fingerprint the same: no stage redone
    assert "note: nothing to do: generation" in rerun and "Dask:" not in rerun  # known from the markers: no cluster


class Removals:
    def __init__(self):
        self.reasons = []

    def remove(self, doc, stage, reason, fate="filtered", detail=""):
        self.reasons.append((stage, reason, fate))


def test_a_page_nested_deeper_than_the_parser_goes_is_filtered_as_extract_too_deep():
    from curation.document import Doc
    from curation.steps.extract import ExtractHtml

    words = " ".join(texts(12, seed=20))  # about 300 words
    pages = ["<html><body>" + "<div>" * depth + f"<p>{words}</p>" + "</div>" * depth + "</body></html>"
             for depth in (10_000, 200)] + ["<html><body><div></div></body></html>"]
    removals = Removals()
    kept = list(ExtractHtml().run((Doc(record=i, text=page) for i, page in enumerate(pages)), removals))
    assert [doc.record for doc in kept] == [1] and kept[0].text.startswith("Text 20-0")
    assert removals.reasons == [("extract", "extract_too_deep", "filtered"), ("extract", "no_text_extracted", "filtered")]


def test_nan_and_infinity_in_a_records_other_fields_are_stored_as_null(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"text": "t", "x": NaN, "y": [Infinity, {"z": -Infinity}], "big": 1e999, "n": 1.5}\n')
    [record] = read(path)
    assert record.meta == {"x": None, "y": [None, {"z": None}], "big": None, "n": 1.5}
    table = pa.table({"text": ["a", "b"], "score": [float("nan"), 2.0], "v": [[float("inf")], [1.0]]})
    pq.write_table(table, tmp_path / "a.parquet")
    records = read(tmp_path / "a.parquet", "parquet")
    assert [r.meta for r in records] == [{"score": None, "v": [None]}, {"score": 2.0, "v": [1.0]}]
    assert all(json.loads(json.dumps(r.meta, allow_nan=False)) == r.meta for r in [record, *records])


def test_a_parquet_footer_or_row_group_that_cannot_be_read_is_a_counted_corrupt_file(tmp_path):
    out = tmp_path / "good.parquet"
    pq.write_table(pa.table({"text": texts(30, seed=21)}), out, row_group_size=10)
    good = out.read_bytes()
    (tmp_path / "footer.parquet").write_bytes(good[:-8] + (0xFFFFFFF0).to_bytes(4, "little") + b"PAR1")
    page = pq.ParquetFile(out).metadata.row_group(1).column(0).data_page_offset
    (tmp_path / "group.parquet").write_bytes(good[:page] + b"\xff" * 40 + good[page + 40:])
    for name in ("footer.parquet", "group.parquet"):
        plan_shards([SourceConfig(name="s", format="parquet", paths=(str(tmp_path / name),))])  # it refused one
    assert [(r.index, r.problem) for r in read(tmp_path / "footer.parquet", "parquet")] == [(0, "corrupt_file")]
    records = read(tmp_path / "group.parquet", "parquet")
    assert [r.index for r in records] == [*range(10), 10, *range(20, 30)]  # row group 1: one record, rows 10-19
    assert [r.problem for r in records].count("corrupt_file") == 1 and records[10].problem == "corrupt_file"
