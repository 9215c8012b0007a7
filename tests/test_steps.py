"""Document steps on real pages, in one process."""

from pathlib import Path

from conftest import EXAMPLES
from curation.steps import Doc, ExtractHtml


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
