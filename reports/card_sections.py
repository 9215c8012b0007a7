"""The sections of a data card (reports.card), each a function from the workspace's DuckDB views (reports.views), the
manifest's curation.json and a mixture's plan to Markdown. Every figure is read from those files; none is written
by hand. The HTML pages' own readers are reused for what they already compute (reports.sections.source_stats, the
plan rows and each source's tokens of reports.mixture)."""

from dataclasses import dataclass

from curation.licenses import UNKNOWN
from mixtures import cell_label
from mixtures.licenses import provenance as recorded_provenance
from reports.contamination import contaminated_per_set
from reports.html import number
from reports.mixture import OUTSIDE_WORKSPACE
from reports.pii import MODE_WORDS
from reports.sections import SourceStats

@dataclass(frozen=True)
class Provenance:
    """Where a source came from and under what licence (the manifest's provenance table)."""
    license: str = UNKNOWN
    origin: str = ""
    citation: str = ""


def md_table(columns: list[str], rows: list[list]) -> str:
    """A Markdown table: numbers with thousands separators (floats to 3 decimals), text with `|` escaped."""
    def cell(value) -> str:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return number(value)
        return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def provenance(gen) -> dict[str, Provenance]:
    """Each source's provenance (mixtures.licenses.provenance); a generation curated before provenance was recorded
    has none (all unknown)."""
    return {source: Provenance(row["license"] or UNKNOWN, row["origin"] or "", row["citation"] or "")
            for source, row in recorded_provenance(gen).items()}


def sources_section(stats: dict[str, SourceStats], origins: dict[str, Provenance], info: dict) -> str:
    """A row per source: its licence, origin and citation as sources.toml gave them, its format and tags."""
    recorded = info.get("sources") or {}
    rows = [[name, origins.get(name, Provenance()).license, origins.get(name, Provenance()).origin,
             origins.get(name, Provenance()).citation, recorded.get(name, {}).get("format", ""),
             ", ".join(recorded.get(name, {}).get("tags", [])), s.documents, s.tokens or 0]
            for name, s in stats.items()]
    return ("## Sources\n\nEach source with its licence, origin and citation (sources.toml's `license`, `origin` and "
            "`citation`, as the manifest's provenance table recorded them), and what curation kept of it.\n\n"
            + md_table(["source", "license", "origin", "citation", "format", "tags", "kept documents", "kept tokens"],
                       rows))


def licenses_section(stats: dict[str, SourceStats], origins: dict[str, Provenance]) -> str:
    """The kept documents and tokens under each licence."""
    by_license = {}
    for name, s in stats.items():
        license = origins.get(name, Provenance()).license
        documents, tokens, sources = by_license.get(license, (0, 0, []))
        by_license[license] = (documents + s.documents, tokens + (s.tokens or 0), sources + [name])
    rows = [[license, d, t, ", ".join(sources)] for license, (d, t, sources) in sorted(by_license.items())]
    return "## Licenses\n\n" + md_table(["license", "kept documents", "kept tokens", "sources"], rows)


def funnel_section(stats: dict[str, SourceStats]) -> str:
    """Per source: the records read, those each step removed, those kept; a total row."""
    stages = sorted({stage for s in stats.values() for stage in s.stages})
    columns = ["source", "records in", "malformed", *(f"filter: {st}" for st in stages), "duplicates",
               "low quality", "contaminated", "kept"]

    def counts(s: SourceStats) -> list[int]:
        return [s.raw, s.fates.get("malformed", 0), *(s.stages.get(st, 0) for st in stages),
                s.fates.get("duplicate", 0), s.fates.get("low_quality", 0), s.fates.get("contaminated", 0),
                s.fates.get("kept", 0)]

    rows = [[name, *counts(s)] for name, s in stats.items()]
    total = [sum(column) for column in zip(*(counts(s) for s in stats.values()))] if stats else []
    return ("## Curation funnel\n\nEvery input record by what became of it: removed by the first step that rejected "
            "it, or kept.\n\n" + md_table(columns, rows + ([["all", *total]] if len(stats) > 1 else [])))


def dedup_section(con, views: list[str], sources: list[str]) -> str:
    """Duplicates removed per source by exact and near-duplicate dedup, and the near-duplicate clusters."""
    removed = {}
    for source, stage, n in con.execute("SELECT source, stage, count(*) FROM funnel WHERE fate = 'duplicate' "
                                        "AND list_contains(?, source) GROUP BY ALL", [sources]).fetchall():
        removed.setdefault(source, {})[stage] = n
    stages = sorted({stage for by_stage in removed.values() for stage in by_stage})
    parts = ["## Deduplication\n\n"]
    if not removed:
        parts.append("No document was removed as a duplicate.\n")
    else:
        parts.append(md_table(["source", *(f"removed by {st}" for st in stages)],
                              [[s, *(removed[s].get(st, 0) for st in stages)] for s in sorted(removed)]))
    if "dedup_clusters" in views:
        clusters, members = con.execute("""SELECT count(DISTINCT cluster_id), count(*) FROM dedup_clusters
                                           WHERE list_contains(?, source)""", [sources]).fetchall()[0]
        parts.append(f"\nNear-duplicate clusters: {number(clusters)}, holding {number(members)} documents.\n")
    return "".join(parts)


def decontamination_section(con, views: list[str], info: dict | None, stats: dict[str, SourceStats]) -> str:
    """The eval sets the documents were checked against, and the contaminated documents removed."""
    head = "## Decontamination\n\n"
    if not info or "contamination" not in views:
        return head + "No eval sets were configured (a [decontaminate] table in sources.toml), so no document was checked.\n"
    counts = contaminated_per_set(con)
    how = (f"A document was removed when at least {info['threshold']:.0%} of the {info['ngram']}-word n-grams of one "
           f"{info['scope']} were in an eval set.\n\n")
    per_set = md_table(["eval set", "contaminated documents", "set's documents"],
                       [[s["name"], counts.get(s["name"], 0), s["documents"]] for s in info["eval_sets"]])
    per_source = md_table(["source", "contaminated documents"],
                          [[name, s.fates.get("contaminated", 0)] for name, s in stats.items()])
    return head + how + per_set + "\n" + per_source


def pii_section(con, views: list[str], sources: list[str]) -> str:
    """Personal data per source and kind (manifest/pii.parquet): documents with a span, spans, max_pii removals."""
    rows = con.execute("SELECT source, kind, mode, documents, spans, removed FROM pii WHERE list_contains(?, source)",
                       [sources]).fetchall() if "pii" in views else []
    head = "## Personal data\n\n"
    if not rows:
        return head + "No source looked for personal data (pii = \"off\").\n"
    return head + md_table(["source", "kind", "spans were", "documents with any", "spans", "removed by max_pii"],
                           [[s, kind, MODE_WORDS[mode], d, n, r] for s, kind, mode, d, n, r in rows])


def languages(con, sources: list[str], least_share: float) -> list[tuple[str, int]]:
    """The kept documents' languages (lid.176's codes) holding at least `least_share` of them, most first."""
    return con.execute("""SELECT lang, count(*) AS n FROM doc_stats WHERE list_contains($sources, source)
                          AND lang IS NOT NULL AND lang <> '' GROUP BY lang
                          QUALIFY n >= $share * sum(n) OVER () ORDER BY n DESC, lang""",
                       {"sources": sources, "share": least_share}).fetchall()


def languages_section(rows: list[tuple[str, int]], least_share: float) -> str:
    return (f"## Languages\n\nThe languages (lid.176) of at least {least_share:.0%} of the kept documents.\n\n"
            + md_table(["language", "kept documents"], [list(r) for r in rows]))


def tokenizer_section(shown: str, fingerprint: str, vocab_size: int | None) -> str:
    size = number(vocab_size) if vocab_size is not None else "unknown (the tokenizer file is not in this workspace)"
    path = shown.removesuffix(OUTSIDE_WORKSPACE)
    return f"## Tokenizer\n\n- file: `{path}`{shown[len(path):]}\n- fingerprint: `{fingerprint}`\n- vocabulary: {size} tokens\n"


def rebuild_section(commands: list[str]) -> str:
    return ("## How to rebuild it\n\nIn the workspace, with its sources.toml (each shard's fingerprint is in the "
            "manifest's shards table):\n\n```\n" + "\n".join(commands) + "\n```\n")


def composition_sections(meta: dict, plan: list[dict], by_source: dict, licenses: list[dict], by_domain: dict,
                         by_quality: dict) -> list[str]:
    """What the mixture trains on: each phase's components (the plan), then its tokens over all phases by source,
    licence (the build's licenses table, per phase), topic domain and quality bucket (a component's tokens shared
    by its documents' tokens), the last two where curation assigned them."""
    phases = "".join(f"- {p['name']}: steps {p['start_step']:,} to {p['end_step'] - 1:,}\n" for p in meta["phases"])
    parts = ["## Mixture composition\n\n" + phases + "\n" + md_table(
        ["phase", "component", "sources", "target share", "realized share", "tokens", "epochs"],
        [[r["phase"], cell_label(r["component"], meta.get("domain_names")), r["sources"], r["target_share"],
          r["realized_share"], r["tokens"], r["epochs_cumulative"]] for r in plan])]
    parts.append("### By source\n\n" + shares_table("source", sorted(by_source.items())))
    if licenses:
        parts.append("### By license\n\n" + md_table(["phase", "license", "tokens", "sources"],
                                                     [[r["phase"], r["license"], r["tokens"], r["sources"]]
                                                      for r in licenses]))
    names = meta.get("domain_names") or {}
    if any(value is not None for value in by_domain):
        parts.append("### By topic domain\n\n" + shares_table(
            "domain", [(domain_label(d, names), n) for d, n in sorted(by_domain.items(), key=none_last)]))
    if any(value is not None for value in by_quality):
        parts.append("### By quality bucket\n\n" + shares_table(
            "quality bucket", [("none" if b is None else b, n) for b, n in sorted(by_quality.items(), key=none_last)]))
    return parts


def none_last(item: tuple) -> tuple:
    return item[0] is None, item[0] or 0


def shares_table(what: str, tokens: list[tuple]) -> str:
    """Each (key, tokens) in the order given: its tokens (rounded) and share of them all."""
    whole = sum(n for _, n in tokens) or 1
    return md_table([what, "tokens", "share"], [[str(key), round(n), f"{n / whole:.1%}"] for key, n in tokens])


def domain_label(domain, names: dict) -> str:
    if domain is None:
        return "none"
    name = names.get(str(domain))
    return f"{domain} ({name})" if name else str(domain)
