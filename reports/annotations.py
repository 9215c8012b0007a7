"""The curation report's annotators section (with [[annotate]] tables only): per annotator, a histogram of its
scores in each source it covers (BINS equal bins from the lowest score to the highest, over all its sources, so
the panels share their bins), its bucket cut points, and the documents its `min`/`max` removed (the funnel's
`annotate:NAME` rows)."""

from reports.bars import histogram
from reports.colors import SourceColors
from reports.html import esc, table
from reports.markup import number
from reports.sections import panels

BINS = 12


def annotators_section(con, annotators: list[dict], colors: SourceColors) -> str:
    """The section, or nothing when curation.json names no annotator."""
    if not annotators:
        return ""
    parts = ["<h2>Annotators</h2><p class=\"note\">Each annotator's score of every kept document (a column of "
             "<code>documents</code> named after it). Slice a mixture on it (<code>web:edu&gt;=3</code>) or on its "
             "buckets (<code>web:edu_bucket&gt;=2</code>).</p>"]
    parts += [annotator_part(con, a, colors) for a in annotators]
    removed = con.sql("""SELECT reason, source, count(*) FROM funnel WHERE starts_with(reason, 'annotate:')
                         GROUP BY ALL ORDER BY ALL""").fetchall()
    if removed:
        parts.append("<h3>Removed by an annotator's min or max</h3>"
                     + table(["reason", "source", "documents"], [list(r) for r in removed], "annotate-removed",
                             numeric={2}))
    return "".join(parts)


def annotator_part(con, annotator: dict, colors: SourceColors) -> str:
    name = annotator["name"]
    column = f'"{name}"'
    low, high, scored = con.sql(f"SELECT min({column}), max({column}), count({column}) FROM doc_stats").fetchall()[0]
    head = (f"<h3>{esc(name)} ({esc(annotator['kind'])}): {scored:,} documents scored"
            + (f"; bucket cut points {', '.join(number(c) for c in annotator['cut_points'])}"
               if annotator.get("cut_points") else "") + "</h3>")
    if not scored:
        return head
    width = (high - low) / BINS or 1.0
    rows = con.execute(f"""
        SELECT source, least(floor(({column} - $low) / $width), {BINS - 1})::INT AS b, count(*) FROM doc_stats
        WHERE {column} IS NOT NULL GROUP BY ALL ORDER BY ALL""", {"low": low, "width": width}).fetchall()
    by_source: dict[str, dict[int, int]] = {}
    for source, b, n in rows:
        by_source.setdefault(source, {})[b] = n
    labels = [number(low + b * width) for b in range(BINS)]
    return head + panels([(source, histogram([(labels[b], bins.get(b, 0)) for b in range(BINS)],
                                             f"annotate-{name}-{source}", colors.of(source)))
                          for source, bins in by_source.items()])
