"""`loom curate` on a slice of the bundled corpora, on a real LocalCluster with 2 worker processes."""

import gzip
import io
import subprocess
import sys
from collections import Counter

import pyarrow.parquet as pq
import pytest
import xxhash
import zstandard
from tokenizers import Tokenizer

from curation.schema import CURATED
from helpers import published

SOURCES = ("web", "docs", "code", "fortunes")


def raw_record_counts(slice_root):
    """Records per source counted straight from the input files, independently of Loom's readers."""
    counts = {"web": len(list((slice_root / "web").glob("*/*.html")))}
    counts["docs"] = sum(sum(1 for line in gzip.open(p) if line.strip()) for p in (slice_root / "docs").glob("*.gz"))
    counts["code"] = sum(pq.read_metadata(p).num_rows for p in (slice_root / "code").glob("*.parquet"))
    counts["fortunes"] = 0
    for path in (slice_root / "fortunes").glob("*.zst"):
        with zstandard.ZstdDecompressor().stream_reader(open(path, "rb")) as reader:
            counts["fortunes"] += sum(1 for line in io.TextIOWrapper(reader, encoding="utf-8") if line.strip())
    return counts


@pytest.fixture(scope="module")
def outputs(curated_slice):
    workspace, _ = curated_slice
    curated = pq.read_table(sorted((published(workspace) / "curated").glob("*/part-*.parquet")))
    funnel = pq.read_table(published(workspace) / "manifest" / "funnel")
    documents = pq.read_table(published(workspace) / "manifest" / "documents")
    shards = pq.read_table(published(workspace) / "manifest" / "shards.parquet")
    return workspace, curated, funnel, documents, shards


def test_curated_parquet_has_the_documented_schema(outputs):
    workspace, curated, *_ = outputs
    for part in (published(workspace) / "curated").glob("*/part-*.parquet"):
        assert pq.read_schema(part).equals(CURATED, check_metadata=False), part
    assert set(curated["source"].to_pylist()) == set(SOURCES)
    for source in SOURCES:
        assert (published(workspace) / "curated" / source / "_SUCCESS").exists()


def test_token_ids_decode_back_to_the_text(outputs, slice_tokenizer):
    _, curated, *_ = outputs
    tokenizer = Tokenizer.from_file(str(slice_tokenizer))
    eos = tokenizer.token_to_id("<|endoftext|>")
    rows = curated.select(["text", "input_ids", "n_tokens"]).to_pylist()
    assert len(rows) > 50
    for row in rows:
        ids = row["input_ids"]
        assert len(ids) == row["n_tokens"] > 1
        assert ids[-1] == eos and eos not in ids[:-1]
        assert tokenizer.decode(ids[:-1], skip_special_tokens=False) == row["text"]


def test_ids_are_the_hash_of_the_stored_text(outputs):
    _, curated, *_ = outputs
    for row in curated.select(["id", "text"]).to_pylist():
        assert row["id"] == xxhash.xxh3_128_hexdigest(row["text"].encode("utf-8"))


def test_funnel_accounts_for_every_input_record(outputs, slice_sources):
    _, curated, funnel, documents, shards = outputs
    rows = funnel.to_pylist()
    per_source = Counter(row["source"] for row in rows)
    assert dict(per_source) == raw_record_counts(slice_sources.parent)
    kept = Counter(row["source"] for row in rows if row["fate"] == "kept")
    assert kept == Counter(curated["source"].to_pylist()) == Counter(documents["source"].to_pylist())
    assert {row["fate"] for row in rows} <= {"kept", "malformed", "filtered", "duplicate"}
    assert all(row["reason"] for row in rows if row["fate"] != "kept")
    assert len({(row["source"], row["shard"], row["record"]) for row in rows}) == len(rows)
    by_shard = {row["source"]: 0 for row in shards.to_pylist()}
    for row in shards.to_pylist():
        by_shard[row["source"]] += row["n_docs"]
    assert by_shard == dict(kept)
    assert sum(shards["n_tokens"].to_pylist()) == sum(curated["n_tokens"].to_pylist())


def test_languages_other_than_english_are_identified_in_the_handbook(outputs):
    _, curated, funnel, *_ = outputs
    web = [row for row in funnel.to_pylist() if row["source"] == "web" and row["lang"]]
    langs_by_input = {}
    for row in web:  # a folder format's `input` is the page itself; its folder says the language
        langs_by_input.setdefault(row["input"].rsplit("/", 2)[-2], Counter())[row["lang"]] += 1
    assert langs_by_input["de-DE"].most_common(1)[0][0] == "de"
    assert langs_by_input["ja-JP"].most_common(1)[0][0] == "ja"
    assert langs_by_input["en-US"].most_common(1)[0][0] == "en"
    kept_langs = {row["lang"] for row in curated.select(["source", "lang"]).to_pylist() if row["source"] == "web"}
    assert {"de", "ja"} <= kept_langs


def test_the_planted_exact_duplicate_is_removed_with_its_survivor_named(outputs):
    _, curated, funnel, *_ = outputs
    duplicates = [row for row in funnel.to_pylist() if row["fate"] == "duplicate"]
    planted = [row for row in duplicates if row["source"] == "docs" and row["shard"] == 1]
    assert len(planted) == 1
    assert planted[0]["reason"] == "exact_duplicate"
    survivor = [row for row in funnel.to_pylist() if row["doc_id"] == planted[0]["doc_id"] and row["fate"] == "kept"]
    assert len(survivor) == 1 and (survivor[0]["source"], survivor[0]["shard"]) == ("docs", 0)
    assert planted[0]["detail"] == f"same text as {survivor[0]['input']}#{survivor[0]['record']}"
    ids = curated["id"].to_pylist()
    assert len(ids) == len(set(ids))
    assert planted[0]["doc_id"] in ids


def test_heuristic_filters_judge_only_their_languages(outputs):
    _, _, funnel, *_ = outputs
    filtered_langs = {row["lang"] for row in funnel.to_pylist() if row["source"] == "web" and row["fate"] == "filtered"}
    assert filtered_langs <= {"en"}
    reasons = Counter(row["reason"] for row in funnel.to_pylist() if row["source"] == "fortunes")
    assert reasons["gopher_short_doc"] > 0  # fortunes are short: Gopher's 50-word minimum removes many


def test_the_summary_table_is_printed(curated_slice):
    _, result = curated_slice
    out = result.stdout
    assert "Curation funnel" in out and "top removal reasons" in out
    for source in SOURCES:
        assert source in out
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│ ")]
    shown = {row[0]: row for row in rows if row[0] in SOURCES}
    assert "kept %" in out and shown.keys() == set(SOURCES)
    for source, row in shown.items():  # docs in, ... kept, kept % (rounded down), tokens
        docs_in, kept = int(row[1].replace(",", "")), int(row[7].replace(",", ""))
        assert row[8] == f"{100 * kept // docs_in}%", source
    assert "dashboard http://127.0.0.1:" in out


def test_the_personal_data_found_is_printed_per_source_whose_pii_step_ran(curated_slice):
    workspace, result = curated_slice
    lines = {line.split("'")[1]: line for line in result.stdout.splitlines() if line.startswith("Personal data: '")}
    assert set(lines) == {"web"}  # the one web source: pii is off by default for the others
    found = [row for row in pq.read_table(published(workspace) / "manifest" / "pii.parquet").to_pylist()
             if row["kind"] != "total" and row["spans"]]
    assert found and lines["web"].startswith("Personal data: 'web' redacted ")
    for row in found:
        assert f"{row['kind']} {row['spans']:,} in {row['documents']:,} document" in lines["web"]


# What tests/helpers.py's slice records of its sources: two licences (web's spelt loosely in sources.toml), the
# other two not set
LICENSES = {"web": "GPL-2.0-or-later OR CC-BY-SA-3.0", "docs": "PSF-2.0", "code": "unknown", "fortunes": "unknown"}
ORIGINS = {"web": "debian:debian-handbook=11.20220922", "docs": "debian:python3.11-doc=3.11.2-6+deb12u9", "code": "",
           "fortunes": ""}


def test_every_row_and_the_manifest_carry_their_sources_licence_and_origin(outputs, curated_slice):
    workspace, curated, _, documents, _ = outputs
    for table in (curated, documents):
        rows = set(zip(*(table[c].to_pylist() for c in ("source", "license", "origin"))))
        assert rows == {(s, LICENSES[s], ORIGINS[s]) for s in SOURCES}
    provenance = pq.read_table(published(workspace) / "manifest" / "provenance.parquet").to_pylist()
    assert {r["source"]: (r["license"], r["origin"], r["citation"]) for r in provenance} == {
        s: (LICENSES[s], ORIGINS[s], "Python 3.11 documentation" if s == "docs" else "") for s in SOURCES}
    warning = [line for line in curated_slice[1].stdout.splitlines() if "no licence recorded" in line]
    assert warning == ["warning: no licence recorded for 'code', 'fortunes': set `license` (an SPDX id such as "
                       "\"MIT\", or an expression) and `origin` in its [[source]] in sources.toml; until then its "
                       "mixtures and exports say \"unknown\""]


def test_curate_writes_the_curation_page_and_the_index_and_says_what_to_run_next(curated_slice):
    workspace, result = curated_slice
    report, index = published(workspace) / "manifest" / "report.html", workspace / "index.html"
    assert f"Report: {report}\nIndex:  {index}\nNext: `loom -w " in result.stdout
    assert "mix build NAME` (a mixture of" in result.stdout
    assert report.is_file() and 'manifest/report.html">the curation report</a>' in index.read_text()


def test_the_client_checks_the_filters_options_without_loading_spacy(tmp_path, slice_sources, slice_tokenizer):
    """Planning builds every source's filters to check their options (a bad one stops the job before a cluster
    starts: test_bad_input) without the word tokenizer they share: spaCy loads on the workers alone (it took the
    client ~2 s of every curate)."""
    code = ("import sys; from pathlib import Path; from base.workspace import Workspace; "
            "from curation.config import load_config; from curation.job import plan_job; "
            f"shards, _ = plan_job(load_config(Path({str(slice_sources)!r})), Workspace(Path({str(tmp_path)!r})), "
            f"Path({str(slice_tokenizer)!r})); print(len(shards), 'spacy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["7", "False"]
