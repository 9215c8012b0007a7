"""The search page's parts that say how far its decision goes: why a baseline is predicted better than the chosen
mixture (search.json's explanation, with the unregularized optimum to build instead), and the decision accuracy
of the confirm mixtures' order at the proxies' rung, measured and predicted, against the confirm rung's."""

from reports.html import esc, table


def explanation_section(search: dict) -> str:
    explanation, optimum = search.get("explanation") or {}, search.get("unregularized") or {}
    parts = []
    if explanation.get("beaten_by"):
        better = ", ".join(f"{b['baseline']} {b['predicted']:.3f}" + ("" if b.get("feasible") else " (over a cap)")
                           for b in explanation["beaten_by"])
        reasons = "".join(f"<li>{esc(r['text'])}</li>" for r in explanation.get("reasons") or [])
        parts.append(f'<p><b>Predicted better than the chosen mixture: {esc(better)}.</b> Why:</p><ul>{reasons}</ul>')
    if optimum.get("mixture"):
        parts.append(f'<p class="note">The unregularized optimum (--kl 0) is written as mixtures/'
                     f'{esc(optimum["mixture"])}.toml: build it with <code>loom mix build '
                     f'{esc(optimum["mixture"])}</code>.</p>')
    return f'<div id="explanation">{"".join(parts)}</div>' if parts else ""


def decision_section(search: dict) -> list[str]:
    confirm = search.get("confirm") or {}
    decisions = confirm.get("decision_accuracy") or {}
    if not decisions:
        return []
    small = {r["mixture"]: r.get("objective") for r in confirm.get("at_proxy_scale") or []}
    predicted = {kind: (b or {}).get("predicted") for kind, b in (search.get("baselines") or {}).items()}
    predicted["searched"] = (search.get("chosen") or {}).get("predicted")
    proxy_rung, confirm_rung = decisions.get("proxy_rung", "?"), decisions.get("confirm_rung", "?")
    rows = [[r["mixture"], predicted.get(r["mixture"]), small.get(r["mixture"]), r.get("objective")]
            for r in confirm.get("runs") or []]
    lines = [_accuracy_line(decisions.get(kind), label, confirm_rung)
             for kind, label in (("measured", f"measured at rung {proxy_rung}"), ("predicted", "as predicted"))]
    return ["<h2>Decision accuracy</h2>",
            f'<p class="note">Of each pair of confirm mixtures, whether the one that scores lower at the small scale '
            f'scores lower at rung {esc(confirm_rung)} too (DataDecide, arXiv 2504.11393).</p>',
            '<div id="decision-accuracy">' + "".join(f"<p>{esc(line)}</p>" for line in lines) + "</div>",
            table(["mixture", f"predicted (rung {proxy_rung})", f"measured at rung {proxy_rung}",
                   f"measured at rung {confirm_rung}"], rows, "decision-table", numeric={1, 2, 3})]


def _accuracy_line(found: dict | None, label: str, confirm_rung: str) -> str:
    if not found:
        return f"{label}: fewer than two mixtures scored at both scales yet."
    swapped = [f"{d['pair'][0]} and {d['pair'][1]}" for d in found.get("disagree") or []]
    return (f"{label}: {found['agree']} of {found['pairs']} pairs ({found['accuracy']:.0%}) in rung "
            f"{confirm_rung}'s order" + (f"; swapped: {', '.join(swapped)}." if swapped else "."))
