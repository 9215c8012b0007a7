"""What an annotator kind is (the registry's entries, curation.steps.annotate.ANNOTATORS): the keys it takes in an
`[[annotate]]` table, its checks before compute, its fingerprint, and the scorer it loads on a worker."""

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence


@dataclass(frozen=True)
class AnnotatorConfig:
    """One `[[annotate]]` table of sources.toml: a numeric column NAME on every curated row of its sources."""

    name: str  # the column's name: lowercase letters, digits and '_', not a column curated rows already have
    kind: str  # a key of ANNOTATORS
    sources: tuple[str, ...] = ()  # the sources it annotates; empty: all (the others' column is null)
    model: str | None = None  # fasttext: a model file; transformers: a model folder (resolved paths)
    label: str | None = None  # the label whose probability is the score (fasttext, transformers)
    function: str | None = None  # python: "package.module:name"
    batch_size: int = 64  # texts per call of the scorer
    max_length: int = 512  # transformers: tokens per text, truncated
    min: float | None = None  # a document scoring lower is removed (fate filtered, reason annotate:NAME)
    max: float | None = None  # ... or higher
    buckets: int = 0  # > 1: a column NAME_bucket, 0 .. buckets-1 at the corpus's quantiles of the score


class Scorer(Protocol):
    def scores(self, texts: list[str]) -> Sequence[float]:
        """One float per text, in order."""


@dataclass(frozen=True)
class AnnotatorKind:
    help: str  # one line, shown by `loom curate --help`
    keys: tuple[str, ...]  # the [[annotate]] keys it takes besides name, kind, sources, min, max, buckets
    required: tuple[str, ...]  # of those, the ones a table must set
    # (annotator config) -> None, or one line of what is wrong and the fix; on the client, before any compute;
    # never downloads anything
    check: Callable[[object], str | None]
    digest: Callable[[object], str]  # what the stage's fingerprint holds: the model's or the code's digest
    load: Callable[[object], Scorer]  # on a worker, once per process
