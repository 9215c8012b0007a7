"""The mixture search's page, `searches/NAME/report.html`: the proxies' mixtures and scores, how well the surrogate
predicted proxies it was not fitted to, the chosen mixture against the prior and the baselines, and, where confirm
ran, the measured objective of each at a larger rung; why a baseline is predicted better than the choice, and the
decision accuracy (reports.search_decisions). Built from `searches/NAME/search.json` and the confirm runs'
metrics.jsonl; every field of search.json may still be missing while a search runs."""

import json
from pathlib import Path
from urllib.parse import quote

from base.atomic_files import write_text
from base.errors import UserError
from base.small_files import read_text
from base.store import as_path
from base.workspace import RUNS_DIR, SEARCH_FILE, Workspace
from reports.compare import sweep_comparison
from reports.html import (
    PALETTE, REPORT_FILE, Dot, Html, Line, esc, legend, number, page, scientific, stacked_bars, table, xy_chart,
)
from reports.ladder import evaluations, metric_value
from reports.search_decisions import decision_section, explanation_section
from reports.search_wide import (component_ranges, fits_by_component, grouped_colors, is_wide, largest_weights,
                                 weights_rows)
from trainer.metrics import EVAL_LOSS_BY_SET, FINISHED, STEP, VAL_LOSS, VAL_LOSS_BY_SOURCE

SEARCHED = "searched"  # the confirm run of the chosen mixture; the others are named by their baseline
DICT_FIELDS = ("keys", "prior", "objective", "proxy", "surrogate", "chosen", "baselines", "confirm")
FIT_COLOR = "#222"


def load_search(search_dir: Path) -> dict:
    """search.json with every missing or null part as an empty dict or list, so the page can say what is missing."""
    path = as_path(search_dir) / SEARCH_FILE
    if not path.exists():
        raise UserError(f"no {SEARCH_FILE} in {search_dir}; run `loom mix search NAME --from MIX` first")
    try:
        search = json.loads(read_text(path))
    except ValueError as err:
        raise UserError(f"{path} is not JSON ({err}); run `loom mix search` again to rewrite it") from None
    for field in DICT_FIELDS:
        search[field] = search.get(field) or {}
    search["proxies"] = search.get("proxies") or []
    search["phases"] = search.get("phases") or list(search["keys"] or search["prior"])
    return search


def components(search: dict) -> list[tuple[str, str]]:
    """(phase, key) of every searched weight: from `keys`, else the prior, else whatever the proxies weighed."""
    found = []
    for phase in search["phases"]:
        keys = search["keys"].get(phase) or list(search["prior"].get(phase) or {})
        if not keys:
            keys = sorted({k for p in search["proxies"] for k in ((p.get("weights") or {}).get(phase) or {})})
        found += [(phase, key) for key in keys]
    return found


def weight(weights: dict | None, phase: str, key: str):
    return ((weights or {}).get(phase) or {}).get(key)


def component_label(search: dict, phase: str, key: str) -> str:
    return key if len(search["phases"]) == 1 else f"{phase}/{key}"


def scrolling(markup: str) -> str:
    """A table with a column per component or metric can be wider than the page: it scrolls sideways instead."""
    return f'<div style="overflow-x: auto">{markup}</div>'


def run_link(run: str | None) -> Html | str:
    return Html(f'<a href="../../{RUNS_DIR}/{esc(quote(run))}/{REPORT_FILE}">{esc(run)}</a>') if run else ""


def objective(values: dict, terms: dict) -> float | None:
    """The terms' weighted mean of an evaluation's values ("val_loss", "source:NAME", "eval:NAME"); none where a
    term has no value."""
    pairs = [(w, metric_value(values, term)) for term, w in terms.items()]
    total = sum(w for w, _ in pairs)
    if not pairs or not total or any(v is None for _, v in pairs):
        return None
    return sum(w * v for w, v in pairs) / total


def flat_metrics(record: dict) -> dict:
    """An evaluation record's losses under the names search.json uses: val_loss, source:NAME, eval:NAME."""
    flat = {VAL_LOSS: record[VAL_LOSS]} if record.get(VAL_LOSS) is not None else {}
    flat |= {f"source:{k}": v for k, v in (record.get(VAL_LOSS_BY_SOURCE) or {}).items()}
    return flat | {f"eval:{k}": v for k, v in (record.get(EVAL_LOSS_BY_SET) or {}).items()}


def loss(value) -> str:
    """An objective or loss, always to three decimals (number() writes 6.0 as "6")."""
    return f"{value:.3f}" if value is not None else ""


def interval_text(chosen: dict) -> str:
    interval, confidence = chosen.get("interval"), chosen.get("confidence")
    if not interval:
        return "no interval"
    return f"{f'{confidence:.0%} ' if confidence else ''}interval {interval[0]:.3f}–{interval[1]:.3f}"


# ---- the confirm runs ----

def confirm_results(search: dict, runs: Workspace) -> list[dict]:
    """Each confirm run with its objective curve (step, objective) and its final values: search.json's where it has
    them, else the run's last evaluation."""
    terms = search["objective"].get("terms") or {VAL_LOSS: 1.0}  # a search that names no terms scores val_loss
    results = []
    for run in search["confirm"].get("runs") or []:
        records = evaluations(runs.run_dir(run["run"])) if run.get("run") else []
        curve = [(r[STEP], value) for r in records if (value := objective(r, terms)) is not None]
        metrics = run.get("metrics") or (flat_metrics(records[-1]) if records else {})
        final = run.get("objective") if run.get("objective") is not None else (curve[-1][1] if curve else None)
        results.append({**run, "mixture": run.get("mixture") or "?", "curve": curve, "metrics": metrics,
                        "final": final})
    return results


def verdict(search: dict, results: list[dict]) -> str:
    """Whether the searched mixture measured best at the confirm rung, said plainly."""
    if not search["confirm"]:
        return "Not confirmed: run `loom mix search` with --confirm to train the searched mixture and the baselines."
    measured = {r["mixture"]: r["final"] for r in results if r["final"] is not None}
    if SEARCHED not in measured:
        return "Confirm runs started; the searched mixture has no measured objective yet."
    rung = search["confirm"].get("rung", "?")
    others = [f"{m} {loss(v)} ({v - measured[SEARCHED]:+.3f})" for m, v in measured.items() if m != SEARCHED]
    said = f"Measured at rung {rung}: " + "; ".join([f"searched {loss(measured[SEARCHED])}", *others])
    best = min(measured, key=measured.get)
    if best == SEARCHED:
        return f"{said}. The searched mixture is best" + (" (lowest objective)." if others
                                                           else ", but no baseline measured yet.")
    return (f"{said}. The searched mixture is NOT best: {best} is lower by "
            f"{measured[SEARCHED] - measured[best]:.3f}.")


def confirm_chart(results: list[dict]) -> str:
    """Each confirm run's objective against step, with a marker at its last evaluation."""
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(results))]
    lines = [Line(r["mixture"], r["curve"], color, "confirm-curve", 2 if r["mixture"] == SEARCHED else 1.3)
             for r, color in zip(results, colors)]
    dots = [Dot(f"{r['mixture']}: {loss(r['curve'][-1][1])} at step {r['curve'][-1][0]}", *r["curve"][-1], color,
                "confirm-final") for r, color in zip(results, colors) if r["curve"]]
    chart = xy_chart("confirm-chart", lines, dots, "step", "objective", 1000, 320)
    return legend([r["mixture"] for r in results]) + chart


def confirm_table(search: dict, results: list[dict]) -> str:
    """A row per confirm run: its objective, how far from the searched run's, and every final metric, val_loss and
    the objective's terms first."""
    first = [VAL_LOSS, *(search["objective"].get("terms") or {})]
    metrics = sorted({m for r in results for m in r["metrics"]},
                     key=lambda m: (first.index(m) if m in first else len(first), m))
    searched = next((r["final"] for r in results if r["mixture"] == SEARCHED), None)
    rows = [[r["mixture"], run_link(r.get("run")), r.get("status", "?"), r["final"],
             r["final"] - searched if None not in (r["final"], searched) else None,
             *[r["metrics"].get(m) for m in metrics]] for r in results]
    columns = ["mixture", "run", "status", "objective", "vs searched", *metrics]
    return scrolling(table(columns, rows, "confirm-table", numeric={3, 4, *range(5, 5 + len(metrics))}))


def confirm_section(search: dict, results: list[dict]) -> list[str]:
    confirm = search["confirm"]
    if not confirm:
        return ["<h2>Confirm runs</h2>", '<p class="note" id="confirm-missing">No confirm runs: the search ran '
                "without --confirm, or has not reached them.</p>"]
    what = (f"rung {confirm.get('rung', '?')}, {number(confirm.get('tokens'))} tokens, {number(confirm.get('steps'))} "
            f"steps each, the same budget and seed")
    return ["<h2>Confirm runs</h2>", f'<p class="note">{esc(what)}; the objective at each evaluation.</p>',
            confirm_chart(results), confirm_table(search, results)]


# ---- the headline and what is missing ----

def surrogate_text(search: dict) -> str:
    held = search["surrogate"].get("held_out") or {}
    if held.get("spearman") is None:
        return "No surrogate yet: it is fitted once the proxies have finished."
    n = search["surrogate"].get("n_proxies")
    return (f"Surrogate held-out ({held.get('method', 'leave-one-out')}) Spearman {held['spearman']:.2f}"
            f"{f' over {n} proxies' if n else ''}, mean absolute error {number(held.get('mean_abs_error'), 4) or '?'}.")


def prediction_text(search: dict) -> str:
    chosen = search["chosen"]
    if chosen.get("predicted") is None:
        return "No chosen mixture yet: it is solved for once the surrogate is fitted."
    baselines = [f"{name} {loss(b['predicted'])}" for name, b in search["baselines"].items()
                 if (b or {}).get("predicted") is not None]
    rung = (search.get("proxy") or {}).get("rung")
    scale = f" at the proxy scale (rung {rung})" if rung else ""
    return (f"Predicted objective of the searched mixture{scale}: {loss(chosen['predicted'])}, {interval_text(chosen)}"
            + (f" (baselines predicted: {', '.join(baselines)})." if baselines else "."))


def predicted_card(chosen: dict) -> str:
    if chosen.get("predicted") is None:
        return "-"
    interval = chosen.get("interval")
    return loss(chosen["predicted"]) + (f" ({interval[0]:.3f}–{interval[1]:.3f})" if interval else "")


def headline(search: dict, results: list[dict]) -> str:
    proxies, chosen = search["proxies"], search["chosen"]
    finished = sum(p.get("status") == FINISHED for p in proxies)
    spearman = (search["surrogate"].get("held_out") or {}).get("spearman")
    measured = {r["mixture"]: r["final"] for r in results if r["final"] is not None}
    cards = [("search", search.get("search", "?")), ("from", search.get("from", "?")),
             ("proxies finished", f"{finished} / {len(proxies)}"),
             ("predicted objective", predicted_card(chosen)),
             ("held-out Spearman", f"{spearman:.2f}" if spearman is not None else "-"),
             ("best at confirm", min(measured, key=measured.get) if measured else "-")]
    boxes = "".join(f'<div id="headline-{esc(k.replace(" ", "-"))}">{esc(k)}<b>{esc(v)}</b></div>' for k, v in cards)
    return (f'<div class="headline">{boxes}</div><p id="verdict"><b>{esc(verdict(search, results))}</b></p>'
            f'<p id="prediction">{esc(prediction_text(search))}</p>'
            f'<p id="surrogate-check">{esc(surrogate_text(search))}</p>')


def missing(search: dict, results: list[dict]) -> str:
    notes = [f"proxy {p.get('name', '?')} ({p.get('status', '?')})" for p in search["proxies"]
             if p.get("objective") is None]
    notes += [] if search["proxies"] else ["no proxies yet"]
    notes += [] if search["surrogate"] else ["no surrogate fit"]
    notes += [] if search["chosen"] else ["no chosen mixture"]
    notes += [f"confirm run {r['mixture']} ({r.get('status', '?')}): no evaluations yet" for r in results
              if not r["curve"]]
    return f'<p class="note" id="missing">Not there yet: {esc("; ".join(notes))}.</p>' if notes else ""


# ---- the proxies and the surrogate ----

def proxy_order(proxies: list[dict]) -> list[dict]:
    """Best (lowest) objective first; proxies without one last, in their own order."""
    return sorted(proxies, key=lambda p: (p.get("objective") is None, p.get("objective") or 0))


def proxy_bars(search: dict) -> list[str]:
    charts = []
    for i, phase in enumerate(search["phases"]):
        keys = [k for p, k in components(search) if p == phase]
        rows = [(f"{p.get('name', '?')} · {loss(p.get('objective')) or p.get('status', '?')}",
                 [weight(p.get("weights"), phase, k) or 0 for k in keys])
                for p in proxy_order(search["proxies"]) if (p.get("weights") or {}).get(phase)]
        if rows:
            title = f"<h3>{esc(phase)}</h3>" if len(search["phases"]) > 1 else ""
            colors = grouped_colors(keys) if is_wide(keys) else None
            charts.append(title + stacked_bars(rows, keys, f"proxy-weights-{i}", colors=colors))
    return charts


def proxy_table(search: dict) -> str:
    parts = components(search)
    if is_wide(parts):  # a column per component would not fit: the heaviest three, and a row per component below
        rows = [[p.get("name", "?"), run_link(p.get("run")), p.get("status", "?"), largest_weights(p.get("weights")),
                 p.get("objective"), p.get("loo_predicted")] for p in proxy_order(search["proxies"])]
        columns = ["proxy", "run", "status", "heaviest components", "objective", "LOO prediction"]
        return (table(columns, rows, "proxy-table", numeric={4, 5})
                + component_ranges(search, parts, component_label, weight))
    rows = [[p.get("name", "?"), run_link(p.get("run")), p.get("status", "?"),
             *[weight(p.get("weights"), ph, k) for ph, k in parts], p.get("objective"), p.get("loo_predicted")]
            for p in proxy_order(search["proxies"])]
    columns = ["proxy", "run", "status", *[component_label(search, ph, k) for ph, k in parts], "objective",
               "LOO prediction"]
    return scrolling(table(columns, rows, "proxy-table", numeric=set(range(3, len(columns)))))


def loo_chart(search: dict) -> str:
    """Each proxy's objective as measured (x) and as predicted by the surrogate fitted without it (y), on y = x."""
    scored = [p for p in search["proxies"] if None not in (p.get("objective"), p.get("loo_predicted"))]
    if not scored:
        return '<p class="note" id="loo-chart">No held-out predictions yet.</p>'
    values = [v for p in scored for v in (p["objective"], p["loo_predicted"])]
    diagonal = Line("y = x: a perfect prediction", [(min(values), min(values)), (max(values), max(values))], FIT_COLOR,
                    "diagonal", 1, "6 4")
    dots = [Dot(f"{p.get('name', '?')}: measured {loss(p['objective'])}, predicted {loss(p['loo_predicted'])}",
                p["objective"], p["loo_predicted"], PALETTE[0], "proxy-dot", label=p.get("name", "")) for p in scored]
    return xy_chart("loo-chart", [diagonal], dots, "measured objective", "predicted without it (leave-one-out)",
                    640, 420)


def fits_table(search: dict) -> str:
    fits = search["surrogate"].get("fits") or {}
    if not fits:
        return ""
    slopes = sorted({name for fit in fits.values() for name in (fit.get("t") or {})})
    if is_wide(slopes):
        return scrolling(fits_by_component(fits))
    rows = [[term, fit.get("c"), *[(fit.get("t") or {}).get(s) for s in slopes], fit.get("residual_scale")]
            for term, fit in fits.items()]
    return scrolling(table(["objective term", "c", *[f"t {s}" for s in slopes], "residual scale"], rows, "fits-table",
                           numeric=set(range(1, len(slopes) + 3))))


# ---- the chosen mixture ----

def mixtures(search: dict) -> dict[str, dict]:
    """The mixtures to compare, by name: the prior, the searched one, the unregularized optimum and each baseline
    that has weights."""
    found = {"prior": {"weights": search["prior"]}, SEARCHED: search["chosen"]}
    found |= {"unregularized": search["unregularized"]} if search.get("unregularized") else {}
    return found | {name: b for name, b in search["baselines"].items() if (b or {}).get("weights")}


def weights_section(search: dict) -> list[str]:
    if not search["chosen"].get("weights"):
        return ['<p class="note" id="weights-missing">No chosen weights yet.</p>']
    compared, epochs, parts = mixtures(search), search["chosen"].get("epochs") or {}, []
    for i, phase in enumerate(search["phases"]):
        keys = [k for p, k in components(search) if p == phase]
        rows = [[k, *[weight(m.get("weights"), phase, k) for m in compared.values()], epochs.get(k)] for k in keys]
        bars = [(name, [weight(m.get("weights"), phase, k) or 0 for k in keys]) for name, m in compared.items()
                if (m.get("weights") or {}).get(phase)]
        colors = grouped_colors(keys) if is_wide(keys) else None
        weights_table = table(["component", *compared, "epochs (searched)"], rows, f"weights-{i}",
                              numeric=set(range(1, len(compared) + 2)))
        if is_wide(keys):
            weights_table = table(["group", "component", *compared, "epochs (searched)", "searched / prior"],
                                  weights_rows(search, phase, keys, compared, epochs, weight), f"weights-{i}",
                                  numeric=set(range(2, len(compared) + 4)))
        parts += [f"<h3>{esc(phase)}</h3>", stacked_bars(bars, keys, f"mixture-weights-{i}", colors=colors),
                  weights_table]
    return parts


def mixtures_table(search: dict, results: list[dict]) -> str:
    measured = {r["mixture"]: r["final"] for r in results}
    chosen = search["chosen"]
    if not chosen and not search["baselines"]:
        return '<p class="note" id="mixtures-table">No mixture solved for yet.</p>'
    rows = [[SEARCHED, chosen.get("predicted"), interval_text(chosen) if chosen else "", "yes" if chosen else "", "",
             measured.get(SEARCHED)]]
    optimum = search.get("unregularized") or {}
    rows += [["unregularized (--kl 0)", optimum.get("predicted"), interval_text(optimum), "yes", "", None]
             ] if optimum else []
    rows += [[f"{name} ({b['source']})" if b.get("source") else name, b.get("predicted"), "",
              {True: "yes", False: "NO"}.get(b.get("feasible"), "?"), b.get("why", ""), measured.get(name)]
             for name, b in search["baselines"].items() if b]
    return table(["mixture", "predicted objective", "interval", "feasible", "why not", "measured at confirm"], rows,
                 "mixtures-table", numeric={1, 5})


# ---- the method ----

def method(search: dict) -> str:
    proxy, surrogate, chosen = search["proxy"], search["surrogate"], search["chosen"]
    held = surrogate.get("held_out") or {}
    terms = ", ".join(f"{w:g} × {t}" for t, w in (search["objective"].get("terms") or {}).items())
    shape = (f"d_model {proxy.get('d_model', '?')}, {proxy.get('n_layers', '?')} layers, "
             f"{proxy.get('n_heads', '?')} heads"
             + (f", {proxy['n_experts']} experts" if proxy.get("n_experts") else ""))
    flops = f", {scientific(proxy['flops'])} FLOPs" if proxy.get("flops") else ""
    text = [f"Design: {len(search['proxies'])} proxy mixtures drawn by {search.get('design', '?')} sampling around the "
            f"{search.get('prior_kind') or ''} prior (seed {search.get('seed', '?')}), phases "
            f"{', '.join(search['phases']) or '?'}.",
            f"Proxies: rung {proxy.get('rung', '?')} ({shape}; {number(proxy.get('active_parameters'))} active "
            f"parameters), {number(proxy.get('tokens'))} tokens in {number(proxy.get('steps'))} steps{flops}.",
            f"Objective: {search['objective'].get('text', '?')}" + (f" ({terms})." if terms else "."),
            f"Surrogate: {surrogate.get('model', '?')}, {surrogate.get('law', '?')}, one fit per objective term; "
            f"held out by {held.get('method', '?')}: each proxy is predicted by the surrogate fitted without it.",
            f"Chosen: minimises the predicted objective plus {chosen.get('kl_weight', '?')} × KL(weights ‖ prior), a "
            f"pull toward the prior where the proxies say little; its KL to the prior is "
            f"{number(chosen.get('kl_to_prior'), 4) or '?'}. Interval: {chosen.get('interval_method', '?')}."]
    return '<div id="method">' + "".join(f'<p class="note">{esc(line)}</p>' for line in text) + "</div>"


# ---- the page ----

def search_report(search_dir: Path) -> Path:
    search_dir = as_path(search_dir)
    search = load_search(search_dir)
    results = confirm_results(search, Workspace(search_dir.parent.parent))
    name = search.get("search") or search_dir.name
    body = [f"<h1>Mixture search {esc(name)}</h1>", headline(search, results), missing(search, results),
            "<h2>Proxies</h2>", '<p class="note">Each proxy\'s weights, best objective first.</p>', *proxy_bars(search),
            proxy_table(search),
            sweep_comparison(search_dir.parent.parent, [p.get("run") for p in search["proxies"] if p.get("run")],
                             f"search-{search_dir.name}-proxies", "The proxies' runs"),
            "<h2>Surrogate: held-out predictions</h2>",
            f'<p id="surrogate-fit">{esc(surrogate_text(search))}</p>', loo_chart(search), fits_table(search),
            "<h2>Chosen mixture against the prior and the baselines</h2>", mixtures_table(search, results),
            explanation_section(search), *weights_section(search), *confirm_section(search, results),
            *decision_section(search),
            sweep_comparison(search_dir.parent.parent, [r["run"] for r in results if r.get("run")],
                             f"search-{search_dir.name}-confirm", "The confirm runs"), "<h2>Method</h2>", method(search)]
    out = search_dir / REPORT_FILE
    write_text(page(f"Loom search {name}", body), out)
    return out
