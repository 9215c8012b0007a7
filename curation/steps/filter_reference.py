"""What Loom's fast filter stage is held equal to: the verdicts of datatrove's own four heuristic filters (their
defaults and their own spaCy word tokenizer), beside the filter stage's own, in one form: `removed` maps a
text's index to (filter, reason), `kept` maps it to the text as kept (C4 may drop lines). The tests and
bench/filters.py compare the two."""

from curation.config import SourceConfig
from curation.document import Doc
from curation.steps.filters import FILTERS, DatatroveFilter

DATATROVE_FILTERS = tuple(name for name, f in FILTERS.items() if isinstance(f.build, DatatroveFilter))


class _Removals(dict):
    """A funnel that only notes, by record, which filter removed a document and why (and, in `details`, the
    detail of what it measured)."""

    def __init__(self, details: dict | None = None):
        super().__init__()
        self.details = {} if details is None else details

    def remove(self, doc, stage, reason, fate="filtered", detail=""):
        self[doc.record] = (stage, reason)
        self.details[doc.record] = detail


def every_language_filters():
    """Loom's filter stage with the four filters, judging every document whatever its language."""
    from curation.steps.filters import HeuristicFilters

    return HeuristicFilters(SourceConfig(name="all", format="jsonl", paths=("x",), filters=DATATROVE_FILTERS,
                                         filter_languages=("*",)))


def loom_verdicts(texts: list[str], heuristic_filters=None, details: dict | None = None) -> tuple[dict, dict]:
    """(removed, kept) of Loom's filter stage (`heuristic_filters`, else every_language_filters()); each removal's
    detail into `details`, by text, when given."""
    removed = _Removals(details)
    docs = (Doc(record=i, text=text, id=str(i)) for i, text in enumerate(texts))
    kept = {doc.record: doc.text for doc in (heuristic_filters or every_language_filters()).run(docs, removed)}
    return dict(removed), kept


def datatrove_verdicts(texts: list[str]) -> tuple[dict, dict]:
    """(removed, kept) of datatrove's four filters, in order, the first rejection naming the reason."""
    from datatrove.data import Document
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    from curation.steps.normalize import normalize_text

    filters = [(name, FILTERS[name].build.reference_class()()) for name in DATATROVE_FILTERS]
    load_word_tokenizer("en").word_tokenize("IS_ALPHA")  # see SharedWordTokenizer._is_alpha_words
    removed, kept = {}, {}
    for i, text in enumerate(texts):
        doc = Document(text=text, id=str(i))
        for name, datatrove_filter in filters:
            result = datatrove_filter.filter(doc)
            keep, reason = result if isinstance(result, tuple) else (result, None)
            if not keep:
                removed[i] = (name, reason or name)
                break
        else:
            kept[i] = normalize_text(doc.text)
    return removed, kept
