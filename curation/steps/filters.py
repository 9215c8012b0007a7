"""datatrove's heuristic filters (Gopher repetition and quality, C4, FineWeb), sharing one word tokenizer."""

import functools
import inspect
from itertools import islice

from curation.document import Doc, Funnel
from curation.steps.normalize import document_id, normalize_text
from loom.errors import UserError


def _datatrove_filters() -> dict:
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
    )

    return {
        "gopher_repetition": GopherRepetitionFilter,
        "gopher_quality": GopherQualityFilter,
        "c4": C4QualityFilter,
        "fineweb": FineWebQualityFilter,
    }


@functools.cache
def _english_word_tokenizer():
    from curation.steps.words import SharedWordTokenizer

    return SharedWordTokenizer()


def build_filter(name: str, options: dict, source_name: str):
    """The filter `name` with the source's options: an object with datatrove's `filter(doc)`."""
    cls = _datatrove_filters()[name]
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "exclusion_writer"}
    unknown = set(options) - accepted
    if unknown:
        raise UserError(
            f"source '{source_name}': filter_options.{name} has unknown option '{sorted(unknown)[0]}'; "
            f"known: {', '.join(sorted(accepted))}"
        )
    # One word tokenizer shared by every filter: given a language name, datatrove builds a spaCy pipeline
    # per call, which cost a quarter of the filtering time; this one also shares each text's words.
    words = _english_word_tokenizer()
    reference = cls(**{"language": words, **options})
    fast = _fast_rules().get(name)
    # Loom's own Gopher and C4 rules take every option from datatrove's instance; datatrove's class itself
    # judges where they cannot (another word tokenizer named by `language`, an n-gram size below 1, C4 on
    # sentences instead of lines). FineWeb's only use of words is their number: its own class, given the
    # shared words, is as quick.
    if fast is None or "language" in options or not fast.covers(reference):
        return reference
    if name == "c4":
        return fast(reference, words)
    return SharedWordsFilter(fast(reference), words)


@functools.cache
def _fast_rules() -> dict:
    from curation.steps.c4 import C4Quality
    from curation.steps.gopher import GopherQuality, GopherRepetition

    return {"gopher_repetition": GopherRepetition, "gopher_quality": GopherQuality, "c4": C4Quality}


class SharedWordsFilter:
    """One of Loom's Gopher rules with datatrove's `filter(doc)`, judging the words the filters share."""

    def __init__(self, rules, words):
        self.rules = rules
        self.words = words

    def filter(self, doc) -> bool | tuple[bool, str]:
        return self.rules.judge(doc.text, self.words.word_tokenize(doc.text))


class HeuristicFilters:
    """datatrove's Gopher repetition and quality, C4 and FineWeb filters, in the source's order. They are
    tuned for English, so they judge only documents in the source's `filter_languages`. The first filter
    that rejects a document names the reason; C4's filter may also drop lines, as in C4 itself."""

    name = "filters"
    batch_size = 256  # documents per spaCy memory zone (see curation.steps.words)

    def __init__(self, source):
        self.source = source
        self.filters = [(n, build_filter(n, source.filter_options.get(n, {}), source.name)) for n in source.filters]

    def run(self, docs, funnel):
        if not self.filters:
            yield from docs
            return
        words = _english_word_tokenizer()
        while batch := list(islice(docs, self.batch_size)):
            with words.batch():
                kept = [doc for doc in batch if self._passes(doc, funnel)]
            yield from kept

    def _passes(self, doc: Doc, funnel: Funnel) -> bool:
        from datatrove.data import Document

        if not self.source.filters_apply_to(doc.lang):
            return True
        candidate = Document(text=doc.text, id=doc.id, metadata={})
        for filter_name, datatrove_filter in self.filters:
            result = datatrove_filter.filter(candidate)
            keep, reason = result if isinstance(result, tuple) else (result, None)
            if not keep:
                funnel.remove(doc, filter_name, reason or filter_name)
                return False
        if candidate.text != doc.text:  # keep `id` the hash of the text that is stored
            doc.text = normalize_text(candidate.text)
            doc.id = document_id(doc.text)
        return True
