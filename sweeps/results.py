"""A trained ladder's results: each rung's final losses (validation, per source, per evaluation set), the fits of
L(C) = L_inf + A * C^-alpha to each, the honesty check (the largest rung held out of the fit and predicted), the
target's prediction, and Chinchilla's approach 3 where the rungs vary N and D independently. A ladder with
cooldowns is fitted on every (rung, budget) point instead (sweeps.budget_fit). Written as fit.json (what the report
draws) and points.parquet (the `ladder` view of `loom sql`)."""

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa

from base.atomic_files import write_text
from base.parquet_files import write_parquet
from base.workspace import LADDER_FIT_FILE, LADDER_POINTS_FILE, Workspace
from sweeps import budget_fit
from sweeps.fit import fit_chinchilla, fit_power_law, identifiability, relative_error
from sweeps.plan import LadderPlan
from sweeps.spec import FitConfig
from trainer import metrics

LAW = "L(C) = L_inf + A * C^-alpha"
CURVE_POINTS = 48
VAL = "val_loss"


def final_losses(run_dir: Path) -> dict | None:
    """The run's last evaluation: {"val_loss", "val_loss_by_source", "eval_loss_by_set"}, or None."""
    if not (run_dir / metrics.METRICS_FILE).exists():
        return None
    evaluated = [r for r in metrics.read_metrics(run_dir) if r.get(metrics.VAL_LOSS) is not None]
    if not evaluated:
        return None
    last = evaluated[-1]
    return {VAL: last[metrics.VAL_LOSS], "val_loss_by_source": last.get(metrics.VAL_LOSS_BY_SOURCE) or {},
            "eval_loss_by_set": last.get(metrics.EVAL_LOSS_BY_SET) or {}}


def run_status(run_dir: Path) -> str:
    """A sweep's run as it stands (running, interrupted, finished, failed...), or pending before it has started."""
    return metrics.run_status(run_dir) if (run_dir / metrics.RUN_FILE).exists() else "pending"


def metric_values(final: dict) -> dict[str, float]:
    """One final's losses by metric key: val_loss, source:NAME, eval:NAME."""
    values = {VAL: final[VAL]}
    values.update({f"source:{s}": v for s, v in sorted(final["val_loss_by_source"].items()) if v is not None})
    values.update({f"eval:{e}": v for e, v in sorted(final["eval_loss_by_set"].items()) if v is not None})
    return values


def label(metric: str) -> str:
    if metric == VAL:
        return "validation loss (all sources)"
    kind, name = metric.split(":", 1)
    return f"validation loss of source {name}" if kind == "source" else f"loss on evaluation set {name}"


def rung_records(workspace: Path, ladder: LadderPlan) -> list[dict]:
    records = []
    for r in ladder.rungs:
        run_dir = Workspace(workspace).run_dir(r.name)
        status = run_status(run_dir)
        records.append({
            "rung": r.rung, "run": r.name, "status": status, **r.shape.__dict__, "parameters": r.parameters,
            "active_parameters": r.active_parameters, "tokens": r.tokens, "steps": r.steps,
            "flops_per_token": r.flops_per_token, "flops": r.flops,
            "tokens_per_parameter": r.tokens_per_parameter, "lr": r.lr, "warmup_steps": r.warmup_steps,
            "final": final_losses(run_dir) if status == metrics.FINISHED else None,
            **({"budgets": budget_records(workspace, r)} if r.cooldown_steps else {}),
        })
    return records


def budget_records(workspace: Path, rung) -> list[dict]:
    """Each budget of a rung with cooldowns (ascending, its own run last): its run, where it branched, its final."""
    records = []
    for b in rung.budgets:
        run_dir = Workspace(workspace).run_dir(b.run)
        status = run_status(run_dir)
        records.append({"run": b.run, "steps": b.steps, "tokens": b.tokens, "flops": b.flops,
                        "fraction": round(b.steps / rung.steps, 4), "branch_step": b.branch_step, "status": status,
                        "final": final_losses(run_dir) if status == metrics.FINISHED else None})
    return records


def fit_metric(rungs: list[dict], metric: str, target_flops: float, fit: FitConfig) -> dict:
    """The fit of one metric over the finished rungs: all of them, then all but the largest (predicting it)."""
    points = [(r["rung"], r["flops"], metric_values(r["final"]).get(metric)) for r in rungs if r["final"]]
    points = [p for p in points if p[2] is not None and math.isfinite(p[2])]
    result = {"label": label(metric), "fit": None, "held_out": None, "target": None, "curve": []}
    compute, loss = np.array([p[1] for p in points]), np.array([p[2] for p in points])
    try:
        law = _fit(compute, loss, fit)
    except ValueError as err:
        return {**result, "error": str(err)}
    result["fit"] = law.to_json()
    result["target"] = {"predicted": float(law(target_flops)), "interval": _interval(law, target_flops, fit)}
    grid = np.geomspace(compute.min() / 1.5, max(target_flops, compute.max()) * 1.5, CURVE_POINTS)
    band = law.interval(grid, fit.confidence, run_noise=True)
    result["curve"] = [{"flops": float(c), "predicted": float(law(c)),
                        "lower": float(band[0][i]) if band else None, "upper": float(band[1][i]) if band else None}
                       for i, c in enumerate(grid)]
    result["held_out"] = _held_out(points, fit)
    return result


def _held_out(points: list[tuple], fit: FitConfig) -> dict | None:
    largest = max(points, key=lambda p: p[1])
    rest = [p for p in points if p is not largest]
    try:
        law = _fit(np.array([p[1] for p in rest]), np.array([p[2] for p in rest]), fit)
    except ValueError as err:
        return {"rung": largest[0], "error": str(err)}
    predicted, measured = float(law(largest[1])), largest[2]
    interval = _interval(law, largest[1], fit)
    return {"rung": largest[0], "fit": law.to_json(), "predicted": predicted, "measured": measured,
            "relative_error": relative_error(predicted, measured), "interval": interval,
            "inside": None if interval is None else interval[0] <= measured <= interval[1]}


def _fit(compute: np.ndarray, loss: np.ndarray, fit: FitConfig):
    return fit_power_law(compute, loss, l_inf=fit.l_inf, huber_delta=fit.huber_delta, noise_floor=fit.noise_floor,
                         interval=fit.interval)


def _interval(law, compute: float, fit: FitConfig) -> list[float] | None:
    """Where one run at `compute` would land: the fit's uncertainty and one run's noise."""
    band = law.interval(np.array([compute]), fit.confidence, run_noise=True)
    return None if band is None else [float(band[0][0]), float(band[1][0])]


def chinchilla(rungs: list[dict], target, fit: FitConfig) -> dict:
    done = [r for r in rungs if r["final"]]
    n = np.array([r["active_parameters"] for r in done], dtype=float)
    d = np.array([r["tokens"] for r in done], dtype=float)
    why_not = identifiability(n, d) if len(done) else "no rung has finished"
    if why_not:
        return {"skipped": why_not}
    try:
        law = fit_chinchilla(n, d, np.array([r["final"][VAL] for r in done]), huber_delta=fit.huber_delta,
                             noise_floor=fit.noise_floor)
    except ValueError as err:
        return {"skipped": str(err)}
    n_target = float(target.active_parameters)
    band = law.interval(n_target, float(target.tokens), fit.confidence, run_noise=True)
    return {"fit": law.to_json(), "target": {"predicted": float(law(n_target, float(target.tokens))),
                                             "interval": None if band is None else [float(band[0]), float(band[1])]}}


def ladder_results(workspace: Path, ladder: LadderPlan, fit: FitConfig) -> dict:
    rungs = rung_records(workspace, ladder)
    if ladder.cooldowns:
        return budget_results(ladder, rungs, fit)
    keys = list(dict.fromkeys(k for r in rungs if r["final"] for k in metric_values(r["final"])))
    t = ladder.target
    return {
        "ladder": ladder.name, "mixture": ladder.mixture, "law": LAW,
        "interval": {"method": fit.interval, "confidence": fit.confidence, "huber_delta": fit.huber_delta,
                     "noise_floor": fit.noise_floor, "l_inf": "free" if fit.l_inf is None else fit.l_inf},
        "rungs": rungs,
        "target": {"flops": t.flops, "tokens": t.tokens, "parameters": t.active_parameters,
                   "shape": t.shape.__dict__ if t.shape else None},
        "fits": {k: fit_metric(rungs, k, t.flops, fit) for k in keys},
        "chinchilla": chinchilla(rungs, t, fit),
    }


def budget_results(ladder: LadderPlan, rungs: list[dict], fit: FitConfig) -> dict:
    """A ladder with cooldowns: L(N, D) per metric on every finished (rung, budget) point."""
    finals = [b["final"] for r in rungs for b in r["budgets"] if b["final"]]
    keys = list(dict.fromkeys(k for final in finals for k in metric_values(final)))
    t = ladder.target
    fits = {k: budget_fit.fit_budget_metric(rungs, k, label(k), metric_values, t, fit) for k in keys}
    validation = fits.get(VAL) or {}
    return {
        "ladder": ladder.name, "mixture": ladder.mixture, "law": budget_fit.LAW, "design": "cooldowns",
        "cooldowns": list(ladder.cooldowns), "decay_fraction": ladder.rungs[0].decay_fraction,
        "interval": {"method": fit.interval, "confidence": fit.confidence, "huber_delta": fit.huber_delta,
                     "noise_floor": fit.noise_floor, "l_inf": "free"},
        "rungs": rungs,
        "target": {"flops": t.flops, "tokens": t.tokens, "parameters": t.active_parameters,
                   "shape": t.shape.__dict__ if t.shape else None},
        "fits": fits,
        "chinchilla": ({"fit": validation["fit"], "target": validation["target"]} if validation.get("fit") else
                       {"skipped": validation.get("error", "no point has finished")}),
    }


def write_results(folder: Path, results: dict) -> None:
    write_text(json.dumps(results, indent=2), folder / LADDER_FIT_FILE)
    write_parquet(points_table(results), folder / LADDER_POINTS_FILE)


def points_table(results: dict) -> pa.Table:
    """One row per point (a rung, or with cooldowns each of its budgets) and metric: the `ladder` view of
    `loom sql`."""
    if results.get("design") == "cooldowns":
        return pa.Table.from_pylist(budget_rows(results), schema=POINTS)
    rows = []
    for r in results["rungs"]:
        values = metric_values(r["final"]) if r["final"] else {}
        for metric, fitted in results["fits"].items():
            law = fitted.get("fit")
            held = fitted.get("held_out") or {}
            rows.append({
                "ladder": results["ladder"], "mixture": results["mixture"], "rung": r["rung"], "run": r["run"],
                "status": r["status"], "d_model": r["d_model"], "n_layers": r["n_layers"], "n_heads": r["n_heads"],
                "n_experts": r["n_experts"], "parameters": r["parameters"],
                "active_parameters": r["active_parameters"], "tokens": r["tokens"], "steps": r["steps"],
                "tokens_per_parameter": r["tokens_per_parameter"], "flops": r["flops"], "lr": r["lr"],
                "metric": metric, "loss": values.get(metric),
                "fitted": None if law is None else law["l_inf"] + law["a"] * r["flops"] ** -law["alpha"],
                "held_out": held.get("rung") == r["rung"], "budget": 1.0, "branch_step": None,
            })
    return pa.Table.from_pylist(rows, schema=POINTS)


def budget_rows(results: dict) -> list[dict]:
    rows = []
    for r in results["rungs"]:
        for b in r["budgets"]:
            values = metric_values(b["final"]) if b["final"] else {}
            for metric, fitted in results["fits"].items():
                law = fitted.get("fit")
                rows.append({
                    "ladder": results["ladder"], "mixture": results["mixture"], "rung": r["rung"], "run": b["run"],
                    "status": b["status"], **{k: r[k] for k in ("d_model", "n_layers", "n_heads", "n_experts",
                                                                 "parameters", "active_parameters", "lr")},
                    "tokens": b["tokens"], "steps": b["steps"], "flops": b["flops"],
                    "tokens_per_parameter": b["tokens"] / r["active_parameters"], "metric": metric,
                    "loss": values.get(metric),
                    "fitted": None if law is None else chinchilla_law(law, r["active_parameters"], b["tokens"]),
                    "held_out": (fitted.get("held_out") or {}).get("run") == b["run"], "budget": b["fraction"],
                    "branch_step": b["branch_step"],
                })
    return rows


def chinchilla_law(law: dict, parameters: float, tokens: float) -> float:
    return law["e"] + law["a"] / parameters ** law["alpha"] + law["b"] / tokens ** law["beta"]


POINTS = pa.schema([
    ("ladder", pa.string()), ("mixture", pa.string()), ("rung", pa.string()), ("run", pa.string()),
    ("status", pa.string()), ("d_model", pa.int64()), ("n_layers", pa.int64()), ("n_heads", pa.int64()),
    ("n_experts", pa.int64()), ("parameters", pa.int64()), ("active_parameters", pa.int64()), ("tokens", pa.int64()),
    ("steps", pa.int64()), ("tokens_per_parameter", pa.float64()), ("flops", pa.float64()), ("lr", pa.float64()),
    ("metric", pa.string()), ("loss", pa.float64()), ("fitted", pa.float64()), ("held_out", pa.bool_()),
    ("budget", pa.float64()), ("branch_step", pa.int64()),  # the share of the rung's steps; where a cooldown branched
])
