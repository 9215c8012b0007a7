"""The curation report's decontamination section: how the documents were checked for eval-set text (curation.json's
`decontamination`), the contaminated documents per source and per eval set (the `contamination` view, one row
per document and set it overlaps), and a few of the spans that matched."""

from reports.html import esc, number, table

EXAMPLES_PER_SET = 3


def decontamination(con, views: list[str], info: dict | None) -> str:
    """The section; without [decontaminate] (or on a generation curated before it), a line saying so."""
    head = "<h2>Decontamination</h2>"
    if not info or "contamination" not in views:
        return head + ('<p class="note" id="decontamination-none">No eval sets were configured (a [decontaminate] '
                       "table in sources.toml), so no document was checked for benchmark text.</p>")
    return head + settings(info) + per_source(con) + per_set(con, info) + examples(con)


def settings(info: dict) -> str:
    unit = "paragraph" if info["scope"] == "paragraph" else "document"
    how = (f"A document is contaminated when at least {info['threshold']:.0%} of the {info['ngram']}-word n-grams "
           f"of one {unit} of {info['min_words']} words or more are in an eval set (Bloom filters; the false "
           "positive rate is each filter's, per n-gram). It is removed, and named after the set it overlaps most.")
    return f'<p class="note" id="decontamination-settings">{esc(how)}</p>'


def per_source(con) -> str:
    """The sources with contaminated documents (a workspace may have hundreds of sources, most with none)."""
    rows = con.sql("""SELECT source, count(*) FILTER (fate = 'contaminated') AS contaminated, count(*) AS records
                      FROM funnel GROUP BY source HAVING contaminated > 0
                      ORDER BY contaminated DESC, source""").fetchall()
    if not rows:
        return "<h3>Contaminated documents per source</h3><p>None: no source holds a contaminated document.</p>"
    return ("<h3>Contaminated documents per source</h3><p class=\"note\">Sources not listed have none.</p>"
            + table(["source", "contaminated", "records", "share"],
                    [[s, c, n, f"{c / n:.2%}"] for s, c, n in rows], "contamination-sources", numeric={1, 2}))


def contaminated_per_set(con) -> dict[str, int]:
    """{eval set: the documents overlapping it}; a document overlapping several sets counts in each."""
    return dict(con.sql("SELECT eval_set, count(DISTINCT (source, shard, record)) FROM contamination "
                        "GROUP BY 1").fetchall())


def per_set(con, info: dict) -> str:
    counts = contaminated_per_set(con)
    rows = [[s["name"], counts.get(s["name"], 0), s["documents"], s["ngrams"], s["bits"],
             f"{s['false_positive_rate']:g}"] for s in info["eval_sets"]]
    return ("<h3>Per eval set</h3><p class=\"note\">A document that overlaps several sets counts in each.</p>"
            + table(["eval set", "contaminated documents", "set's documents", "set's n-grams (filter capacity)",
                     "filter bits", "false positive rate"], rows, "contamination-sets",
                    numeric={1, 2, 3, 4}))


def examples(con) -> str:
    rows = con.execute("""
        SELECT eval_set, source, fraction, matched_ngrams, ngrams, span FROM contamination
        QUALIFY row_number() OVER (PARTITION BY eval_set ORDER BY fraction DESC, source, shard, record) <= $n
        ORDER BY eval_set, fraction DESC, source""", {"n": EXAMPLES_PER_SET}).fetchall()
    if not rows:
        return "<p>No document overlapped an eval set.</p>"
    parts = [f"<h3>Examples (up to {EXAMPLES_PER_SET} per set, most overlapping first)</h3>"]
    for eval_set, source, fraction, matched, ngrams, span in rows:
        parts.append(f'<p class="note spot">{esc(eval_set)} · {esc(source)} · {number(matched)} of {number(ngrams)} '
                     f"n-grams ({fraction:.2f})</p>"
                     f'<pre class="doc contamination-span">{esc(span)}</pre>')
    return "".join(parts)
