"""The annotate step of `prepare`, one per annotator covering the source, after quality scoring: the texts in
batches of `batch_size` through the annotator's scorer (loaded once per worker process), each score checked and
kept on the document (`Doc.annotations[NAME]`); a document outside `min`/`max` is removed (fate filtered, stage
"annotate", reason `annotate:NAME`). A scorer that raises, or answers with the wrong number of scores or a value
that is not a finite number, stops the job with one line naming the annotator (a UserError raised in the task)."""

import functools
import math
from itertools import islice

from base.errors import UserError
from curation.steps.annotate import ANNOTATORS
from curation.steps.annotate.kinds import AnnotatorConfig
from curation.user_code import error_line

STAGE = "annotate"


def covers(config: AnnotatorConfig, source: str) -> bool:
    """Whether the annotator scores the documents of `source` (no `sources`: every source's)."""
    return not config.sources or source in config.sources


def reason(config: AnnotatorConfig) -> str:
    return f"{STAGE}:{config.name}"


@functools.cache
def scorer_for(config: AnnotatorConfig):
    """The annotator's scorer, loaded once per process, whichever sources' steps use it."""
    try:
        return ANNOTATORS[config.kind].load(config)
    except UserError:
        raise
    except Exception as err:  # noqa: BLE001 - a user's class or model that fails to load: one line
        raise UserError(f"annotator '{config.name}': its scorer failed to load on a worker ({error_line(err)}); "
                        "fix it (a class is made with no arguments, once per worker process)") from None


def checked_scores(config: AnnotatorConfig, scorer, texts: list[str]) -> list[float]:
    """The scorer's floats for `texts`, or a UserError naming the annotator and the fix."""
    where = f"annotator '{config.name}'"
    try:
        answer = scorer.scores(texts)
        scores = list(answer)
    except UserError:
        raise
    except Exception as err:  # noqa: BLE001 - the user's scorer: any failure is said in one line
        raise UserError(f"{where}: its scorer raised {error_line(err)}; fix the scorer (it is "
                        "called with a list of texts and must return one float per text)") from None
    if len(scores) != len(texts):
        raise UserError(f"{where}: its scorer returned {len(scores)} scores for {len(texts)} texts; return one float "
                        "per text, in order")
    values = []
    for value in scores:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number):
            shown = " ".join(repr(value).split())[:60]
            raise UserError(f"{where}: its scorer returned {shown}, not a finite number; return one finite float per "
                            "text")
        values.append(number)
    return values


def bound_broken(config: AnnotatorConfig, value: float) -> str | None:
    """The funnel's detail for a score outside `min`/`max` ("edu 1.25 < min 2"), else None."""
    if config.min is not None and value < config.min:
        return f"{config.name} {value:.6g} < min {config.min:g}"
    if config.max is not None and value > config.max:
        return f"{config.name} {value:.6g} > max {config.max:g}"
    return None


class Annotate:
    """Scores each document with one annotator; removes those outside its bounds."""

    def __init__(self, config: AnnotatorConfig):
        self.config = config
        self.name = reason(config)

    def run(self, docs, funnel):
        while batch := list(islice(docs, self.config.batch_size)):
            scores = checked_scores(self.config, scorer_for(self.config), [doc.text for doc in batch])
            for doc, value in zip(batch, scores):
                doc.annotations[self.config.name] = value
                if detail := bound_broken(self.config, value):
                    funnel.remove(doc, STAGE, self.name, detail=detail)
                else:
                    yield doc
