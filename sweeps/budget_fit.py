"""The fits of a ladder with cooldowns: every finished (rung, budget) point's final losses, and per metric
L(N, D) = E + A/N^alpha + B/D^beta (Chinchilla's approach 3: sweeps.chinchilla) fitted on all of them but the
held-out one (the largest N at its largest D: the largest rung's own run), which it predicts with its interval;
the same law on every point predicts the target's (N, D) and gives the L(C) law on its compute-optimal frontier.

Each rung is one run trained through its stable phase, and each shorter budget a cooldown branched from it
(trainer.cooldowns), so a ladder of R rungs with K budgets each gives R x K points for the price of about R runs.
"""

import math

import numpy as np

from sweeps.chinchilla import held_out_point, identifiability, interval_for_ladder
from sweeps.fit import fit_chinchilla, relative_error
from sweeps.spec import AUTO, FitConfig

LAW = "L(N, D) = E + A/N^alpha + B/D^beta"
FRONTIER_LAW = "L(C) = L_inf + A * C^-alpha on the compute-optimal frontier"
CURVE_POINTS = 32
FLAT_EXPONENT = 1e-3  # an exponent this small is a term the points do not show (the fit's bound is 1e-6)


def points_of(rungs: list[dict], metric: str, values_of) -> list[dict]:
    """The finished budgets' (N, D, loss) of one metric, each naming its rung and run; `values_of(final)` gives a
    final's losses by metric."""
    found = []
    for rung in rungs:
        for budget in rung["budgets"]:
            loss = values_of(budget["final"]).get(metric) if budget["final"] else None
            if loss is not None and math.isfinite(loss) and loss > 0:
                found.append({"rung": rung["rung"], "run": budget["run"], "parameters": rung["active_parameters"],
                              "tokens": budget["tokens"], "flops": budget["flops"], "loss": loss})
    return found


def fit_points(points: list[dict], fit: FitConfig):
    """L(N, D) on these points, or a ValueError saying why it cannot be fitted (yet)."""
    n, d = (np.array([p[k] for p in points], dtype=float) for k in ("parameters", "tokens"))
    why_not = identifiability(n, d) if points else "no budget has finished"
    if why_not:
        raise ValueError(why_not)
    loss = np.array([p["loss"] for p in points])
    method = interval_for_ladder(len(points)) if fit.interval == AUTO else fit.interval
    return fit_chinchilla(n, d, loss, huber_delta=fit.huber_delta, noise_floor=fit.noise_floor, interval=method)


def prediction(law, parameters: float, tokens: float, fit: FitConfig) -> dict:
    """Where one run of (parameters, tokens) would land: the law's value and its interval (the fit's uncertainty and
    one run's noise), or no interval."""
    band = law.interval(float(parameters), float(tokens), fit.confidence, run_noise=True)
    return {"predicted": float(law(float(parameters), float(tokens))),
            "interval": None if band is None else [float(band[0]), float(band[1])]}


def fit_budget_metric(rungs: list[dict], metric: str, label: str, values_of, target, fit: FitConfig) -> dict:
    """One metric's fit on every finished point, its held-out check, its target prediction, the rungs' curves in
    D and the compute-optimal frontier."""
    points = points_of(rungs, metric, values_of)
    result = {"label": label, "fit": None, "held_out": None, "target": None, "curves": [], "frontier": None,
              "n_points": len(points)}
    try:
        law = fit_points(points, fit)
    except ValueError as err:
        return {**result, "error": str(err)}
    result["fit"] = law.to_json()
    result["target"] = prediction(law, target.active_parameters, target.tokens, fit)
    result["held_out"] = held_out_check(points, fit)
    result["curves"] = rung_curves(law, rungs, target, fit)
    result["frontier"] = frontier(law, points, target)
    return result


def held_out_check(points: list[dict], fit: FitConfig) -> dict:
    held = points[held_out_point([p["parameters"] for p in points], [p["tokens"] for p in points])]
    rest = [p for p in points if p is not held]
    try:
        law = fit_points(rest, fit)
    except ValueError as err:
        return {"rung": held["rung"], "run": held["run"], "error": str(err)}
    predicted = prediction(law, held["parameters"], held["tokens"], fit)
    interval, measured = predicted["interval"], float(held["loss"])
    return {"rung": held["rung"], "run": held["run"], "parameters": held["parameters"], "tokens": held["tokens"],
            "flops": held["flops"], "fit": law.to_json(), **predicted, "measured": measured,
            "relative_error": relative_error(predicted["predicted"], measured),
            "half_width": None if interval is None else (interval[1] - interval[0]) / 2 / predicted["predicted"],
            "inside": None if interval is None else bool(interval[0] <= measured <= interval[1])}


def rung_curves(law, rungs: list[dict], target, fit: FitConfig) -> list[dict]:
    """L(N, D) of each rung's N (and the target's) over D, from below its smallest budget to past its largest."""
    sizes = [(r["rung"], r["active_parameters"], [b["tokens"] for b in r["budgets"]]) for r in rungs]
    sizes.append(("target", target.active_parameters, [target.tokens]))
    low = min(min(tokens) for _, _, tokens in sizes) / 1.5
    curves = []
    for name, parameters, tokens in sizes:
        grid = np.geomspace(low, max(tokens) * 1.5, CURVE_POINTS)
        band = law.interval(np.full_like(grid, float(parameters)), grid, fit.confidence, run_noise=False)
        curves.append({"rung": name, "parameters": parameters, "points": [
            {"tokens": float(d), "predicted": float(law(float(parameters), float(d))),
             "lower": None if band is None else float(band[0][i]), "upper": None if band is None else float(band[1][i])}
            for i, d in enumerate(grid)]})
    return curves


def frontier(law, points: list[dict], target) -> dict:
    """The law's compute-optimal frontier (each compute's best N and D, C = 6 N D) from the smallest point's
    compute to past the target's, and its L(C) law (exact: sweeps.chinchilla.Chinchilla.frontier); none where
    the law has no size (or no data) term to trade against the other."""
    flat = [name for name, exponent in (("N", law.alpha), ("D", law.beta)) if exponent < FLAT_EXPONENT]
    if flat:
        return {"error": f"the fitted law has no {flat[0]} term (its exponent is at its bound): over these points the "
                         f"loss does not change with {flat[0]} at a fixed {'D' if flat[0] == 'N' else 'N'}, so no "
                         "compute-optimal split of N and D follows from it; spread the rungs' sizes or train them "
                         "longer"}
    grid = np.geomspace(min(p["flops"] for p in points) / 1.5, target.flops * 1.5, CURVE_POINTS)
    n_opt, d_opt, loss = law.compute_optimal(grid)
    frontier_law = law.frontier()
    return {"law": FRONTIER_LAW, "fit": frontier_law.to_json(),
            "curve": [{"flops": float(c), "parameters": float(n), "tokens": float(d), "loss": float(value)}
                      for c, n, d, value in zip(grid, n_opt, d_opt, loss)],
            "target": float(frontier_law(target.flops))}
