"""A search's results from the runs finished so far: each proxy's weights, final losses and objective; the
surrogate fitted to them and its leave-one-out rank correlation; the chosen weights (the predicted objective's
minimum under the epoch caps, pulled towards the prior) with a bootstrap interval; the baselines; and the confirm
runs' measured objectives. Written as search.json (what the report draws)."""

import json
from pathlib import Path

import numpy as np

from base.atomic_files import write_text
from base.workspace import SEARCH_FILE, Workspace
from sweeps.mix_optimize import kl_to_prior, optimize
from sweeps.objective import score
from sweeps.plan import LadderPlan
from sweeps.results import final_losses, metric_values, run_status
from sweeps.search_plan import SearchOptions, SearchPlan
from sweeps.surrogate import SURROGATES, bootstrap_interval, fit_surrogate, leave_one_out, objective, spearman
from trainer import metrics

CONFIDENCE = 0.9
BOOTSTRAP_REFITS = 200


def run_record(workspace: Path, run_name: str, weights: dict[str, float]) -> dict:
    run_dir = Workspace(workspace).run_dir(run_name)
    status = run_status(run_dir)
    final = final_losses(run_dir) if status == metrics.FINISHED else None
    values = metric_values(final) if final else {}
    return {"run": run_name, "status": status, "metrics": values,
            "objective": score(values, weights) if final else None}


def search_results(workspace: Path, plan: SearchPlan, options: SearchOptions, fit: bool = True) -> dict:
    """The proxies' records, and with `fit` the surrogate, the choice and the baselines' predictions (seconds of
    refits: done once the proxies have finished, not as each one does)."""
    space = plan.space
    proxies = [{"name": r.rung, **run_record(workspace, r.name, plan.objective), "weights": space.as_weights(x)}
               for r, x in zip(plan.proxies.rungs, plan.designs)]
    results = {**header(plan, options), "proxies": proxies, "surrogate": None, "chosen": None,
               "baselines": {kind: _baseline(plan, x) for kind, x in plan.baselines.items()}}
    if fit:
        choose(plan, options, proxies, results)
    return results


def header(plan: SearchPlan, options: SearchOptions) -> dict:
    rung = plan.proxies.rungs[0]
    return {
        "search": plan.name, "from": plan.base.name, "design": options.design, "seed": options.seed,
        "concentration": options.concentration, "phases": list(plan.space.phases),
        "keys": dict(zip(plan.space.phases, map(list, plan.space.keys))),
        "prior": plan.space.as_weights(plan.space.vector(plan.space.prior)),
        "prior_kind": options.prior,
        "objective": {"text": plan.objective_text, "terms": plan.objective},
        "target_tokens": plan.target_tokens, "max_epochs": plan.base.max_epochs,
        "over": list(options.over), "domain_names": plan.domain_names,
        "proxy": {"rung": plan.proxy_rung, **rung.shape.__dict__,
                  "active_parameters": rung.active_parameters, "tokens": rung.tokens, "steps": rung.steps,
                  "flops": rung.flops, "lr": rung.lr, "target_tokens": plan.target_tokens},
    }


def choose(plan: SearchPlan, options: SearchOptions, proxies: list[dict], results: dict) -> None:
    """Fits the surrogate to the finished proxies, and fills in results' surrogate, chosen and baselines'
    predictions; with too few finished proxies for a fit, the surrogate's error instead."""
    names = list(plan.objective)
    weights = np.array([plan.objective[m] for m in names])
    done = [i for i, p in enumerate(proxies) if p["objective"] is not None]
    X = plan.designs[done]
    Y = np.array([[proxies[i]["metrics"][m] for m in names] for i in done]).reshape(len(done), len(names))
    try:
        surrogate = fit_surrogate(X, Y, options.surrogate)
        held_out = leave_one_out(X, Y, weights, options.surrogate)
    except ValueError as err:
        results["surrogate"] = {"error": str(err), "n_proxies": len(done)}
        return
    measured = objective(Y, weights)
    for i, predicted in zip(done, held_out):
        proxies[i]["loo_predicted"] = float(predicted)
    slopes = [f"{phase}/{key}" for phase, keys in zip(plan.space.phases, plan.space.keys) for key in keys]
    fits = {name: {"c": float(c), "t": dict(zip(slopes, map(float, t))), "residual_scale": float(s)}
            for name, c, t, s in zip(names, surrogate.intercepts, surrogate.slopes, surrogate.residual_scales)}
    results["surrogate"] = {
        **surrogate.to_json(), "model": options.surrogate, "law": SURROGATES[options.surrogate].search_law,
        "metrics": names, "fits": fits, "n_proxies": len(done),
        "held_out": {"method": "leave-one-out", "spearman": spearman(held_out, measured),
                     "mean_abs_error": float(np.mean(np.abs(held_out - measured)))}}
    best_proxies = X[np.argsort(measured)[:3]]
    x = optimize(plan.space, surrogate, weights, options.kl_weight, starts=best_proxies,
                 bounds=tried_range(X) if options.over else None)
    predict = lambda v: float(objective(surrogate.predict(v[None, :]), weights)[0])  # noqa: E731
    low, high = bootstrap_interval(X, Y, x, weights, options.surrogate, CONFIDENCE, BOOTSTRAP_REFITS, options.seed)
    results["chosen"] = {
        "weights": plan.space.as_weights(x), "vector": [float(v) for v in x], "predicted": predict(x),
        "interval": [float(low), float(high)], "confidence": CONFIDENCE,
        "interval_method": f"bootstrap over proxies ({BOOTSTRAP_REFITS} refits, percentile)",
        "kl_weight": options.kl_weight, "kl_to_prior": float(kl_to_prior(plan.space, x)), "epochs": plan.epochs(x),
        "best_proxy": proxies[done[int(np.argmin(measured))]]["name"]}
    for kind, baseline in plan.baselines.items():
        results["baselines"][kind]["predicted"] = predict(baseline)


def tried_range(X: np.ndarray) -> list[tuple[float, float]]:
    """Each weight between the lowest and highest the proxies tried. Over tens of cells a law fitted to as many
    proxies predicts a mixture far from all of them (one cell alone) with nothing to check it by: a toy search of
    16 cells chose 100% of one, predicted 6.55 against the proxies' best 7.15, and measured 7.89 against
    proportional's 7.09 (bench/README.md, search_cells.py)."""
    return list(zip(X.min(axis=0), X.max(axis=0)))


def _baseline(plan: SearchPlan, x: np.ndarray) -> dict:
    feasible = plan.within_caps(x)
    epochs = plan.epochs(x)
    record = {"weights": plan.space.as_weights(x), "predicted": None, "feasible": feasible, "epochs": epochs}
    if not feasible:
        over = max(epochs, key=lambda k: epochs[k] / plan.base.max_epochs)
        record["why"] = (f"'{over}' would be read {epochs[over]:.2f} times by the target run, over "
                         f"max_epochs = {plan.base.max_epochs:g}")
    return record


def confirm_records(workspace: Path, plan: SearchPlan, confirm: LadderPlan, refused: dict[str, str]) -> dict:
    rung = confirm.rungs[0]
    runs = [{"mixture": r.rung, **run_record(workspace, r.name, plan.objective)} for r in confirm.rungs]
    finished = [r for r in runs if r["objective"] is not None]
    planned = {r.rung for r in plan.confirm.rungs}
    skipped = {kind: _baseline(plan, x)["why"] for kind, x in plan.baselines.items() if kind not in planned}
    skipped.update(refused)
    return {"rung": plan.confirm_rung, "d_model": rung.shape.d_model, "n_layers": rung.shape.n_layers,
            "active_parameters": rung.active_parameters, "tokens": rung.tokens, "steps": rung.steps, "runs": runs,
            "skipped": skipped,
            "best": min(finished, key=lambda r: r["objective"])["mixture"] if len(finished) == len(runs) else None}


def write_search(folder: Path, results: dict) -> None:
    write_text(json.dumps(results, indent=2), folder / SEARCH_FILE)
