"""Document steps on real pages, in one process."""

from pathlib import Path

import pytest

from curation.document import Doc
from curation.steps.extract import ExtractHtml
from helpers import EXAMPLES


class Removed(list):
    def remove(self, doc, stage, reason, fate="filtered", detail=""):
        self.append(reason)


def extract(pages: list[Path]) -> list[str]:
    docs = (Doc(record=i, text=p.read_text(encoding="utf-8")) for i, p in enumerate(pages))
    return [doc.text for doc in ExtractHtml().run(docs, Removed())]


def test_a_pages_extracted_text_does_not_depend_on_the_pages_before_it():
    english = sorted((EXAMPLES / "corpora" / "web" / "en-US").glob("*.html"))[:12]
    alone = extract(english)
    extract(english + english)
    after_others = extract(english)  # the same pages, seen a fourth time by this process
    assert alone == after_others
    assert all(len(text) > 200 for text in alone[:3])


@pytest.mark.slow  # every filter over the corpora twice (~15 s)
def test_the_filters_judge_every_document_as_datatrove_does_with_its_own_word_tokenizer():
    """Loom's filters share one cheaper word tokenizer (curation.steps.words); every decision, reason and
    changed text must still be what datatrove's filters decide with their own."""
    from curation.config import load_sources
    from curation.samples import source_texts
    from curation.steps.filter_reference import datatrove_verdicts, loom_verdicts

    sources = {s.name: s for s in load_sources(EXAMPLES / "sources.toml")}
    texts = [t for name, n in (("web", 60), ("docs", 120), ("reference", 40), ("fortunes", 300))
             for t in source_texts(sources[name], n)]
    removed, kept = loom_verdicts(texts)
    expected_removed, expected_kept = datatrove_verdicts(texts)  # datatrove's own tokenizer
    assert removed == expected_removed
    assert kept == expected_kept
    assert len({name for name, _ in expected_removed.values()}) >= 3 and len(expected_kept) >= 20
