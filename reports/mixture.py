"""The sections of a mixture's report that are its own: the headline, the phases on a token timeline, the tokens
each source gives the whole mixture, its licences, and the plan's tables. Components and sources are coloured as on every page
of the workspace (reports.colors); beyond the TOP_N largest they are drawn together as "other"."""


from base.digests import file_digest
from base.store import path_text
from base.workspace import Workspace

from mixtures import cell_label
from reports.bars import Bar, PhaseBlock, Segment, bar_chart, legend, timeline
from reports.colors import OTHER, SourceColors
from reports.html import esc, number, table
from reports.sections import TOP_N
from reports.views import workspace_root


def headline(meta: dict, curation: dict, documents: int, sources: list[str], ws: Workspace) -> str:
    items = [("tokens", number(meta["tokens"])), ("documents", number(documents)), ("sources", len(sources)),
             ("phases", len(meta["phases"])), ("steps", number(meta["steps"])),
             ("sequence", f"{meta['seq_len']} tokens x {meta['global_batch']}")]
    cards = "".join(f'<div id="headline-{esc(k)}">{esc(k)}<b>{esc(v)}</b></div>' for k, v in items)
    tokenizer = tokenizer_shown(curation["tokenizer"], meta["tokenizer_fingerprint"], ws,
                                [workspace_root(ws.root), meta.get("workspace")])
    return (f'<div class="headline">{cards}</div><p class="note" id="tokenizer">tokenizer {esc(tokenizer)} '
            f'(fingerprint {esc(meta["tokenizer_fingerprint"])}); manifest fingerprint '
            f'{esc(meta["manifest_fingerprint"])}</p>')


def tokenizer_shown(path: str, fingerprint: str, ws: Workspace, roots: list) -> str:
    """The tokenizer the data was curated with, as this workspace holds it: relative to the first of `roots` (the
    workspace now, the one the mixture was compiled in) under which it lies; else the workspace's own
    models/tokenizer.json when its content has that fingerprint (a workspace copied after curation); else
    `path` as curation recorded it."""
    for root in filter(None, roots):
        prefix = path_text(root).rstrip("/") + "/"  # a URL (a workspace on a store) or a local path, as text
        if path.startswith(prefix):
            return path[len(prefix):]
    own = ws.tokenizer
    if not ws.remote and own.is_file() and file_digest(own) == fingerprint:
        return str(own.relative_to(ws.root))
    return f"{path} (outside this workspace)"


def plan_rows(con, name: str) -> list[dict]:
    relation = con.execute("SELECT * FROM mixture_plan WHERE mixture = ?", [name])
    columns = [d[0] for d in relation.description]
    return [dict(zip(columns, row)) for row in relation.fetchall()]


def shown_components(meta: dict, rows: list[dict]) -> list[str]:
    """The TOP_N components with the most tokens over all phases, in the mixture's order."""
    tokens = {c["key"]: 0 for c in meta["components"]}
    for r in rows:
        tokens[r["component"]] += r["tokens"]
    top = set(sorted(tokens, key=lambda k: (-tokens[k], k))[:TOP_N])
    return [k for k in tokens if k in top]


def phases(meta: dict, rows: list[dict], colors: SourceColors) -> str:
    """One bar whose x is tokens: each phase a block as wide as its tokens, its components stacked by share."""
    keys = [c["key"] for c in meta["components"]]
    sources = {c["key"]: c["sources"] for c in meta["components"]}
    shown = shown_components(meta, rows)
    color = {k: colors.of_component(k, sources[k], keys) for k in shown}
    rest = len(keys) - len(shown)
    other = f"other ({rest} components)"
    per_sequence = meta["global_batch"] * meta["seq_len"]
    blocks = []
    for phase in meta["phases"]:
        phase_rows = [r for r in rows if r["phase"] == phase["name"]]
        steps = phase["end_step"] - phase["start_step"]
        segments = [Segment(k, sum(r["tokens"] for r in phase_rows if r["component"] == k), color[k]) for k in shown]
        if rest:
            segments.append(Segment(other, sum(r["tokens"] for r in phase_rows if r["component"] not in color), OTHER))
        most = max(phase_rows, key=lambda r: r["epochs_cumulative"], default=None)
        tokens = steps * per_sequence
        blocks.append(PhaseBlock(phase["name"], tokens, segments, (
            phase["name"], f"{number(tokens)} tokens ({tokens / meta['tokens']:.0%})",
            f"steps {phase['start_step']:,}-{phase['end_step'] - 1:,} ({steps:,} steps)",
            f"epochs up to {most['epochs_cumulative']:.2f} ({most['component']})" if most else "")))
    entries = [(k, color[k]) for k in shown] + ([(other, OTHER)] if rest else [])
    return ("<h2>Phases</h2><p>The phases side by side, each as wide as its tokens; inside a phase, its components "
            "by their share of its tokens (realized: whole sequences per batch). Epochs are cumulative: how many "
            "times over a component's data has been read by the end of the phase.</p>"
            + legend(entries) + timeline(blocks, "phase-timeline"))


def source_tokens(con, name: str, meta: dict, rows: list[dict]) -> dict[str, float]:
    """The tokens each source gives the whole mixture: a component's tokens go to its source, a tag's shared by the
    tokens each of its sources has in the component's documents."""
    split = {}
    if any(len(c["sources"]) > 1 for c in meta["components"]):
        split = component_split(con, name, "SELECT d.component, s.source, sum(d.n_tokens) FROM mixture_documents d "
                                           "JOIN shards s ON d.shard = s.path WHERE d.mixture = ? GROUP BY ALL")
    return shared_out(rows, split, {c["key"]: c["sources"][0] for c in meta["components"]})


def tokens_by(con, name: str, rows: list[dict], column: str) -> dict:
    """The tokens each value of the manifest's per-document `column` (domain, quality_bucket) gives the whole
    mixture: each component's tokens shared by the tokens its documents hold per value (None: no value)."""
    return shared_out(rows, component_split(con, name, f"""
        SELECT d.component, s.{column}, sum(d.n_tokens) FROM mixture_documents d
        JOIN doc_stats s ON d.shard = s.shard AND d.row = s.row WHERE d.mixture = ? GROUP BY ALL"""), {})


def component_split(con, name: str, query: str) -> dict[str, dict]:
    """{component: {value: tokens}} from `query`'s rows (component, value, tokens) for mixture `name`."""
    split = {}
    for component, value, n in con.execute(query, [name]).fetchall():
        split.setdefault(component, {})[value] = n
    return split


def shared_out(rows: list[dict], split: dict[str, dict], whole_to: dict[str, str]) -> dict:
    """Each component's tokens over all phases shared among values by `split[component]`'s weights; a component
    without a split gives them all to `whole_to[component]` (or to no one)."""
    by_component = {}
    for r in rows:
        by_component[r["component"]] = by_component.get(r["component"], 0) + r["tokens"]
    totals = {}
    for component, tokens in by_component.items():
        shares = split.get(component) or ({whole_to[component]: 1} if component in whole_to else {})
        whole = sum(shares.values()) or 1
        for value, n in shares.items():
            totals[value] = totals.get(value, 0) + tokens * n / whole
    return totals


def source_totals(totals: dict[str, float], available: dict[str, int], colors: SourceColors) -> str:
    """A bar per source (the TOP_N largest, then the rest as one), as long as the tokens it gives the mixture."""
    ranked = sorted(totals, key=lambda s: (-totals[s], s))
    whole = sum(totals.values()) or 1
    bars = [Bar(s, [Segment("tokens", totals[s], colors.of(s))],
                f"{number(round(totals[s]))} tokens, {totals[s] / whole:.1%}"
                + (f", {totals[s] / available[s]:.2f} epochs" if available.get(s) else "")) for s in ranked[:TOP_N]]
    rest = ranked[TOP_N:]
    if rest:
        other = sum(totals[s] for s in rest)
        bars.append(Bar(f"other ({len(rest)} sources)", [Segment("tokens", other, OTHER)],
                        f"{number(round(other))} tokens, {other / whole:.1%}"))
    rows = [[s, round(totals[s]), totals[s] / whole, totals[s] / available[s] if available.get(s) else None]
            for s in sorted(totals)]
    return ("<h2>Tokens per source</h2><p>What each source gives the whole mixture, all phases together, on one "
            "scale (epochs: those tokens over the source's curated tokens).</p>" + bar_chart(bars, "source-tokens-chart")
            + table(["source", "tokens", "share", "epochs"], rows, "source-tokens-table", sortable=True))


def cells(meta: dict, rows: list[dict]) -> str:
    """Each wildcard key's cells in one table, largest first: what the cell gives the whole mixture (all phases),
    its share of the mixture and of the key, and its epochs; empty for a mixture without wildcards."""
    recorded = meta.get("cells") or {}
    if not recorded:
        return ""
    names = meta.get("domain_names")
    tokens, epochs, available = {}, {}, {}
    for r in rows:
        tokens[r["component"]] = tokens.get(r["component"], 0) + r["tokens"]
        epochs[r["component"]] = max(epochs.get(r["component"], 0.0), r["epochs_cumulative"])
        available[r["component"]] = r["available_tokens"]
    parts = []
    for i, (key, record) in enumerate(recorded.items()):
        whole = sum(tokens.get(c, 0) for c in record["cells"]) or 1
        ranked = sorted(record["cells"], key=lambda c: (-tokens.get(c, 0), c))
        left_out = record["left_out_tokens"]
        parts.append(f"<h3>{esc(key)}: {len(ranked)} cells</h3>"
                     + (f'<p class="note">{number(left_out)} training tokens are in none of them (a null value in '
                        "its columns, or a cell under one sequence or one per batch).</p>" if left_out else "")
                     + table(["cell", "tokens", "share of mixture", f"share of {key}", "epochs", "available tokens"],
                             [[cell_label(c, names), tokens.get(c, 0), tokens.get(c, 0) / meta["tokens"],
                               tokens.get(c, 0) / whole, epochs.get(c, 0.0), available.get(c, 0)] for c in ranked],
                             f"cells-{i}", sortable=True))
    return ("<h2>Cells</h2><p>A wildcard key weighs one component per non-empty cell of its source, its weight split "
            "by the cells' training tokens; each cell's tokens over all phases, largest first.</p>" + "".join(parts))


def composition(meta: dict, rows: list[dict]) -> str:
    """The plan's table of each phase, and the change in share from the first phase to the last."""
    parts = []
    for phase in meta["phases"]:
        phase_rows = [r for r in rows if r["phase"] == phase["name"]]
        parts.append(f"<h3>{esc(phase['name'])}: steps {phase['start_step']:,} to {phase['end_step'] - 1:,}</h3>")
        parts.append(table(["component", "sources", "target share", "realized share", "tokens", "documents", "epochs",
                            "available tokens"],
                           [[cell_label(r["component"], meta.get("domain_names")), r["sources"], r["target_share"], r["realized_share"], r["tokens"],
                             r["documents"], r["epochs_cumulative"], r["available_tokens"]] for r in phase_rows],
                           f"plan-{phase['name']}", sortable=True))
    if len(meta["phases"]) >= 2:
        first, last = meta["phases"][0]["name"], meta["phases"][-1]["name"]
        share = {(r["phase"], r["component"]): r["realized_share"] for r in rows}
        changes = [[c, share.get((first, c), 0.0), share.get((last, c), 0.0),
                    share.get((last, c), 0.0) - share.get((first, c), 0.0)] for c in (c["key"] for c in meta["components"])]
        parts.append(f"<h3>From {esc(first)} to {esc(last)}</h3>"
                     + table(["component", f"{first} share", f"{last} share", "change"], changes, "phase-changes",
                             sortable=True))
    return "<h2>The plan</h2>" + "".join(parts)


def licenses(con, views: list[str], name: str, meta: dict) -> str:
    """The tokens each phase trains per licence (the build's licenses.parquet) with their share of the phase and the
    sources of that licence, largest first; each source's licence as the generation records it. Empty for a build
    made before licenses.parquet."""
    if "mixture_licenses" not in views:
        return ""
    found = con.execute("SELECT phase, license, tokens, sources FROM mixture_licenses WHERE mixture = ?",
                        [name]).fetchall()
    if not found:
        return ""
    order = {phase["name"]: i for i, phase in enumerate(meta["phases"])}
    phase_tokens = {}
    for phase, _, tokens, _ in found:
        phase_tokens[phase] = phase_tokens.get(phase, 0) + tokens
    rows = [[phase, license, tokens, tokens / (phase_tokens[phase] or 1), sources.replace(",", ", ")]
            for phase, license, tokens, sources in sorted(found, key=lambda r: (order.get(r[0], 0), -r[2], r[1]))]
    return ("<h2>Licences</h2><p>The tokens each phase trains per licence, as sources.toml records each source's "
            "(SPDX; \"unknown\" where it records none), and their share of the phase.</p>"
            + table(["phase", "licence", "tokens", "share of phase", "sources"], rows, "licenses", sortable=True))
