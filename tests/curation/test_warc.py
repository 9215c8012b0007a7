"""`format = "warc"`: WARC and WET files written from the bundled handbook pages (examples/warc/, made by
make_warc.py) read as one document per response or conversion record, the page's URL and date in its meta, its
HTML extracted as html-dir extracts the same page; a damaged file gives counted malformed records and the rest
is read; the funnel of a curate accounts for every document record."""

import gzip
import io
import json
import shutil
import sys
import tracemalloc
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from curation.config import SourceConfig
from curation.document import Doc
from curation.job import plan_shards
from curation.readers import read_shard
from curation.samples import file_source, source_texts
from curation.steps import reading_steps
from helpers import EXAMPLES, published, run_loom
from base.errors import UserError

WARC = EXAMPLES / "warc"
sys.path.insert(0, str(WARC))
import make_warc  # noqa: E402  (the pages and URLs the sample files were written from)

PAGES = {make_warc.url_of(lang, name): (lang, name) for lang, name, _, _ in make_warc.PAGES}


def source(*paths: Path, fmt: str = "warc", **settings) -> SourceConfig:
    return SourceConfig(name="crawl", format=fmt, paths=tuple(map(str, paths)), **settings)


def read(path: Path, **settings) -> list:
    return list(read_shard(source(path, **settings), path))


def warcio_records(path: Path) -> list[tuple[str, str, str, int, int]]:
    """(type, url, date, offset, length) of every record, as warcio reads an undamaged file."""
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        return [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.rec_headers.get_header("WARC-Date"),
                 it.get_record_offset(), it.get_record_length()) for r in it]


class Removals:
    def __init__(self):
        self.rows = []

    def remove(self, doc, stage, reason, fate="filtered", detail=""):
        self.rows.append((doc.meta.get("url"), stage, reason, detail))


def prepared(src: SourceConfig, path: Path) -> tuple[dict, list]:
    """What the reading steps make of a shard: {url or path: text} of the documents kept, and the removals."""
    docs = (Doc(record=r.index, text=r.text, meta=r.meta) for r in read_shard(src, path) if r.problem is None)
    removals = Removals()
    for step in reading_steps(src):
        docs = step.run(docs, removals)
    return {d.meta.get("url") or d.meta["path"]: d.text for d in docs}, removals.rows


def test_one_document_per_response_record_with_its_url_and_date_in_meta():
    records = warcio_records(WARC / "handbook.warc")
    responses = [(url, date) for kind, url, date, _, _ in records if kind == "response"]
    assert len(responses) == 10 and len(records) == 1 + 2 * 10 + 2  # warcinfo, request+response, metadata, revisit
    documents = read(WARC / "handbook.warc")
    assert [r.problem for r in documents] == [None] * 10
    assert [(r.meta["url"], r.meta["date"]) for r in documents] == responses
    assert [r.index for r in documents] == list(range(10))
    first = documents[0].meta
    assert first["status"] == 200 and first["content_type"] == "text/html" and first["warc_type"] == "response"
    assert first["record_id"].startswith("<urn:uuid:")


def test_the_gzip_warc_gives_the_same_documents_as_the_plain_one(tmp_path):
    plain, packed = read(WARC / "handbook.warc"), read(WARC / "handbook.warc.gz")
    assert [(r.index, r.text, r.meta) for r in packed] == [(r.index, r.text, r.meta) for r in plain]
    one_member = tmp_path / "whole.warc.gz"  # gzip of the whole file, as `gzip handbook.warc` makes it
    one_member.write_bytes(gzip.compress((WARC / "handbook.warc").read_bytes()))
    assert [(r.index, r.text, r.meta) for r in read(one_member)] == [(r.index, r.text, r.meta) for r in plain]


def test_html_is_extracted_as_html_dir_extracts_the_same_page_and_wet_text_is_not_extracted_again(tmp_path):
    for lang, name in PAGES.values():
        (tmp_path / "pages").mkdir(exist_ok=True)
        shutil.copy(EXAMPLES / "corpora" / "web" / lang / name, tmp_path / "pages" / f"{lang}-{name}")
    html_dir = source(tmp_path / "pages", fmt="html-dir")
    from_folder, _ = prepared(html_dir, tmp_path / "pages")
    from_warc, removed = prepared(source(WARC / "handbook.warc.gz"), WARC / "handbook.warc.gz")
    from_wet, _ = prepared(source(WARC / "handbook.warc.wet.gz"), WARC / "handbook.warc.wet.gz")
    expected = {url: from_folder[f"pages/{lang}-{name}"] for url, (lang, name) in PAGES.items()}
    assert len(expected) == 8  # the ISO-8859-1 page and the gzip-encoded one among them
    assert from_warc == expected
    assert from_wet == expected
    assert sorted(reason for _, _, reason, _ in removed) == ["http_status", "not_text"]


def test_a_response_that_is_not_a_text_page_is_a_document_set_aside_with_its_reason():
    _, removed = prepared(source(WARC / "handbook.warc"), WARC / "handbook.warc")
    assert sorted(removed) == [
        (f"{make_warc.SITE}/en-US/stable/Common_Content/images/image_right.png", "response", "not_text",
         f"content type image/png: {make_warc.SITE}/en-US/stable/Common_Content/images/image_right.png"),
        (f"{make_warc.SITE}/en-US/stable/no-such-page.html", "response", "http_status",
         f"HTTP status 404: {make_warc.SITE}/en-US/stable/no-such-page.html"),
    ]


def test_texts_for_the_tokenizer_and_the_quality_model_leave_out_what_curation_sets_aside():
    texts = list(source_texts(source(WARC / "handbook.warc")))
    assert len(texts) == 8 and all("Not Found" not in t and "PNG" not in t for t in texts)
    wet = list(source_texts(file_source(WARC / "handbook.warc.wet.gz")))  # a file named on the command line
    assert wet == [t.strip() for t in texts]


def response_offsets(path: Path) -> list[tuple[int, int]]:
    return [(offset, length) for kind, _, _, offset, length in warcio_records(path) if kind == "response"]


def test_a_cut_gzip_warc_keeps_the_records_before_the_cut_and_counts_one_truncated_file(tmp_path):
    offset, length = response_offsets(WARC / "handbook.warc.gz")[5]
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes((WARC / "handbook.warc.gz").read_bytes()[: offset + length // 2])
    records = read(cut)
    assert [r.problem for r in records] == [None] * 5 + ["truncated_file"]
    assert [r.text for r in records[:5]] == [r.text for r in read(WARC / "handbook.warc.gz")[:5]]
    assert f"record at byte {offset}" in records[5].detail


def test_a_damaged_gzip_member_is_one_corrupt_record_and_the_members_after_it_are_read(tmp_path):
    offset, length = response_offsets(WARC / "handbook.warc.gz")[2]
    data = bytearray((WARC / "handbook.warc.gz").read_bytes())
    data[offset + length // 2: offset + length // 2 + 64] = b"\xff" * 64
    damaged = tmp_path / "damaged.warc.gz"
    damaged.write_bytes(bytes(data))
    records = read(damaged)
    assert [r.problem for r in records] == [None] * 2 + ["corrupt_file"] + [None] * 7
    whole = read(WARC / "handbook.warc.gz")
    assert [r.meta["url"] for r in records if r.problem is None] == [r.meta["url"] for i, r in enumerate(whole) if i != 2]


def test_damage_inside_a_plain_warc_is_caught_by_the_digest_or_the_header_and_the_rest_is_read(tmp_path):
    (first, first_length), (second, _) = response_offsets(WARC / "handbook.warc")[3:5]
    data = bytearray((WARC / "handbook.warc").read_bytes())
    middle = first + first_length // 2
    data[middle: middle + 8] = b"DAMAGED!"  # inside the 4th response's page
    data[second: second + 8] = b"GARBAGE!"  # the 5th response's first line
    damaged = tmp_path / "damaged.warc"
    damaged.write_bytes(bytes(data))
    records = read(damaged)
    assert [r.problem for r in records] == [None] * 3 + ["digest_mismatch", "malformed_record"] + [None] * 5
    assert "WARC-Block-Digest" in records[3].detail and "GARBAGE" in records[4].detail


def test_a_page_over_max_doc_bytes_is_too_large_and_a_huge_one_is_never_held_whole(tmp_path):
    sizes = [len(r.text) for r in read(WARC / "handbook.warc")[:8]]
    records = read(WARC / "handbook.warc", max_doc_bytes=4500)
    assert [r.problem for r in records[:8]] == ["too_large" if size > 4500 else None for size in sizes]
    huge = tmp_path / "huge.warc.gz"
    page = (EXAMPLES / "corpora" / "web" / "en-US" / "003-preface.html").read_bytes()
    body = page * 4000  # 20 MB
    with open(huge, "wb") as fh:
        record = WARCWriter(fh, gzip=True).create_warc_record(
            f"{make_warc.SITE}/big.html", "response", payload=io.BytesIO(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body) + body))
        WARCWriter(fh, gzip=True).write_record(record)
    tracemalloc.start()
    [record] = read(huge, max_doc_bytes=1 << 20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert record.problem == "too_large" and peak < 8 << 20


def write_warc(path: Path, records: list[tuple[str, bytes, str]]) -> Path:
    """A gzip WARC of response records: (url, block, WARC Content-Type)."""
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for url, block, content_type in records:
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(block), length=len(block),
                                                          warc_content_type=content_type))
    return path


def test_a_response_too_large_to_hold_is_still_set_aside_for_what_it_is(tmp_path):
    video = b"\x00\x01" * (1 << 20)
    path = write_warc(tmp_path / "mixed.warc.gz", [
        (f"{make_warc.SITE}/film.mp4", b"HTTP/1.1 200 OK\r\nContent-Type: video/mp4\r\n\r\n" + video,
         "application/http; msgtype=response"),
        ("dns:debian-handbook.info", b"20240506070800\ndebian-handbook.info. 300 IN A 192.0.2.7\n", "text/dns"),
    ])
    records = read(path, max_doc_bytes=65_536)
    assert [r.problem for r in records] == [None, None]
    assert [(r.meta["content_type"], r.text) for r in records] == [("video/mp4", ""), ("text/dns", "")]
    _, removed = prepared(source(path, max_doc_bytes=65_536), path)
    assert [reason for _, _, reason, _ in removed] == ["not_text", "not_http"]


def test_a_file_that_is_not_a_warc_is_refused_at_planning_with_one_line(tmp_path):
    (tmp_path / "a.warc").write_text(json.dumps({"text": "hello"}) + "\n")
    with pytest.raises(UserError, match=r'holds JSON lines, not WARC records; set format = "jsonl"'):
        plan_shards([source(tmp_path / "a.warc")])
    (tmp_path / "b.warc.gz").write_bytes(gzip.compress(b"<html>not a warc</html>"))
    with pytest.raises(UserError, match=r"is not a WARC file \(it starts b'<html', not WARC/\)"):
        plan_shards([source(tmp_path / "b.warc.gz")])
    (tmp_path / "c.warc").write_bytes(b"")
    assert [r.problem for r in read(tmp_path / "c.warc")] == ["empty_file"]


def write_crawl(root: Path) -> Path:
    """A folder of the sample WARC and WET (gzip) and a copy of the WARC cut inside its 6th response."""
    (root / "crawl").mkdir()
    for name in ("handbook.warc.gz", "handbook.warc.wet.gz"):
        shutil.copy(WARC / name, root / "crawl" / name)
    offset, length = response_offsets(WARC / "handbook.warc.gz")[5]
    (root / "crawl" / "z-cut.warc.gz").write_bytes((WARC / "handbook.warc.gz").read_bytes()[: offset + length // 2])
    return root / "crawl"


def test_prepare_gives_every_document_record_one_funnel_row_and_quarantines_the_cut(tmp_path):
    from base.workspace import Workspace
    from curation.config import CurationConfig
    from curation.job import JobContext
    from curation.stages.prepare import PREPARE

    crawl = source(write_crawl(tmp_path) / "*")
    ws = Workspace(tmp_path / "ws")
    ctx = JobContext(workspace=ws, config=CurationConfig(sources=[crawl]), tokenizer="")
    shards = plan_shards([crawl])
    assert [Path(s.input).name for s in shards] == ["handbook.warc.gz", "handbook.warc.wet.gz", "z-cut.warc.gz"]
    stats = [PREPARE.run(ctx, shard, "fingerprint") for shard in shards]
    assert [s["records"] for s in stats] == [10, 8, 6] and [s["malformed"] for s in stats] == [0, 0, 1]
    funnel = [row for shard in shards for row in pq.read_table(PREPARE.funnel_path(ws, shard)).to_pylist()]
    assert Counter((row["fate"], row["stage"], row["reason"]) for row in funnel if row["fate"] != "kept") == {
        ("filtered", "response", "http_status"): 1, ("filtered", "response", "not_text"): 1,
        ("filtered", "gopher_quality", "gopher_short_doc"): 3, ("malformed", "read", "truncated_file"): 1}
    [quarantined] = PREPARE.quarantine_path(ws, shards[2]).read_text().splitlines()
    assert json.loads(quarantined)["reason"] == "truncated_file"
    prepared_rows = [pq.read_table(PREPARE.part_path(ws, shard)).to_pylist() for shard in shards]
    pages, wet = ({json.loads(row["meta"])["url"]: row["id"] for row in rows} for rows in prepared_rows[:2])
    assert pages == wet and set(pages) <= set(PAGES)  # a WET record's text is its page's, extracted: same id
    assert all(json.loads(row["meta"])["date"].startswith("2024-05-06T07:08:") for row in prepared_rows[0])


@pytest.mark.slow  # about 30-50 s: a Dask cluster for three small files
def test_a_curate_of_warc_and_wet_files_accounts_for_every_record(tmp_path, slice_tokenizer):
    write_crawl(tmp_path)
    (tmp_path / "sources.toml").write_text('[[source]]\nname = "crawl"\nformat = "warc"\npaths = ["crawl/*"]\n')
    ws = tmp_path / "ws"
    run_loom("-w", ws, "curate", "--sources", tmp_path / "sources.toml", "--tokenizer", slice_tokenizer, "--workers", 1)
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    assert Counter(Path(row["input"]).name for row in funnel) == {  # one row per response/conversion record
        "handbook.warc.gz": 10, "handbook.warc.wet.gz": 8, "z-cut.warc.gz": 6}
    reasons = Counter((row["fate"], row["stage"], row["reason"]) for row in funnel if row["fate"] != "kept")
    assert reasons[("filtered", "response", "http_status")] == 1 and reasons[("filtered", "response", "not_text")] == 1
    assert reasons[("malformed", "read", "truncated_file")] == 1
    # a WET record holds the text html-dir's extractor takes out of its page: each is a duplicate of its page
    kept_urls = {json.loads(row["meta"])["url"] for row in pq.read_table(published(ws) / "curated").to_pylist()}
    by_input = {(Path(row["input"]).name, row["record"]): row for row in funnel}
    for record in range(8):
        if by_input[("handbook.warc.wet.gz", record)]["fate"] != "filtered":
            assert by_input[("handbook.warc.wet.gz", record)]["reason"] == "exact_duplicate"
    assert kept_urls <= set(PAGES) and len(kept_urls) == sum(row["fate"] == "kept" for row in funnel)


@pytest.mark.slow  # a curate of its own (~10 s); the reader's own tests of the framing run by default
def test_a_curate_over_a_negative_content_length_returns_and_counts_the_record_as_malformed(tmp_path, slice_tokenizer):
    data = (WARC / "handbook.warc").read_bytes()
    at = data.index(b"Content-Length: ", data.index(b"WARC-Type: response"))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "neg.warc").write_bytes(data[:at] + b"Content-Length: -5" + data[data.index(b"\r\n", at):])
    (tmp_path / "sources.toml").write_text('[[source]]\nname = "crawl"\nformat = "warc"\npaths = ["in/*.warc"]\n')
    ws = tmp_path / "ws"
    run_loom("-w", ws, "curate", "--sources", tmp_path / "sources.toml", "--tokenizer", slice_tokenizer, "--workers", 1,
             timeout=150)  # it hung forever: Content.take looped on a negative size
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    assert [(row["record"], row["reason"]) for row in funnel if row["fate"] == "malformed"] == [(0, "bad_length")]
    assert len(funnel) == 10  # the bad record and the 9 response records after it, each counted once


@pytest.mark.parametrize("length", [b"-5", b"+5", b"1_0", b"0x10", b"99999999999999", b"99999999999999999999"])
@pytest.mark.parametrize("name", ["handbook.warc", "handbook.warc.gz"])
def test_a_content_length_that_is_not_a_byte_count_or_runs_past_the_end_is_one_bad_length_record(tmp_path, name, length):
    records = warcio_records(WARC / name)
    offset, size = next((offset, size) for kind, _, _, offset, size in records if kind == "response")
    stored = (WARC / name).read_bytes()
    member = gzip.decompress(stored[offset:offset + size]) if name.endswith(".gz") else stored[offset:offset + size]
    at = member.index(b"Content-Length: ")
    member = member[:at] + b"Content-Length: " + length + member[member.index(b"\r\n", at):]
    path = tmp_path / name
    path.write_bytes(stored[:offset] + (gzip.compress(member) if name.endswith(".gz") else member) + stored[offset + size:])
    read_back = read(path)
    assert [r.problem for r in read_back] == ["bad_length"] + [None] * 9  # the 9 responses after it are read
