"""curation.readers.raw_record: the start of a record's raw bytes as each reader numbers records (a WARC's
record-th document record, plain or gzip; a JSON line at its offset in a multi-frame zstd file), and bytes shown as
text a terminal can take."""

import json

import zstandard

from curation.config import SourceConfig
from curation.readers import READERS, read_shard
from curation.readers.raw_record import escaped_bytes, raw_start
from helpers import EXAMPLES


def test_a_warc_records_bytes_are_its_document_record_counted_as_the_reader_counts():
    for name in ("handbook.warc", "handbook.warc.gz", "handbook.warc.wet.gz"):
        path = EXAMPLES / "warc" / name
        records = list(read_shard(SourceConfig(name="crawl", format="warc", paths=(str(path),)), path))
        for record in (records[0], records[3], records[-1]):
            raw = raw_start(READERS["warc"].reader, path, record.index)
            assert raw.startswith(b"WARC/1.") and f"WARC-Target-URI: {record.meta['url']}\r\n".encode() in raw, name


def test_a_json_line_is_found_at_its_offset_inside_a_later_zstd_frame(tmp_path):
    lines = [json.dumps({"text": f"line {i} " + "x" * 50}).encode() + b"\n" for i in range(30)]
    path = tmp_path / "frames.jsonl.zst"
    with open(path, "wb") as fh:
        for start in range(0, 30, 10):  # three frames, each stating its size
            fh.write(zstandard.ZstdCompressor().compress(b"".join(lines[start:start + 10])))
    offset = sum(map(len, lines[:17]))
    records = {r.index: r for r in read_shard(SourceConfig(name="z", format="jsonl", paths=(str(path),)), path)}
    assert records[offset].text.startswith("line 17 ")
    assert raw_start(READERS["jsonl"].reader, path, offset) == lines[17].rstrip(b"\n")
    assert raw_start(READERS["jsonl"].reader, path, offset, limit=12) == lines[17][:12]


def test_bytes_are_shown_escaped_and_a_character_cut_at_the_end_is_left_out():
    shown = escaped_bytes("é\x1b[31m\tok\r\n".encode() + b"\xff" + "日本".encode()[:-1])
    assert shown == "é\\x1b[31m\tok\\r\n\\xff日"
    assert escaped_bytes(b"plain") == "plain"
