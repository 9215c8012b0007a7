"""What both pages of a ladder share (reports.ladder: fitted on final points; reports.ladder_budgets: with
cooldowns): a metric's value in a record, the rungs' colours, the interval's words."""

from reports.html import PALETTE
from trainer.metrics import EVAL_LOSS_BY_SET, VAL_LOSS, VAL_LOSS_BY_SOURCE

FIT_COLOR = "#222"  # the law, its band and its predictions (held-out point, target)
PER_METRIC_KEY = {"source": VAL_LOSS_BY_SOURCE, "eval": EVAL_LOSS_BY_SET}  # fits' "source:web", "eval:bofh"


def metric_value(values: dict, metric: str):
    """A metric's value in a metrics record or a rung's final: "val_loss", "source:NAME" or "eval:NAME"."""
    if metric == VAL_LOSS:
        return values.get(VAL_LOSS)
    kind, _, name = metric.partition(":")
    return (values.get(PER_METRIC_KEY.get(kind, "")) or {}).get(name)


def rung_color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def confidence(ladder: dict) -> str:
    interval = ladder.get("interval") or {}
    return f"{interval['confidence']:.0%}" if interval.get("confidence") else "?"


def interval_text(interval, ladder: dict) -> str:
    return f"{confidence(ladder)} interval {interval[0]:.3f}–{interval[1]:.3f}" if interval else "no interval"
