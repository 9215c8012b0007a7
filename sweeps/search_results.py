"""A search's results from the runs finished so far: each proxy's weights, final losses and objective; the
surrogate fitted to them and its leave-one-out rank correlation; the chosen weights (the predicted objective's
minimum under the epoch caps, pulled towards the prior) with a bootstrap interval, and the unregularized optimum
(no pull) beside it; the baselines, and why any is predicted better than the choice (sweeps.search_explain); and
the confirm runs' measured objectives, at the confirm rung and at the proxies', with the decision accuracy
between the two (sweeps.decision_accuracy). Written as search.json (what the report draws)."""

import json
from pathlib import Path

import numpy as np

from base.atomic_files import write_text
from base.workspace import SEARCH_FILE, Workspace
from sweeps.decision_accuracy import decision_accuracy
from sweeps.mix_optimize import kl_to_prior, optimize
from sweeps.objective import score
from sweeps.plan import LadderPlan
from sweeps.results import final_losses, metric_values, run_status
from sweeps.search_baselines import NO_MIXING
from sweeps.search_explain import explain
from sweeps.search_plan import SearchOptions, SearchPlan, at_proxy_scale, not_confirmed, over_cap, proxy_of
from sweeps.surrogate import SURROGATES, bootstrap_intervals, fit_surrogate, leave_one_out, objective, spearman
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
               "unregularized": None, "explanation": None,
               "baselines": {**{kind: _baseline(plan, x) for kind, x in plan.baselines.items()},
                             NO_MIXING: _no_mixing(plan)}}
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
    predict = lambda v: float(objective(surrogate.predict(v[None, :]), weights)[0])  # noqa: E731
    solve = lambda kl: optimize(plan.space, surrogate, weights, kl, starts=X[np.argsort(measured)[:3]],  # noqa: E731
                                bounds=tried_range(X) if options.over else None)
    chosen = solve(options.kl_weight)
    unregularized = [solve(0.0)] if options.kl_weight > 0 else []
    bands = bootstrap_intervals(X, Y, [chosen, *unregularized], weights, options.surrogate, CONFIDENCE,
                                BOOTSTRAP_REFITS, options.seed)  # one set of refits for both
    results["chosen"] = {**_point(plan, chosen, predict, bands[0], options.kl_weight),
                         "best_proxy": proxies[done[int(np.argmin(measured))]]["name"]}
    if unregularized:
        results["unregularized"] = {**_point(plan, unregularized[0], predict, bands[1], 0.0),
                                    "mixture": unregularized_name(plan)}
    vectors = dict(plan.baselines)
    for kind, baseline in plan.baselines.items():
        results["baselines"][kind]["predicted"] = predict(baseline)
    if plan.single_sources:  # results made before the no-mixing baseline (or by hand) get its record here
        no_mixing = results["baselines"].setdefault(NO_MIXING, _no_mixing(plan))
        vectors[NO_MIXING] = pick_single_source(plan, predict, no_mixing)
    results["explanation"] = explain(plan, results, X, vectors)


def _point(plan: SearchPlan, x: np.ndarray, predict, band: tuple[float, float], kl_weight: float) -> dict:
    low, high = band
    kl = float(kl_to_prior(plan.space, x))
    return {"weights": plan.space.as_weights(x), "vector": [float(v) for v in x], "predicted": predict(x),
            "interval": [float(low), float(high)], "confidence": CONFIDENCE,
            "interval_method": f"bootstrap over proxies ({BOOTSTRAP_REFITS} refits, percentile)",
            "kl_weight": kl_weight, "kl_to_prior": kl, "penalty": kl_weight * kl, "epochs": plan.epochs(x)}


def unregularized_name(plan: SearchPlan) -> str:
    return f"{plan.name}-unregularized"


def pick_single_source(plan: SearchPlan, predict, record: dict) -> np.ndarray:
    """NO_MIXING: the source whose one-hot mixture is predicted best among those within the caps (of all of them
    where none is, the record saying so); fills in `record`."""
    feasible = plan.feasible_sources()
    candidates = feasible or plan.single_sources
    predicted = {source: predict(x) for source, x in candidates.items()}
    source = min(predicted, key=predicted.get)
    x = candidates[source]
    record.update(_baseline(plan, x), source=source, predicted=predicted[source], vector=[float(v) for v in x],
                  candidates=predicted)
    if not feasible:
        record["why"] = f"no source alone is within the caps: the best predicted, {source}: {record['why']}"
    return x


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
        record["why"] = over_cap(plan, x)
    return record


def _no_mixing(plan: SearchPlan) -> dict:
    """NO_MIXING before the fit picks its source."""
    feasible = bool(plan.feasible_sources())
    why = ("" if feasible else "no source alone is within the caps" if plan.single_sources else
           "no source is drawn from by every searched phase")
    return {"weights": None, "predicted": None, "feasible": feasible, **({"why": why} if why else {})}


def confirm_records(workspace: Path, plan: SearchPlan, confirm: LadderPlan, refused: dict[str, str],
                    results: dict) -> dict:
    """The confirm runs (plan.confirm's labels: `confirm`'s other runs are at the proxies' rung) with their
    measured objectives, what was not trained and why, and the decision accuracy."""
    rung = plan.confirm.rungs[0]
    trained = {r.rung for r in confirm.rungs}
    runs = [{"mixture": r.rung, **run_record(workspace, r.name, plan.objective)} for r in plan.confirm.rungs
            if r.rung in trained]
    small = {r.rung: r.name for r in confirm.rungs if r.rung not in {p.rung for p in plan.confirm.rungs}}
    if plan.at_proxy_scale:  # a mixture that is a proxy's design: that proxy
        small |= {at_proxy_scale(plan, label): run for label, x in confirm_vectors(plan, results).items()
                  if (run := proxy_of(plan, x)) is not None and label in trained}
    at_proxy = [{"mixture": m["mixture"], **run_record(workspace, small[label], plan.objective)}
                for m in runs if (label := at_proxy_scale(plan, m["mixture"])) in small]
    finished = [r for r in runs if r["objective"] is not None]
    skipped = not_confirmed(plan)
    if NO_MIXING not in {r.rung for r in plan.confirm.rungs}:
        skipped[NO_MIXING] = results["baselines"][NO_MIXING].get("why", "")
    skipped.update(refused)
    return {"rung": plan.confirm_rung, "d_model": rung.shape.d_model, "n_layers": rung.shape.n_layers,
            "active_parameters": rung.active_parameters, "tokens": rung.tokens, "steps": rung.steps, "runs": runs,
            "skipped": skipped, "at_proxy_scale": at_proxy,
            "best": min(finished, key=lambda r: r["objective"])["mixture"] if len(finished) == len(runs) else None,
            "decision_accuracy": decisions(plan, results, runs, at_proxy)}


def confirm_vectors(plan: SearchPlan, results: dict) -> dict[str, np.ndarray]:
    """Each confirm mixture's x by its label: the chosen one, the baselines (NO_MIXING once its source is picked)."""
    vectors = {"searched": np.array(results["chosen"]["vector"]), **plan.baselines}
    single = results["baselines"][NO_MIXING].get("vector")
    return vectors | ({NO_MIXING: np.array(single)} if single else {})


def decisions(plan: SearchPlan, results: dict, runs: list[dict], at_proxy: list[dict]) -> dict:
    """The confirm mixtures' order at the confirm rung against their order measured at the proxies' rung and as
    the surrogate predicts it (at the proxies' rung too)."""
    large = {r["mixture"]: r["objective"] for r in runs}
    predicted = {kind: b.get("predicted") for kind, b in results["baselines"].items()}
    predicted["searched"] = (results.get("chosen") or {}).get("predicted")
    return {"proxy_rung": plan.proxy_rung, "confirm_rung": plan.confirm_rung,
            "measured": decision_accuracy({r["mixture"]: r["objective"] for r in at_proxy}, large),
            "predicted": decision_accuracy(predicted, large)}


def write_search(folder: Path, results: dict) -> None:
    write_text(json.dumps(results, indent=2), folder / SEARCH_FILE)
