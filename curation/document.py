"""What flows through curation: a record as a reader found it, a document as the steps see it, the funnel that
hears why each removed document went, and the fates a record can end in."""

from dataclasses import dataclass, field
from typing import Protocol

# Every input record ends in exactly one of these (the funnel's `fate`); `kept` ones are the curated rows.
FATES = ("kept", "malformed", "filtered", "duplicate", "low_quality", "contaminated")
SUMMARY_FATES = tuple(f for f in FATES if f != "kept") + ("kept",)  # a summary's columns: removals first, kept last


@dataclass
class Record:
    """One record of an input shard, good or malformed: a reader never drops one."""

    index: int  # position in the shard, counting malformed records too
    text: str | None = None
    meta: dict = field(default_factory=dict)
    problem: str | None = None  # why the reader set it aside (malformed, or too_large), or None
    detail: str = ""
    raw: str = ""
    input: str | None = None  # the file it came from, when the shard reads several (a folder's files)


@dataclass
class Doc:
    record: int
    text: str
    meta: dict = field(default_factory=dict)
    id: str | None = None
    lang: str | None = None
    lang_score: float | None = None
    quality: float | None = None
    annotations: dict = field(default_factory=dict)  # annotator name -> its score (curation.steps.annotate)
    pii: dict | None = None  # kind -> spans found, once the pii step has seen it (curation.steps.pii)


class Funnel(Protocol):
    def remove(self, doc: Doc, stage: str, reason: str, fate: str = "filtered", detail: str = "") -> None: ...
