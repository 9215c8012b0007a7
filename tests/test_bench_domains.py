"""The parts of the topic-domain benchmarks that decide their figures, on toy data: bench/domains_heldout.py's
scoring, page thinning and UTF-8 copy, and the [domains] table that --domains K writes for
bench/curate_vs_datatrove.py and bench/scale.py (the measurements themselves are bench/README.md's)."""

import pytest

from helpers import REPO


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    import domains_heldout
    import loom_job

    return domains_heldout, loom_job


def test_purity_counts_each_domain_as_its_largest_family_and_nmi_ignores_labels(bench):
    heldout, _ = bench
    families = ["maths", "maths", "maths", "editor", "editor", "editor"]
    assert heldout.purity(families, [0, 0, 1, 1, 1, 1]) == pytest.approx(5 / 6)
    assert heldout.purity(families, [7, 7, 7, 3, 3, 3]) == 1.0
    assert heldout.nmi(families, [7, 7, 7, 3, 3, 3]) == pytest.approx(1.0)
    assert heldout.nmi(families, [0, 1, 0, 1, 0, 1]) < 0.2


def test_pages_are_thinned_evenly_to_the_cap(bench):
    heldout, _ = bench
    assert heldout.evenly(list(range(10)), 4) == [0, 2, 5, 7]
    assert heldout.evenly([1, 2], 4) == [1, 2]


def test_a_latin1_page_is_copied_as_utf8_so_html_dir_keeps_it(bench, tmp_path):
    from curation.config import SourceConfig
    from curation.samples import source_texts

    heldout, _ = bench
    page = tmp_path / "raw.html"
    page.write_bytes('<html><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'
                     '</head><body><p>Le café de la gare est ouvert.</p></body></html>'.encode("latin-1"))
    raw = SourceConfig(name="raw", format="html-dir", paths=(str(page),), filters=())
    assert list(source_texts(raw)) == []  # set aside as invalid_utf8: what the copy is for
    (tmp_path / "copied").mkdir()
    heldout.copy_as_utf8(page, tmp_path / "copied" / "page.html")
    copied = SourceConfig(name="copied", format="html-dir", paths=(str(tmp_path / "copied"),), filters=())
    assert [text.strip() for text in source_texts(copied)] == ["Le café de la gare est ouvert."]


def test_the_domains_option_writes_a_table_curation_reads(bench, tmp_path):
    from curation.config import load_config

    _, loom_job = bench
    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_text("{}")
    assert loom_job.domains_table(None) == ""
    ws = loom_job.loom_workspace(tmp_path / "ws", tmp_path / "corpus", "", "", tokenizer,
                                 loom_job.domains_table(4, sample=200))
    domains = load_config(ws / "sources.toml").domains
    assert (domains.k, domains.sample) == (4, 200)
    plain = loom_job.loom_workspace(tmp_path / "plain", tmp_path / "corpus", "", "", tokenizer)
    assert load_config(plain / "sources.toml").domains is None
    assert loom_job.domains_share({"domains": 1.5, "tokenize": 2.0}, 10.0).startswith("domains stage 1.5s of 10.0s")
