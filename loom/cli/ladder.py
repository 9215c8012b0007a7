"""`loom ladder NAME --mixture MIX`: a scaling ladder of small runs on one mixture, the law fitted to them, and
the prediction of a bigger run, checked first on the largest rung held out of the fit."""

from pathlib import Path

import click
from rich.table import Table

from base.errors import UserError
from base.names import check_name
from base.workspace import LADDER_FIT_FILE, REPORT_FILE, Workspace, examples_dir
from loom.cli.console import Interrupted, console, note
from loom.cli.mix import builtin_mixtures
from loom.cli.report import write_index

QUICK = "quick"  # the preset --quick names
RESUME_LADDER = "interrupted; run the same command again to resume the unfinished rungs (finished ones are kept)"


def builtin_ladders() -> Path:
    return examples_dir() / "ladders"


@click.command()
@click.argument("name")
@click.option("--mixture", required=True, help="The mixture every rung trains on (a name or a path to a spec)")
@click.option("--spec", "spec_name", metavar="PRESET|FILE",
              help="A built-in preset (quick, cpu, gpu) or a ladder spec .toml [default: on a rerun, the ladder's "
                   "own; else gpu where torch sees a GPU, cpu otherwise]")
@click.option("--quick", is_flag=True, help="The quick preset (--spec quick): a few minutes on a laptop's CPU, to try "
                                            "the pipeline; its prediction is rougher than cpu's")
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True,
              help="Rungs trained at once (the cores are shared out between them)")
@click.option("--nproc", type=click.IntRange(min=1), default=1, show_default=True,
              help="Ranks per rung, started by torchrun (as `loom train --nproc`)")
@click.option("--dry-run", is_flag=True, help="Print the plan (each rung's tokens, steps, FLOPs, LR) and stop")
@click.pass_obj
def ladder(ws: Workspace, name, mixture, spec_name, quick, parallel, nproc, dry_run):
    """Train the rungs of ladder NAME (a rerun resumes the unfinished ones) and their cooldowns, fit
    L(N, D) = E + A/N^a + B/D^b to every point (or L(C) = L_inf + A*C^-alpha to the rungs' final losses, for a spec
    without cooldowns) per validation source and eval set, check it on the held-out point and predict the target;
    WORKSPACE/ladders/NAME/ gets fit.json and report.html."""
    from mixtures import find_spec, load_spec
    from reports.ladder import ladder_report
    from sweeps.ladder import plan, recorded_spec, run_ladder
    from sweeps.spec import find_ladder_spec, load_ladder_spec

    check_name("ladder", name, "NAME")
    if quick and spec_name and spec_name != QUICK:
        raise UserError(f"--quick is --spec {QUICK}; give one of --quick and --spec {spec_name}")
    source = (QUICK if quick else spec_name) or recorded_spec(ws, name) or default_preset()
    spec = load_ladder_spec(find_ladder_spec(source, builtin_ladders()))
    mixture_spec = load_spec(find_spec(mixture, ws.mixtures, builtin_mixtures()))
    planned = plan(ws, name, spec, mixture_spec)
    print_plan(planned, source)
    if dry_run:
        return
    try:
        results = run_ladder(ws, planned, spec, mixture_spec, source, parallel, nproc, console, note,
                             ladder_report)
    except KeyboardInterrupt:
        raise Interrupted(RESUME_LADDER) from None
    print_results(results)
    folder = ws.ladder_dir(name)
    console.print(f"Fit:    {folder / LADDER_FIT_FILE} (or `loom sql \"SELECT * FROM ladder\"`)")
    console.print(f"Report: {folder / REPORT_FILE}")
    write_index(ws, f"`{ws.loom_command()} report open {name}` (the ladder's page)")


def default_preset() -> str:
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


def print_plan(planned, source: str) -> None:
    table = Table(title=f"Ladder {planned.name} ({source}) on mixture {planned.mixture}: "
                        f"{planned.global_batch} x {planned.seq_len} tokens a step")
    budgets = bool(planned.cooldowns)
    for column in ("rung", "d_model", "layers", "heads", "experts", "active params", "tokens", "tokens/param",
                   "steps", *(["budgets (steps)"] if budgets else []), "FLOPs", "lr", "warmup"):
        table.add_column(column, justify="left" if column == "rung" else "right")
    for r in planned.rungs:
        table.add_row(r.rung, str(r.shape.d_model), str(r.shape.n_layers), str(r.shape.n_heads),
                      str(r.shape.n_experts or "-"), f"{r.active_parameters:,}", f"{r.tokens:,}",
                      f"{r.tokens_per_parameter:.1f}", f"{r.steps:,}",
                      *([",".join(str(b.steps) for b in r.budgets)] if budgets else []),
                      f"{r.flops:.3g}", f"{r.lr:.2e}", str(r.warmup_steps))
    console.print(table)
    t = planned.target
    console.print(f"Target: {t.flops:.3g} FLOPs, {t.tokens:,} tokens, {t.active_parameters:,} active parameters; "
                  f"rungs span {planned.rungs[-1].flops / planned.rungs[0].flops:.1f}x in compute")
    if budgets:
        points = sum(len(r.budgets) for r in planned.rungs)
        cooldown = sum(b.steps - b.branch_step for r in planned.rungs for b in r.budgets[:-1])
        own = sum(r.steps for r in planned.rungs)
        console.print(f"Points: {points} ({len(planned.rungs)} rungs x {len(planned.cooldowns) + 1} budgets), each "
                      f"shorter budget a cooldown branched from its rung's stable phase, its LR decaying over its "
                      f"last {planned.rungs[0].decay_fraction:.0%}; {own + cooldown:,} steps in all, {cooldown:,} of "
                      f"them in cooldowns")


def print_results(results: dict) -> None:
    if results.get("design") == "cooldowns":
        print_budget_results(results)
        return
    table = Table(title="Fits: L(C) = L_inf + A * C^-alpha")
    for column in ("metric", "L_inf", "alpha", "held-out rung", "predicted", "measured", "error", "in interval",
                   "target"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for metric, fitted in results["fits"].items():
        law, held, target = fitted.get("fit"), fitted.get("held_out") or {}, fitted.get("target") or {}
        table.add_row(metric, _num(law and law["l_inf"]), _num(law and law["alpha"]), held.get("rung", "-"),
                      _num(held.get("predicted")), _num(held.get("measured")),
                      f"{held['relative_error']:+.2%}" if held.get("relative_error") is not None else "-",
                      {True: "yes", False: "NO", None: "-"}[held.get("inside")],
                      _with_interval(target.get("predicted"), target.get("interval")))
    console.print(table)
    validation = results["fits"].get("val_loss") or {}
    held = validation.get("held_out") or {}
    if held.get("predicted") is not None:
        console.print(f"Honesty check: fitted without rung {held['rung']}, predicted {held['predicted']:.4f}, "
                      f"measured {held['measured']:.4f}, error {held['relative_error']:+.2%}; "
                      f"{_interval_words(held, results)}")
    elif validation.get("error") or held.get("error"):
        console.print(f"Honesty check: not possible yet: {held.get('error') or validation.get('error')}")
    target = validation.get("target")
    if target:
        console.print(f"Target ({results['target']['flops']:.3g} FLOPs): predicted validation loss "
                      f"{_with_interval(target['predicted'], target['interval'])} "
                      f"({results['interval']['method']}, {results['interval']['confidence']:.0%})")
    chinchilla = results["chinchilla"]
    console.print("Chinchilla approach 3: " + (f"skipped: {chinchilla['skipped']}" if "skipped" in chinchilla else
                                                ", ".join(f"{k} {v:.4g}" for k, v in chinchilla["fit"].items()
                                                          if isinstance(v, float))))


def print_budget_results(results: dict) -> None:
    """The fits of a ladder with cooldowns: L(N, D) per metric, the held-out point, the target, the frontier."""
    level = f"{results['interval']['confidence']:.0%}"
    table = Table(title=f"Fits: {results['law']}, on every point but the held-out one")
    for column in ("metric", "E", "alpha", "beta", "points", "held-out", "predicted", "measured", "error",
                   f"{level} interval", "inside", "target"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for metric, fitted in results["fits"].items():
        law, held, target = fitted.get("fit") or {}, fitted.get("held_out") or {}, fitted.get("target") or {}
        table.add_row(metric, _num(law.get("e")), _num(law.get("alpha")), _num(law.get("beta")),
                      str(fitted.get("n_points", "-")), held.get("run", "-"), _num(held.get("predicted")),
                      _num(held.get("measured")), _percent(held.get("relative_error")), _plus_minus(held),
                      {True: "yes", False: "NO", None: "-"}[held.get("inside")],
                      _with_interval(target.get("predicted"), target.get("interval")))
    console.print(table)
    validation = results["fits"].get("val_loss") or {}
    held, law = validation.get("held_out") or {}, validation.get("fit")
    method = f"{(law or {}).get('interval_method', results['interval']['method'])}, {level}"
    if law:
        console.print(f"Law: L(N, D) = {law['e']:.4g} + {law['a']:.4g}/N^{law['alpha']:.3f} + "
                      f"{law['b']:.4g}/D^{law['beta']:.3f} on {validation['n_points']} points (intervals: {method})")
    if held.get("predicted") is not None:
        console.print(f"Honesty check: fitted without {held['run']} (the largest N at its largest D: "
                      f"{held['parameters']:,} parameters, {held['tokens']:,} tokens), predicted "
                      f"{held['predicted']:.4f}, measured {held['measured']:.4f}, error {held['relative_error']:+.2%}; "
                      f"{_interval_words(held, results)}" + (f" (±{held['half_width']:.1%} of the prediction)"
                                                             if held.get("half_width") is not None else ""))
    else:
        console.print(f"Honesty check: not possible yet: {held.get('error') or validation.get('error')}")
    target, t = validation.get("target"), results["target"]
    if target:
        console.print(f"Target ({t['parameters']:,} active parameters, {t['tokens']:,} tokens): predicted "
                      f"validation loss {_with_interval(target['predicted'], target['interval'])}"
                      f"{_plus_minus_words(target)} ({method})")
    frontier = validation.get("frontier") or {}
    if frontier.get("error"):
        console.print(f"Compute-optimal frontier: none: {frontier['error']}")
    elif frontier.get("fit"):
        f = frontier["fit"]
        console.print(f"Compute-optimal frontier: L(C) = {f['l_inf']:.4g} + {f['a']:.4g} * C^-{f['alpha']:.4f}; "
                      f"at the target's {t['flops']:.3g} FLOPs {frontier['target']:.4f}")


def _percent(value) -> str:
    return "-" if value is None else f"{value:+.2%}"


def _plus_minus(prediction: dict) -> str:
    interval = prediction.get("interval")
    return "-" if not interval else f"±{(interval[1] - interval[0]) / 2 / prediction['predicted']:.1%}"


def _plus_minus_words(prediction: dict) -> str:
    return f" (±{_plus_minus(prediction)[1:]} of the prediction)" if prediction.get("interval") else ""


def _interval_words(held: dict, results: dict) -> str:
    if held.get("interval") is None:
        return f"no interval ({(held.get('fit') or {}).get('no_interval_reason') or 'too few rungs for one'})"
    low, high = held["interval"]
    level = f"{results['interval']['confidence']:.0%}"
    return f"{'inside' if held['inside'] else 'OUTSIDE'} the {level} interval [{low:.4f}, {high:.4f}]"


def _num(value) -> str:
    return "-" if value is None else f"{value:.4g}"


def _with_interval(value, interval) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" + (f" [{interval[0]:.4f}, {interval[1]:.4f}]" if interval else "")
