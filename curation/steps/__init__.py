"""Per-document steps, datatrove style: each is a small class whose `run(docs, funnel)` maps an iterator of
documents to the ones it keeps, and tells the funnel why it removed each of the others. One module per step;
`document_steps` puts a source's steps in order."""

from typing import Iterator, Protocol

from curation.document import Doc, Funnel
from curation.readers import reader_for
from curation.steps.annotate.step import Annotate, covers
from curation.steps.extract import ExtractHtml
from curation.steps.filters import HeuristicFilters
from curation.steps.langid import LanguageId
from curation.steps.normalize import Normalize
from curation.steps.pii import PersonalData
from curation.steps.plugins import plugin_steps
from curation.steps.quality import QualityScore
from curation.steps.responses import SetAsideResponses


class Step(Protocol):
    name: str

    def run(self, docs: Iterator[Doc], funnel: Funnel) -> Iterator[Doc]: ...


def reading_steps(source) -> list[Step]:
    """What makes a record's text a document's: web responses that are not text pages set aside (WARC), HTML
    extraction (for sources that hold HTML), normalization, then personal data redacted or counted (unless the
    source's pii is off), so that every later step, and the models trained on these texts, read it redacted."""
    reader = reader_for(source.format)
    responses = [SetAsideResponses()] if getattr(reader, "http_responses", False) else []
    pii = [PersonalData(source)] if source.pii != "off" else []
    return responses + ([ExtractHtml()] if reader.html else []) + [Normalize()] + pii


def document_steps(source, quality_model: str | None = None, annotators: tuple = (), words=None) -> list[Step]:
    """The per-document stages of one source, in order: the annotators covering it last. `words`: the filters'
    word tokenizer, the one they share unless given (curation.steps.filters.options_only_words)."""
    steps = reading_steps(source) + [LanguageId(source), HeuristicFilters(source, words)]
    steps += plugin_steps(source)  # the source's own `steps`, after the built-in filters, before any scoring
    if quality_model:
        steps.append(QualityScore(quality_model))
    return steps + [Annotate(a) for a in annotators if covers(a, source.name)]
