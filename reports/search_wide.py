"""The search page's parts for tens of components (`loom mix search --over`: a source's cells): what a column per
component would make unreadable becomes a row per component, and the cells are grouped (coloured and labelled) by
their first condition, the domain of `web:domain=3,quality_bucket=2`, named where the domains are named."""

from mixtures.cells import cell_label
from reports.colors import shade
from reports.html import PALETTE, table

WIDE = 8  # components beyond which the page lists a row per component, not a column


def is_wide(parts: list) -> bool:
    return len(parts) > WIDE


def group_of(key: str) -> str:
    """A component's group: its source and first condition (`web:domain=3`); a source or tag is its own."""
    source, _, conditions = key.partition(":")
    return f"{source}:{conditions.split(',')[0]}" if conditions else key


def group_label(key: str, names: dict | None) -> str:
    return cell_label(group_of(key), names)


def grouped_colors(keys: list[str]) -> list[str]:
    """A colour per group (the palette in turn), each of its members a lighter shade of it."""
    groups = list(dict.fromkeys(group_of(k) for k in keys))
    members = {g: [k for k in keys if group_of(k) == g] for g in groups}
    colors = []
    for key in keys:
        group = group_of(key)
        base = PALETTE[groups.index(group) % len(PALETTE)]
        place, size = members[group].index(key), len(members[group])
        colors.append(shade(base, 0.55 * place / size) if size > 1 else base)
    return colors


def largest_weights(weights: dict | None, count: int = 3) -> str:
    """A proxy's `count` heaviest components of each phase, heaviest first."""
    parts = []
    for phase_weights in (weights or {}).values():
        ranked = sorted(phase_weights.items(), key=lambda kv: -kv[1])[:count]
        parts += [f"{k} {w:.3f}" for k, w in ranked]
    return "; ".join(parts)


def component_ranges(search: dict, parts: list[tuple[str, str]], label, weight) -> str:
    """A row per component: its group, prior, and the lowest, mean and highest weight the proxies gave it."""
    names = search.get("domain_names")
    rows = []
    for phase, key in parts:
        given = [weight(p.get("weights"), phase, key) or 0.0 for p in search["proxies"] if p.get("weights")]
        rows.append([group_label(key, names), label(search, phase, key), weight(search["prior"], phase, key),
                     min(given) if given else None, sum(given) / len(given) if given else None,
                     max(given) if given else None])
    return table(["group", "component", "prior", "proxies' lowest", "mean", "highest"], rows, "proxy-ranges",
                 numeric={2, 3, 4, 5})


def fits_by_component(fits: dict) -> str:
    """The surrogate's slopes as a row per component, a column per objective term (c and the residual last)."""
    terms = list(fits)
    slopes = list(dict.fromkeys(name for fit in fits.values() for name in (fit.get("t") or {})))
    rows = [[s, *[(fits[t].get("t") or {}).get(s) for t in terms]] for s in slopes]
    rows += [[what, *[fits[t].get(field) for t in terms]] for what, field in (("c", "c"),
                                                                           ("residual scale", "residual_scale"))]
    return table(["slope t of", *terms], rows, "fits-table", numeric=set(range(1, len(terms) + 1)))


def weights_rows(search: dict, phase: str, keys: list[str], compared: dict, epochs: dict, weight) -> list[list]:
    """The chosen weights' table for tens of components: grouped, with the searched weight over the prior's."""
    names = search.get("domain_names")
    rows = []
    for key in keys:
        values = [weight(m.get("weights"), phase, key) for m in compared.values()]
        prior, searched = values[0], values[1]
        ratio = searched / prior if prior and searched is not None else None
        rows.append([group_label(key, names), key, *values, epochs.get(key), ratio])
    return rows
