"""bench/web_corpus.py's pages, cut from the bundled corpora (the Debian packages it reads are not downloaded in
tests): deterministic for a seed, with the promised mix of kinds, boilerplate and duplicates, and windows that
rarely coincide by accident."""

import importlib.util
import sys
from collections import Counter
from functools import cache

import pytest

from helpers import REPO

N_PAGES = 3000


@cache
def web_corpus_module():
    sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location("web_corpus", REPO / "bench" / "web_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def bundled_groups() -> dict[str, list]:
    """The groups web_pages cuts pages from, filled with the bundled corpora's texts (no HTML to extract)."""
    from curation.config import load_sources
    from curation.samples import source_texts

    wc = web_corpus_module()
    texts = {s.name: list(source_texts(s)) for s in load_sources(REPO / "examples" / "sources.toml") if s.name != "web"}
    lines = [wc.nonempty_lines(t) for t in texts["docs"] + texts["reference"]]
    groups = {kind: lines for kind in wc.SHARES if kind not in ("code", "short")}
    groups["code"] = [wc.nonempty_lines(t) for t in texts["code"]]
    groups["fortunes"] = texts["fortunes"]
    return groups


@pytest.fixture(scope="module")
def pages():
    return web_corpus_module().web_pages(N_PAGES, seed=7, groups=bundled_groups())


def test_the_same_seed_gives_the_same_pages_and_another_seed_others(pages):
    wc = web_corpus_module()
    assert wc.web_pages(N_PAGES, seed=7, groups=bundled_groups()) == pages
    other = wc.web_pages(N_PAGES, seed=8, groups=bundled_groups())
    assert len({p.text for p in pages} & {p.text for p in other}) < N_PAGES * 0.05


def test_the_mix_of_kinds_boilerplate_and_duplicates_is_as_promised(pages):
    wc = web_corpus_module()
    kinds = Counter(p.kind for p in pages)
    assert len(pages) == N_PAGES
    assert kinds["exact-copy"] == int(N_PAGES * wc.EXACT_COPIES)
    assert kinds["near-duplicate"] == int(N_PAGES * wc.NEAR_DUPLICATES)
    unique = [p for p in pages if p.kind in wc.SHARES]
    for kind, share in wc.SHARES.items():
        assert abs(kinds[kind] / len(unique) - share) < 0.03, kind
    assert abs(sum(p.dressed for p in unique) / len(unique) - wc.BOILERPLATE) < 0.03
    texts = Counter(p.text for p in pages)
    assert all(texts[p.text] >= 2 for p in pages if p.kind == "exact-copy")
    footer_lines = Counter(line for p in pages if p.dressed for line in p.text.splitlines()[-3:])
    assert footer_lines.most_common(1)[0][1] > 20  # a site's boilerplate repeats over its pages


def test_windows_of_the_same_documents_rarely_coincide(pages):
    wc = web_corpus_module()
    windows = [p.text for p in pages if p.kind in wc.SHARES and p.kind != "short" and not p.dressed]
    assert len(set(windows)) > 0.97 * len(windows)
    assert max(len(w.split()) for w in windows) <= wc.WORDS_RANGE[1]
