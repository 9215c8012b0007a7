"""Topic domains: the estimator (curation.domains) on tiny texts, the [domains] table's checks, and one curate of
the slice with `[domains] k = 3`."""

import numpy as np
import pytest

from curation.domains import DomainModel

COOKING_WORDS = "onion butter garlic tomato bread dough oven sugar eggs soup salt pepper herbs roast chicken".split()
ASTRONOMY_WORDS = "telescope galaxy stars planet orbit comet moon night sky astronomers redshift supernova".split()


def topic_texts(words: list[str], n: int = 12) -> list[str]:
    """n texts of 10 words each drawn from one topic's words, with a few words every text has."""
    rng = np.random.default_rng(len(words))
    return [" ".join([*rng.choice(words, 10), "the", "and", "with"]) for _ in range(n)]


COOKING, ASTRONOMY = topic_texts(COOKING_WORDS), topic_texts(ASTRONOMY_WORDS)


def test_two_obvious_topics_separate_and_top_terms_name_them():
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
    ('k = 3\nsources = ["wbe"]', "`sources` names 'wbe', which is no [[source]]; use any of web, docs"),
    ('k = 3\nnames = {3 = "math"}', "`names` key '3' is not a domain number from 0 to 2"),
    ('k = 3\nnames = {1 = "Math Stuff"}', "`names` must map domain numbers to names"),
    ('k = 3\nnames = {0 = "a", 1 = "a"}', "`names` gives 'a' to two domains"),
    ('k = 3\nembedding = "models/none"', "`embedding` = 'models/none' is not a model folder"),
    ('k = 3\nembedding = "model"', "`embedding` = 'model': only \"tfidf\" is supported in this version"),
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
    assert config.domains == DomainsConfig(k=3, sources=("web",), sample=200_000, embedding="tfidf", seed=0,
                                           names={"2": "math"})
    assert config.domains.clustered(config.sources) == ["web"]
    (tmp_path / "sources.toml").write_text(SOURCES)
    assert load_config(tmp_path / "sources.toml").domains is None
