"""Decontamination: passages of an eval set planted into the bundled corpora are found and nothing else is; through
a real `loom curate`, the planted documents end as `contaminated` with their evidence, and a changed eval set
redoes the stage."""

import json
import random
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from curation.config import load_sources
from curation.decontamination_config import DecontaminationConfig, EvalSetConfig
from curation.decontamination import eval_filter, load_filter, ngram_hash, overlap, words
from curation.samples import source_texts
from curation.steps.normalize import normalize_text
from helpers import EXAMPLES, published, run_loom
from base.small_files import read_records
from base.workspace import Workspace
from reports.card import card_markdown

JARGON = EXAMPLES / "decontamination" / "jargon.jsonl"
CONFIG = DecontaminationConfig(evals=(EvalSetConfig("jargon", (str(JARGON),)),))
PLANTED = 30  # verbatim passages, and as many lightly edited ones
EDIT_RATE = 0.05


def jargon_texts() -> list[str]:
    return [normalize_text(r["text"]) for r in read_records(JARGON, "text")]


def edited(passage: str, vocabulary: list[str], rng: random.Random) -> str:
    """The passage with EDIT_RATE of its words (at least one) replaced by words of the corpora."""
    words = passage.split(" ")
    for i in rng.sample(range(len(words)), max(1, round(EDIT_RATE * len(words)))):
        words[i] = rng.choice(vocabulary)
    return " ".join(words)


def planted(document: str, passage: str, rng: random.Random) -> str:
    """The passage as a paragraph of its own, between two of the document's (or at either end)."""
    paragraphs = document.split("\n\n")
    at = rng.randrange(len(paragraphs) + 1)
    return "\n\n".join(paragraphs[:at] + [passage] + paragraphs[at:])


@pytest.fixture(scope="module")
def bundled_documents() -> list[str]:
    """Every document of the bundled corpora, read as curation reads them (5,262 documents)."""
    return [text for source in load_sources(EXAMPLES / "sources.toml") for text in source_texts(source)]


def test_planted_passages_are_found_and_no_other_document_is(bundled_documents):
    evals = jargon_texts()
    bloom, _ = eval_filter(evals, CONFIG.ngram, CONFIG.false_positive_rate)
    rng = random.Random(21)
    vocabulary = sorted({w for text in bundled_documents[:2000] for w in text.split()})
    targets = rng.sample(range(len(bundled_documents)), 2 * PLANTED)
    passages = rng.sample(evals, 2 * PLANTED)
    results = []
    for k, (target, passage) in enumerate(zip(targets, passages)):
        leaked = passage if k < PLANTED else edited(passage, vocabulary, rng)
        result = overlap(planted(bundled_documents[target], leaked, rng), bloom, CONFIG)
        results.append(result)
        assert len(result.span) <= 200 and (not result.matched or result.span.split()[0] in leaked)
    verbatim = sum(r.fraction >= CONFIG.threshold for r in results[:PLANTED])
    edits = sum(r.fraction >= CONFIG.threshold for r in results[PLANTED:])
    others = [overlap(text, bloom, CONFIG) for i, text in enumerate(bundled_documents) if i not in set(targets)]
    false_positives = sum(o.fraction >= CONFIG.threshold for o in others)
    print(f"verbatim {verbatim}/{PLANTED}, edited {edits}/{PLANTED} (fractions "
          f"{sorted(round(r.fraction, 2) for r in results[PLANTED:])[:5]}...), false positives {false_positives} of "
          f"{len(others)} (largest other fraction {max(o.fraction for o in others):.3f})")
    assert verbatim == PLANTED and all(r.fraction == 1.0 for r in results[:PLANTED])
    assert edits >= 27
    assert false_positives == 0


def test_the_ngram_hash_is_the_same_in_every_process_and_fits_rbloom():
    code = "from curation.decontamination import ngram_hash; print(ngram_hash('eat flaming death non aryan mongrels'))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    value = ngram_hash("eat flaming death non aryan mongrels")
    assert int(other) == value and -2**127 <= value < 2**127
    assert {ngram_hash(f"w{i}") < 0 for i in range(64)} == {True, False}  # both halves of the range are used


def test_a_filter_read_back_from_its_bytes_answers_the_same():
    texts = jargon_texts()
    bloom, capacity = eval_filter(texts, 8, 1e-4)
    again = load_filter(bloom.save_bytes())
    assert capacity == sum(max(0, len(words(t)[0]) - 7) for t in texts)  # every 8-gram of the set
    assert overlap(texts[3], again, CONFIG).fraction == overlap(texts[3], bloom, CONFIG).fraction == 1.0


def test_document_scope_measures_the_whole_document(bundled_documents):
    evals = jargon_texts()
    bloom, _ = eval_filter(evals, 8, 1e-4)
    long_document = max(bundled_documents[:800], key=len)
    text = planted(long_document, evals[0], random.Random(1))
    by_paragraph = overlap(text, bloom, CONFIG)
    whole = overlap(text, bloom, DecontaminationConfig(evals=CONFIG.evals, scope="document"))
    assert by_paragraph.fraction == 1.0 and whole.fraction < 0.2
    assert whole.matched == by_paragraph.matched and whole.ngrams > by_paragraph.ngrams


def test_a_passage_on_a_line_of_its_own_in_a_page_of_one_line_paragraphs_is_found(bundled_documents):
    """HTML extraction writes a paragraph per line, no blank line between: a leaked line is judged by itself."""
    evals = jargon_texts()
    bloom, _ = eval_filter(evals, 8, 1e-4)
    passage = next(t for t in evals if len(t.split()) >= 40).replace("\n", " ")
    page = next(t for t in bundled_documents if "\n\n" not in t and t.count("\n") >= 20 and len(t.split()) > 400)
    lines = page.split("\n")
    text = "\n".join(lines[:10] + [passage] + lines[10:])
    assert overlap(text, bloom, CONFIG).fraction == 1.0
    assert overlap(page, bloom, CONFIG).fraction < CONFIG.threshold


# ---- through a real `loom curate` ----

def write_contaminated_source(root, evals: list[str]) -> None:
    """Source `docs`: 30 real documents, three with a Jargon passage planted (one edited), and an exact copy of
    the first planted one; the eval set copied into the root, and a sources.toml with [decontaminate]."""
    docs = [t for t in source_texts(load_sources(EXAMPLES / "sources.toml")[1], 30)]
    rng = random.Random(4)
    docs[3] = planted(docs[3], evals[10], rng)
    docs[11] = planted(docs[11], evals[20], rng)
    docs[17] = planted(docs[17], edited(evals[30], sorted(set(docs[0].split())), rng), rng)
    docs.append(docs[3])
    (root / "docs.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in docs), encoding="utf-8")
    shutil.copy(JARGON, root / "jargon.jsonl")
    (root / "sources.toml").write_text("""
[[source]]
name = "docs"
format = "jsonl"
paths = ["docs.jsonl"]
filters = []

[decontaminate]
[[decontaminate.eval]]
name = "jargon"
paths = ["jargon.jsonl"]
""", encoding="utf-8")


@pytest.fixture(scope="module")
def decontaminated(tmp_path_factory, slice_tokenizer):
    root = tmp_path_factory.mktemp("decon")
    write_contaminated_source(root, jargon_texts())
    ws = root / "ws"
    run_loom("-w", ws, "curate", "--sources", root / "sources.toml", "--tokenizer", slice_tokenizer, "--workers", 1)
    return root, ws


def test_planted_documents_are_removed_as_contaminated_with_their_evidence(decontaminated):
    root, ws = decontaminated
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    assert len(funnel) == 31 and len({row["record"] for row in funnel}) == 31  # every input record, once
    contaminated = sorted(row["record"] for row in funnel if row["fate"] == "contaminated")
    lines = (root / "docs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    offsets = [sum(len(line.encode()) for line in lines[:i]) for i in range(len(lines))]
    assert contaminated == [offsets[3], offsets[11], offsets[17], offsets[30]]  # the copy too, not a duplicate
    assert {(row["stage"], row["reason"]) for row in funnel if row["fate"] == "contaminated"} == {
        ("decontaminate", "eval:jargon")}
    evidence = pq.read_table(published(ws) / "manifest" / "contamination.parquet").to_pylist()
    assert sorted(row["record"] for row in evidence) == contaminated
    assert all(row["eval_set"] == "jargon" and row["fraction"] >= 0.5 and 0 < len(row["span"]) <= 200
               and row["input"].endswith("docs.jsonl") and row["doc_id"] for row in evidence)
    curation = json.loads((published(ws) / "manifest" / "curation.json").read_text())
    assert curation["decontamination"]["eval_sets"][0]["false_positive_rate"] == 1e-4
    assert curation["decontamination"]["eval_sets"][0]["ngrams"] > 10_000


def test_sql_and_the_curation_report_show_the_contamination(decontaminated):
    _, ws = decontaminated
    out = run_loom("-w", ws, "sql", "SELECT eval_set, count(*) AS n FROM contamination GROUP BY 1", "--format",
                   "json").stdout
    assert json.loads(out) == [{"eval_set": "jargon", "n": 4}]
    run_loom("-w", ws, "report", "curation")
    page = (published(ws) / "manifest" / "report.html").read_text(encoding="utf-8")
    assert "<h2>Decontamination</h2>" in page and 'id="contamination-sets"' in page
    assert page.count("contamination-span") >= 1
    card = card_markdown(Workspace(ws))  # `loom card`: the set's contaminated documents, as the manifest counts them
    assert "| eval set | contaminated documents | set's documents |" in card and "\n| jargon | 4 | " in card


def stage_finished(ws, stage: str) -> float:
    return json.loads((ws / "work" / stage / "_done").read_text())["finished"]


def test_a_rerun_redoes_nothing_and_a_changed_eval_set_redoes_the_stage(decontaminated, slice_tokenizer):
    root, ws = decontaminated
    before = {stage: stage_finished(ws, stage) for stage in ("decontaminate", "exact_dedup")}
    curate = ("-w", ws, "curate", "--sources", root / "sources.toml", "--tokenizer", slice_tokenizer, "--workers", 1)
    run_loom(*curate)
    assert {stage: stage_finished(ws, stage) for stage in before} == before
    with (root / "jargon.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": 999, "text": "a new entry of the set"}) + "\n")
    run_loom(*curate)
    assert all(stage_finished(ws, stage) > before[stage] for stage in before)


def test_without_the_table_the_stage_is_left_out(curated_slice):
    workspace, _ = curated_slice
    assert not (workspace / "work" / "decontaminate").exists()
    assert pq.read_table(published(workspace) / "manifest" / "contamination.parquet").num_rows == 0


GOOD_EVAL = 'paths = ["jargon.jsonl"]'
BAD_TABLES = [
    ("ngram = 0", GOOD_EVAL, "`ngram` must be a whole number"),
    ("threshold = 1.5", GOOD_EVAL, "`threshold` must be a number in (0, 1]"),
    ('scope = "sentence"', GOOD_EVAL, '`scope` must be "paragraph" or "document"'),
    ("colour = 1", GOOD_EVAL, "unknown key 'colour'"),
    ("", 'paths = ["missing.jsonl"]', "eval set 'jargon': path 'missing.jsonl' matches no file"),
    ("", GOOD_EVAL + '\ntext = "question"', "record 1 of"),  # and names the field; found before any compute
    ("", 'paths = ["empty.jsonl"]', "eval set 'jargon' has no text"),
]


@pytest.mark.parametrize("line, eval_lines, message", BAD_TABLES)
def test_a_bad_decontaminate_table_stops_with_one_line(tmp_path, slice_tokenizer, line, eval_lines, message):
    (tmp_path / "ok.jsonl").write_text('{"text": "hello"}\n')
    (tmp_path / "jargon.jsonl").write_text('{"text": "hello"}\n')
    (tmp_path / "empty.jsonl").write_text('{"text": ""}\n')
    (tmp_path / "sources.toml").write_text(
        f'[[source]]\nname = "a"\nformat = "jsonl"\npaths = ["ok.jsonl"]\n\n[decontaminate]\n{line}\n'
        f'[[decontaminate.eval]]\nname = "jargon"\n{eval_lines}\n')
    result = run_loom("-w", tmp_path / "ws", "curate", "--sources", tmp_path / "sources.toml", "--tokenizer",
                      slice_tokenizer, check=False, timeout=60)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.stderr
    assert not (tmp_path / "ws" / "work").exists()
