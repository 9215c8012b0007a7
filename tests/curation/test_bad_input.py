"""Bad records are counted and quarantined (a record over max_doc_bytes is filtered instead), good ones survive,
every removed record's text or raw start is in manifest/removed/; bad config or inputs stop with one clear line."""

import gzip
import json
import re
import shutil
import zlib
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation.readers.fields import RAW_PREVIEW_CHARS
from curation.schema import REMOVED_SAMPLE
from helpers import published, run_loom
from reports.views import connect

GOOD_TEXTS = [f"Record number {i} is a good one: it has text, and it is valid JSON." for i in range(40)]
TOO_LARGE = json.dumps({"text": "huge " * 1000})
MAX_DOC_BYTES = 4096


def write_bad_inputs(root):
    lines = [json.dumps({"text": t, "n": i}).encode() for i, t in enumerate(GOOD_TEXTS[:5])]
    lines += [b'{"text": "unterminated', b"[1, 2, 3]"]  # 2 malformed JSON
    lines += [b'{"text": "caf\xe9 latin-1 bytes"}']  # 1 invalid UTF-8
    lines += [json.dumps({"body": "no text field"}).encode(), json.dumps({"text": 7}).encode()]  # 2 missing field
    lines += [json.dumps({"text": "   "}).encode()]  # 1 empty text
    lines += [TOO_LARGE.encode()]  # 1 over max_doc_bytes: filtered, not malformed
    (root / "bad").mkdir()
    (root / "bad" / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (root / "bad" / "b.jsonl").write_bytes(b"")  # 1 empty file
    full = gzip.compress(b"".join(json.dumps({"text": t}).encode() + b"\n" for t in GOOD_TEXTS[10:]))
    truncated = full[: len(full) * 2 // 3]
    (root / "cut").mkdir()
    (root / "cut" / "c.jsonl.gz").write_bytes(truncated)
    partial = zlib.decompressobj(wbits=31).decompress(truncated)
    (root / "sources.toml").write_text(
        f"""
[[source]]
name = "bad"
format = "jsonl"
paths = ["bad/*.jsonl"]
filters = []
max_doc_bytes = {MAX_DOC_BYTES}

[[source]]
name = "cut"
format = "jsonl.gz"
paths = ["cut/*.jsonl.gz"]
filters = []

[inspect]
removed_sample = "all"
"""
    )
    return partial.count(b"\n")  # complete records before the cut


@pytest.fixture(scope="module")
def bad_run(tmp_path_factory, slice_tokenizer):
    root = tmp_path_factory.mktemp("bad")
    complete_before_cut = write_bad_inputs(root)
    ws = root / "ws"
    run_loom("-w", ws, "curate", "--sources", root / "sources.toml", "--tokenizer", slice_tokenizer, "--workers", 1)
    return ws, complete_before_cut


def test_each_bad_record_is_counted_under_its_reason(bad_run):
    ws, _ = bad_run
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    bad = Counter(row["reason"] for row in funnel if row["source"] == "bad" and row["fate"] == "malformed")
    assert bad == {"malformed_json": 2, "invalid_utf8": 1, "missing_text_field": 2, "empty_text": 1, "empty_file": 1}
    kept = [row for row in funnel if row["source"] == "bad" and row["fate"] == "kept"]
    assert len(kept) == 5
    [too_large] = [row for row in funnel if row["reason"] == "too_large"]  # a length limit, not broken input
    assert (too_large["fate"], too_large["stage"], too_large["detail"]) == \
        ("filtered", "read", f"{len(TOO_LARGE)} bytes, over max_doc_bytes = {MAX_DOC_BYTES}")
    assert Counter(row["fate"] for row in funnel if row["source"] == "bad") == {"kept": 5, "malformed": 7, "filtered": 1}


def test_good_records_survive_and_the_truncated_tail_is_counted(bad_run):
    ws, complete_before_cut = bad_run
    curated = pq.read_table(list((published(ws) / "curated").glob("*/part-*.parquet"))).to_pylist()
    texts = {row["source"]: [] for row in curated}
    for row in curated:
        texts[row["source"]].append(row["text"])
    assert sorted(texts["bad"]) == sorted(GOOD_TEXTS[:5])
    assert 0 < complete_before_cut < len(GOOD_TEXTS) - 10
    assert texts["cut"] == GOOD_TEXTS[10 : 10 + complete_before_cut]
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    cut = Counter(row["reason"] for row in funnel if row["source"] == "cut" and row["fate"] == "malformed")
    assert cut == {"truncated_file": 1}


def test_malformed_records_are_quarantined_with_reason_and_raw_text(bad_run):
    ws, _ = bad_run
    rows = [json.loads(line) for line in (published(ws) / "quarantine" / "bad" / "part-00000.jsonl").read_text().splitlines()]
    assert Counter(row["reason"] for row in rows) == {"malformed_json": 2, "invalid_utf8": 1, "missing_text_field": 2,
                                                      "empty_text": 1}
    assert any("unterminated" in row["raw"] for row in rows)  # and no too_large: it is not malformed
    assert (published(ws) / "quarantine" / "bad" / "part-00001.jsonl").read_text().count("empty_file") == 1


def test_with_removed_sample_all_every_removed_record_keeps_its_text_or_its_raw_start(bad_run, tmp_path):
    ws, _ = bad_run
    gen = published(ws)
    funnel = pq.read_table(gen / "manifest" / "funnel").to_pylist()
    removed = pq.read_table(gen / "manifest" / "removed").to_pylist()
    key = lambda row: (row["source"], row["shard"], row["record"])  # noqa: E731
    assert sorted(map(key, removed)) == sorted(key(row) for row in funnel if row["fate"] != "kept")
    texts = {(row["reason"], row["text"]) for row in removed}
    assert ("too_large", TOO_LARGE[:RAW_PREVIEW_CHARS]) in texts and ("malformed_json", '{"text": "unterminated') in texts
    [too_large] = [row for row in removed if row["reason"] == "too_large"]
    story = run_loom("-w", ws, "show", f"{too_large['input']}#{too_large['record']}").stdout
    assert "verdict  filtered at read: too_large" in story and TOO_LARGE[:40] in story  # its raw start
    assert "Extracted text\n  none: the record was set aside as it was read" in story

    old = tmp_path / "ws"  # the workspace as a generation published before manifest/removed/ left it
    shutil.copytree(ws, old)
    shutil.rmtree(published(old) / "manifest" / "removed")
    con, names = connect(old)
    assert "removed" in names and con.execute("SELECT count(*) FROM removed").fetchone()[0] == 0
    assert [column for column, *_ in con.execute("DESCRIBE removed").fetchall()] == REMOVED_SAMPLE.names



def test_a_smaller_removed_sample_redoes_prepare_alone_and_publishes_its_own_generation(bad_run, slice_tokenizer,
                                                                                          tmp_path):
    ws, _ = bad_run
    copy = tmp_path / "ws"
    shutil.copytree(ws, copy)
    sources = (ws.parent / "sources.toml").read_text().replace('removed_sample = "all"', "removed_sample = 1")
    (tmp_path / "sources.toml").write_text(f'root = "{ws.parent}"\n{sources}')
    done = lambda stage: {p: p.stat().st_mtime_ns for p in (copy / "work" / stage).rglob("*.done")}  # noqa: E731
    prepared, hashed = done("prepare"), done("minhash")
    run_loom("-w", copy, "curate", "--sources", tmp_path / "sources.toml", "--tokenizer", slice_tokenizer,
             "--workers", 1)
    assert prepared and all(done("prepare")[p] != t for p, t in prepared.items())
    assert hashed and done("minhash") == hashed  # the prepared rows are the same: nothing after prepare is redone
    assert published(copy).name != published(ws).name
    removed = pq.read_table(published(copy) / "manifest" / "removed").to_pylist()
    per_reason = Counter((row["source"], row["shard"], row["reason"]) for row in removed)
    assert set(per_reason.values()) == {1} and ("bad", 0, "malformed_json") in per_reason

SOURCE_ERRORS = [
    ('name = "Web!"\nformat = "jsonl"\npaths = ["x"]', "`name` = 'Web!' is invalid"),
    ('name = "web"\nformat = "xml"\npaths = ["x"]', "`format` = 'xml' is unknown"),
    ('name = "web"\nformat = "jsonl"\npaths = ["nowhere/*.jsonl"]', "path 'nowhere/*.jsonl' matches no file"),
    ('name = "web"\nformat = "jsonl"\npaths = ["x"]\npathz = 1', "unknown key 'pathz'"),
    ('name = "web"\nformat = "jsonl"\npaths = ["table.parquet"]',
     'table.parquet is a Parquet file, not JSON lines; set format = "parquet" for source \'web\''),
    ('name = "web"\nformat = "parquet"\npaths = ["packed.jsonl.gz"]',
     'packed.jsonl.gz is gzip-compressed, not a Parquet file; set format = "jsonl.gz" for source \'web\''),
    ('name = "web"\nformat = "jsonl"\npaths = ["ok.jsonl"]\nmax_doc_bytes = 0', "`max_doc_bytes` must be a whole number"),
    ('name = "web"\nformat = "jsonl"\npaths = ["ok.jsonl"]\nfilters = ["c5"]', "unknown filter 'c5'"),
    ('name = "web"\nformat = "jsonl"\npaths = ["ok.jsonl"]\nfilters = ["c4"]\n'
     'filter_options.c4 = {min_num_sentences = 2, colour = 1}', "filter_options.c4 has unknown option 'colour'"),
    ('name = "web"\nformat = "jsonl"\npaths = ["ok.jsonl"]\nfilter_options.c4 = {min_num_sentences = 2}',
     'filter_options.c4 is set but c4 does not run: a source that is not web text (format html-dir or warc, or tagged '
     '"web") gets no filter unless `filters` names it; add "c4" to `filters`'),
    ('name = "web"\nformat = "jsonl"\npaths = ["ok.jsonl"]\nlanguages = ["en", "english"]',
     "source 'web': in `languages`, 'english' is not a lid.176 language code; did you mean \"en\" (English)?"),
    ('name = "web"\nformat = "jsonl"\npaths = ["ok.jsonl"]\nfilter_languages = ["German"]',
     'did you mean "de" (German)?'),
    ('name = "web"\nformat = "jsonl"\npaths = ["ok.jsonl"]\nlanguages = ["xx"]',
     "in `languages`, 'xx' is not a lid.176 language code; use codes such as \"en\""),
    ('name = "web"\nformat = "jsonl"\npaths = ["ok.jsonl"]\nlicense = "Apache 2.0"',
     "source 'web': `license` = 'Apache 2.0': 'Apache 2.0' is no SPDX licence id (did you mean 'Apache-2.0'?)"),
]


@pytest.mark.parametrize("entry, message", SOURCE_ERRORS)
def test_a_bad_sources_file_stops_with_one_line(tmp_path, slice_tokenizer, entry, message):
    (tmp_path / "ok.jsonl").write_text('{"text": "hello"}\n')
    (tmp_path / "packed.jsonl.gz").write_bytes(gzip.compress(b'{"text": "hello"}\n'))
    pq.write_table(pa.table({"text": ["hello"]}), tmp_path / "table.parquet")
    (tmp_path / "sources.toml").write_text(f"[[source]]\n{entry}\n")
    result = run_loom("-w", tmp_path / "ws", "curate", "--sources", tmp_path / "sources.toml", "--tokenizer",
                      slice_tokenizer, check=False, timeout=60)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.stderr
    assert not (tmp_path / "ws" / "work").exists()  # stopped before any compute


TWO_SOURCES = '[[source]]\nname = "vimhelp"\nformat = "jsonl"\npaths = ["ok.jsonl"]\n' \
              '[[source]]\nname = "manpages"\nformat = "jsonl"\npaths = ["ok.jsonl"]\n'
NAME_TYPOS = [
    ('[domains]\nk = 2\nsources = ["vimhelp", "manpage"]\n',
     "[domains]: `sources` names 'manpage' (did you mean 'manpages'?), which is no [[source]]; use any of vimhelp, "
     "manpages"),
    ('[[annotate]]\nname = "edu"\nkind = "python"\nfunction = "x.y:z"\nsources = ["vim_help"]\n',
     "annotator 'edu': `sources` names 'vim_help' (did you mean 'vimhelp'?), which is no [[source]]"),
    ('[dedupe]\nscope = "per-source"\n', "unknown top-level key 'dedupe' (did you mean 'dedup'?); use `root`"),
    ('[[annotate]]\nname = "edu"\nkind = "python"\nfunction = "x.y:z"\nsources = ["web"]\n',
     "annotator 'edu': `sources` names 'web', which is no [[source]]"),  # nothing close: no guess
]


@pytest.mark.parametrize("table, message", NAME_TYPOS)
def test_a_source_name_a_typo_away_is_suggested(tmp_path, table, message):
    from base.errors import UserError
    from curation.config import load_config

    (tmp_path / "ok.jsonl").write_text('{"text": "hello"}\n')
    (tmp_path / "sources.toml").write_text(TWO_SOURCES + table)
    with pytest.raises(UserError) as err:
        load_config(tmp_path / "sources.toml")
    assert str(err.value).startswith(f"{tmp_path / 'sources.toml'}: ") and message in str(err.value)


def test_a_folder_given_to_a_file_format_is_told_the_folder_formats_and_a_glob(tmp_path):
    from base.errors import UserError
    from curation.config import SourceConfig
    from curation.readers import reader_for
    from curation.readers.inputs import source_inputs

    (tmp_path / "vim-help").mkdir()
    source = SourceConfig(name="vim", format="jsonl", paths=("vim-help",), base_dir=str(tmp_path))
    with pytest.raises(UserError) as err:
        source_inputs(source, reader_for(source.format))
    assert str(err.value) == (
        "source 'vim': path 'vim-help' is a folder, and format \"jsonl\" reads files; set format = \"text-dir\" (its "
        ".txt files) or \"html-dir\" (its .html pages), or give its files as a glob such as 'vim-help/*.jsonl' in "
        "`paths` of sources.toml")


def test_a_quality_training_name_a_typo_away_from_a_source_is_suggested(tmp_path):
    from base.errors import UserError
    from curation.config import load_config
    from curation.samples import quality_examples

    (tmp_path / "ok.jsonl").write_text('{"text": "hello"}\n')
    (tmp_path / "sources.toml").write_text(TWO_SOURCES)
    with pytest.raises(UserError, match=r"^'manpage' \(did you mean 'manpages'\?\) is neither a source in "
                                        r"sources.toml nor a file"):
        quality_examples(load_config(tmp_path / "sources.toml"), ["vimhelp"], ["manpage"], 20)


@pytest.mark.slow  # waits out a scheduler that never answers (~20 s)
def test_missing_tokenizer_and_unreachable_scheduler_stop_with_one_line(tmp_path, slice_sources, slice_tokenizer):
    missing = run_loom("-w", tmp_path, "curate", "--sources", slice_sources, check=False)
    assert missing.returncode == 2 and "no tokenizer at" in missing.stderr and "loom tokenizer train" in missing.stderr
    unreachable = run_loom("-w", tmp_path, "curate", "--sources", slice_sources, "--tokenizer", slice_tokenizer,
                           "--scheduler", "tcp://127.0.0.1:9", check=False, timeout=120)
    assert unreachable.returncode == 2, unreachable.stderr
    assert unreachable.stderr.strip().splitlines() == [unreachable.stderr.strip()]
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in unreachable.stderr


def test_a_model_output_that_exists_needs_force_and_a_link_stays_a_link(tmp_path):
    ws, train = tmp_path / "ws", ("tokenizer", "train", "--max-docs", 20, "--vocab-size", 300)
    run_loom("-w", ws, "init")
    (tmp_path / "mine.json").write_text("{}")
    (tmp_path / "link.json").symlink_to("mine.json")
    refused = run_loom("-w", ws, *train, "--output", "link.json", cwd=tmp_path, check=False)
    assert refused.returncode == 2 and refused.stderr == "error: link.json exists; pass --force to overwrite it\n"
    assert (tmp_path / "mine.json").read_text() == "{}"
    trained = run_loom("-w", ws, *train, "--output", "link.json", "--force", cwd=tmp_path).stdout.splitlines()
    # it says what it does while it works: the documents read, counted, then the merges, then the time it took
    assert trained[0] == "Training a 300-token BPE on up to 20 documents of each of 1 source(s)"
    assert re.fullmatch(r"Read 20 documents in \d+\.\ds; merging them into 300 tokens", trained[-3])
    assert re.fullmatch(r"read texts +20 documents \d+:\d\d:\d\d", trained[-2])  # the count, above it in a terminal
    assert re.fullmatch(r"Tokenizer: .+/mine.json \(300 tokens, \d+\.\ds\)", trained[-1])  # the link followed
    assert (tmp_path / "link.json").is_symlink() and json.loads((tmp_path / "mine.json").read_text())["model"]
    refused = run_loom("-w", ws, *train, "--output", "/dev/null", check=False)
    assert refused.returncode == 2 and "/dev/null (--output): it is a device or a pipe" in refused.stderr


def test_a_tokenizer_is_not_trained_on_sources_that_hold_no_document(tmp_path):
    """A folder of man pages named `*.3tcl` holds no *.txt: text-dir finds nothing, and a tokenizer of bytes alone
    would have been saved without a word."""
    (tmp_path / "man").mkdir()
    (tmp_path / "man" / "Tcl_DString.3tcl").write_text(".TH Tcl_DString 3tcl\nDynamic strings.\n")
    (tmp_path / "sources.toml").write_text('[[source]]\nname = "man"\nformat = "text-dir"\npaths = ["man"]\n')
    refused = run_loom("-w", tmp_path / "ws", "tokenizer", "train", "--sources", tmp_path / "sources.toml",
                       check=False)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "the sources hold no document to train a tokenizer on (man: text-dir)" in refused.stderr
    assert not (tmp_path / "ws" / "models" / "tokenizer.json").exists()
