"""Why a search's chosen mixture is not predicted better than a baseline, each reason with its number: the KL pull
toward the prior (its share of the chosen point's penalized objective, and the predicted objective given up
against the unregularized optimum), a cap that binds (a component at its epoch cap at the chosen point or the
optimum, or a baseline beyond a cap the search keeps to), the surrogate's low held-out rank correlation, and a
baseline outside the range the proxies tried (its prediction an extrapolation)."""

import math

import numpy as np

from sweeps.search_plan import CAP_MARGIN, SearchPlan

TRUSTED_SPEARMAN = 0.8  # the goal for the surrogate's held-out rank correlation
SPREAD_TOLERANCE = 1e-9


def explain(plan: SearchPlan, results: dict, X: np.ndarray, vectors: dict[str, np.ndarray]) -> dict | None:
    """The baselines predicted better than the chosen mixture and the reasons that apply; None where none is.
    `results` holds the chosen, unregularized and baselines' records, `vectors` each baseline's x."""
    chosen = results["chosen"]
    beaten_by = [{"baseline": kind, "predicted": b["predicted"], "feasible": b["feasible"]}
                 for kind, b in results["baselines"].items()
                 if b.get("predicted") is not None and b["predicted"] < chosen["predicted"]]
    if not beaten_by:
        return None
    reasons = [*kl_pull(chosen, results.get("unregularized")),
               *binding_caps(plan, np.array(chosen["vector"]), results.get("unregularized"), beaten_by, vectors),
               *low_spearman(results["surrogate"]["held_out"]["spearman"]),
               *extrapolation(plan, X, beaten_by, vectors)]
    return {"beaten_by": beaten_by, "reasons": reasons}


def kl_pull(chosen: dict, optimum: dict | None) -> list[dict]:
    penalty = chosen["kl_weight"] * chosen["kl_to_prior"]
    given_up = chosen["predicted"] - optimum["predicted"] if optimum else 0.0
    if penalty <= 0 or given_up <= 0:  # no pull, or the pull cost nothing (the rounding to whole sequences can)
        return []
    share = penalty / (chosen["predicted"] + penalty)
    text = (f"the KL pull toward the prior (--kl {chosen['kl_weight']:g}) is {share:.1%} of the chosen mixture's "
            f"penalized objective ({chosen['predicted']:.4f} + {penalty:.4f}); it gives up {given_up:.4f} of "
            f"predicted objective against the unregularized optimum ({optimum['predicted']:.4f}, --kl 0): a "
            "lower --kl trusts the proxies more (a rerun with another --kl trains nothing)")
    return [{"kind": "kl", "kl_weight": chosen["kl_weight"], "penalty": penalty, "share": share,
             "given_up": given_up, "text": text}]


def at_cap(plan: SearchPlan, x: np.ndarray) -> dict[str, float]:
    """The components x reads at their cap (within one sequence of the batch): each with its epochs."""
    space = plan.space
    unit = max(space.fractions) / space.global_batch
    usage, capacity = space.usage_vector(x), space.capacity_vector
    epochs = plan.epochs(x)
    return {key: epochs[key] for key, u, c in zip(space.all_keys, usage, capacity)
            if math.isfinite(c) and u >= c - unit and key in epochs}


def binding_caps(plan: SearchPlan, chosen: np.ndarray, optimum: dict | None, beaten_by: list[dict],
                 vectors: dict[str, np.ndarray]) -> list[dict]:
    found = []
    cap = f"max_epochs = {plan.base.max_epochs:g}, less the search's {1 - CAP_MARGIN:.0%} margin"
    points = [("the chosen mixture", chosen)] + ([("the unregularized optimum", np.array(optimum["vector"]))]
                                                 if optimum else [])
    for where, x in points:
        keys = at_cap(plan, x)
        if keys:
            listed = ", ".join(f"'{k}' ({e:.2f} epochs)" for k, e in keys.items())
            found.append({"kind": "cap", "at": where, "components": keys,
                          "text": f"a cap binds at {where}: {listed} at its cap ({cap}); a larger max_epochs or "
                                  "more data for it lets the search go further"})
    for beaten in beaten_by:
        x = vectors[beaten["baseline"]]
        over = _over_capacity(plan, x)
        if over:
            listed = ", ".join(f"'{k}' ({e:.2f} epochs)" for k, e in over.items())
            found.append({"kind": "cap", "at": beaten["baseline"], "components": over,
                          "text": f"{beaten['baseline']} reads {listed} beyond the cap the search keeps to ({cap}): "
                                  "the search cannot choose it"})
    return found


def _over_capacity(plan: SearchPlan, x: np.ndarray) -> dict[str, float]:
    space = plan.space
    epochs = plan.epochs(x)
    return {key: epochs[key] for key, u, c in zip(space.all_keys, space.usage_vector(x), space.capacity_vector)
            if u > c + SPREAD_TOLERANCE and key in epochs}


def low_spearman(spearman: float) -> list[dict]:
    if spearman >= TRUSTED_SPEARMAN:  # nan (a constant ranking) is not
        return []
    return [{"kind": "spearman", "spearman": spearman, "threshold": TRUSTED_SPEARMAN,
             "text": f"the surrogate ranks proxies it did not see poorly (leave-one-out Spearman {spearman:.2f} < "
                     f"{TRUSTED_SPEARMAN}): a difference this small between its predictions decides nothing"}]


def extrapolation(plan: SearchPlan, X: np.ndarray, beaten_by: list[dict], vectors: dict[str, np.ndarray]) -> list:
    low, high = X.min(axis=0), X.max(axis=0)
    labels = [f"{phase}/{key}" if len(plan.space.phases) > 1 else key
              for phase, keys in zip(plan.space.phases, plan.space.keys) for key in keys]
    found = []
    for beaten in beaten_by:
        x = vectors[beaten["baseline"]]
        outside = [i for i in range(len(x)) if x[i] < low[i] - SPREAD_TOLERANCE or x[i] > high[i] + SPREAD_TOLERANCE]
        if outside:
            listed = ", ".join(f"{labels[i]} {x[i]:.3f} (tried {low[i]:.3f}-{high[i]:.3f})" for i in outside)
            found.append({"kind": "extrapolation", "baseline": beaten["baseline"],
                          "outside": {labels[i]: [float(x[i]), float(low[i]), float(high[i])] for i in outside},
                          "text": f"{beaten['baseline']} lies outside the weights the proxies tried ({listed}): "
                                  "its prediction is an extrapolation of the surrogate"})
    return found
