"""Large inputs cut into shards: a jsonl into byte ranges, a multi-frame zstd into runs of frames, a Parquet file
into runs of row groups, a folder or glob of files into groups; every record read once, its funnel `record` the
same as when the file is one shard, and a cut file curated to the same output as the uncut one."""

import gzip
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from curation.config import SourceConfig, load_config
from curation.job import input_bytes, plan_shards
from curation.readers import read_shard
from curation.readers.spans import ByteRange, FileGroup, RowGroups
from curation.run import input_fingerprint
from helpers import published, run_loom
from base.errors import UserError

BOM = b"\xef\xbb\xbf"
WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ro", "si", "tu") for b in ("ba", "de", "fi", "go", "hu", "ja")]


def awkward_lines(n: int, seed: int) -> bytes:
    """JSON lines of very different lengths (some longer than a shard), with blank lines, a malformed line, a
    byte order mark in front and no newline at the end: what a cut must not lose or double."""
    rng = random.Random(seed)
    out = [BOM]
    for i in range(n):
        words = rng.choice([3, 20, 200, 900])
        out.append(json.dumps({"id": f"r{i}", "text": " ".join(rng.choices(WORDS, k=words))}).encode() + b"\n")
        if i % 37 == 5:
            out.append(b"\n  \n")
        if i % 101 == 7:
            out.append(b'{"text": "broken\n')
    return b"".join(out).rstrip(b"\n")


def source(fmt: str, paths=("*",), **settings) -> SourceConfig:
    return SourceConfig(name="s", format=fmt, paths=tuple(map(str, paths)), **settings)


def read_cut(src: SourceConfig) -> tuple[list, list]:
    """(the shards planned, every record they read, in shard order)."""
    shards = plan_shards([src])
    return shards, [r for shard in shards for r in read_shard(src, shard.input, shard.span)]


def summary(records) -> list[tuple]:
    return [(r.index, r.input, r.text, r.problem, json.dumps(r.meta, sort_keys=True)) for r in records]


def line_at(data: bytes, offset: int) -> bytes:
    assert offset == 0 or data[offset - 1:offset] in (b"\n", BOM[-1:]), f"{offset} is not where a line starts"
    return data[offset:].split(b"\n", 1)[0]


@pytest.mark.parametrize("shard_bytes", [1024, 1500, 4096])
def test_a_jsonl_cut_into_byte_ranges_reads_every_line_once_at_its_offset(tmp_path, shard_bytes):
    data = awkward_lines(400, seed=shard_bytes)
    path = tmp_path / "a.jsonl"
    path.write_bytes(data)
    whole = list(read_shard(source("jsonl", [path], shard_bytes=len(data)), str(path)))
    shards, cut = read_cut(source("jsonl", [path], shard_bytes=shard_bytes))
    assert len(shards) >= 8 and all(isinstance(s.span, ByteRange) for s in shards)
    assert [s.index for s in shards] == list(range(len(shards)))
    assert summary(cut) == summary(whole)
    assert {r.problem for r in cut} == {None, "malformed_json"}
    for record in cut:
        line = json.loads(line_at(data, record.index).removeprefix(BOM)) if record.problem is None else None
        assert record.problem or line["text"] == record.text


def multi_frame_zstd(data: bytes, frame_bytes: int) -> bytes:
    """Frames cut at arbitrary bytes (lines run across frames), each stating its content size, as the zstd CLI
    and pzstd write them."""
    compressor = zstandard.ZstdCompressor()
    return b"".join(compressor.compress(data[i:i + frame_bytes]) for i in range(0, len(data), frame_bytes))


def test_a_multi_frame_zstd_is_cut_at_frames_and_reads_as_the_whole(tmp_path):
    data = awkward_lines(1500, seed=7)
    path = tmp_path / "a.jsonl.zst"
    path.write_bytes(multi_frame_zstd(data, 20_000))
    whole = list(read_shard(source("jsonl.zst", [path]), str(path)))
    shards, cut = read_cut(source("jsonl.zst", [path], shard_bytes=4096))
    assert len(shards) >= 8 and all(isinstance(s.span, ByteRange) and s.span.seek > 0 for s in shards[2:])
    assert summary(cut) == summary(whole)
    for record in cut:
        if record.problem is None:
            assert json.loads(line_at(data, record.index).removeprefix(BOM))["text"] == record.text


def test_a_zstd_file_with_skippable_frames_as_pzstd_writes_is_read_and_cut(tmp_path):
    data = awkward_lines(600, seed=9)
    frames = [zstandard.ZstdCompressor().compress(data[i:i + 20_000]) for i in range(0, len(data), 20_000)]
    skippable = b"\x50\x2a\x4d\x18" + (4).to_bytes(4, "little")  # before each frame: its compressed size
    path = tmp_path / "a.jsonl.zst"
    path.write_bytes(b"".join(skippable + len(f).to_bytes(4, "little") + f for f in frames))
    whole = list(read_shard(source("jsonl", [path]), str(path)))
    assert [r.problem for r in whole].count(None) == 600
    shards, cut = read_cut(source("jsonl", [path], shard_bytes=4096))
    assert len(shards) == len(frames) and summary(cut) == summary(whole)


def test_a_damaged_frame_costs_the_rest_of_its_shard_and_the_next_shard_still_reads_its_own(tmp_path):
    data = awkward_lines(600, seed=10)
    checked = zstandard.ZstdCompressor(write_checksum=True)  # a damaged byte fails the frame's checksum
    path = tmp_path / "a.jsonl.zst"
    path.write_bytes(b"".join(checked.compress(data[i:i + 20_000]) for i in range(0, len(data), 20_000)))
    shards, undamaged = read_cut(source("jsonl", [path], shard_bytes=4096))
    damaged_frame = shards[2].span.seek  # the frame that shard 2 reads for its last byte: shard 1's last
    stored = bytearray(path.read_bytes())
    stored[damaged_frame + 200] ^= 0xFF
    path.write_bytes(bytes(stored))
    _, cut = read_cut(source("jsonl", [path], shard_bytes=4096))
    after = shards[2].span.start
    assert [r.index < after for r in cut if r.problem == "corrupt_file"] in ([True], [True, True])  # counted before
    assert summary(r for r in cut if r.index > after) == summary(r for r in undamaged if r.index > after)


def test_a_skippable_frame_that_runs_past_the_end_leaves_the_file_uncut(tmp_path):
    path = tmp_path / "a.jsonl.zst"
    path.write_bytes(multi_frame_zstd(awkward_lines(600, seed=11), 20_000) + b"\x50\x2a\x4d\x18" + b"\xf0\xff\xff\xff")
    shards, records = read_cut(source("jsonl", [path], shard_bytes=4096))
    assert [s.span for s in shards] == [None] and records[-1].problem == "truncated_file"


def test_gzip_a_zstd_without_frame_sizes_and_a_truncated_zstd_are_read_whole(tmp_path):
    data = awkward_lines(1500, seed=8)
    streamed = zstandard.ZstdCompressor().compressobj()
    files = {"a.jsonl.gz": gzip.compress(data),
             "b.jsonl.zst": streamed.compress(data[:50_000]) + streamed.flush() + multi_frame_zstd(data[50_000:], 20_000),
             "c.jsonl.zst": multi_frame_zstd(data, 20_000)[:-100]}
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
        shards, cut = read_cut(source("jsonl", [tmp_path / name], shard_bytes=1024))
        assert [s.span for s in shards] == [None], name
        assert summary(cut) == summary(read_shard(source("jsonl", [tmp_path / name]), str(tmp_path / name)))


def test_a_file_of_blank_lines_cut_in_shards_is_one_empty_file_record(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n" * 5000)
    shards, cut = read_cut(source("jsonl", [path], shard_bytes=1024))
    assert len(shards) == 5
    assert [(r.index, r.problem) for r in cut] == [(0, "empty_file")]


def test_planning_a_40_gb_file_reads_no_data(tmp_path):
    path = tmp_path / "big.jsonl"
    with open(path, "wb") as fh:  # sparse: planning that read the data would take minutes and fill no disk
        fh.truncate(40 * 10**9)
    shards = plan_shards([source("jsonl", [path])])
    spans = [s.span for s in shards]
    assert len(spans) == 299 and spans[0].start == 0 and spans[-1].end is None
    assert all(a.end == b.start for a, b in zip(spans, spans[1:]))
    assert len({input_fingerprint(s) for s in shards}) == len(shards)
    # the bytes a shard reads, for the runner's tasks: a range's length, the open-ended last range's not known
    assert input_bytes(shards[0]) == spans[1].start and input_bytes(shards[-1]) is None
    small = tmp_path / "small.jsonl"
    small.write_text('{"text": "a"}\n' * 3)
    assert [input_bytes(s) for s in plan_shards([source("jsonl", [small])])] == [small.stat().st_size]


def test_a_parquet_file_is_cut_into_row_group_runs_numbered_by_row(tmp_path):
    rng = random.Random(3)
    texts = [" ".join(rng.choices(WORDS, k=rng.choice([5, 50, 400]))) for _ in range(2000)]
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"content": texts, "n": list(range(len(texts)))}), path, row_group_size=100)
    whole = list(read_shard(source("parquet", [path], text_field="content"), str(path)))
    shards, cut = read_cut(source("parquet", [path], text_field="content", shard_bytes=8192))
    assert len(shards) >= 8 and all(isinstance(s.span, RowGroups) for s in shards)
    assert summary(cut) == summary(whole)
    assert [(r.index, r.text, r.meta["n"]) for r in cut] == [(i, t, i) for i, t in enumerate(texts)]


def test_text_dir_takes_globs_of_files_and_groups_files_by_size(tmp_path):
    sizes = [300, 5000, 200, 200, 200, 2500, 100, 900, 4000, 50]
    for i, size in enumerate(sizes):
        folder = tmp_path / "dir" / ("a" if i < 6 else "b")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"File {i}. " + "x" * size)
    (tmp_path / "dir" / "a" / "notes.md").write_text("not a document of text-dir")
    src = source("text-dir", [tmp_path / "dir/**/*.txt"], shard_bytes=2048)
    shards, records = read_cut(src)
    groups = [s.span.files for s in shards]
    assert all(isinstance(s.span, FileGroup) for s in shards) and len(shards) == 4
    assert [input_bytes(s) for s in shards] == [sum(Path(f).stat().st_size for f in group) for group in groups]
    assert [f for group in groups for f in group] == sorted(str(p) for p in (tmp_path / "dir").rglob("*.txt"))
    assert [r.index for r in records] == list(range(len(sizes)))
    assert [r.input for r in records] == [f for group in groups for f in group]
    assert [r.meta["path"] for r in records][:2] == ["dir/a/f0.txt", "dir/a/f1.txt"]
    one_folder = [r for shard in plan_shards([source("text-dir", [tmp_path / "dir/a"])])
                  for r in read_shard(src, shard.input, shard.span)]
    assert [(r.index, r.input, r.meta["path"]) for r in one_folder][:2] == [
        (0, str(tmp_path / "dir/a/f0.txt"), "a/f0.txt"), (1, str(tmp_path / "dir/a/f1.txt"), "a/f1.txt")]


def test_a_path_through_dot_dot_is_planned_as_its_clean_path_the_funnel_s_input(tmp_path):
    (tmp_path / "corpus" / "pages").mkdir(parents=True)
    (tmp_path / "corpus" / "a.jsonl").write_text('{"text": "one"}\n')
    (tmp_path / "corpus" / "pages" / "p.txt").write_text("a page")
    (tmp_path / "ws").mkdir()
    toml = tmp_path / "ws" / "sources.toml"
    toml.write_text('[[source]]\nname = "j"\nformat = "jsonl"\npaths = ["../corpus/*.jsonl"]\n\n'
                    f'[[source]]\nname = "t"\nformat = "text-dir"\npaths = ["{tmp_path}/ws/../corpus/pages"]\n')
    shards = plan_shards(load_config(toml).sources)
    assert [s.input for s in shards] == [str(tmp_path / "corpus" / "a.jsonl"), str(tmp_path / "corpus" / "pages")]
    assert [r.input for r in read_shard(shards[1].source, shards[1].input, shards[1].span)] == [
        str(tmp_path / "corpus" / "pages" / "p.txt")]


def test_a_glob_of_no_document_files_and_a_bad_shard_size_are_one_line_errors(tmp_path):
    (tmp_path / "notes.md").write_text("x")
    with pytest.raises(UserError, match=r"path '\*\.md' matches no folder or \.txt file"):
        plan_shards([SourceConfig(name="s", format="text-dir", paths=("*.md",), base_dir=str(tmp_path))])
    for bad in ("0", "512", '"128MB"', "true"):
        toml = tmp_path / "sources.toml"
        toml.write_text(f'[[source]]\nname = "s"\nformat = "jsonl"\npaths = ["*.jsonl"]\nshard_bytes = {bad}\n')
        with pytest.raises(UserError) as raised:
            load_config(toml)
        assert str(raised.value).endswith("`shard_bytes` must be a whole number of bytes, at least 1024 "
                                          "(default 134217728, 128 MiB)")


def curate(ws, data_dir, tokenizer, shard_bytes: int):
    sources = data_dir / f"sources-{shard_bytes}.toml"
    sources.write_text(f'[[source]]\nname = "big"\nformat = "jsonl"\npaths = ["big.jsonl"]\nid_field = "id"\n'
                       f'shard_bytes = {shard_bytes}\n')
    return run_loom("-w", ws, "curate", "--sources", sources, "--tokenizer", tokenizer, "--workers", 2)


def bundled_lines() -> list[str]:
    from helpers import EXAMPLES

    with gzip.open(EXAMPLES / "corpora" / "docs" / "docs-00000.jsonl.gz", "rt", encoding="utf-8") as fh:
        docs = [json.loads(line)["text"] for line in fh][:60]
    with open(EXAMPLES / "corpora" / "fortunes" / "fortunes-00000.jsonl.zst", "rb") as fh:
        fortunes = [json.loads(line)["text"] for line in zstandard.ZstdDecompressor().stream_reader(fh).read().splitlines()]
    return docs + fortunes[:500]


def curated_rows(ws) -> pa.Table:
    parts = sorted((published(ws) / "curated" / "big").glob("part-*.parquet"))
    return pa.concat_tables(pq.read_table(p) for p in parts)


@pytest.mark.slow  # two real curates of ~560 documents (~100 s on 2 cores)
def test_a_jsonl_cut_into_shards_curates_to_the_same_output_as_one_shard(tmp_path, slice_tokenizer):
    texts = bundled_lines()
    texts += [texts[i] for i in range(0, len(texts), 50)]  # exact duplicates far from their first copy
    lines = [json.dumps({"id": f"L{i}", "text": t}) for i, t in enumerate(texts)]
    lines[len(lines) // 2] = '{"id": "broken", "text": '
    data = ("\n".join(lines) + "\n\n").encode()
    (tmp_path / "big.jsonl").write_bytes(data)
    shard_bytes = len(data) // 9
    whole_ws, cut_ws = tmp_path / "whole", tmp_path / "cut"
    curate(whole_ws, tmp_path, slice_tokenizer, 1 << 30)
    curate(cut_ws, tmp_path, slice_tokenizer, shard_bytes)
    assert len(list((cut_ws / "work" / "prepare" / "big").glob("*.done"))) >= 9
    assert curated_rows(cut_ws).equals(curated_rows(whole_ws))

    def funnel(ws):
        rows = pq.read_table(published(ws) / "manifest" / "funnel").drop(["shard"]).to_pylist()
        return sorted(rows, key=lambda r: r["record"])

    cut_funnel = funnel(cut_ws)
    assert cut_funnel == funnel(whole_ws)
    assert len(cut_funnel) == len(lines)
    kept = {row["id"]: json.loads(row["meta"])["source_id"] for row in curated_rows(cut_ws).to_pylist()}
    fates = set()
    for row in cut_funnel:
        line = line_at(data, row["record"])
        fates.add(row["fate"])
        if row["fate"] == "malformed":
            assert line.decode() == lines[len(lines) // 2]
        elif row["fate"] == "kept":
            assert kept[row["doc_id"]] == json.loads(line)["id"]
    assert {"kept", "duplicate", "malformed"} <= fates

    markers = {p: p.stat().st_mtime_ns for p in (cut_ws / "work" / "prepare").rglob("*.done")}
    curate(cut_ws, tmp_path, slice_tokenizer, shard_bytes)  # a rerun redoes no cut shard
    assert {p: p.stat().st_mtime_ns for p in (cut_ws / "work" / "prepare").rglob("*.done")} == markers
