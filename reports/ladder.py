"""`ladders/NAME/report.html`: a scaling ladder's page. Its rungs' validation curves against training compute
on log-log axes, the law fitted to their final losses with its interval, the held-out rung's check, the target's
prediction, and the tables behind them, all from `ladders/NAME/fit.json` and each rung run's metrics.jsonl. A
ladder with cooldowns has the page of reports.ladder_budgets (its points against tokens, L(N, D), the frontier)."""

import json
from pathlib import Path
from urllib.parse import quote

from base.atomic_files import write_text
from base.errors import UserError
from base.small_files import read_text
from base.store import as_path
from base.workspace import LADDER_FIT_FILE, RUNS_DIR, Workspace
from reports.compare import sweep_comparison
from reports.html import (
    REPORT_FILE, Band, Dot, Html, Line, esc, legend, log_log_chart, number, page, scientific, table,
)
from reports.ladder_budgets import page_body as budgets_page_body
from reports.ladder_parts import FIT_COLOR, confidence, interval_text, metric_value, panels, rung_color
from trainer.metrics import FINISHED, METRICS_FILE, STEP, TOKENS_SEEN, VAL_LOSS

SYMBOLS = ("● a rung's final value · ◯ the held-out rung's, left out of the fit · ◇ with a bar: a prediction and "
           "its interval · dashed: the fitted law, shaded: its interval · thin lines: each rung's loss at each "
           "evaluation, at FLOPs per token × tokens seen")


def law(fit: dict | None, flops: float | None) -> float | None:
    """L(C) = L_inf + A * C^-alpha at C = flops, from a fit's parameters."""
    if not fit or not flops:
        return None
    return fit["l_inf"] + fit["a"] * flops ** -fit["alpha"]


# ---- the headline ----

def honesty_check(ladder: dict, metric: str = VAL_LOSS) -> str:
    """The sentence that says how well the law predicted a rung it was not fitted to, or why there is none."""
    entry = ladder["fits"].get(metric)
    if not entry:
        return "No fit yet: the law needs finished rungs."
    held = entry.get("held_out")
    if not held:
        return "No held-out check: too few finished rungs to leave one out of the fit."
    where = "no interval"
    if held.get("interval"):
        side = "inside" if held.get("inside") else "OUTSIDE"
        where = f"{side} the {interval_text(held['interval'], ladder)}"
    elif (held.get("fit") or {}).get("dof") == 0:
        where = "no interval: the fit without it has 0 degrees of freedom"
    error = f"{held['relative_error']:+.2%}" if held.get("relative_error") is not None else "?"
    return (f"held-out rung {held['rung']}: predicted {number(held.get('predicted'))}, measured "
            f"{number(held.get('measured'))}, error {error}, {where}")


def target_text(ladder: dict, metric: str = VAL_LOSS) -> str:
    target = ladder.get("target") or {}
    prediction = (ladder["fits"].get(metric) or {}).get("target")
    shape = target.get("shape") or {}
    what = (f"the target ({scientific(target['flops'])} FLOPs, {number(target.get('parameters'))} parameters, "
            f"{number(target.get('tokens'))} tokens" if target.get("flops") else "the target (no compute given")
    what += "".join(f", {k} {v}" for k, v in shape.items()) + ")"
    if not prediction:
        return f"No prediction for {what}."
    return (f"Predicted loss of {what}: {number(prediction['predicted'])}, "
            f"{interval_text(prediction.get('interval'), ladder)}.")


def headline(ladder: dict) -> str:
    rungs = ladder["rungs"]
    finished = sum(r.get("status") == FINISHED for r in rungs)
    held = (ladder["fits"].get(VAL_LOSS) or {}).get("held_out") or {}
    prediction = (ladder["fits"].get(VAL_LOSS) or {}).get("target") or {}
    cards = [("ladder", ladder["ladder"]), ("mixture", ladder["mixture"]),
             ("rungs finished", f"{finished} / {len(rungs)}"),
             ("held-out error", f"{held['relative_error']:+.2%}" if held.get("relative_error") is not None else "-"),
             ("target loss", number(prediction.get("predicted")) or "-")]
    boxes = "".join(f'<div id="headline-{esc(k.replace(" ", "-"))}">{esc(k)}<b>{esc(v)}</b></div>' for k, v in cards)
    return (f'<div class="headline">{boxes}</div><p id="honesty"><b>{esc(honesty_check(ladder))}</b></p>'
            f'<p id="target-prediction">{esc(target_text(ladder))}</p>')


def missing(ladder: dict, records: dict[str, list]) -> str:
    """What the page cannot draw yet: rungs without a final value, rungs without metrics."""
    notes = [f"{r['rung']} ({r.get('status', '?')}): "
             + ("no final value yet" if records[r["run"]] else "no metrics yet")
             for r in ladder["rungs"] if not r.get("final")]
    return f'<p class="note" id="missing">Not drawn yet: {esc("; ".join(notes))}.</p>' if notes else ""


# ---- the charts ----

def evaluations(run_dir: Path) -> list[dict]:
    """The metrics records of a run's evaluation steps. Only the lines that name the validation loss are parsed:
    the per-step lines around them (every group's norms) make a rung's metrics.jsonl tens of MB, which json and
    splitting into lines would take seconds to read. A torn line (a run killed or writing) is skipped, as
    read_metrics skips it."""
    path = run_dir / METRICS_FILE
    if not path.exists():
        return []
    text, needle, records = path.read_bytes(), f'"{VAL_LOSS}"'.encode(), []
    found = text.find(needle)
    while found >= 0:
        start, end = text.rfind(b"\n", 0, found) + 1, text.find(b"\n", found)
        end = len(text) if end < 0 else end
        try:
            record = json.loads(text[start:end])
        except ValueError:
            record = None
        if isinstance(record, dict) and type(record.get(STEP)) is int:
            records.append(record)
        found = text.find(needle, end)
    return records


def rung_curve(rung: dict, records: list[dict], metric: str) -> list[tuple[float, float]]:
    per_token = rung.get("flops_per_token") or 0
    return [(per_token * r[TOKENS_SEEN], value) for r in records
            if (value := metric_value(r, metric)) is not None and r.get(TOKENS_SEEN)]


def prediction_dots(ladder: dict, entry: dict) -> list[Dot]:
    """The held-out rung's prediction and the target's, each with its interval."""
    dots = []
    held = entry.get("held_out")
    flops = {r["rung"]: r.get("flops") for r in ladder["rungs"]}
    if held and held.get("predicted") is not None and flops.get(held["rung"]):
        dots.append(Dot(f"held-out rung {held['rung']}: predicted {number(held['predicted'])}, "
                        f"{interval_text(held.get('interval'), ladder)}", flops[held["rung"]], held["predicted"],
                        FIT_COLOR, "held-out-prediction", "diamond", held.get("interval")))
    flops, prediction = (ladder.get("target") or {}).get("flops"), entry.get("target")
    if prediction and flops:
        dots.append(Dot(f"target at {scientific(flops)} FLOPs: predicted {number(prediction['predicted'])}, "
                        f"{interval_text(prediction.get('interval'), ladder)}", flops, prediction["predicted"],
                        FIT_COLOR, "target", "diamond", prediction.get("interval"), "target"))
    return dots


def metric_chart(ladder: dict, records: dict[str, list], metric: str, chart_id: str, width: int, height: int,
                 y_label: str = "") -> str:
    entry = ladder["fits"].get(metric) or {}
    held_rung = (entry.get("held_out") or {}).get("rung")
    lines, dots = [], []
    for i, rung in enumerate(ladder["rungs"]):
        curve = rung_curve(rung, records[rung["run"]], metric)
        lines.append(Line(rung["rung"], curve, rung_color(i), "rung-curve", 1.2))
        final = metric_value(rung.get("final") or {}, metric)
        if final is not None and rung.get("flops"):
            held = rung["rung"] == held_rung
            dots.append(Dot(f"{rung['rung']}{' (held out)' if held else ''}: final {number(final)} at "
                            f"{scientific(rung['flops'])} FLOPs", rung["flops"], final, rung_color(i),
                            "held-out" if held else "rung-final", "ring" if held else "circle"))
    curve = entry.get("curve") or []
    band = [(p["flops"], p.get("lower"), p.get("upper")) for p in curve]
    bands = [Band(f"{confidence(ladder)} interval of the fit", band, FIT_COLOR, "fit-band")]
    lines.append(Line(f"fit: {ladder.get('law', 'the law')}", [(p["flops"], p["predicted"]) for p in curve], FIT_COLOR,
                      "fit-line", 2, "6 4"))
    return log_log_chart(chart_id, lines, bands, dots + prediction_dots(ladder, entry), "training compute (FLOPs)",
                         y_label or entry.get("label", metric), width, height)


# ---- the tables and the method ----

def shape_text(rung: dict) -> str:
    text = f"d{rung.get('d_model', '?')} L{rung.get('n_layers', '?')} H{rung.get('n_heads', '?')}"
    return text + (f" E{rung['n_experts']} top{rung.get('top_k', '?')}" if rung.get("n_experts") else "")


def rung_table(ladder: dict) -> str:
    fit = (ladder["fits"].get(VAL_LOSS) or {}).get("fit")
    rows = [[r["rung"], Html(f'<a href="../../{RUNS_DIR}/{esc(quote(r["run"]))}/{REPORT_FILE}">{esc(r["run"])}</a>'),
             shape_text(r), r.get("parameters"), r.get("active_parameters"), r.get("tokens"),
             r.get("tokens_per_parameter"), scientific(r["flops"]) if r.get("flops") else "",
             f"{r['lr']:g}" if r.get("lr") is not None else "", r.get("warmup_steps"), r.get("status", "?"),
             metric_value(r.get("final") or {}, VAL_LOSS), law(fit, r.get("flops"))]
            for r in ladder["rungs"]]
    columns = ["rung", "run", "shape (d_model, layers, heads)", "parameters", "active parameters", "tokens",
               "tokens / parameter", "FLOPs", "LR", "warmup steps", "status", "final val loss", "fitted val loss"]
    return table(columns, rows, "rung-table", numeric={3, 4, 5, 6, 9, 11, 12})


def fits_table(ladder: dict) -> str:
    rows = []
    for metric, entry in ladder["fits"].items():
        fit, held, target = entry.get("fit") or {}, entry.get("held_out") or {}, entry.get("target") or {}
        error = held.get("relative_error")
        parameters = (f"{fit[k]:.4g}" if fit.get(k) is not None else "" for k in ("l_inf", "a", "alpha"))
        rows.append([entry.get("label", metric), *parameters, "yes" if fit.get("pinned") else "no",
                     fit.get("n_points"), fit.get("dof"),
                     f"{held['rung']}: {error:+.2%}" if error is not None else "",
                     target.get("predicted"), "–".join(f"{v:.3f}" for v in target.get("interval") or ())])
    columns = ["metric", "L_inf", "A", "alpha", "L_inf pinned", "points", "dof", "held-out error", "target prediction",
               f"target interval ({confidence(ladder)})"]
    return table(columns, rows, "fits-table", numeric={5, 6, 8})


def chinchilla(ladder: dict) -> str:
    fit = ladder.get("chinchilla") or {}
    if fit.get("skipped"):
        return (f'<p class="note" id="chinchilla">Chinchilla fit L(N, D) = E + A/N^alpha + B/D^beta skipped: '
                f'{esc(fit["skipped"])}.</p>')
    if not fit.get("fit"):
        return ""
    params = ", ".join(f"{k} = {v:.4g}" for k, v in fit["fit"].items() if isinstance(v, (int, float)))
    target = fit.get("target") or {}
    predicted = f"; target predicted {number(target['predicted'])}" if target.get("predicted") is not None else ""
    return (f'<p id="chinchilla">Chinchilla fit L(N, D) = E + A/N^alpha + B/D^beta: {esc(params)}{esc(predicted)}, '
            f"{esc(interval_text(target.get('interval'), ladder))}.</p>")


def method(ladder: dict) -> str:
    interval = ladder.get("interval") or {}
    held = (ladder["fits"].get(VAL_LOSS) or {}).get("held_out") or {}
    return (f'<p class="note" id="method">Each metric\'s final value on the finished rungs is fitted with '
            f"{esc(ladder.get('law', 'a power law'))} (C = training FLOPs) by robust least squares: a Huber loss, so "
            f"one odd rung pulls the line less, minimised from several starting points. One rung"
            f"{esc(' (' + held['rung'] + ')') if held.get('rung') else ''} is held out: the law fitted without it "
            f"predicts it, and its error against the measured loss is the honest check of how far the extrapolation "
            f"can be trusted. Bands and error bars are the {esc(confidence(ladder))} "
            f"{esc(interval.get('method') or '')} interval from the fit's residual scale, with the fit's degrees of "
            f"freedom (dof, in the fits table; none with 0). L_inf pinned: the asymptote was held fixed rather than "
            f"fitted.</p>")


# ---- the page ----

def load_ladder(ladder_dir: Path) -> dict:
    path = ladder_dir / LADDER_FIT_FILE
    if not path.exists():
        raise UserError(f"no {LADDER_FIT_FILE} in {ladder_dir}; run `loom ladder NAME --mixture MIX` first")
    ladder = json.loads(read_text(path))
    ladder["fits"] = ladder.get("fits") or {}
    return ladder


def ladder_report(ladder_dir: Path) -> Path:
    ladder_dir = as_path(ladder_dir)
    ladder = load_ladder(ladder_dir)
    runs = Workspace(ladder_dir.parent.parent)
    if ladder.get("design") == "cooldowns":
        every_run = [b["run"] for r in ladder["rungs"] for b in r["budgets"]]
        body = budgets_page_body(ladder, legend([r["rung"] for r in ladder["rungs"]]),
                                 sweep_comparison(runs.root, every_run, f"ladder-{ladder_dir.name}", "The runs"))
    else:
        body = final_points_body(ladder, ladder_dir, runs)
    out = ladder_dir / REPORT_FILE
    write_text(page(f"Loom ladder {ladder['ladder']}", body), out)
    return out


def final_points_body(ladder: dict, ladder_dir: Path, runs: Workspace) -> list[str]:
    """The page of a ladder fitted on its rungs' final points: L(C) against compute."""
    records = {r["run"]: evaluations(runs.run_dir(r["run"])) for r in ladder["rungs"]}

    def chart(metric: str, chart_id: str) -> str:
        return metric_chart(ladder, records, metric, chart_id, 350, 230, "loss")

    return [f"<h1>Scaling ladder {esc(ladder['ladder'])}</h1>", headline(ladder), missing(ladder, records),
            "<h2>Validation loss against compute</h2>", legend([r["rung"] for r in ladder["rungs"]]),
            metric_chart(ladder, records, VAL_LOSS, "ladder-chart", 1000, 400), f'<p class="note">{SYMBOLS}.</p>',
            *panels(ladder, "source:", "Per source", chart), *panels(ladder, "eval:", "Per eval set", chart),
            "<h2>Rungs</h2>", rung_table(ladder),
            sweep_comparison(runs.root, [r["run"] for r in ladder["rungs"]], f"ladder-{ladder_dir.name}",
                             "The rungs' runs"), "<h2>Fits</h2>", fits_table(ladder), chinchilla(ladder),
            "<h2>Method</h2>", method(ladder)]
