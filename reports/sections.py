"""The sections of a report, each a function from DuckDB views (see views.py) to HTML."""

import json

from curation.document import FATES
from loom.sql import literal_list
from reports.html import esc, histogram, number, stacked_bars, table

SPOT_CHARS = 1500


def funnel(con, sources: list[str]) -> str:
    stages = [s for (s,) in con.sql(f"""SELECT stage FROM funnel
                                       WHERE fate = 'filtered' AND source IN {literal_list(sources)}
                                       GROUP BY stage ORDER BY count(*) DESC, stage""").fetchall()]
    rows, bars = [], []
    for source in sources:
        counts = dict(con.execute("SELECT fate, count(*) FROM funnel WHERE source = ? GROUP BY 1", [source]).fetchall())
        by_stage = dict(con.execute("SELECT stage, count(*) FROM funnel WHERE source = ? AND fate = 'filtered' "
                                    "GROUP BY 1", [source]).fetchall())
        raw = sum(counts.values())
        rows.append([source, raw, counts.get("malformed", 0), *(by_stage.get(s, 0) for s in stages),
                     counts.get("duplicate", 0), counts.get("low_quality", 0), counts.get("kept", 0)])
        bars.append((source, [counts.get(f, 0) for f in FATES]))
    columns = ["source", "raw", "malformed", *(f"filter: {s}" for s in stages), "duplicates", "low quality", "kept"]
    return ("<h2>Curation funnel</h2><p>Every input record of each source, by what became of it: "
            "kept, or removed by the first stage that rejected it.</p>"
            + stacked_bars(bars, list(FATES), "funnel-chart") + table(columns, rows, "funnel-table"))


def distributions(con, sources: list[str]) -> str:
    parts = ["<h2>Distributions</h2>", "<h3>Document length in tokens (log2 bins)</h3>"]
    for i, source in enumerate(sources):
        bins = con.execute("""SELECT floor(log2(n_tokens))::INT AS b, count(*) FROM doc_stats WHERE source = ?
                              GROUP BY 1 ORDER BY 1""", [source]).fetchall()
        parts.append(f"<p>{esc(source)}</p>" + histogram([(f"2^{b}", n) for b, n in bins], f"length-{source}", color=i))
    langs = con.sql(f"""SELECT lang, count(*) FROM doc_stats WHERE source IN {literal_list(sources)} GROUP BY 1
                       ORDER BY 2 DESC, 1 LIMIT 15""").fetchall()
    parts.append("<h3>Languages (lid.176)</h3>" + histogram([(str(lang), n) for lang, n in langs], "languages")
                 + table(["language", "documents"], [list(r) for r in langs], "languages-table"))
    scored = con.sql(f"SELECT count(*) FROM doc_stats WHERE quality IS NOT NULL AND source IN {literal_list(sources)}"
                     ).fetchall()[0][0]
    if scored:
        parts.append("<h3>Quality score per source (10 bins of P(high quality))</h3>")
        for i, source in enumerate(sources):
            bins = dict(con.execute("""SELECT least(floor(quality * 10), 9)::INT, count(*) FROM doc_stats
                                       WHERE source = ? AND quality IS NOT NULL GROUP BY 1""", [source]).fetchall())
            parts.append(f"<p>{esc(source)}</p>" + histogram([(f"{b / 10:.1f}", bins.get(b, 0)) for b in range(10)],
                                                            f"quality-{source}", color=i))
    if "dedup_clusters" in _views(con):
        sizes = con.sql(f"""SELECT cluster_size, count(DISTINCT cluster_id) FROM dedup_clusters
                           WHERE source IN {literal_list(sources)} GROUP BY 1 ORDER BY 1""").fetchall()
        if sizes:
            parts.append("<h3>Near-duplicate cluster sizes</h3>"
                         + histogram([(str(s), n) for s, n in sizes], "dedup-sizes")
                         + table(["cluster size", "clusters"], [list(r) for r in sizes], "dedup-table"))
    return "".join(parts)


def spot_checks(con, sources: list[str], seed: int, per_source: int = 3) -> str:
    bucketed = con.sql("SELECT count(*) FROM doc_stats WHERE quality_bucket IS NOT NULL").fetchall()[0][0] > 0
    how = (f"{per_source} documents per source{' and one per quality bucket' if bucketed else ''}, the first by "
           f"DuckDB's hash(id || '{seed}') order (seed {seed}); the first {SPOT_CHARS:,} characters of each.")
    parts = ["<h2>Spot checks</h2>", f'<p class="note" id="sampling">{esc(how)}</p>']
    for source in sources:
        spot = {"source": source, "seed": str(seed), "chars": SPOT_CHARS}
        picks = con.execute("""SELECT id, lang, quality, quality_bucket, left(text, $chars) FROM documents
                               WHERE source = $source ORDER BY hash(id || $seed) LIMIT $n""",
                            {**spot, "n": per_source}).fetchall()
        if bucketed:
            picks += con.execute("""SELECT id, lang, quality, quality_bucket, left(text, $chars) FROM documents
                                    WHERE source = $source AND quality_bucket IS NOT NULL
                                    QUALIFY row_number() OVER (PARTITION BY quality_bucket
                                                               ORDER BY hash(id || $seed)) = 1
                                    ORDER BY quality_bucket""", spot).fetchall()
        parts.append(f"<h3>{esc(source)}</h3>")
        for doc_id, lang, quality, bucket, text in picks:
            meta = f"{doc_id} · {lang} · quality {number(quality)} · bucket {'' if bucket is None else bucket}"
            parts.append(f'<p class="note">{esc(meta)}</p><pre class="doc">{esc(text)}</pre>')
    return "".join(parts)


def _views(con) -> set[str]:
    return {name for (name,) in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}


def mixture_headline(meta: dict, curation: dict, documents: int, sources: list[str]) -> str:
    items = [("tokens", number(meta["tokens"])), ("documents", number(documents)), ("sources", len(sources)),
             ("phases", len(meta["phases"])), ("steps", number(meta["steps"])),
             ("sequence", f"{meta['seq_len']} tokens x {meta['global_batch']}")]
    cards = "".join(f'<div id="headline-{esc(k)}">{esc(k)}<b>{esc(v)}</b></div>' for k, v in items)
    return (f'<div class="headline">{cards}</div><p class="note">tokenizer {esc(curation["tokenizer"])} '
            f'({esc(meta["tokenizer_fingerprint"])}); manifest fingerprint {esc(meta["manifest_fingerprint"])}</p>')


def composition(con, name: str, meta: dict) -> str:
    plan = con.execute("SELECT * FROM mixture_plan WHERE mixture = ?", [name]).fetchall()
    columns = con.sql("SELECT * FROM mixture_plan LIMIT 0").columns
    rows = [dict(zip(columns, r)) for r in plan]
    components = [c["key"] for c in meta["components"]]
    bars = [(p["name"], [next((r["realized_share"] for r in rows if r["phase"] == p["name"] and r["component"] == c), 0.0)
                         for c in components]) for p in meta["phases"]]
    parts = ["<h2>Composition per phase</h2>",
             "<p>Share of each phase's tokens by component (realized: whole sequences per batch).</p>",
             stacked_bars(bars, components, "composition-chart")]
    for phase in meta["phases"]:
        phase_rows = [r for r in rows if r["phase"] == phase["name"]]
        parts.append(f"<h3>{esc(phase['name'])}: steps {phase['start_step']:,} to {phase['end_step'] - 1:,}</h3>")
        parts.append(table(["component", "sources", "target share", "realized share", "tokens", "documents", "epochs",
                            "available tokens"],
                           [[r["component"], r["sources"], r["target_share"], r["realized_share"], r["tokens"],
                             r["documents"], r["epochs_cumulative"], r["available_tokens"]] for r in phase_rows],
                           f"plan-{phase['name']}"))
    if len(meta["phases"]) >= 2:
        first, last = meta["phases"][0]["name"], meta["phases"][-1]["name"]
        share = lambda phase, c: next((r["realized_share"] for r in rows if r["phase"] == phase and r["component"] == c), 0.0)  # noqa: E731
        changes = [[c, share(first, c), share(last, c), share(last, c) - share(first, c)] for c in components]
        parts.append(f"<h3>From {esc(first)} to {esc(last)}</h3>"
                     + table(["component", f"{first} share", f"{last} share", "change"], changes, "phase-changes"))
    return "".join(parts)


def load_json(path) -> dict:
    return json.loads(path.read_text())
