"""The pii step: personal data (emails, IP addresses, phone numbers, secrets; curation.steps.pii_patterns) found in
a document's normalized text and, for a source with pii = "redact", replaced by each kind's placeholder before any
later step sees the text, so that language ID, filters, dedup, samples and tokenization all read the redacted text
(copies that differ only in an address become exact duplicates). A document gets its count per kind (`pii_KIND`
columns); one over `max_pii` is removed (reason `pii_KIND` or `pii_total`). `Scrubber` is the same redaction for
what the funnel keeps of records removed before this step (curation.stages.prepare)."""

from curation.readers.fields import RAW_PREVIEW_CHARS
from curation.steps.measures import measured
from curation.steps.normalize import document_id
from curation.steps.pii_patterns import count, redact

TOTAL = "total"  # max_pii's key for the spans of every kind together


class PersonalData:
    name = "pii"

    def __init__(self, source):
        self.redacting = source.pii == "redact"
        self.kinds = tuple(source.pii_kinds)
        self.limits = dict(source.max_pii)

    def run(self, docs, funnel):
        for doc in docs:
            if self.redacting:
                text, doc.pii = redact(doc.text, self.kinds)
                if text != doc.text:
                    doc.text, doc.id = text, document_id(text)  # ids and exact dedup follow the redacted text
                doc.meta = redacted_value(doc.meta, self.kinds)
            else:
                doc.pii = count(doc.text, self.kinds)
            if over := self.over_limit(doc.pii):
                funnel.remove(doc, self.name, f"pii_{over[0]}", detail=measured(*over))
                continue
            yield doc

    def over_limit(self, counts: dict) -> tuple[str, int, str, int] | None:
        """(kind or TOTAL, spans, ">", limit) of the first limit the document's spans pass, else None."""
        for key, limit in self.limits.items():
            spans = sum(counts.values()) if key == TOTAL else counts[key]
            if spans > limit:
                return key, spans, ">", limit
        return None


def redacted_value(value, kinds):
    """A document's meta (its source's own fields) with every string in it redacted: they are written too."""
    if isinstance(value, str):
        return redact(value, kinds)[0]
    if isinstance(value, dict):
        return {key: redacted_value(item, kinds) for key, item in value.items()}
    if isinstance(value, list):
        return [redacted_value(item, kinds) for item in value]
    return value


class Scrubber:
    """What the funnel keeps of a text the pii step has not seen (a document removed before it, a set-aside record's
    raw start, their details), for a source with pii = "redact": redacted as the step redacts. Any other source's
    texts are kept as they are."""

    def __init__(self, source):
        self.kinds = tuple(source.pii_kinds) if source.pii == "redact" else None

    def text(self, text: str) -> str:
        return text if self.kinds is None or not text else redact(text, self.kinds)[0]

    def raw_start(self, raw: str) -> str:
        """A record's raw start as a reader cut it (RAW_PREVIEW_CHARS bytes): its last word, which the cut may have
        left half an address of, dropped before redacting."""
        if self.kinds is not None and len(raw.encode("utf-8", "replace")) >= RAW_PREVIEW_CHARS - 3:
            raw = raw[:max(raw.rfind(" "), raw.rfind("\n"), 0)]
        return self.text(raw)
