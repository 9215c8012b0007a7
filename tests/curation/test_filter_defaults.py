"""The web filters judge web sources only unless a source names its own, and a source that one filter takes most
of, or that keeps nothing, is a warning naming the setting that changes it."""

import json

import pytest

from curation.config import SourceConfig
from curation.funnel_warnings import Removals, source_warnings
from helpers import published, run_loom

NOTES = ["Run apt-get update before installing.", "The daemon reads its socket path from /etc/foo.conf.",
         "A glossary entry: inode, the record of a file.", "Use --force only when the lock is stale.",
         "Exit status 3 means the archive was truncated.", "Man page section 5 describes file formats."]
RELEASE_NOTES = ["The package fixes a crash when the configuration file lacks its network section entirely.",
                 "This upload builds the documentation with the new theme and drops the old search index.",
                 "Translations for Basque and Galician were added by the localisation team this month.",
                 "The watch file now follows the upstream tags instead of the tarballs on the mirror."]
HEURISTIC_FILTERS = ("gopher_repetition", "gopher_quality", "c4", "fineweb")  # the web filters, in order


@pytest.mark.parametrize("fmt, tags, expected", [
    ("html-dir", (), HEURISTIC_FILTERS), ("warc", (), HEURISTIC_FILTERS), ("jsonl", ("web",), HEURISTIC_FILTERS),
    ("jsonl.gz", ("docs",), ()), ("parquet", (), ()), ("text-dir", ("en",), ()),
])
def test_a_source_without_filters_gets_the_web_filters_only_if_it_is_web_text(fmt, tags, expected):
    assert SourceConfig(name="s", format=fmt, paths=("x",), tags=tags).filters == expected
    assert SourceConfig(name="s", format=fmt, paths=("x",), tags=tags, filters=("c4",)).filters == ("c4",)


def counts(*groups) -> list[Removals]:
    return [Removals(*group) for group in groups]


LEFT = ("(the filters left may take some of those: each document counts against the first that rejects it; "
        "filters = [] keeps them all)")
TAGGED_WEB = ' (a source tagged "web" gets the web filters unless it sets `filters`)'


def test_a_source_losing_most_to_one_filter_is_warned_with_the_setting_and_one_losing_less_is_not():
    source = SourceConfig(name="gitdoc", format="jsonl", paths=("x",), tags=("web",))
    most = counts(("filtered", "gopher_quality", "gopher_short_doc", 6), ("kept", "", None, 4))
    assert source_warnings(source, most) == [
        "source 'gitdoc' lost 6 of 10 documents (60%) to gopher_quality (gopher_short_doc); if that is not noise, "
        'set filters = ["gopher_repetition", "c4", "fineweb"] ' + LEFT + ' for it in sources.toml' + TAGGED_WEB]
    # half is not most
    assert source_warnings(source, counts(("filtered", "c4", "too_few_sentences", 5), ("kept", "", None, 5))) == []
    # one filter's reasons add up: short pages fail Gopher's repetition filter on one top n-gram or another
    several = counts(*(("filtered", "gopher_repetition", reason, n) for reason, n in
                       (("top_2_gram", 4), ("top_3_gram", 3), ("top_4_gram", 2), ("dup_para_frac", 1))),
                     ("kept", "", None, 2))
    assert source_warnings(source, several) == [
        "source 'gitdoc' lost 10 of 12 documents (83%) to gopher_repetition (top_2_gram 4, top_3_gram 3, top_4_gram 2, "
        '...); if that is not noise, set filters = ["gopher_quality", "c4", "fineweb"] ' + LEFT + ' for it in '
        "sources.toml" + TAGGED_WEB]


def test_a_source_that_several_filters_took_most_of_gets_one_line_with_each_share_and_the_fewest_to_drop():
    """As sqlite3-doc's 766 pages: four web filters took 65% and none of them half."""
    pages = SourceConfig(name="sqlite", format="html-dir", paths=("x",))
    lost = counts(("filtered", "gopher_quality", "gopher_short_doc", 300), ("filtered", "gopher_quality",
                                                                           "gopher_below_alpha_threshold", 76),
                  ("filtered", "c4", "too_few_sentences", 80), ("filtered", "fineweb", "line_punct_ratio", 30),
                  ("filtered", "gopher_repetition", "top_2_gram", 13), ("kept", "", None, 267))
    assert source_warnings(pages, lost) == [
        "source 'sqlite' lost 499 of 766 documents (65%) to filters: gopher_quality 376 (49%), c4 80 (10%), "
        'fineweb 30 (3%), gopher_repetition 13 (1%); if that is not noise, set filters = ["gopher_repetition", "c4", '
        '"fineweb"] ' + LEFT + ' for it in sources.toml (a source with format = "html-dir" gets the web filters '
        "unless it sets `filters`)"]
    # several filters, none half: the two largest must go for the others to take half or less
    even = counts(("filtered", "c4", "too_few_sentences", 4), ("filtered", "fineweb", "line_punct_ratio", 3),
                  ("filtered", "gopher_quality", "gopher_short_doc", 3), ("kept", "", None, 1))
    glossary = SourceConfig(name="glossary", format="jsonl", paths=("x",), filters=("c4", "fineweb", "gopher_quality"))
    assert source_warnings(glossary, even) == [
        "source 'glossary' lost 10 of 11 documents (90%) to filters: c4 4 (36%), fineweb 3 (27%), gopher_quality 3 "
        '(27%); if that is not noise, set filters = ["gopher_quality"] ' + LEFT + ' for it in sources.toml']
    # a source at 49% is no warning, however its losses split
    assert source_warnings(glossary, counts(("filtered", "c4", "too_few_sentences", 30),
                                            ("filtered", "fineweb", "line_punct_ratio", 19), ("kept", "", None, 51))) == []


def test_a_source_that_one_removal_took_nearly_all_of_is_one_line_with_its_setting():
    code = SourceConfig(name="mirror", format="jsonl", paths=("x",), max_doc_bytes=1000)
    duplicates = counts(("duplicate", "exact_dedup", "exact_duplicate", 60), ("duplicate", "minhash_dedup",
                                                                            "near_duplicate", 25), ("kept", "", None, 15))
    assert source_warnings(code, duplicates) == [
        "source 'mirror' lost 85 of 100 documents (85%) as duplicate (exact_duplicate 60, near_duplicate 25); expected "
        "of a mirrored or repeated corpus; else the [dedup] settings (threshold, scope) say what counts as a copy"]
    assert source_warnings(code, counts(("duplicate", "exact_dedup", "exact_duplicate", 80),
                                        ("kept", "", None, 20))) == []  # 80% is not more than 80%
    large = counts(("filtered", "read", "too_large", 9, "2,000 bytes, over max_doc_bytes = 1000"), ("kept", "", None, 1))
    assert source_warnings(code, large) == [
        "source 'mirror' lost 9 of 10 documents (90%) as filtered at read (too_large); if those are wanted, raise "
        "max_doc_bytes (now 1,000) for it in sources.toml"]
    # filters that took nearly all are the filters' line alone, not a second one
    assert len(source_warnings(code, counts(("filtered", "c4", "too_few_sentences", 9), ("kept", "", None, 1)))) == 1


def test_a_source_that_keeps_nothing_is_warned_whatever_the_cause():
    source = SourceConfig(name="de", format="jsonl", paths=("x",), languages=("en",))
    lines = source_warnings(source, counts(("filtered", "langid", "lang_not_allowed", 3, "de"),
                                           ("duplicate", "exact_dedup", "exact", 2)))
    assert lines == ["source 'de' lost 3 of 5 documents (60%) to langid (lang_not_allowed); if those are wanted, add "
                     "\"de\" to `languages` (or set languages = []) for it in sources.toml",
                     "source 'de' kept 0 of 5 documents; 3 were filtered at langid (lang_not_allowed: de); if those "
                     "are wanted, add \"de\" to `languages` (or set languages = []) for it in sources.toml"]
    only_dups = source_warnings(source, counts(("duplicate", "exact_dedup", "exact", 2)))
    assert only_dups == ["source 'de' kept 0 of 2 documents; 2 were duplicate at exact_dedup (exact)"]


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory, slice_tokenizer):
    """A Debian-like corpus: short notes (text-dir) and a glossary (jsonl) that name no filters, short release
    notes as web pages (html-dir), the glossary again with an explicit filter, and a jsonl whose text is in `body`."""
    root = tmp_path_factory.mktemp("mixed")
    (root / "notes").mkdir()
    for i, text in enumerate(NOTES):
        (root / "notes" / f"{i}.txt").write_text(text + "\n")
    (root / "pages").mkdir()
    for i, text in enumerate(RELEASE_NOTES):
        (root / "pages" / f"{i}.html").write_text(f"<html><head><title>Note {i}</title></head><body><article>"
                                                   f"<h1>Release {i}</h1><p>{text}</p></article></body></html>")
    (root / "glossary.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in RELEASE_NOTES))
    (root / "bodies.jsonl").write_text("".join(json.dumps({"body": t, "id": i}) + "\n" for i, t in enumerate(NOTES)))
    (root / "sources.toml").write_text("""
[[source]]
name = "notes"
format = "text-dir"
paths = ["notes"]

[[source]]
name = "glossary"
format = "jsonl"
paths = ["glossary.jsonl"]

[[source]]
name = "pages"
format = "html-dir"
paths = ["pages"]

[[source]]
name = "strict"
format = "jsonl"
paths = ["glossary.jsonl"]
filters = ["gopher_quality"]

[[source]]
name = "bodies"
format = "jsonl"
paths = ["bodies.jsonl"]

[dedup]
scope = "per-source"
""")
    ws = root / "ws"
    result = run_loom("-w", ws, "curate", "--sources", root / "sources.toml", "--tokenizer", slice_tokenizer,
                      "--workers", 1)
    return ws, result


@pytest.mark.slow  # the mixed curate (~13 s); which sources get the web filters is tested by default
def test_non_web_sources_keep_their_short_documents_and_web_ones_are_filtered(mixed_run):
    import pyarrow.parquet as pq

    ws, _ = mixed_run
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    fates = {name: {(r["fate"], r["stage"], r["reason"]) for r in funnel if r["source"] == name}
             for name in ("notes", "glossary", "pages", "strict")}
    assert fates["notes"] == fates["glossary"] == {("kept", "", None)}
    assert fates["strict"] == {("filtered", "gopher_quality", "gopher_short_doc")}  # the one it names
    assert {fate for fate, _, _ in fates["pages"]} == {"filtered"}
    assert {stage for _, stage, _ in fates["pages"]} <= set(HEURISTIC_FILTERS)


@pytest.mark.slow  # the mixed curate (~13 s); the warnings' text is tested by default
def test_the_curate_summary_warns_of_each_wipe_out_with_the_setting_that_ends_it(mixed_run):
    ws, result = mixed_run
    warnings = [line for line in result.stdout.splitlines() if line.startswith("warning: source ")]  # the losses'
    assert len(warnings) == 3
    # the short pages fail Gopher's repetition filter, on their top 3-gram or 4-gram
    assert warnings[0].startswith("warning: source 'pages' lost 4 of 4 documents (100%) to gopher_repetition (top_")
    assert warnings[0].endswith('; if that is not noise, set filters = ["gopher_quality", "c4", "fineweb"] ' + LEFT +
                                ' for it in sources.toml (a source with format = "html-dir" gets the '
                                "web filters unless it sets `filters`)")
    assert warnings[1:] == [
        "warning: source 'strict' lost 4 of 4 documents (100%) to gopher_quality (gopher_short_doc); if that is not "
        "noise, set filters = [] for it in sources.toml",
        "warning: source 'bodies' kept 0 of 6 documents; 6 were malformed at read (missing_text_field: no field "
        "'text' (its fields: body, id)); set text_field to the field that holds the text for it in sources.toml",
    ]
    info = json.loads((published(ws) / "manifest" / "curation.json").read_text())
    assert {name: len(lines) for name, lines in info["warnings"].items()} == {"pages": 1, "strict": 1, "bodies": 1}
