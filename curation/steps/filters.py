"""The filters a source's `filters` names: FILTERS maps each name to a Filter, its help text (`loom curate
--help`), whether a web source that does not set `filters` gets it, and how it is built. The four datatrove
heuristic filters (Gopher repetition and quality, C4, FineWeb) share one word tokenizer. HeuristicFilters is the
step that runs a source's filters in order.

How to add a filter: a module with a class whose `filter(doc)` gives datatrove's verdict (True to keep, or
(False, reason), or (False, reason, detail) with the detail of what it measured: curation.steps.filter_details),
and one line in FILTERS: `"name": Filter(help, lambda options, words: MyFilter(**options))`."""

import functools
import inspect
from dataclasses import dataclass
from importlib import import_module
from itertools import islice
from typing import Callable

from base.errors import UserError
from curation.document import Doc, Funnel
from curation.steps.normalize import document_id, normalize_text


@dataclass(frozen=True)
class Filter:
    """One filter of sources.toml. `build(options, words)`: an object with datatrove's `filter(doc)`, made with the
    source's filter_options (a dict; an unknown option is a UserError) and the word tokenizer the filters share."""

    help: str
    build: Callable[[dict, object], object]
    web_default: bool = False  # a web source that does not set `filters` gets it

    def make(self, name: str, options: dict, source_name: str, words=None):
        try:
            return self.build(options, _english_word_tokenizer() if words is None else words)
        except UnknownOption as err:
            raise UserError(f"source '{source_name}': filter_options.{name} has unknown option '{err.option}'; "
                            f"known: {', '.join(err.known)}") from None


class UnknownOption(Exception):
    def __init__(self, option: str, known: list[str]):
        super().__init__(option)
        self.option, self.known = option, known


@dataclass(frozen=True)
class DatatroveFilter:
    """Builds one of datatrove's heuristic filters (`class_name` in datatrove.pipeline.filters), or Loom's own
    rules for it (`fast`, "module:Class", a class with `covers(reference)`) where they judge the same."""

    class_name: str
    fast: str | None = None  # None: datatrove's class judges, given the shared words

    def reference_class(self) -> type:
        from datatrove.pipeline import filters

        return getattr(filters, self.class_name)

    def fast_class(self) -> type | None:
        if self.fast is None:
            return None
        module, name = self.fast.split(":")
        return getattr(import_module(module), name)

    def __call__(self, options: dict, words):
        cls = self.reference_class()
        accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "exclusion_writer"}
        if unknown := set(options) - accepted:
            raise UnknownOption(sorted(unknown)[0], sorted(accepted))
        # One word tokenizer shared by every filter: given a language name, datatrove builds a spaCy pipeline
        # per call, which cost a quarter of the filtering time; this one also shares each text's words.
        reference = cls(**{"language": words, **options})
        fast = self.fast_class()
        # Loom's own Gopher and C4 rules take every option from datatrove's instance; datatrove's class itself
        # judges where they cannot (another word tokenizer named by `language`, an n-gram size below 1, C4 on
        # sentences instead of lines). FineWeb's only use of words is their number: its own class, given the
        # shared words, is as quick.
        if not fast or "language" in options or not fast.covers(reference):
            return reference
        if hasattr(fast, "judge"):  # Gopher's rules judge (text, words): the words the filters share
            return SharedWordsFilter(fast(reference), words)
        return fast(reference, words)


FILTERS = {
    "gopher_repetition": Filter("Gopher's repetition rules: duplicate lines, paragraphs and n-grams",
                                DatatroveFilter("GopherRepetitionFilter", "curation.steps.gopher:GopherRepetition"),
                                web_default=True),
    "gopher_quality": Filter("Gopher's quality rules: word count and length, symbols, bullets, stop words",
                             DatatroveFilter("GopherQualityFilter", "curation.steps.gopher:GopherQuality"),
                             web_default=True),
    "c4": Filter("C4's rules: lines that end in punctuation, no code or boilerplate (drops such lines)",
                 DatatroveFilter("C4QualityFilter", "curation.steps.c4:C4Quality"), web_default=True),
    "fineweb": Filter("FineWeb's rules: line punctuation, short lines, duplicated lines' characters",
                      DatatroveFilter("FineWebQualityFilter"), web_default=True),
}


def web_filters() -> tuple[str, ...]:
    """What a web source that does not set `filters` gets: every filter that says so, in FILTERS' order."""
    return tuple(name for name, f in FILTERS.items() if f.web_default)


@functools.cache
def _english_word_tokenizer():
    from curation.steps.words import SharedWordTokenizer

    return SharedWordTokenizer()


def options_only_words():
    """A stand-in for the word tokenizer the filters share, where they are built only to check a source's options
    (the client, before a cluster starts): building spaCy's tokenizer took the client ~2 s of every curate, and the
    workers build their own. It judges nothing."""
    from datatrove.utils.word_tokenizers import WordTokenizer

    class OptionsOnly(WordTokenizer):
        def word_tokenize(self, text: str) -> list[str]:
            raise RuntimeError("these filters were built to check their options, not to judge documents")

        sent_tokenize = span_tokenize = word_tokenize

    return OptionsOnly()


def build_filter(name: str, options: dict, source_name: str, words=None):
    """The filter `name` with the source's options: an object with datatrove's `filter(doc)`. `words`: the word
    tokenizer, the one the filters share unless given (options_only_words)."""
    return FILTERS[name].make(name, options, source_name, words)


class SharedWordsFilter:
    """One of Loom's Gopher rules with datatrove's `filter(doc)`, judging the words the filters share."""

    def __init__(self, rules, words):
        self.rules = rules
        self.words = words

    def filter(self, doc) -> bool | tuple[bool, str, str]:
        return self.rules.judge(doc.text, self.words.word_tokenize(doc.text))


class HeuristicFilters:
    """The source's filters (FILTERS), in the source's order. The heuristic ones are tuned for English, so they
    judge only documents in the source's `filter_languages`. The first filter that rejects a document names the
    reason, and the detail what it measured against which threshold; C4's filter may also drop lines, as in C4."""

    name = "filters"
    batch_size = 256  # documents per spaCy memory zone (see curation.steps.words)

    def __init__(self, source, words=None):
        self.source = source
        self.filters = [(n, build_filter(n, source.filter_options.get(n, {}), source.name, words))
                        for n in source.filters]

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

        from curation.steps.filter_details import removal_detail  # datatrove's filters: imported when filtering

        if not self.source.filters_apply_to(doc.lang):
            return True
        candidate = Document(text=doc.text, id=doc.id, metadata={})
        for filter_name, datatrove_filter in self.filters:
            judged = candidate.text  # C4 may drop lines of a text it keeps: the next filter judges what is left
            keep, reason, detail = verdict(datatrove_filter.filter(candidate))
            if not keep:
                if detail is None:  # one of datatrove's own classes judged: what it measured, from the same text
                    detail = removal_detail(datatrove_filter, judged, reason) if reason else ""
                funnel.remove(doc, filter_name, reason or filter_name, detail=detail)
                return False
        if candidate.text != doc.text:  # keep `id` the hash of the text that is stored
            doc.text = normalize_text(candidate.text)
            doc.id = document_id(doc.text)
        return True


def verdict(result) -> tuple[bool, str | None, str | None]:
    """(keep, reason, detail) of a filter's answer: True, (False, reason) or (False, reason, detail)."""
    if not isinstance(result, tuple):
        return result, None, None
    return (*result, None) if len(result) == 2 else result
