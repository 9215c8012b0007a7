"""Annotators: `[[annotate]]` tables of sources.toml, each a numeric column of curated rows computed by a scorer
on the workers. ANNOTATORS maps a kind's name to its AnnotatorKind (kinds.py): one module per kind, one line here."""

from curation.steps.annotate.fasttext import FASTTEXT
from curation.steps.annotate.kinds import AnnotatorConfig, AnnotatorKind, Scorer
from curation.steps.annotate.python import PYTHON
from curation.steps.annotate.transformers import TRANSFORMERS

ANNOTATORS: dict[str, AnnotatorKind] = {
    "fasttext": FASTTEXT,
    "python": PYTHON,
    "transformers": TRANSFORMERS,
}

__all__ = ["ANNOTATORS", "AnnotatorConfig", "AnnotatorKind", "Scorer"]
