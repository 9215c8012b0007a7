"""The sections of the curation report (and the data sections of a mixture's), each a function from DuckDB views
(see views.py) to HTML. Per-source numbers come from one grouped query each, never one query per source; charts
show the TOP_N largest sources and the full per-source table holds them all."""

import json
from dataclasses import dataclass, field

from base.sql import literal_list
from curation.document import FATES
from reports.bars import Bar, Segment, bar_chart, histogram, legend
from reports.colors import SourceColors
from reports.html import esc, number, table

SPOT_CHARS = 1500
TOP_N = 10  # sources drawn in a chart; the rest are in the tables
NEUTRAL = "#6f7f8f"  # charts of no one source: languages, cluster sizes
REMOVED_COLORS = {"malformed": "#3b3b3b", "filtered": "#6e6e6e", "duplicate": "#9a9a9a", "low_quality": "#e2e2e2",
                  "contaminated": "#8c5a3c"}  # a brown among the greys: leaked eval text is worth seeing
FATE_NAMES = {"kept": "kept", "malformed": "malformed", "filtered": "filtered", "duplicate": "duplicates",
              "low_quality": "low quality", "contaminated": "contaminated"}


@dataclass(frozen=True)
class SourceStats:
    """What curation did with one source: its records by fate and by filter stage, and its kept documents."""
    name: str
    fates: dict = field(default_factory=dict)
    stages: dict = field(default_factory=dict)
    documents: int = 0
    tokens: int = 0
    median_tokens: float | None = None
    mean_quality: float | None = None
    language: str = ""

    @property
    def raw(self) -> int:
        return sum(self.fates.values())


def source_stats(con, sources: list[str] | None = None) -> dict[str, SourceStats]:
    """Every source's funnel and kept-document numbers (only `sources`' when given), by name, in grouped queries;
    a source's main language is its most frequent, ties to the first by name (DuckDB's mode() picks any)."""
    where = f"WHERE source IN {literal_list(sources)}" if sources is not None else ""
    fates, stages = {}, {}
    for source, fate, stage, n in con.sql(f"SELECT source, fate, stage, count(*) FROM funnel {where} "
                                          "GROUP BY ALL").fetchall():
        fates.setdefault(source, {}).setdefault(fate, 0)
        fates[source][fate] += n
        if fate == "filtered":
            stages.setdefault(source, {})[stage] = n
    kept = {row[0]: row[1:] for row in con.sql(f"""
        WITH counted AS (SELECT source, lang, count(*) AS n FROM doc_stats {where} GROUP BY ALL),
             main AS (SELECT source, first(lang ORDER BY n DESC, lang) AS lang FROM counted GROUP BY source)
        SELECT source, count(*), sum(n_tokens), round(median(n_tokens))::BIGINT, avg(quality), any_value(main.lang)
        FROM doc_stats JOIN main USING (source) {where} GROUP BY source""").fetchall()}
    return {name: SourceStats(name, fates.get(name, {}), stages.get(name, {}), *kept.get(name, (0, 0, None, None, "")))
            for name in sorted(set(fates) | set(kept))}


def largest(stats: dict[str, SourceStats], key=lambda s: s.raw, n: int = TOP_N) -> list[str]:
    """The names of the `n` largest sources by `key` (ties by name)."""
    return [s.name for s in sorted(stats.values(), key=lambda s: (-key(s), s.name))[:n]]


def curation_headline(stats: dict[str, SourceStats]) -> str:
    items = [("sources", number(len(stats))), ("records", number(sum(s.raw for s in stats.values()))),
             ("kept documents", number(sum(s.documents for s in stats.values()))),
             ("kept tokens", number(sum(s.tokens or 0 for s in stats.values())))]
    return '<div class="headline">' + "".join(f'<div id="headline-{esc(k.replace(" ", "-"))}">{esc(k)}<b>{esc(v)}</b>'
                                              "</div>" for k, v in items) + "</div>"


def funnel(stats: dict[str, SourceStats], colors: SourceColors) -> str:
    """The records of the largest sources by fate, on one scale; their kept tokens; and every source's table."""
    shown = largest(stats)
    bars = [Bar(name, [Segment(FATE_NAMES[f], stats[name].fates.get(f, 0),
                               colors.of(name) if f == "kept" else REMOVED_COLORS[f]) for f in FATES],
                f"{number(stats[name].raw)} records, {stats[name].fates.get('kept', 0) / (stats[name].raw or 1):.0%} kept")
            for name in shown]
    token_bars = [Bar(name, [Segment("kept tokens", stats[name].tokens or 0, colors.of(name))],
                      f"{number(stats[name].tokens or 0)} tokens") for name in largest(stats, lambda s: s.tokens or 0)]
    rest = len(stats) - len(shown)
    scope = (f"The {len(shown)} largest of {len(stats)} sources by records (the other {rest}, "
             f"{number(sum(s.raw for n, s in stats.items() if n not in shown))} records, are in the table below)"
             if rest else "Every source")
    return ("<h2>Curation funnel</h2>"
            f"<p>{esc(scope)}: each input record by what became of it, kept or removed by the first stage that "
            "rejected it. Bars share one scale: a bar's length is the source's records.</p>"
            + legend([(FATE_NAMES[f], c) for f, c in REMOVED_COLORS.items()], "kept: in the source's colour")
            + bar_chart(bars, "funnel-chart")
            + f"<h3>Kept tokens{' of the largest sources by tokens' if rest else ''}</h3><p class=\"note\">Removed "
              "records were never tokenized, so the funnel counts records; these are the kept documents' tokens "
              "(the manifest's n_tokens), on one scale.</p>"
            + bar_chart(token_bars, "tokens-chart") + source_table(stats))


def source_table(stats: dict[str, SourceStats]) -> str:
    """Every source, alphabetically, sortable and filterable: its funnel and its kept documents."""
    stages = sorted({stage for s in stats.values() for stage in s.stages},
                    key=lambda st: (-sum(s.stages.get(st, 0) for s in stats.values()), st))
    columns = ["source", "raw", "malformed", *(f"filter: {st}" for st in stages), "duplicates", "low quality", "contaminated", "kept",
               "kept %", "kept tokens", "median tokens", "mean quality", "main language"]
    rows = [[s.name, s.raw, s.fates.get("malformed", 0), *(s.stages.get(st, 0) for st in stages),
             s.fates.get("duplicate", 0), s.fates.get("low_quality", 0), s.fates.get("contaminated", 0),
             s.fates.get("kept", 0), kept_percent(s), s.tokens or 0,
             s.median_tokens, s.mean_quality, s.language or ""] for s in stats.values()]
    numeric = set(range(1, len(columns) - 1))
    return (f'<h3>Every source ({len(rows)})</h3><div style="overflow-x: auto">'
            + table(columns, rows, "funnel-table", numeric=numeric, sortable=True) + "</div>")


def kept_percent(s: SourceStats) -> int | None:
    """The share of a source's records kept, rounded down as the funnel warnings' (only all of it is 100)."""
    return 100 * s.fates.get("kept", 0) // s.raw if s.raw else None


def distributions(con, sources: list[str], colors: SourceColors, every: list[str]) -> str:
    """Length and quality histograms of `sources` (the largest few of `every`), in their colours; languages and
    near-duplicate cluster sizes over `every` source."""
    scope = (f" of the {len(sources)} largest sources (the others' medians are in the table above)"
             if len(every) > len(sources) else "")
    parts = ["<h2>Distributions</h2>", f"<h3>Document length in tokens (log2 bins){esc(scope)}</h3>"]
    lengths = _grouped(con.sql(f"""SELECT source, floor(log2(greatest(n_tokens, 1)))::INT AS b, count(*)
                                  FROM doc_stats WHERE source IN {literal_list(sources)} GROUP BY ALL ORDER BY ALL"""))
    parts.append(panels([(s, histogram([(f"2^{b}", n) for b, n in lengths.get(s, [])], f"length-{s}", colors.of(s)))
                          for s in sources]))
    langs = con.sql(f"""SELECT lang, count(*) FROM doc_stats WHERE source IN {literal_list(every)} GROUP BY 1
                        ORDER BY 2 DESC, 1 LIMIT 15""").fetchall()
    parts.append(f"<h3>Languages (lid.176) of all {len(every)} sources</h3>"
                 + histogram([(str(lang), n) for lang, n in langs], "languages", NEUTRAL, width=620)
                 + table(["language", "documents"], [list(r) for r in langs], "languages-table"))
    quality = _grouped(con.sql(f"""SELECT source, least(floor(quality * 10), 9)::INT, count(*) FROM doc_stats
                                  WHERE source IN {literal_list(sources)} AND quality IS NOT NULL
                                  GROUP BY ALL ORDER BY ALL"""))
    if quality:
        parts.append(f"<h3>Quality score (10 bins of P(high quality)){esc(scope)}</h3>")
        parts.append(panels([(s, histogram([(f"{b / 10:.1f}", dict(quality[s]).get(b, 0)) for b in range(10)],
                                            f"quality-{s}", colors.of(s))) for s in sources if s in quality]))
    if "dedup_clusters" in _views(con):
        sizes = con.sql(f"""SELECT cluster_size, count(DISTINCT cluster_id) FROM dedup_clusters
                            WHERE source IN {literal_list(every)} GROUP BY 1 ORDER BY 1""").fetchall()
        if sizes:
            parts.append("<h3>Near-duplicate cluster sizes</h3>"
                         + histogram([(str(s), n) for s, n in sizes], "dedup-sizes", NEUTRAL, width=620)
                         + table(["cluster size", "clusters"], [list(r) for r in sizes], "dedup-table"))
    return "".join(parts)


def _grouped(relation) -> dict[str, list[tuple]]:
    """Rows (key, *rest) as {key: [rest, ...]}."""
    grouped = {}
    for key, *rest in relation.fetchall():
        grouped.setdefault(key, []).append(tuple(rest) if len(rest) > 1 else rest[0])
    return grouped


def panels(charts: list[tuple[str, str]]) -> str:
    return '<div class="panels">' + "".join(f"<div><h3>{esc(name)}</h3>{chart}</div>" for name, chart in charts) + "</div>"


def spot_checks(con, sources: list[str], seed: int, total_sources: int, per_source: int = 3) -> str:
    """A few documents of each of `sources`: `per_source` by a seeded hash order, then the first of each quality
    bucket none of those is in. Each document once."""
    picks = spot_picks(con, sources, seed, per_source)
    texts = _texts(con, [(*p, source) for source, ps in picks.items() for p in ps])
    bucketed = any(p[2] is not None for ps in picks.values() for p in ps)
    scope = (f"the {len(sources)} largest of {total_sources} sources" if total_sources > len(sources)
             else "each source")
    how = (f"{per_source} documents of {scope}{', then one from each quality bucket those do not cover' if bucketed else ''}"
           f", by DuckDB's hash(id || '{seed}') order (seed {seed}): {sum(map(len, picks.values()))} documents in "
           f"all, each once; the first {SPOT_CHARS:,} characters of each.")
    parts = ["<h2>Spot checks</h2>", f'<p class="note" id="sampling">{esc(how)}</p>']
    for source in sources:
        parts.append(f"<h3>{esc(source)}</h3>")
        for doc_id, lang, bucket, quality in picks.get(source, []):
            meta = f"{doc_id} · {lang} · quality {number(quality)} · bucket {'' if bucket is None else bucket}"
            parts.append(f'<p class="note spot">{esc(meta)}</p>'
                         f'<pre class="doc">{esc(texts.get((source, doc_id), ""))}</pre>')
    return "".join(parts)


def spot_picks(con, sources: list[str], seed: int, per_source: int) -> dict[str, list[tuple]]:
    """{source: [(id, lang, bucket, quality), ...]}: one grouped query over the manifest (no text read)."""
    rows = con.execute(f"""
        SELECT source, id, lang, quality_bucket, quality,
               row_number() OVER (PARTITION BY source ORDER BY hash(id || $seed), id) AS nth,
               row_number() OVER (PARTITION BY source, quality_bucket ORDER BY hash(id || $seed), id) AS nth_in_bucket
        FROM doc_stats WHERE source IN {literal_list(sources)}
        QUALIFY nth <= $n OR (nth_in_bucket = 1 AND quality_bucket IS NOT NULL)
        ORDER BY source, nth""", {"seed": str(seed), "n": per_source}).fetchall()
    picks = {}
    for source, doc_id, lang, bucket, quality, nth, nth_in_bucket in rows:  # each source's sample first
        chosen = picks.setdefault(source, [])
        if nth <= per_source or (nth_in_bucket == 1 and bucket not in {c[2] for c in chosen}):
            chosen.append((doc_id, lang, bucket, quality))
    return {s: ps[:per_source] + sorted(ps[per_source:], key=lambda p: p[2]) for s, ps in picks.items()}


def _texts(con, picks: list[tuple]) -> dict[tuple[str, str], str]:
    if not picks:
        return {}
    ids, sources = sorted({p[0] for p in picks}), sorted({p[4] for p in picks})
    rows = con.execute(f"""SELECT source, id, left(text, {SPOT_CHARS}) FROM documents
                           WHERE id IN {literal_list(ids)} AND source IN {literal_list(sources)}""").fetchall()
    return {(source, doc_id): text for source, doc_id, text in rows}


def _views(con) -> set[str]:
    return {name for (name,) in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}


def load_json(path) -> dict:
    return json.loads(path.read_text())
