"""`loom show INPUT#RECORD` (and a doc id) on the curated slice: a kept record, an exact and a near duplicate and a
removed one, each against what the funnel, the manifest and the input itself hold; an unknown record, input or
doc id in one line with exit 2."""

import gzip
import json
import re

import pyarrow.parquet as pq
import pytest

import loom
from helpers import run_loom
from loom.api.show import NOT_SAMPLED, TOKENS_SHOWN


@pytest.fixture(scope="module")
def api(curated_slice):
    return loom.open(curated_slice[0])


def rows(api, query: str, *params) -> list[dict]:
    return api.sql(query.format(*params)).to_pylist()


def test_a_kept_record_prints_its_text_scores_duplicates_and_tokens(curated_slice, api):
    """The planted exact duplicate's first copy, in docs: kept, its copy in the other shard."""
    kept, copy = rows(api, """SELECT * FROM funnel WHERE source = 'docs' AND doc_id IN (
                                  SELECT doc_id FROM funnel WHERE fate = 'duplicate' AND source = 'docs')
                              ORDER BY fate DESC""")
    document = rows(api, "SELECT * FROM doc_stats WHERE id = '{}'", kept["doc_id"])[0]
    text, ids = api.sql(f"SELECT text, input_ids FROM documents WHERE id = '{kept['doc_id']}'").to_pylist()[0].values()
    where = f"{kept['input']}#{kept['record']}"
    out = run_loom("-w", curated_slice[0], "show", where).stdout
    assert out.startswith(f"Record {where}\n  source   docs, shard {kept['shard']}\n  doc id   {kept['doc_id']}\n"
                          "  verdict  kept\n")
    assert f"curated  {document['shard']}, row {document['row']}" in out
    assert f"Extracted text ({len(text):,} characters)\n  {text.splitlines()[0]}" in out
    assert f"language  {document['lang']} (score {document['lang_score']:.3f})" in out
    assert f"records with the same doc id:\n    {copy['input']}#{copy['record']} duplicate" in out
    assert f"{document['n_tokens']:,} tokens (EOS included); the first {TOKENS_SHOWN}: " \
           f"{' '.join(map(str, ids[:TOKENS_SHOWN]))}\n  decoded: " in out
    story = json.loads(run_loom("-w", curated_slice[0], "show", kept["doc_id"], "--json").stdout)  # by doc id
    assert (story["where"], story["text"], story["tokens"]) == (where, text[:2000], ids[:TOKENS_SHOWN])


def test_an_exact_duplicate_shows_its_raw_line_and_the_copy_that_was_kept(api, monkeypatch):
    duplicate = rows(api, "SELECT * FROM funnel WHERE source = 'docs' AND fate = 'duplicate'")[0]
    kept = rows(api, "SELECT * FROM funnel WHERE doc_id = '{}' AND fate = 'kept'", duplicate["doc_id"])[0]
    monkeypatch.chdir(duplicate["input"].rsplit("/", 2)[0])  # the input typed relative to the current folder
    story = api.show(f"docs/../docs/{duplicate['input'].rsplit('/', 1)[1]}#{duplicate['record']}")
    assert (story.input, story.record, story.fate, story.stage) == (duplicate["input"], duplicate["record"],
                                                                    "duplicate", duplicate["stage"])
    assert story.kept_copy == f"{kept['input']}#{kept['record']}" and story.detail == duplicate["detail"]
    with gzip.open(duplicate["input"], "rb") as fh:
        line = fh.read()[duplicate["record"]:].split(b"\n", 1)[0]
    assert story.raw == line[:400].decode("utf-8") and story.raw.startswith('{"')


def test_a_near_duplicate_names_its_clusters_survivor(api):
    near = rows(api, "SELECT * FROM funnel WHERE stage = 'minhash_dedup' ORDER BY record LIMIT 1")[0]
    survivor = rows(api, "SELECT * FROM funnel WHERE doc_id = '{}'", near["dup_cluster"])[0]
    story = api.show(f"{near['input']}#{near['record']}")
    assert story.verdict == f"duplicate at minhash_dedup: near_duplicate ({near['detail']})"
    assert story.dup_cluster == near["dup_cluster"] and story.kept_copy == f"{survivor['input']}#{survivor['record']}"
    row = pq.read_table(near["input"]).slice(near["record"], 1).to_pylist()[0]
    assert story.raw == json.dumps(row, ensure_ascii=False)[:400]  # the Parquet row, its columns as JSON


def test_a_folder_formats_file_is_its_one_record_and_shows_the_files_start(api):
    page = rows(api, "SELECT * FROM funnel WHERE source = 'web' ORDER BY input LIMIT 1")[0]
    story = api.show(page["input"])  # no #RECORD: the file is the record
    assert (story.record, story.doc_id, story.fate) == (page["record"], page["doc_id"], page["fate"])
    with open(page["input"], "rb") as fh:
        assert story.raw == fh.read(400).decode("utf-8", "ignore")  # a character cut at the end left out


def test_a_removed_record_shows_its_sampled_text_and_what_the_filter_measured(api):
    sampled = rows(api, "SELECT * FROM removed WHERE stage = 'gopher_quality' ORDER BY shard, record LIMIT 1")[0]
    story = api.show(f"{sampled['input']}#{sampled['record']}")
    assert story.text == sampled["text"][:2000] and story.fate == "filtered"
    funnel = rows(api, "SELECT * FROM funnel WHERE input = '{}' AND record = {}",
                  sampled["input"], sampled["record"])[0]
    assert re.fullmatch(r"\w+ [0-9.]+ [<>] [0-9.]+", funnel["detail"])  # the filter's value against its threshold
    assert story.verdict == f"filtered at gopher_quality: {funnel['reason']} ({funnel['detail']})"
    assert story.detail == sampled["detail"]
    assert story.tokens is None and story.curated_part is None
    unsampled = rows(api, """SELECT f.input, f.record FROM funnel f ANTI JOIN removed r USING (input, record)
                             WHERE f.fate = 'filtered' LIMIT 1""")
    assert unsampled  # fortunes loses more records to gopher_short_doc than the sample keeps of one reason
    assert api.show(f"{unsampled[0]['input']}#{unsampled[0]['record']}").text_note == NOT_SAMPLED


def test_an_unknown_record_input_or_doc_id_is_one_line_naming_it(curated_slice, api):
    some = rows(api, "SELECT input, record FROM funnel WHERE source = 'code' LIMIT 1")[0]
    typo = some["input"].replace(".parquet", ".parquett")
    for target, first_words in [(f"{some['input']}#999999999", f"error: unknown record {some['input']}#999999999: "),
                                (f"{typo}#0", f"error: unknown input {typo}: "),
                                ("0" * 32, f"error: unknown doc id {'0' * 32}: ")]:
        result = run_loom("-w", curated_slice[0], "show", target, check=False)
        assert result.returncode == 2 and result.stderr.startswith(first_words), result.stderr
        assert 'loom sql "SELECT' in result.stderr and len(result.stderr.splitlines()) == 1
        if target.startswith(typo):
            assert f"(did you mean '{some['input']}'?)" in result.stderr
