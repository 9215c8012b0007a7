"""Annotators ([[annotate]]): a fastText model and a Python scorer in a temporary package (on the PYTHONPATH of
`loom curate` and so of its Dask workers) score the slice: their columns in curated rows and `documents`, a `min`
that removes documents with their scores in the funnel, buckets at the corpus's quantiles, curation.json's
record; a scorer that answers wrong stops the job in one line; an edited scorer redoes `prepare`, an unchanged
rerun does not; and every config check, one line each."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from helpers import REPO, compiled, published, run_loom, write_spec
from report_pages import needs_chromium, open_page
from tiny_classifier import save_tiny_classifier
from base.digests import file_digest
from base.errors import UserError
from curation.config import load_config
from curation.steps.annotate.step import checked_scores

SCORERS = '''
import zlib


def edu(texts):
    """A made-up score in [0, 4), spread evenly: the text's CRC."""
    return [zlib.crc32(text.encode()) % 1000 / 250 for text in texts]


def short(texts):
    return [1.0] * (len(texts) - 1)


class Constant:
    def __call__(self, texts):
        return [1.0] * len(texts)


class Unloadable:
    def __init__(self):
        raise OSError("weights.bin\\nis missing")
'''
MIN_EDU = 0.5
EDU_BUCKETS = 4
ANNOTATE = f'''
[[annotate]]
name = "edu"
kind = "python"
function = "annot_pkg.scorers:edu"
min = {MIN_EDU}
buckets = {EDU_BUCKETS}

[[annotate]]
name = "hi"
kind = "fasttext"
model = "hi.bin"
label = "hi"
sources = ["docs", "code"]

[[annotate]]
name = "tiny"
kind = "transformers"
model = "tiny-classifier"
label = "hi"
sources = ["web"]
batch_size = 4
'''


def edu_score(text: str) -> float:
    return zlib.crc32(text.encode()) % 1000 / 250


def write_package(root: Path) -> dict:
    """The annotators' package under `root`; returns the environment that puts it on the workers' path."""
    (root / "annot_pkg").mkdir(parents=True)
    (root / "annot_pkg" / "__init__.py").write_text("")
    (root / "annot_pkg" / "scorers.py").write_text(SCORERS)
    return {"PYTHONPATH": os.pathsep.join([str(root), str(REPO), os.environ.get("PYTHONPATH", "")])}


TRAIN_FASTTEXT = """
import sys
import fasttext

fasttext.FastText.eprint = lambda *args, **kwargs: None
fasttext.train_supervised(sys.argv[1], epoch=10, lr=0.3, wordNgrams=2, dim=8, minCount=2, bucket=10_000, seed=0,
                          thread=1, verbose=0).save_model(sys.argv[2])
"""


def write_fasttext_model(path: Path) -> Path:
    """A tiny supervised fastText model with the labels hi and lo. Trained in a process of its own, tried again if
    it fails: on so few lines this fastText build now and then says "Encountered NaN", more often in a process
    that has done other work (word bigrams and minCount 2, as `loom quality train`, make it rare)."""
    lines = [f"__label__hi clear prose about topic {i} with plain words" for i in range(20)]
    lines += [f"__label__lo buy now cheap click offer {i}" for i in range(20)]
    (path.parent / "train.txt").write_text("\n".join(lines) + "\n")
    for _ in range(5):
        trained = subprocess.run([sys.executable, "-c", TRAIN_FASTTEXT, str(path.parent / "train.txt"), str(path)],
                                 capture_output=True, text=True)
        if trained.returncode == 0:
            return path
    raise AssertionError(f"fastText failed to train 5 times: {trained.stderr}")


@pytest.fixture(scope="module")
def annotated(tmp_path_factory, slice_sources, slice_tokenizer):
    """The slice curated with the two annotators: (workspace, sources.toml, environment, curate's stdout)."""
    root = tmp_path_factory.mktemp("annotate")
    shutil.copytree(slice_sources.parent, root / "slice")
    sources = root / "slice" / "sources.toml"
    write_fasttext_model(root / "slice" / "hi.bin")
    save_tiny_classifier(root / "slice" / "tiny-classifier")
    sources.write_text(sources.read_text() + ANNOTATE)
    env = write_package(root / "pkg")
    result = run_loom("-w", root / "ws", "curate", "--sources", sources, "--tokenizer", slice_tokenizer,
                      "--workers", 2, env=env)
    return root / "ws", sources, env, result.stdout


def curated(ws: Path):
    return pq.read_table(published(ws) / "curated").to_pandas()


def test_annotators_add_a_column_to_curated_rows_and_to_documents(annotated):
    ws, _, env, _ = annotated
    rows = curated(ws)
    schema = pq.read_schema(next((published(ws) / "curated" / "docs").glob("*.parquet")))
    assert str(schema.field("edu").type) == "float" and str(schema.field("hi").type) == "float"
    assert str(schema.field("edu_bucket").type) == "int16" and "hi_bucket" not in schema.names
    assert rows["edu"].notna().all()
    assert np.allclose(rows["edu"], [edu_score(t) for t in rows["text"]], atol=1e-6)  # the scorer's own numbers
    covered = rows["source"].isin(["docs", "code"])
    assert rows.loc[covered, "hi"].between(0, 1).all() and rows.loc[~covered, "hi"].isna().all()
    shown = run_loom("-w", ws, "sql", "--format", "json", "SELECT source, count(*) AS n, count(edu) AS edu, "
                     "count(hi) AS hi, count(edu_bucket) AS buckets FROM documents GROUP BY 1 ORDER BY 1",
                     env=env).stdout
    expected = [{"source": s, "n": n, "edu": n, "hi": n if s in ("docs", "code") else 0, "buckets": n}
                for s, n in sorted(rows.groupby("source").size().items())]
    assert json.loads(shown) == expected


def test_a_min_removes_the_documents_below_it_with_their_scores_in_the_funnel(annotated):
    ws, _, _, printed = annotated
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pandas()
    removed = funnel[funnel["stage"] == "annotate"]
    assert len(removed) > 0 and set(removed["reason"]) == {"annotate:edu"} and set(removed["fate"]) == {"filtered"}
    values = [float(re.fullmatch(rf"edu (\S+) < min {MIN_EDU}", d).group(1)) for d in removed["detail"]]
    assert max(values) < MIN_EDU
    reached = len(removed) + int((funnel["fate"] == "kept").sum()) + int((funnel["fate"] == "duplicate").sum())
    assert 0.04 < len(removed) / reached < 0.25  # about MIN_EDU / 4 of the documents the annotator scored
    assert curated(ws)["edu"].min() >= MIN_EDU
    assert "annotate:edu" in printed  # among the top removal reasons


def test_buckets_cut_the_scores_at_the_corpus_quantiles(annotated):
    ws, *_ = annotated
    info = json.loads((published(ws) / "manifest" / "curation.json").read_text())
    cuts = next(a for a in info["annotators"] if a["name"] == "edu")["cut_points"]
    assert len(cuts) == EDU_BUCKETS - 1 and cuts == sorted(cuts)
    rows = curated(ws)
    edu = rows["edu"].to_numpy(np.float64)
    assert (rows["edu_bucket"].to_numpy() == np.searchsorted(cuts, edu, side="right")).all()
    counts = rows["edu_bucket"].value_counts().reindex(range(EDU_BUCKETS), fill_value=0)
    assert (abs(counts - len(rows) / EDU_BUCKETS) <= 0.1 * len(rows) / EDU_BUCKETS + 2).all(), counts.to_dict()


def test_a_transformers_annotator_scores_every_document_of_its_source_as_the_model_does(annotated):
    from curation.steps.annotate import ANNOTATORS, AnnotatorConfig

    ws, sources, _, _ = annotated
    rows = curated(ws)
    web = rows[rows["source"] == "web"]
    assert len(web) > 4 and rows.loc[rows["source"] != "web", "tiny"].isna().all()  # more than one batch of 4
    config = AnnotatorConfig("tiny", "transformers", model=str(sources.parent / "tiny-classifier"), label="hi")
    expected = ANNOTATORS["transformers"].load(config).scores(list(web["text"]))
    assert np.allclose(web["tiny"], expected, atol=1e-5) and web["tiny"].between(0, 1).all()
    assert web["tiny"].nunique() > 1


def test_a_mixture_slices_on_an_annotators_bucket_and_the_report_shows_its_histogram(annotated, tmp_path):
    ws, _, env, _ = annotated
    shutil.copytree(ws, tmp_path / "ws", symlinks=True)
    ws = tmp_path / "ws"
    write_spec(ws, "edu", 'seq_len = 16\nglobal_batch = 8\nsteps = 4\n[weights]\n"docs:edu_bucket>=2" = 1\n'
                          '"code:hi>=0.5" = 1\n')
    run_loom("-w", ws, "mix", "build", "edu", env=env)
    plan = pq.read_table(compiled(ws, "edu") / "plan.parquet").to_pylist()
    documents = {row["component"]: row["documents"] for row in plan}
    counted = json.loads(run_loom("-w", ws, "sql", "--format", "json", """
        SELECT count(*) FILTER (source = 'docs' AND edu_bucket >= 2) AS docs,
               count(*) FILTER (source = 'code' AND hi >= 0.5) AS code FROM documents""", env=env).stdout)[0]
    assert 0 < documents["docs:edu_bucket>=2"] <= counted["docs"] and 0 < documents["code:hi>=0.5"] <= counted["code"]
    write_spec(ws, "bad", 'seq_len = 16\nglobal_batch = 8\nsteps = 4\n[weights]\n"web:hi>=0.5" = 1\n')
    refused = run_loom("-w", ws, "mix", "build", "bad", check=False, env=env)
    assert refused.returncode == 2 and "cannot slice on 'hi'" in refused.stderr  # hi does not cover web


@needs_chromium()
def test_the_curation_report_shows_each_annotators_histogram(annotated, tmp_path):
    ws, _, env, _ = annotated
    run_loom("-w", ws, "report", "curation", env=env)
    report = published(ws) / "manifest" / "report.html"
    dom, _ = open_page(report, tmp_path)
    assert sorted(c for c in dom.charts if c.startswith("annotate-edu-")) == [
        f"annotate-edu-{s}" for s in ("code", "docs", "fortunes", "web")]  # a panel per source it covers
    assert all(dom.charts[c] == 12 for c in dom.charts if c.startswith("annotate-"))  # its bins
    assert sorted(c for c in dom.charts if c.startswith("annotate-hi-")) == ["annotate-hi-code", "annotate-hi-docs"]
    removed = dom.tables["annotate-removed"][1:]  # a row per source the min removed from, the count numeric
    assert len(removed) == 4 and all(int(row[2]) > 0 for row in removed)
    assert "edu (python): " in report.read_text() and "bucket cut points" in report.read_text()


def test_curation_json_records_each_annotator(annotated):
    ws, sources, _, _ = annotated
    info = json.loads((published(ws) / "manifest" / "curation.json").read_text())
    edu, hi, _ = info["annotators"]
    assert {k: v for k, v in edu.items() if k != "cut_points"} == {
        "name": "edu", "kind": "python", "sources": ["web", "docs", "code", "fortunes"], "buckets": EDU_BUCKETS,
        "digest": file_digest(sources.parent.parent / "pkg" / "annot_pkg" / "scorers.py")}
    assert hi == {"name": "hi", "kind": "fasttext", "sources": ["docs", "code"], "buckets": 0, "cut_points": [],
                  "digest": file_digest(sources.parent / "hi.bin")}


def tiny_curation(tmp_path: Path, tokenizer: Path, function: str, env: dict):
    """`loom curate` of ten short documents with one Python annotator (exit status not checked). The input is
    written once: its time is in the fingerprints."""
    if not (tmp_path / "tiny.jsonl").exists():
        (tmp_path / "tiny.jsonl").write_text("".join(f'{{"text": "document number {i} about topic {i}"}}\n'
                                                     for i in range(10)))
    sources = tmp_path / "sources.toml"
    sources.write_text('[[source]]\nname = "tiny"\nformat = "jsonl"\npaths = ["tiny.jsonl"]\nfilters = []\n\n'
                       f'[[annotate]]\nname = "score"\nkind = "python"\nfunction = "{function}"\n')
    return run_loom("-w", tmp_path / "ws", "curate", "--sources", sources, "--tokenizer", tokenizer,
                    "--workers", 1, check=False, env=env)


def prepare_markers(ws: Path) -> dict:
    return {p.name: json.loads(p.read_text()) for p in (ws / "work" / "prepare").glob("*/*.done")}


@pytest.mark.slow  # three tiny curates (~11 s); the prepare fingerprint of annotators is tested by default, and an edited plugin step's redo
def test_an_edited_scorer_redoes_prepare_and_an_unchanged_rerun_skips_it(tmp_path, slice_tokenizer):
    env = write_package(tmp_path / "pkg")
    assert tiny_curation(tmp_path, slice_tokenizer, "annot_pkg.scorers:Constant", env).returncode == 0
    first = prepare_markers(tmp_path / "ws")
    assert tiny_curation(tmp_path, slice_tokenizer, "annot_pkg.scorers:Constant", env).returncode == 0
    assert prepare_markers(tmp_path / "ws") == first  # skipped: the same fingerprint, the same `finished`
    scorers = tmp_path / "pkg" / "annot_pkg" / "scorers.py"
    scorers.write_text(scorers.read_text() + "\n# tuned\n")
    assert tiny_curation(tmp_path, slice_tokenizer, "annot_pkg.scorers:Constant", env).returncode == 0
    edited = prepare_markers(tmp_path / "ws")
    assert edited.keys() == first.keys()
    assert all(edited[k]["fingerprint"] != first[k]["fingerprint"] for k in first)
    values = pq.read_table(published(tmp_path / "ws") / "curated", columns=["score"])["score"].to_pylist()
    assert values == [1.0] * 10  # a class, made once per worker, called with each batch


def test_a_scorer_that_answers_wrong_stops_the_job_in_one_line(tmp_path, slice_tokenizer):
    result = tiny_curation(tmp_path, slice_tokenizer, "annot_pkg.scorers:short", write_package(tmp_path / "pkg"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == ["error: annotator 'score': its scorer returned 9 scores for 10 texts; "
                                          "return one float per text, in order"]


@pytest.mark.slow  # a curate whose workers start and fail (~6 s); a scorer answering wrong stops a curate by default
def test_a_scorer_that_fails_to_load_on_a_worker_stops_the_job_in_one_line(tmp_path, slice_tokenizer):
    result = tiny_curation(tmp_path, slice_tokenizer, "annot_pkg.scorers:Unloadable", write_package(tmp_path / "pkg"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == ["error: annotator 'score': its scorer failed to load on a worker (OSError: "
                                          "weights.bin is missing); fix it (a class is made with no arguments, once "
                                          "per worker process)"]


class Answers:
    def __init__(self, answer):
        self.answer = answer

    def scores(self, texts):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize("answer, said", [
    (ValueError("no model\nloaded"), "its scorer raised ValueError: no model loaded; fix the scorer"),
    ([1.0], "its scorer returned 1 scores for 2 texts"),
    (None, "its scorer raised TypeError"),
    ([1.0, float("nan")], "its scorer returned nan, not a finite number"),
    ([1.0, "high"], "its scorer returned 'high', not a finite number"),
    ([1.0, float("inf")], "its scorer returned inf, not a finite number"),
])
def test_a_scorer_answering_wrong_is_one_line_naming_the_annotator(answer, said):
    from curation.steps.annotate.kinds import AnnotatorConfig

    with pytest.raises(UserError) as caught:
        checked_scores(AnnotatorConfig(name="edu", kind="python"), Answers(answer), ["a", "b"])
    message = str(caught.value)
    assert message.startswith("annotator 'edu': ") and said in message and "\n" not in message
    assert checked_scores(AnnotatorConfig(name="edu", kind="python"), Answers(np.array([1, 2.5])), ["a", "b"]) == [1.0, 2.5]


@pytest.fixture(scope="module")
def config_folder(tmp_path_factory):
    """A folder with a fastText model (labels hi, lo), a file that is not one, and the scorers' package on
    sys.path (what `load_config` imports to check a Python annotator)."""
    root = tmp_path_factory.mktemp("annotate-config")
    write_fasttext_model(root / "hi.bin")
    (root / "notes.bin").write_text("not a model")
    write_package(root / "pkg")
    import sys

    sys.path.insert(0, str(root / "pkg"))
    yield root
    sys.path.remove(str(root / "pkg"))


def load_with(folder: Path, tables: str):
    path = folder / "sources.toml"
    path.write_text('[[source]]\nname = "web"\nformat = "jsonl"\npaths = ["x.jsonl"]\n\n'
                    + textwrap.dedent(tables))
    return load_config(path)


GOOD_PYTHON = 'kind = "python"\nfunction = "annot_pkg.scorers:edu"\n'


@pytest.mark.parametrize("table, said", [
    ('[[annotate]]\nname = "Edu"\n' + GOOD_PYTHON, "`name` = 'Edu' is not a column name"),
    ('[[annotate]]\nname = "quality"\n' + GOOD_PYTHON, "annotator 'quality': curated rows already have a column"),
    ('[[annotate]]\nname = "n_tokens"\n' + GOOD_PYTHON, "annotator 'n_tokens': curated rows already have a column"),
    ('[[annotate]]\nname = "edu_bucket"\n' + GOOD_PYTHON, "names ending in '_bucket' are the buckets' columns"),
    ('[[annotate]]\nname = "edu"\n' + GOOD_PYTHON + '[[annotate]]\nname = "edu"\n' + GOOD_PYTHON,
     "annotator 'edu' is declared twice"),
    ('[[annotate]]\nname = "edu"\nkind = "bert"\n', "annotator 'edu': `kind` = 'bert' is unknown; use one of fasttext, python"),
    ('[[annotate]]\nname = "edu"\n' + GOOD_PYTHON + 'label = "hi"\n', "annotator 'edu': unknown key 'label'"),
    ('[[annotate]]\nname = "edu"\nkind = "python"\n', "annotator 'edu': kind python needs `function`"),
    ('[[annotate]]\nname = "edu"\nkind = "fasttext"\nmodel = "hi.bin"\n', "annotator 'edu': kind fasttext needs `label`"),
    ('[[annotate]]\nname = "edu"\n' + GOOD_PYTHON + 'sources = ["wbe"]\n',
     "annotator 'edu': `sources` names 'wbe' (did you mean 'web'?), which is no [[source]]; use any of web"),
    ('[[annotate]]\nname = "edu"\n' + GOOD_PYTHON + 'min = 3\nmax = 2\n', "annotator 'edu': `min` (3.0) is above `max` (2.0)"),
    ('[[annotate]]\nname = "edu"\n' + GOOD_PYTHON + 'min = "3"\n', "annotator 'edu': `min` must be a number"),
    ('[[annotate]]\nname = "edu"\n' + GOOD_PYTHON + 'buckets = 1\n', "annotator 'edu': `buckets` must be 0 (none) or"),
    ('[[annotate]]\nname = "edu"\n' + GOOD_PYTHON + 'buckets = 101\n', "annotator 'edu': `buckets` must be 0 (none) or"),
    ('[[annotate]]\nname = "edu"\n' + GOOD_PYTHON + 'batch_size = 0\n', "annotator 'edu': `batch_size` must be a whole number"),
    ('[[annotate]]\nname = "edu"\nkind = "fasttext"\nmodel = "notes.bin"\nlabel = "hi"\n',
     "annotator 'edu': `model` = "),
    ('[[annotate]]\nname = "edu"\nkind = "fasttext"\nmodel = "missing.bin"\nlabel = "hi"\n',
     "cannot be read"),
    ('[[annotate]]\nname = "edu"\nkind = "fasttext"\nmodel = "hi.bin"\nlabel = "high"\n',
     "annotator 'edu': `label` = 'high' is not a label of the model; use one of "),
    ('[[annotate]]\nname = "edu"\nkind = "python"\nfunction = "annot_pkg.nothere:edu"\n',
     "annotator 'edu': `function`: 'annot_pkg.nothere:edu' does not import"),
    ('[[annotate]]\nname = "edu"\nkind = "python"\nfunction = "annot_pkg.scorers:missing"\n',
     "annotator 'edu': `function`: module 'annot_pkg.scorers' has no 'missing'"),
    ('[[annotate]]\nname = "edu"\nkind = "python"\nfunction = "annot_pkg.scorers:zlib"\n',
     "'annot_pkg.scorers:zlib' is a module, not a function or class"),
])
def test_each_wrong_setting_is_one_line_naming_the_annotator_and_the_fix(config_folder, table, said):
    with pytest.raises(UserError) as caught:
        load_with(config_folder, table)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_a_good_table_is_read_with_its_model_resolved_against_the_root(config_folder):
    config = load_with(config_folder, '''
        [[annotate]]
        name = "hi"
        kind = "fasttext"
        model = "hi.bin"
        label = "__label__hi"
        min = 0
        buckets = 5
    ''')
    (hi,) = config.annotators
    assert (hi.model, hi.label, hi.min, hi.max, hi.buckets, hi.batch_size, hi.sources) == \
        (str(config_folder / "hi.bin"), "__label__hi", 0.0, None, 5, 64, ())
    assert load_with(config_folder, "").annotators == ()


def test_prepare_fingerprints_annotators_but_not_their_buckets_and_is_unchanged_without_them(config_folder, tmp_path):
    from base.workspace import Workspace
    from curation.job import JobContext
    from curation.stages.annotate_buckets import ANNOTATE_BUCKETS
    from curation.stages.prepare import PREPARE

    def context(tables: str) -> JobContext:
        return JobContext(workspace=Workspace(tmp_path), config=load_with(config_folder, tables), tokenizer="")

    table = '[[annotate]]\nname = "edu"\n' + GOOD_PYTHON
    plain, annotated, bucketed = context(""), context(table), context(table + "buckets = 3\n")
    assert PREPARE.inputs(plain) == "" and not ANNOTATE_BUCKETS.enabled(plain)  # as before annotators
    assert PREPARE.inputs(annotated) != "" and not ANNOTATE_BUCKETS.enabled(annotated)
    assert PREPARE.inputs(bucketed) == PREPARE.inputs(annotated) and ANNOTATE_BUCKETS.enabled(bucketed)
    assert PREPARE.inputs(context(table + "min = 1\n")) != PREPARE.inputs(annotated)
