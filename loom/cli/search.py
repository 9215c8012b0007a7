"""`loom mix search NAME --from MIX`: proxy runs on mixtures sampled around a prior, a surrogate fitted to their
scores, the weights it predicts best under the epoch caps (and why, where a baseline is predicted better), and
(--confirm) that mixture trained beside the proportional, uniform, UniMax, stratified and no-mixing baselines, at
the confirm rung and the proxies', with the decision accuracy between the two."""

import click
from rich.table import Table

from base.names import check_name
from base.workspace import REPORT_FILE, SEARCH_FILE, Workspace
from loom.cli.console import Interrupted, console, note
from loom.cli.ladder import builtin_ladders, default_preset
from loom.cli.mix import builtin_mixtures
from loom.cli.options import RegistryOption
from loom.cli.report import write_index

WIDE = 8  # components beyond which the plan lists a row per component, not per design
HEAVIEST = 4  # components a line shows of a mixture of more than WIDE
RESUME_SEARCH = "interrupted; run the same command again to resume the proxies not yet trained (finished ones are kept)"


@click.command("search")
@click.argument("name")
@click.option("--from", "from_mixture", required=True, metavar="MIX",
              help="The mixture whose components and phases are searched (a name or a path to a spec)")
@click.option("--proxies", type=click.IntRange(min=1), default=12, show_default=True, help="Proxy runs to train")
@click.option("--over", metavar="AXES",
              help="Search the cells of the searched phases' sources over these axes instead of the sources: domain, "
                   "quality_bucket or domain,quality_bucket (one weight per non-empty cell)")
@click.option("--design", cls=RegistryOption, registry="sweeps.search_space:DESIGNS", choice=False,
              help="How the proxies' mixtures are drawn [default: spacefill; dirichlet with --over]")
@click.option("--concentration", type=float, default=1.0, show_default=True,
              help="Dirichlet designs: alpha = this x components x prior (1 with a uniform prior: every mixture "
                   "equally likely; higher gathers them around the prior)")
@click.option("--prior", default="natural", show_default=True,
              help="natural (each component's share of the tokens) or spec (the mixture's own weights)")
@click.option("--phase", "phases", multiple=True, metavar="PHASE|all",
              help="The phase whose weights are searched (repeatable; all for every phase) [default: the first]")
@click.option("--objective", default="sources", show_default=True, metavar="TERMS",
              help="sources, evals, val_loss, source:NAME, eval:NAME, each with an optional =WEIGHT, comma separated")
@click.option("--surrogate", cls=RegistryOption, registry="sweeps.surrogate:SURROGATES",
              help="The law fitted to each objective term [default: loglinear; ridge with --over]")
@click.option("--kl", "kl_weight", type=float, default=0.05, show_default=True,
              help="The pull towards the prior: this times KL(weights || prior) is added to the predicted objective "
                   "(the optimum without it is written as NAME-unregularized.toml)")
@click.option("--ladder", "ladder_spec", metavar="PRESET|FILE",
              help="The ladder spec whose rungs are the proxy and confirm models [default: gpu where torch sees a "
                   "GPU, cpu otherwise]")
@click.option("--rung", help="The ladder rung the proxies train [default: the smallest]")
@click.option("--target-tokens", type=click.IntRange(min=1),
              help="The run the mixture is for, whose epoch caps the designs respect [default: the mixture's budget]")
@click.option("--confirm", is_flag=True,
              help="Train the chosen mixture and the baselines at the confirm rung, and again at the proxies' rung "
                   "(decision accuracy)")
@click.option("--confirm-rung", help="The rung of the confirm runs [default: the one above the proxies']")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="The designs' seed")
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs trained at once (the cores are shared out between them)")
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True, help="Ranks per run (torchrun)")
@click.option("--dry-run", is_flag=True, help="Print the plan (the designs, the baselines) and stop")
@click.pass_obj
def search(ws: Workspace, name, from_mixture, proxies, over, design, concentration, prior, phases, objective, surrogate,
           kl_weight, ladder_spec, rung, target_tokens, confirm, confirm_rung, seed, parallel, nproc, dry_run):
    """Search the weights of mixture MIX with proxy runs; write the chosen mixture as WORKSPACE/mixtures/NAME.toml
    and the search (proxies, surrogate, prediction, baselines) in WORKSPACE/searches/NAME/."""
    from mixtures import find_spec, load_spec
    from reports.search import search_report
    from sweeps.ladder import vocabulary
    from sweeps.search import resolved_toml, run_search, spec_file
    from sweeps.search_cells import defaults, parse_over
    from sweeps.search_plan import SearchOptions, plan_search
    from sweeps.spec import find_ladder_spec, load_ladder_spec

    check_name("search", name, "NAME")
    axes = parse_over(over)
    design, surrogate = defaults(axes, design, surrogate)
    source = ladder_spec or default_preset()
    ladder = load_ladder_spec(find_ladder_spec(source, builtin_ladders()))
    base = load_spec(find_spec(from_mixture, ws.mixtures, builtin_mixtures()))
    options = SearchOptions(proxies, design, concentration, prior, tuple(phases), objective, surrogate, kl_weight,
                            seed, rung, confirm, confirm_rung, target_tokens, axes)
    planned = plan_search(ws, name, base, ladder, options, vocabulary(ws, base))
    print_plan(planned)
    if dry_run:
        return
    try:
        results = run_search(ws, planned, options, ladder.train, resolved_toml(planned, options, source), parallel,
                             nproc, console, note, search_report)
    except KeyboardInterrupt:
        raise Interrupted(RESUME_SEARCH) from None
    print_results(results)
    folder = ws.search_dir(name)
    console.print(f"Mixture: {spec_file(ws, name)} (`loom mix build {name}`)")
    console.print(f"Search:  {folder / SEARCH_FILE}")
    console.print(f"Report:  {folder / REPORT_FILE}")
    write_index(ws, f"`{ws.loom_command()} mix build {name}` (the chosen mixture); `{ws.loom_command()} report open "
                    f"{name}` (the search's page)")


def _weights_text(weights: dict[str, dict[str, float]]) -> str:
    """Each phase's weights; past WIDE components its heaviest few (the rest are in search.json and the spec)."""
    phases = []
    for phase_weights in weights.values():
        shown = phase_weights if len(phase_weights) <= WIDE else dict(
            sorted(phase_weights.items(), key=lambda kv: -kv[1])[:HEAVIEST])
        more = len(phase_weights) - len(shown)
        phases.append(" ".join(f"{k} {w:.3f}" for k, w in shown.items()) + (f" (+{more} more)" if more else ""))
    return "; ".join(phases)


def print_plan(planned) -> None:
    rung = planned.proxies.rungs[0]
    space = planned.space
    console.print(f"Search {planned.name} on mixture {planned.base.name}: phases {', '.join(space.phases)}; "
                  f"objective: {planned.objective_text}")
    console.print(f"Proxies: {len(planned.designs)} runs of rung {planned.proxy_rung} (d_model {rung.shape.d_model}, "
                  f"{rung.shape.n_layers} layers, {rung.active_parameters:,} active parameters), {rung.tokens:,} "
                  f"tokens ({rung.steps:,} steps) each, standing in for a run of {planned.target_tokens:,} tokens")
    console.print(_component_table(planned) if space.dims > WIDE else _design_table(planned))
    feasible = planned.feasible_sources()
    console.print(f"no-mixing: the whole budget on the one source the surrogate predicts best, of "
                  f"{', '.join(feasible) if feasible else 'none'} (the sources alone within the caps)")


def _design_table(planned) -> Table:
    """A row per design, a column per component: readable up to WIDE components."""
    space = planned.space
    table = Table(title="Designs (weights of " + ", ".join(space.phases) + ")")
    table.add_column("run")
    for phase, keys in zip(space.phases, space.keys):
        for key in keys:
            table.add_column(key if len(space.phases) == 1 else f"{phase}/{key}", justify="right")
    rows = [("prior", space.as_weights(space.vector(space.prior)))]
    rows += [(r.rung, space.as_weights(x)) for r, x in zip(planned.proxies.rungs, planned.designs)]
    rows += [(kind + ("" if planned.within_caps(x) else " (over a cap)"), space.as_weights(x))
             for kind, x in planned.baselines.items()]
    for label, weights in rows:
        table.add_row(label, *[f"{w:.3f}" for ws in weights.values() for w in ws.values()])
    return table


def _component_table(planned) -> Table:
    """A row per component (tens of cells), in key order: the prior, the designs' range and the baselines."""
    from mixtures.cells import cell_label

    space = planned.space
    names = [r.rung for r in planned.proxies.rungs]
    table = Table(title=f"Designs {names[0]}..{names[-1]}: each component's prior, the designs' lowest and highest "
                        "weight, and the baselines'")
    for column in ("component", "prior", "designs min", "designs max", *planned.baselines):
        table.add_column(column, justify="left" if column == "component" else "right")
    baselines = [x for x in planned.baselines.values()]
    prior = space.vector(space.prior)
    offset = 0
    for phase, keys in zip(space.phases, space.keys):
        for key in keys:
            column = planned.designs[:, offset]
            label = cell_label(key, planned.domain_names)
            label = label if len(space.phases) == 1 else f"{phase}/{label}"
            table.add_row(label, f"{prior[offset]:.3f}", f"{column.min():.3f}", f"{column.max():.3f}",
                          *[f"{x[offset]:.3f}" for x in baselines])
            offset += 1
    over = [kind for kind, x in planned.baselines.items() if not planned.within_caps(x)]
    if over:
        table.caption = f"over a cap: {', '.join(over)}"
    return table


def print_results(results: dict) -> None:
    from sweeps.search_explain import TRUSTED_SPEARMAN

    surrogate, chosen = results["surrogate"], results["chosen"]
    held = surrogate["held_out"]
    console.print(f"Surrogate ({surrogate['law']}) on {surrogate['n_proxies']} proxies: leave-one-out Spearman "
                  f"{held['spearman']:.3f}, mean absolute error {held['mean_abs_error']:.4f}")
    if not held["spearman"] >= TRUSTED_SPEARMAN:
        note(f"the surrogate ranks proxies it did not see poorly (Spearman {held['spearman']:.2f} < "
             f"{TRUSTED_SPEARMAN}): do not trust the choice yet; train more proxies (--proxies), a larger rung "
             "(--rung), or score an objective whose terms the proxies move")
    low, high = chosen["interval"]
    console.print(f"Chosen: {_weights_text(chosen['weights'])}; predicted objective at rung {results['proxy']['rung']} "
                  f"{chosen['predicted']:.4f} "
                  f"[{low:.4f}, {high:.4f}] ({chosen['confidence']:.0%}, {chosen['interval_method']})")
    optimum = results.get("unregularized")
    if optimum:
        low, high = optimum["interval"]
        console.print(f"Unregularized (--kl 0): {_weights_text(optimum['weights'])}; predicted "
                      f"{optimum['predicted']:.4f} [{low:.4f}, {high:.4f}]; its spec: "
                      f"mixtures/{optimum['mixture']}.toml "
                      f"(`loom mix build {optimum['mixture']}`)")
    for kind, baseline in results["baselines"].items():
        state = "" if baseline["feasible"] else f" (infeasible: {baseline['why']})"
        if baseline.get("predicted") is None:
            console.print(f"  {kind}: not planned{state}")
            continue
        label = f"{kind} ({baseline['source']})" if baseline.get("source") else kind
        console.print(f"  {label}: {_weights_text(baseline['weights'])}; predicted {baseline['predicted']:.4f}{state}")
    print_explanation(results.get("explanation"))
    confirm = results.get("confirm")
    if confirm:
        print_confirm(results, confirm)


def print_explanation(explanation: dict | None) -> None:
    if not explanation:
        return
    better = ", ".join(f"{b['baseline']} ({b['predicted']:.4f}{'' if b['feasible'] else ', over a cap'})"
                       for b in explanation["beaten_by"])
    note(f"predicted better than the chosen mixture: {better}. Why:")
    for reason in explanation["reasons"]:
        console.print(f"  - {reason['text']}")


def print_confirm(results: dict, confirm: dict) -> None:
    from sweeps.decision_accuracy import swapped_text

    small = {r["mixture"]: r["objective"] for r in confirm.get("at_proxy_scale") or []}
    table = Table(title=f"Confirm runs at rung {confirm['rung']} ({confirm['tokens']:,} tokens, same seed)")
    for column in ("mixture", "status", "objective", f"at rung {results['proxy']['rung']}"):
        table.add_column(column, justify="left" if column in ("mixture", "status") else "right")
    for run in sorted(confirm["runs"], key=lambda r: (r["objective"] is None, r["objective"] or 0)):
        at_proxy = small.get(run["mixture"])
        table.add_row(run["mixture"], run["status"], "-" if run["objective"] is None else f"{run['objective']:.4f}",
                      "-" if at_proxy is None else f"{at_proxy:.4f}")
    console.print(table)
    for kind, why in confirm["skipped"].items():
        console.print(f"  {kind}: not trained: {why}")
    decisions = confirm.get("decision_accuracy") or {}
    for source, label in (("measured", f"measured at rung {decisions.get('proxy_rung')}"),
                          ("predicted", "predicted by the surrogate")):
        found = decisions.get(source)
        if found:
            swapped = f"; swapped: {swapped_text(found)}" if found["disagree"] else ""
            console.print(f"Decision accuracy, {label}: {found['agree']} of {found['pairs']} pairs "
                          f"({found['accuracy']:.0%}) in the order of rung {decisions['confirm_rung']}{swapped}")
    if confirm["best"]:
        console.print(f"Best measured: {confirm['best']}" + ("" if confirm["best"] == "searched" else
                                                            " (not the searched mixture)"))
    if confirm["best"] not in (None, "searched"):
        note(f"{confirm['best']} beat the searched mixture at rung {confirm['rung']}: either the designs do not "
             "cover where the best mixture lies (more --proxies, or --design spacefill), or the proxies (rung "
             f"{results['proxy']['rung']}) are too small to weigh a component as rung {confirm['rung']} does (a "
             "larger --rung)")
