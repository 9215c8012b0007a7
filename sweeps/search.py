"""`loom mix search NAME`: a search's proxies compiled and trained, its results and chosen mixture written, and
its confirm runs trained (each confirm mixture at the proxies' rung too), in WORKSPACE/searches/NAME/ (search.toml
as resolved, search.json, report.html, logs/) with the chosen mixture as WORKSPACE/mixtures/NAME.toml and the
unregularized optimum (--kl 0) as NAME-unregularized.toml. One writer per search; a rerun with the same options
resumes it (finished proxies are kept)."""

import dataclasses
import json
from pathlib import Path
from typing import Callable

import numpy as np
from rich.console import Console

from base.atomic_files import write_text
from base.errors import UserError
from base.lock import exclusive
from base.small_files import read_text
from base.workspace import LOGS_DIR, SEARCHES_DIR, SEARCH_FILE, SEARCH_SPEC_FILE, Workspace, search_lock
from mixtures.spec import to_toml
from sweeps.compiling import compile_all
from sweeps.ownership import SEARCH
from sweeps.plan import LadderPlan
from sweeps.runner import train_rungs
from sweeps.search_plan import SearchOptions, SearchPlan, at_proxy_scale, proxy_of
from sweeps.search_results import confirm_records, confirm_vectors, search_results, unregularized_name, write_search

# options that change no proxy: a rerun with other values refits, rescores or confirms without retraining
NOT_TRAINED = {"objective", "surrogate", "kl_weight", "confirm", "confirm_rung"}


def spec_file(ws: Workspace, name: str) -> Path:
    return ws.mixtures / f"{name}.toml"


def written_by(name: str) -> str:
    return f"`loom mix search {name}`"


def run_search(ws: Workspace, plan: SearchPlan, options: SearchOptions, train: dict, resolved: str, parallel: int,
               nproc: int, console: Console, note, report: Callable[[Path], object]) -> dict:
    folder = ws.search_dir(plan.name)
    with exclusive(ws.lock_file(search_lock(plan.name)), f"search '{plan.name}' in {ws.root}", note):
        check_spec_file(ws, plan)
        started = folder / SEARCH_SPEC_FILE
        if started.exists() and read_text(started) != resolved:
            raise UserError(f"search '{plan.name}' was started with other options or data (see {started}); rerun it "
                            "with the same options, or give the new search another NAME")
        compile_all(ws, [(f"proxy {r.rung}", plan.proxy_mixture(i)) for i, r in enumerate(plan.proxies.rungs)],
                    console, note, lambda label, err: f"search '{plan.name}', {label}: {err}",
                    owner=(SEARCH, plan.name))
        write_text(resolved, started)
        publish = lambda fit=False: _publish(ws, plan, options, folder, report, fit)  # noqa: E731
        train_rungs(ws.root, plan.proxies, train, folder / LOGS_DIR, parallel, nproc, console, on_finished=publish,
                    noun="proxy")
        results = publish(fit=True)
        if results["chosen"] is None:
            raise UserError(f"search '{plan.name}': no surrogate: {results['surrogate']['error']}")
        chosen = np.array(results["chosen"]["vector"])
        write_text(chosen_toml(plan, chosen, plan.name), spec_file(ws, plan.name))
        if results["unregularized"]:
            optimum = np.array(results["unregularized"]["vector"])
            write_text(chosen_toml(plan, optimum, unregularized_name(plan), "the unregularized optimum (--kl 0): "),
                       spec_file(ws, unregularized_name(plan)))
        if plan.confirm is not None:
            confirmed = confirm(ws, plan, confirm_vectors(plan, results), console, note)
            with_confirm = lambda: _publish_confirm(ws, plan, results, confirmed, folder, report)  # noqa: E731
            train_rungs(ws.root, confirmed[0], train, folder / LOGS_DIR, parallel, nproc, console,
                        on_finished=with_confirm, noun="confirm")
            with_confirm()
        return results


def _publish(ws: Workspace, plan: SearchPlan, options: SearchOptions, folder: Path, report, fit: bool) -> dict:
    results = search_results(ws.root, plan, options, fit)
    write_search(folder, results)
    report(folder)
    return results


def _publish_confirm(ws: Workspace, plan: SearchPlan, results: dict, confirmed: tuple[LadderPlan, dict],
                     folder: Path, report) -> None:
    """The search's results with the confirm runs' as they are now (the fit is not redone)."""
    results["confirm"] = confirm_records(ws.root, plan, *confirmed, results)
    write_search(folder, results)
    report(folder)


def check_spec_file(ws: Workspace, plan: SearchPlan) -> None:
    """The chosen mixture is written to mixtures/NAME.toml, the unregularized optimum to NAME-unregularized.toml:
    never over a spec this search did not write."""
    if plan.base.name in (plan.name, unregularized_name(plan)):
        raise UserError(f"search '{plan.name}' would write a mixture of the same name as the one it searches from; "
                        "give the search another NAME")
    for name in (plan.name, unregularized_name(plan)):
        path = spec_file(ws, name)
        if path.exists() and not read_text(path).startswith(f"# as resolved by {written_by(plan.name)}"):
            raise UserError(f"{path} exists and is not this search's: the search writes its "
                            f"{'chosen mixture' if name == plan.name else 'unregularized optimum'} there; give the "
                            "search another NAME or move that file")


def chosen_toml(plan: SearchPlan, x: np.ndarray, name: str, what: str = "") -> str:
    """The spec of the searched weights x as mixture `name`, at the target run's budget."""
    spec = plan.with_weights(x, name)
    budget = {"total_tokens": plan.target_tokens, "steps": None}
    return to_toml(dataclasses.replace(spec, **budget), {"total_tokens": plan.target_tokens},
                   f"{what}weights of {', '.join(plan.space.phases)} chosen from {len(plan.designs)} proxies (see "
                   f"{SEARCHES_DIR}/{plan.name}/{SEARCH_FILE}); build it with `loom mix build {name}`",
                   by=written_by(plan.name))


def confirm(ws: Workspace, plan: SearchPlan, vectors: dict[str, np.ndarray], console: Console,
            note) -> tuple[LadderPlan, dict]:
    """The confirm runs' mixtures compiled: the chosen one and each baseline within the caps (`vectors` by label),
    at the confirm rung and at the proxies' rung, with the same budget and seed. A baseline the compiler refuses (a
    proxy-sized pool read a little over the cap) is left out with the reason, at both rungs; the searched mixture
    must compile. A mixture that is a proxy's design has that proxy as its run at the proxies' rung. The runs to
    train: at the confirm rung first, as one LadderPlan."""
    refused, kept = {}, []
    small = {r.rung: r for r in (plan.at_proxy_scale.rungs if plan.at_proxy_scale else ())}
    for run in plan.confirm.rungs:
        again = small and proxy_of(plan, vectors[run.rung]) is None
        pair = [(plan.confirm, run)] + ([(plan.at_proxy_scale, small[at_proxy_scale(plan, run.rung)])]
                                        if again else [])
        try:
            for ladder, rung in pair:
                spec = ladder.rung_mixture(plan.with_weights(vectors[run.rung], rung.name), rung)
                compile_all(ws, [(f"confirm {rung.rung}", spec)], console, note, lambda label, err: str(err),
                            owner=(SEARCH, plan.name))
        except UserError as err:
            if run.rung == "searched":
                raise UserError(f"search '{plan.name}', the searched mixture at the confirm rung: {err}") from None
            console.print(f"confirm {run.rung}: not trained: {err}")
            refused[run.rung] = str(err)
            continue
        kept += [rung for _, rung in pair]
    at_confirm = [r for r in kept if r in plan.confirm.rungs]
    at_proxy = [r for r in kept if r not in at_confirm]
    return dataclasses.replace(plan.confirm, rungs=tuple(at_confirm + at_proxy)), refused


def resolved_toml(plan: SearchPlan, options: SearchOptions, ladder_source: str) -> str:
    """The search's proxies as planned: a rerun must resolve to the same text to resume it."""
    value = json.dumps
    rung = plan.proxies.rungs[0]
    lines = ["# as resolved by `loom mix search`: the options, the proxies' model and designs", "",
             f"from = {value(plan.base.name)}", f"ladder = {value(ladder_source)}",
             *[f"{k} = {value(v)}" for k, v in dataclasses.asdict(options).items()
               if v is not None and k not in NOT_TRAINED and not (k == "over" and not v)],  # as before --over
             f"target_tokens = {plan.target_tokens}",
             "", "[proxy]", f"rung = {value(plan.proxy_rung)}",
             *[f"{k} = {value(v)}" for k, v in dataclasses.asdict(rung.shape).items()],
             f"steps = {rung.steps}", f"tokens = {rung.tokens}", f"lr = {value(rung.lr)}",
             f"warmup_steps = {rung.warmup_steps}"]
    for r, x in zip(plan.proxies.rungs, plan.designs):
        weights = plan.space.as_weights(x)
        lines += ["", "[[design]]", f"name = {value(r.rung)}",
                  *[f"{value(phase)} = {_inline(w)}" for phase, w in weights.items()]]
    return "\n".join(lines) + "\n"


def _inline(weights: dict[str, float]) -> str:
    return "{ " + ", ".join(f"{json.dumps(k)} = {float(w)!r}" for k, w in weights.items()) + " }"
