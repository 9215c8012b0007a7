"""The page of a ladder with cooldowns (fit.json's "design": "cooldowns"): loss against tokens per rung, one line
through its budgets on log-log axes with the fitted L(N, D) of its N; the held-out point (the largest N at its
largest D) and its prediction with the interval; the target's; and the L(C) law on the compute-optimal frontier
with every point. reports.ladder builds the rest of the page (and the page of a ladder without cooldowns)."""

from reports.html import Band, Dot, Line, esc, log_log_chart, number, scientific, table
from reports.ladder_parts import FIT_COLOR, confidence, interval_text, metric_value, panels, rung_color

SYMBOLS = ("● a budget's final value (a cooldown's, or the rung's own run at the right of its line) · ◯ the held-out "
           "point, left out of the fit · ◇ with a bar: a prediction and its interval · dashed: the fitted L(N, D) at "
           "each rung's N (black: the target's N)")


def loss_at(values: dict | None, metric: str) -> float | None:
    return metric_value(values or {}, metric)


def percent(value) -> str:
    return "?" if value is None else f"{value:+.2%}"


def honesty_text(ladder: dict, metric: str = "val_loss") -> str:
    entry = ladder["fits"].get(metric)
    if not entry or not entry.get("fit"):
        reason = (entry or {}).get("error") or "the law needs finished points"
        return f"No fit yet: {reason}."
    held = entry.get("held_out") or {}
    if held.get("error") or held.get("predicted") is None:
        return f"No held-out check yet: {held.get('error', 'too few points')}."
    where = "no interval"
    if held.get("interval"):
        side = "inside" if held.get("inside") else "OUTSIDE"
        where = f"{side} the {interval_text(held['interval'], ladder)} (±{held['half_width']:.1%})"
    return (f"held-out point {held['rung']} at {number(held.get('tokens'))} tokens: predicted "
            f"{number(held['predicted'])}, measured {number(held['measured'])}, error "
            f"{percent(held.get('relative_error'))}, {where}")


def tokens_chart(ladder: dict, metric: str, chart_id: str, width: int, height: int, y_label: str) -> str:
    """Per rung: its budgets' final losses against tokens, joined, and the law at its N; the predictions."""
    entry = ladder["fits"].get(metric) or {}
    held = entry.get("held_out") or {}
    lines, dots = [], []
    for i, rung in enumerate(ladder["rungs"]):
        measured = [(b["tokens"], loss_at(b["final"], metric)) for b in rung["budgets"]]
        measured = [(d, loss) for d, loss in measured if loss is not None]
        lines.append(Line(rung["rung"], measured, rung_color(i), "rung-points", 1.2))
        for budget in rung["budgets"]:
            loss = loss_at(budget["final"], metric)
            if loss is None:
                continue
            out = budget["run"] == held.get("run")
            dots.append(Dot(f"{budget['run']}{' (held out)' if out else ''}: {number(loss)} at "
                            f"{number(budget['tokens'])} tokens", budget["tokens"], loss, rung_color(i),
                            "held-out" if out else "budget-final", "ring" if out else "circle"))
    colour = {r["rung"]: rung_color(i) for i, r in enumerate(ladder["rungs"])}
    bands = []
    for curve in entry.get("curves") or []:
        points = curve["points"]
        color = colour.get(curve["rung"], FIT_COLOR)
        css = "target-fit" if curve["rung"] == "target" else "rung-fit"
        lines.append(Line(f"L(N, D) at N = {number(curve['parameters'])} ({curve['rung']})",
                          [(p["tokens"], p["predicted"]) for p in points], color, css, 1.5, "6 4"))
        if curve["rung"] == "target":
            bands.append(Band(f"the law at the target's N, {confidence(ladder)} interval of the curve",
                              [(p["tokens"], p["lower"], p["upper"]) for p in points], FIT_COLOR, "fit-band"))
    if held.get("predicted") is not None:
        dots.append(Dot(f"held-out {held['rung']}: predicted {number(held['predicted'])}, "
                        f"{interval_text(held.get('interval'), ladder)}", held["tokens"], held["predicted"], FIT_COLOR,
                        "held-out-prediction", "diamond", held.get("interval")))
    target, predicted = ladder.get("target") or {}, entry.get("target")
    if predicted and target.get("tokens"):
        dots.append(Dot(f"target: predicted {number(predicted['predicted'])}, "
                        f"{interval_text(predicted.get('interval'), ladder)}", target["tokens"], predicted["predicted"],
                        FIT_COLOR, "target", "diamond", predicted.get("interval"), "target"))
    return log_log_chart(chart_id, lines, bands, dots, "training tokens (D)", y_label, width, height)


def frontier_chart(ladder: dict, metric: str = "val_loss") -> str:
    """Every point's loss against its compute, and the law's compute-optimal frontier."""
    entry = ladder["fits"].get(metric) or {}
    frontier = entry.get("frontier") or {}
    dots = [Dot(f"{b['run']}: {number(loss)} at {scientific(b['flops'])} FLOPs", b["flops"], loss, rung_color(i),
                "frontier-point") for i, r in enumerate(ladder["rungs"]) for b in r["budgets"]
            if (loss := loss_at(b["final"], metric)) is not None]
    lines = [Line(frontier["law"], [(p["flops"], p["loss"]) for p in frontier["curve"]], FIT_COLOR, "frontier", 2,
                  "6 4")] if frontier.get("curve") else []
    target, predicted = ladder.get("target") or {}, entry.get("target")
    if predicted and target.get("flops"):
        dots.append(Dot(f"target: predicted {number(predicted['predicted'])}, "
                        f"{interval_text(predicted.get('interval'), ladder)}", target["flops"], predicted["predicted"],
                        FIT_COLOR, "target", "diamond", predicted.get("interval"), "target"))
    note = (f'<p class="note" id="frontier-law">{esc(frontier_text(frontier))}</p>')
    return log_log_chart("frontier-chart", lines, [], dots, "training compute (FLOPs)", "loss", 1000, 320) + note


def frontier_text(frontier: dict) -> str:
    if not frontier or frontier.get("error") or not frontier.get("fit"):
        return f"No frontier: {frontier.get('error', 'no fit yet') if frontier else 'no fit yet'}."
    fit = frontier["fit"]
    return (f"On the frontier (each compute's best N and D under the law): L(C) = {fit['l_inf']:.4g} + "
            f"{fit['a']:.4g} × C^-{fit['alpha']:.4g}; at the target's compute {number(frontier.get('target'))}.")


def budget_table(ladder: dict) -> str:
    fit = (ladder["fits"].get("val_loss") or {}).get("fit")
    rows = []
    for r in ladder["rungs"]:
        for b in r["budgets"]:
            fitted = (fit["e"] + fit["a"] / r["active_parameters"] ** fit["alpha"]
                      + fit["b"] / b["tokens"] ** fit["beta"] if fit else None)
            rows.append([r["rung"], b["run"], r.get("active_parameters"), b.get("fraction"), b["steps"], b["tokens"],
                         scientific(b["flops"]), b.get("branch_step"),
                         b.get("status", "?"), loss_at(b.get("final"), "val_loss"), fitted])
    columns = ["rung", "run", "active parameters", "budget (share of steps)", "steps", "tokens", "FLOPs",
               "branched at step", "status", "final val loss", "fitted val loss"]
    return table(columns, rows, "budget-table", numeric={2, 3, 4, 5, 7, 9, 10})


def fits_table(ladder: dict) -> str:
    level = confidence(ladder)
    rows = []
    for metric, entry in ladder["fits"].items():
        fit, held, target = entry.get("fit") or {}, entry.get("held_out") or {}, entry.get("target") or {}
        params = (f"{fit[k]:.4g}" if fit.get(k) is not None else "" for k in ("e", "a", "alpha", "b", "beta"))
        width = held.get("half_width")
        rows.append([entry.get("label", metric), *params, entry.get("n_points"), fit.get("dof"),
                     percent(held.get("relative_error")) if held.get("predicted") is not None else "",
                     f"±{width:.1%}" if width is not None else "",
                     {True: "yes", False: "NO"}.get(held.get("inside"), ""),
                     target.get("predicted"), "–".join(f"{v:.3f}" for v in target.get("interval") or ())])
    columns = ["metric", "E", "A", "alpha", "B", "beta", "points", "dof", "held-out error",
               f"held-out interval ({level})", "inside", "target prediction", f"target interval ({level})"]
    return table(columns, rows, "fits-table", numeric={6, 7, 11})


def method(ladder: dict) -> str:
    fit = (ladder["fits"].get("val_loss") or {}).get("fit") or {}
    interval = fit.get("interval_method") or (ladder.get("interval") or {}).get("method") or ""
    cooldowns = ", ".join(f"{f:g}" for f in ladder.get("cooldowns") or [])
    return (f'<p class="note" id="method">Each rung (a model size N) is trained once through a warmup-stable-decay '
            f"schedule, and from its stable phase a cooldown branches for each shorter budget ({esc(cooldowns)} of its "
            f"steps), its LR decaying over the last {ladder.get('decay_fraction', 0):.0%} of that budget: each budget "
            f"is a point (N, D, loss) as if a run had been trained to D, at a fraction of the cost. Every finished "
            f"point's final value is fitted with {esc(ladder.get('law', 'L(N, D)'))} (Chinchilla's approach 3) by "
            f"robust least squares (a Huber loss on log-loss residuals from several starts). The honesty check holds "
            f"out the largest N at its largest D: the law fitted without it predicts it. Intervals are "
            f"{esc(confidence(ladder))} {esc(interval)} intervals for one run's loss (the fit's "
            f"uncertainty and one run's noise). The frontier is the law's lowest loss at each compute (its best N "
            f"and D), with L(C) fitted to it.</p>")


def headline(ladder: dict) -> str:
    budgets = [b for r in ladder["rungs"] for b in r["budgets"]]
    entry = ladder["fits"].get("val_loss") or {}
    held, target = entry.get("held_out") or {}, entry.get("target") or {}
    cards = [("ladder", ladder["ladder"]), ("mixture", ladder["mixture"]),
             ("points finished", f"{sum(b['final'] is not None for b in budgets)} / {len(budgets)}"),
             ("held-out error", percent(held.get("relative_error")) if held.get("predicted") is not None else "-"),
             ("held-out interval", f"±{held['half_width']:.1%}" if held.get("half_width") is not None else "-"),
             ("target loss", number(target.get("predicted")) or "-")]
    boxes = "".join(f'<div id="headline-{esc(k.replace(" ", "-"))}">{esc(k)}<b>{esc(v)}</b></div>' for k, v in cards)
    prediction = (f"Predicted loss of the target ({number(ladder['target'].get('parameters'))} active parameters, "
                  f"{number(ladder['target'].get('tokens'))} tokens): {number(target['predicted'])}, "
                  f"{interval_text(target.get('interval'), ladder)}." if target
                  else "No prediction for the target yet.")
    return (f'<div class="headline">{boxes}</div><p id="honesty"><b>{esc(honesty_text(ladder))}</b></p>'
            f'<p id="target-prediction">{esc(prediction)}</p>')


def page_body(ladder: dict, legend_html: str, comparison: str) -> list[str]:
    def chart(metric: str, chart_id: str) -> str:
        return tokens_chart(ladder, metric, chart_id, 350, 230, "loss")

    return [f"<h1>Scaling ladder {esc(ladder['ladder'])}</h1>", headline(ladder),
            "<h2>Validation loss against tokens, per rung</h2>", legend_html,
            tokens_chart(ladder, "val_loss", "tokens-chart", 1000, 420, "validation loss (all sources)"),
            f'<p class="note">{esc(SYMBOLS)}.</p>',
            "<h2>The compute-optimal frontier</h2>", frontier_chart(ladder),
            *panels(ladder, "source:", "Per source", chart), *panels(ladder, "eval:", "Per eval set", chart),
            "<h2>Points</h2>", budget_table(ladder), comparison, "<h2>Fits</h2>", fits_table(ladder),
            "<h2>Method</h2>", method(ladder)]
