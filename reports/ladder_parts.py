"""What both pages of a ladder share (reports.ladder: fitted on final points; reports.ladder_budgets: with
cooldowns): a metric's value in a record, the rungs' colours, the interval's words, the per-metric panels."""

from typing import Callable

from reports.html import PALETTE, esc
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


def panels(ladder: dict, prefix: str, title: str, chart: Callable[[str, str], str]) -> list[str]:
    """Small multiples, one per fitted metric that starts with `prefix` ("source:", "eval:"): `chart(metric,
    chart_id)` draws each (the compute chart of a ladder, or the tokens chart of one with cooldowns)."""
    metrics = sorted(m for m in ladder["fits"] if m.startswith(prefix))
    if not metrics:
        return []
    charts = [f'<div><h3>{esc(ladder["fits"][m].get("label", m))}</h3>{chart(m, f"{prefix[:-1]}-chart-{i}")}</div>'
              for i, m in enumerate(metrics)]
    return [f"<h2>{esc(title)}</h2>", '<div class="panels">', *charts, "</div>"]
