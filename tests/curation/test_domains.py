"""Topic domains: the estimator (curation.domains) on tiny texts, the [domains] table's checks, and one curate of
the slice with `[domains] k = 3`."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from curation.domains import DomainModel
from helpers import curate_tiny, published, run_loom
from report_pages import needs_chromium, open_page

COOKING_WORDS = "onion butter garlic tomato bread dough oven sugar eggs soup salt pepper herbs roast chicken".split()
ASTRONOMY_WORDS = "telescope galaxy stars planet orbit comet moon night sky astronomers redshift supernova".split()


def topic_texts(words: list[str], n: int = 12) -> list[str]:
    """n texts of 10 words each drawn from one topic's words, with a few words every text has."""
    rng = np.random.default_rng(len(words))
    return [" ".join([*rng.choice(words, 10), "the", "and", "with"]) for _ in range(n)]


COOKING, ASTRONOMY = topic_texts(COOKING_WORDS), topic_texts(ASTRONOMY_WORDS)


@pytest.mark.parametrize("basis", [None, 16])
def test_two_obvious_topics_separate_and_top_terms_name_them(monkeypatch, basis):
    """Also when the idf and SVD are fitted on a subset of the texts (`basis`) and the rest are embedded after."""
    if basis:
        monkeypatch.setattr("curation.domains.BASIS_TEXTS", basis)
    model = DomainModel(k=2, seed=0).fit(COOKING + ASTRONOMY)
    domains, distances = model.predict(COOKING + ASTRONOMY)
    assert domains.dtype == np.int32 and distances.dtype == np.float32
    assert len(set(domains[:12])) == 1 and len(set(domains[12:])) == 1 and domains[0] != domains[12]
    assert ((0 <= distances) & (distances <= 2)).all()
    cooking_terms, astronomy_terms = model.top_terms(5)[domains[0]], model.top_terms(5)[domains[12]]
    assert set(cooking_terms) <= set(COOKING_WORDS)
    assert set(astronomy_terms) <= set(ASTRONOMY_WORDS)
    new, _ = model.predict(["a galaxy seen through the telescope at night", "garlic butter on the bread"])
    assert list(new) == [domains[12], domains[0]]


def test_same_texts_and_seed_give_the_same_model():
    first, second = (DomainModel(k=2, seed=3).fit(COOKING + ASTRONOMY) for _ in range(2))
    assert first.digest == second.digest
    assert DomainModel(k=2, seed=4).fit(COOKING + ASTRONOMY).digest != first.digest


def test_save_and_load_keep_predictions_and_digest(tmp_path):
    model = DomainModel(k=2, seed=0).fit(COOKING + ASTRONOMY)
    model.save(tmp_path / "model")
    loaded = DomainModel.load(tmp_path / "model")
    assert loaded.digest == model.digest
    for a, b in zip(loaded.predict(COOKING + ASTRONOMY + [""]), model.predict(COOKING + ASTRONOMY + [""])):
        assert np.array_equal(a, b)
    assert not any(p.suffix == ".pkl" for p in (tmp_path / "model").iterdir())


def test_fewer_texts_than_domains_is_refused():
    with pytest.raises(ValueError, match="3 documents cannot make 4 domains"):
        DomainModel(k=4).fit(COOKING[:3])


SOURCES = """
[[source]]
name = "web"
format = "jsonl"
paths = ["web.jsonl"]

[[source]]
name = "docs"
format = "jsonl"
paths = ["docs.jsonl"]
"""


@pytest.mark.parametrize("table, message", [
    ("k = 1", "`k` must be a whole number of domains, at least 2 (got 1)"),
    ("k = 2.5", "`k` must be a whole number of domains, at least 2 (got 2.5)"),
    ("k = 8\nsample = 5", "`sample` (5) must be a whole number of documents, at least `k` (8); raise it or lower k"),
    ('k = 3\nsources = ["wbe"]', "`sources` names 'wbe' (did you mean 'web'?), which is no [[source]]; use any of web, docs"),
    ('k = 3\nnames = {3 = "math"}', "`names` key '3' is not a domain number from 0 to 2"),
    ('k = 3\nnames = {1 = "Math Stuff"}', "`names` must map domain numbers to names"),
    ('k = 3\nnames = {0 = "a", 1 = "a"}', "`names` gives 'a' to two domains"),
    ('k = 3\nembedding = "models/none"', "`embedding` = 'models/none' is not a model folder"),
    ('k = 3\nembedding = "model"', "`embedding` = 'model' is not a model folder (no modules.json, nor model2vec's"),
    ("k = 3\nclusters = 4", "unknown key 'clusters'"),
])
def test_bad_domains_settings_are_one_line(tmp_path, table, message):
    from base.errors import UserError
    from curation.config import load_config

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "sources.toml").write_text(f"{SOURCES}\n[domains]\n{table}\n")
    with pytest.raises(UserError) as err:
        load_config(tmp_path / "sources.toml")
    assert message in str(err.value) and "\n" not in str(err.value) and "[domains]" in str(err.value)


def test_domains_settings_parse_with_defaults(tmp_path):
    from curation.config import DomainsConfig, load_config

    (tmp_path / "sources.toml").write_text(f'{SOURCES}\n[domains]\nk = 3\nsources = ["web"]\nnames = {{2 = "math"}}\n')
    config = load_config(tmp_path / "sources.toml")
    assert config.domains == DomainsConfig(k=3, sources=("web",), sample=20_000, embedding="tfidf", seed=0,
                                           names={"2": "math"})
    assert config.domains.clustered(config.sources) == ["web"]
    (tmp_path / "sources.toml").write_text(SOURCES)
    assert load_config(tmp_path / "sources.toml").domains is None


def test_every_clustered_document_gets_a_domain_and_the_manifest_counts_them(domains_slice):
    ws, _, _ = domains_slice
    gen = published(ws)
    curated = pq.read_table(gen / "curated", columns=["id", "source", "domain", "domain_distance", "n_tokens"])
    rows = curated.to_pylist()
    clustered = [r for r in rows if r["source"] in ("web", "docs")]
    assert clustered and all(r["domain"] in (0, 1, 2) and 0 <= r["domain_distance"] <= 2 for r in clustered)
    assert all(r["domain"] is None and r["domain_distance"] is None for r in rows if r not in clustered)
    assert len({r["domain"] for r in clustered}) > 1
    table = pq.read_table(gen / "manifest" / "domains.parquet")
    assert [str(t) for t in table.schema.types] == ["int32", "string", "string", "int64", "int64", "list<element: "
                                                    "string>", "list<element: string>", "string"]
    domains = table.to_pylist()
    assert sorted((d["domain"], d["source"]) for d in domains) == [(d, s) for d in range(3) for s in ("docs", "web")]
    for d in domains:
        members = [r for r in clustered if (r["domain"], r["source"]) == (d["domain"], d["source"])]
        assert d["documents"] == len(members) and d["tokens"] == sum(r["n_tokens"] for r in members)
        assert set(d["examples"]) <= {r["id"] for r in members} and len(d["examples"]) == min(3, len(members))
        assert d["name"] == ("first" if d["domain"] == 1 else None) and d["top_terms"]
    info = json.loads((gen / "manifest" / "curation.json").read_text())["domains"]
    assert info["k"] == 3 and info["sources"] == ["web", "docs"] and info["names"] == {"1": "first"}
    assert {d["model_digest"] for d in domains} == {info["model_digest"]}
    docs = pq.read_table(gen / "manifest" / "documents", columns=["id", "domain"]).to_pylist()
    assert {r["id"]: r["domain"] for r in docs} == {r["id"]: r["domain"] for r in rows}


def test_the_domains_view_and_a_rerun_that_changes_nothing(domains_slice):
    ws, sources, tokenizer = domains_slice
    result = run_loom("-w", ws, "sql", "--format", "csv",
                      "SELECT domain, sum(documents) FROM domains GROUP BY 1 ORDER BY 1")
    counts = run_loom("-w", ws, "sql", "--format", "csv",
                      "SELECT domain, count(*) FROM documents WHERE domain IS NOT NULL GROUP BY 1 ORDER BY 1")
    assert result.stdout == counts.stdout.replace("count_star()", "sum(documents)") and result.stdout.count("\n") == 4
    marker = ws / "work" / "domains" / "_done"
    before, generation = marker.read_text(), published(ws)
    run_loom("-w", ws, "curate", "--sources", sources, "--tokenizer", tokenizer, "--workers", 2)
    assert marker.read_text() == before and published(ws) == generation


@needs_chromium()
def test_the_curation_report_shows_the_domains_with_their_terms(domains_slice, tmp_path):
    ws, _, _ = domains_slice
    run_loom("-w", ws, "report", "curation")
    report = published(ws) / "manifest" / "report.html"
    dom, _ = open_page(report, tmp_path)
    rows = dom.tables["domains-sources"][1:]
    assert [row[0] for row in rows] == ["0", "1", "2"]
    text = report.read_text()
    assert "Topic domains" in text and "first" in text
    domains = pq.read_table(published(ws) / "manifest" / "domains.parquet").to_pylist()
    assert all(d["top_terms"][0] in text for d in domains)


def test_k_of_one_is_refused_by_loom_curate_in_one_line(tmp_path, slice_sources, slice_tokenizer):
    sources = tmp_path / "sources.toml"
    root = f"root = {json.dumps(str(slice_sources.parent))}\n"
    sources.write_text(f"{root}{slice_sources.read_text()}\n[domains]\nk = 1\n")
    result = run_loom("-w", tmp_path / "ws", "curate", "--sources", sources, "--tokenizer", slice_tokenizer,
                      check=False)
    assert result.returncode == 2 and "Dask" not in result.stdout
    assert result.stderr.strip().splitlines() == [
        f"error: {sources}: [domains]: `k` must be a whole number of domains, at least 2 (got 1); e.g. k = 24"]


@pytest.mark.slow  # a curate of its own (~15 s)
def test_fewer_kept_documents_than_k_stops_the_stage_with_the_count(tmp_path, slice_tokenizer):
    result = curate_tiny(tmp_path, slice_tokenizer, 3, "[domains]\nk = 4\nsample = 10\n")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines()[-1] == ("error: [domains]: 3 documents of tiny are left to cluster after "
                                                      "filtering and dedup, fewer than k = 4; lower k or cluster more "
                                                      "sources")


def test_without_domains_the_table_is_empty_and_no_document_has_one(curated_slice):
    gen = published(curated_slice[0])
    table = pq.read_table(gen / "manifest" / "domains.parquet")
    assert table.num_rows == 0 and table.schema.names == ["domain", "name", "source", "documents", "tokens",
                                                          "top_terms", "examples", "model_digest"]
    assert json.loads((gen / "manifest" / "curation.json").read_text())["domains"] is None
    domains = pq.read_table(gen / "curated", columns=["domain"])["domain"]
    assert domains.null_count == len(domains) > 0
    assert not (curated_slice[0] / "work" / "domains").exists()
