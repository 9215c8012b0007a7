"""A mixture search's objective: a weighted mean of a run's final losses (the per-source validation losses, the
evaluation sets' losses, or the overall validation loss), written as `TERM[=WEIGHT],...`:

    sources            the mean of the per-source validation losses (the default)
    evals              the mean of the evaluation sets' losses
    val_loss           the validation loss over every source's held-out tokens
    source:NAME        one source's validation loss
    eval:NAME          one evaluation set's loss

`sources=1,evals=1` weighs the two means equally. The search fits each term's loss on its own and combines them."""

import math
import re

from base.errors import UserError
from sweeps.results import VAL

DEFAULT = "sources"
TERM = re.compile(r"^(sources|evals|val_loss|source:[A-Za-z0-9_.-]+|eval:[A-Za-z0-9_-]+)(=(?P<weight>.+))?$")


def parse_objective(text: str) -> list[tuple[str, float]]:
    """The terms and their weights as written; refuses what is not a term."""
    terms = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = TERM.match(part)
        if not match:
            raise UserError(f"--objective: '{part}' is not a term; use sources, evals, val_loss, source:NAME or "
                            "eval:NAME, each with an optional =WEIGHT (e.g. sources=1,eval:bofh=0.5)")
        weight = _weight(match["weight"], part)
        terms.append((match[1], weight))
    if not terms or not any(w > 0 for _, w in terms):
        raise UserError("--objective: give at least one term with a positive weight (e.g. sources)")
    return terms


def _weight(text: str | None, part: str) -> float:
    if text is None:
        return 1.0
    try:
        weight = float(text)
    except ValueError:
        weight = math.nan
    if not math.isfinite(weight) or weight < 0:
        raise UserError(f"--objective: the weight in '{part}' must be a number >= 0")
    return weight


def resolve_objective(terms: list[tuple[str, float]], sources: list[str], evals: list[str]) -> dict[str, float]:
    """Each metric (val_loss, source:NAME, eval:NAME) with its weight, `sources` and `evals` shared out between
    the sources and sets the mixture validates on; refuses a term the mixture has no loss for."""
    weights: dict[str, float] = {}
    for term, weight in terms:
        for metric, share in _expand(term, sources, evals):
            weights[metric] = weights.get(metric, 0.0) + weight * share
    return {metric: w for metric, w in weights.items() if w > 0}


def _expand(term: str, sources: list[str], evals: list[str]) -> list[tuple[str, float]]:
    if term == VAL:
        return [(VAL, 1.0)]
    if term in ("sources", "evals"):
        names = sources if term == "sources" else evals
        if not names:
            raise UserError(f"--objective: '{term}' but the mixture has no "
                            f"{'validation sources' if term == 'sources' else 'evaluation sets ([eval.NAME])'}")
        prefix = "source:" if term == "sources" else "eval:"
        return [(prefix + name, 1.0 / len(names)) for name in names]
    kind, name = term.split(":", 1)
    known = sources if kind == "source" else evals
    if name not in known:
        raise UserError(f"--objective: the mixture has no {'source' if kind == 'source' else 'evaluation set'} "
                        f"'{name}'; known: {', '.join(known) or 'none'}")
    return [(term, 1.0)]


def describe(terms: list[tuple[str, float]]) -> str:
    words = {"sources": "the mean of per-source validation losses", "evals": "the mean of evaluation-set losses",
             VAL: "the validation loss"}
    parts = [words.get(term, term) + ("" if len(terms) == 1 else f" (weight {w:g})") for term, w in terms]
    return " + ".join(parts)


def score(values: dict[str, float], weights: dict[str, float]) -> float | None:
    """The objective of one run's final metric values; None while any of its terms is missing."""
    if any(values.get(metric) is None for metric in weights):
        return None
    return sum(values[m] * w for m, w in weights.items()) / sum(weights.values())
