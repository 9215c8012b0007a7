"""The fastText quality classifier: training and its card, scoring inside the Dask job, selection by score."""

import gzip
import json
import re
from collections import Counter

import numpy as np
import pyarrow.parquet as pq
import pytest

from curation.config import SourceConfig, load_config
from curation.job import plan_job
from curation.quality import QualityModel, roc_auc
from curation.samples import quality_examples, source_texts
from helpers import EXAMPLES, FORTUNES_FILTERS, QUALITY_TEST_CUTOFF, published, run_loom
from base.errors import UserError
from base.workspace import Workspace

NEGATIVE_SHARD = EXAMPLES / "corpora" / "fortunes" / "fortunes-00000.jsonl.zst"
HELD_OUT_NEGATIVE = EXAMPLES / "corpora" / "fortunes" / "fortunes-00001.jsonl.zst"
# Measured with seeds 0-4 on the bundled corpora (docs+code vs fortunes shard 0), the full float model:
# validation ROC AUC 0.9986-1.0000, held-out English handbook pages vs held-out fortunes 0.9939-0.9958;
# quantized (the default, bench/quality_model.py, [quality] table, seeds 0-2): 2.69 MB, validation AUC
# -0.00017 from the full model (worst seed -0.00051), held-out -0.00063. The bounds leave room for
# fastText's platform differences, and sit far above what a length-blind or untrained model gets (0.5).
MIN_VALIDATION_AUC = 0.99
MIN_HELD_OUT_AUC = 0.98
MAX_MODEL_BYTES = 20_000_000  # a model that travels to every worker (the full float model was ~517 MB)


@pytest.fixture(scope="module")
def quality_model(bundled_quality_model):
    return bundled_quality_model


def test_training_reports_and_records_validation_metrics(quality_model):
    out, result = quality_model
    card = json.loads(out.with_suffix(".json").read_text())
    assert card["data"] == {"positive": {"docs": 783, "code": 423}, "negative": {str(NEGATIVE_SHARD): 1903}}
    assert card["sizes"]["train"] + card["sizes"]["valid"] == 2 * 1206  # balanced: as many of each class
    metrics = card["validation"]
    assert metrics["roc_auc"] >= MIN_VALIDATION_AUC
    assert set(metrics) >= {"precision", "recall", "f1", "roc_auc"}
    assert f"ROC AUC {metrics['roc_auc']:.4f}" in result.stdout
    # while it works: the documents read per class, counted, then a line before training and one with its time
    assert re.search(r"^positive +1,206 documents \d+:\d\d:\d\d$", result.stdout, re.M)
    assert re.search(r"^Read 1,206 positive and 1,903 negative documents in \d+\.\ds; training the fastText quality "
                     r"classifier on 1,206 of each \(10 epochs, then quantized to [\d,]+ rows\)$", result.stdout, re.M)
    assert re.search(r"^Quality model: .*, trained in \d+\.\ds$", result.stdout, re.M)
    assert card["hyperparameters"]["word_ngrams"] == 2


def test_the_trained_model_is_quantized_below_20_mb(quality_model):
    out, result = quality_model
    card = json.loads(out.with_suffix(".json").read_text())
    assert out.stat().st_size == card["size_bytes"] <= MAX_MODEL_BYTES
    assert card["hyperparameters"]["cutoff"] == QUALITY_TEST_CUTOFF
    assert f"{out}, {card['size_bytes'] / 1e6:.1f} MB" in result.stdout


def test_planning_reads_the_model_header_and_never_loads_it(tmp_path, slice_sources, slice_tokenizer, quality_model):
    """A file with a fastText header and nothing loadable after it: planning accepts it, so planning did not load
    it (fastText refuses it, as a worker's QualityModel does)."""
    model, _ = quality_model
    header_only = tmp_path / "header-only.bin"
    header_only.write_bytes(model.read_bytes()[:8] + bytes(100))
    shards, ctx = plan_job(load_config(slice_sources), Workspace(tmp_path / "ws"), slice_tokenizer, header_only)
    assert shards and ctx.quality_model == str(header_only.resolve())
    with pytest.raises(UserError, match="is not a fastText model"):
        QualityModel(header_only)


def test_the_model_ranks_held_out_real_documents_by_quality(quality_model):
    out, _ = quality_model
    model = QualityModel(out)
    handbook = SourceConfig(name="web", format="html-dir", paths=(str(EXAMPLES / "corpora" / "web" / "en-US"),))
    fortunes = SourceConfig(name="fortunes", format="jsonl.zst", paths=(str(HELD_OUT_NEGATIVE),))
    good, bad = model.scores(list(source_texts(handbook))), model.scores(list(source_texts(fortunes)))
    auc = roc_auc(np.array([1] * len(good) + [0] * len(bad)), np.concatenate([good, bad]))
    print(f"held-out AUC {auc:.4f} over {len(good)} handbook pages and {len(bad)} fortunes")
    assert auc >= MIN_HELD_OUT_AUC
    assert np.median(good) > 0.5 > np.median(bad)


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory, slice_sources, slice_tokenizer, quality_model):
    model, _ = quality_model
    root = tmp_path_factory.mktemp("scored")
    sources = root / "sources.toml"
    text = slice_sources.read_text().replace(FORTUNES_FILTERS, 'filters = []\nkeep_fraction = 0.5')
    sources.write_text(f'root = "{slice_sources.parent}"\n{text}\n[quality]\nbuckets = 4\n')
    ws = root / "ws"
    result = run_loom("-w", ws, "curate", "--sources", sources, "--tokenizer", slice_tokenizer,
                      "--quality-model", model, "--workers", 2)
    return ws, model, result


def test_scores_from_the_dask_job_equal_scores_in_one_process(scored_run):
    ws, model, _ = scored_run
    curated = pq.read_table(sorted((published(ws) / "curated").glob("*/part-*.parquet")), columns=["text", "quality"])
    in_process = QualityModel(model).scores(curated["text"].to_pylist())
    assert len(in_process) > 100
    np.testing.assert_array_equal(curated["quality"].to_numpy(), in_process)


def test_buckets_are_the_quantiles_of_all_scores(scored_run):
    ws, *_ = scored_run
    buckets = pq.read_table(published(ws) / "manifest" / "quality_buckets.parquet").to_pylist()
    assert [b["quality_bucket"] for b in buckets] == [0, 1, 2, 3]
    scores = pq.read_table(sorted((ws / "work" / "prepare").glob("*/part-*.parquet")), columns=["quality"])
    scores = scores["quality"].to_numpy()
    assert sum(b["n_docs"] for b in buckets) == len(scores)
    for bucket in buckets[:-1]:  # each cut is its quartile, within the sketch's accuracy; tied odds stay together
        share = (bucket["quality_bucket"] + 1) / len(buckets) * len(scores)
        assert below(scores, bucket["upper"], -1) <= share + 1 and below(scores, bucket["upper"], +1) >= share - 1
    documents = pq.read_table(published(ws) / "manifest" / "documents").to_pylist()
    for doc in documents:
        bucket = buckets[doc["quality_bucket"]]
        assert bucket["lower"] <= doc["quality"] <= bucket["upper"]


def below(scores: np.ndarray, cut: float, side: int) -> int:
    """How many scores have odds below the cut's, widened (+1) or narrowed (-1) by the quality sketch's accuracy
    (scores clipped as the sketch clips them)."""
    from curation.stages.quality_select import ACCURACY, odds

    bound = odds(np.array([cut]))[0] * (1 + 2 * ACCURACY) ** side
    return int(np.sum(odds(scores) < bound if side < 0 else odds(scores) <= bound))


def test_keep_fraction_keeps_half_of_a_source_and_the_funnel_accounts_for_the_rest(scored_run):
    ws, *_ = scored_run
    funnel = [row for row in pq.read_table(published(ws) / "manifest" / "funnel").to_pylist() if row["source"] == "fortunes"]
    fates = Counter(row["fate"] for row in funnel)
    scored = fates["kept"] + fates["duplicate"] + fates["low_quality"]  # no filters: every document is scored
    assert fates["malformed"] + scored == len(funnel)
    source_scores = pq.read_table(sorted((ws / "work" / "prepare" / "fortunes").glob("part-*.parquet")), columns=["quality"])
    source_scores = source_scores["quality"].to_numpy()
    cut = min(pq.read_table(published(ws) / "curated" / "fortunes", columns=["quality"])["quality"].to_pylist())
    near_cut = below(source_scores, cut, +1) - below(source_scores, cut, -1)  # on either side within the accuracy
    assert abs(fates["kept"] + fates["duplicate"] - scored / 2) <= 1 + near_cut
    assert {row["reason"] for row in funnel if row["fate"] == "low_quality"} == {"below_keep_fraction"}
    removed = {row["record"] for row in funnel if row["fate"] == "low_quality"}
    scores = {row["record"]: row["quality"] for row in
              pq.read_table(ws / "work" / "prepare" / "fortunes" / "part-00000.parquet").to_pylist()}
    kept = pq.read_table(published(ws) / "curated" / "fortunes", columns=["quality"])["quality"].to_pylist()
    assert min(kept) >= max(scores[record] for record in removed)  # the top half by score is what stays
    docs = pq.read_table(published(ws) / "manifest" / "documents").to_pylist()
    assert all(d["quality"] is not None for d in docs)


def write_bodies(tmp_path):
    """A jsonl.gz whose records hold their text in `body`, and a sources.toml declaring it as source 'gitdoc'."""
    bodies = tmp_path / "bodies.jsonl.gz"
    bodies.write_bytes(gzip.compress("".join(json.dumps({"body": f"Git documentation page {i}.", "id": i}) + "\n"
                                             for i in range(30)).encode()))
    gitdoc = tmp_path / "gitdoc.toml"
    gitdoc.write_text(f'[[source]]\nname = "gitdoc"\nformat = "jsonl.gz"\npaths = ["{bodies}"]\n')
    return bodies, gitdoc


def test_bad_quality_input_stops_with_one_line(tmp_path, slice_sources, slice_tokenizer):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    bodies, gitdoc = write_bodies(tmp_path)
    cases = [
        (["curate", "--sources", slice_sources, "--tokenizer", slice_tokenizer, "--quality-model", tmp_path / "no.bin"],
         "no quality model at"),
        (["curate", "--sources", slice_sources, "--tokenizer", slice_tokenizer, "--quality-model", slice_sources],
         f"{slice_sources} is not a fastText model; train one with `loom quality train`"),
        (["quality", "train", "--sources", slice_sources, "--positive", empty, "--negative", "fortunes"],
         "the positive set is empty"),
        (["quality", "train", "--sources", slice_sources, "--positive", "docs", "--negative", "docs"],
         "'docs' is both positive and negative"),
        (["quality", "train", "--sources", slice_sources, "--positive", "docs"], "name the training sources"),
        (["quality", "train", "--sources", slice_sources, "--positive", "docs", "--negative", "nothing-here"],
         "'nothing-here' is neither a source in sources.toml nor"),
        (["quality", "train", "--sources", slice_sources, "--positive", bodies, "--negative", "fortunes"],
         f"{bodies}: no record has text in field 'text' (the first record's fields: body, id); name the field that "
         "holds the text with --text-field FIELD"),
        (["quality", "train", "--sources", slice_sources, "--positive", "docs", "--negative", bodies, "--text-field",
          "content"], f"{bodies}: no record has text in field 'content' (the first record's fields: body, id)"),
        (["quality", "train", "--sources", gitdoc, "--positive", "gitdoc", "--negative", NEGATIVE_SHARD],
         "source 'gitdoc': no record has text in field 'text' (the first record's fields: body, id); set text_field "
         "for source 'gitdoc' in sources.toml"),
    ]
    for args, message in cases:
        result = run_loom("-w", tmp_path / "ws", *args, check=False, timeout=120)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and message in lines[0], (args, result.stderr)


def test_files_given_for_training_are_read_from_the_text_field_named(tmp_path, slice_sources):
    bodies, _ = write_bodies(tmp_path)
    texts, counts = quality_examples(load_config(slice_sources), [str(bodies)], ["fortunes"], 20, text_field="body")
    assert counts["positive"] == {str(bodies): 20} and texts["positive"][0] == "Git documentation page 0."
