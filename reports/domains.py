"""The curation report's topic domains section (with [domains] only): a table of the domains, each with its name
(sources.toml's [domains] names), its top terms (so a person can name it) and its documents and tokens per
clustered source (the `domains` view), and, when documents have quality buckets, its documents per bucket (the
`documents` view)."""

from reports.html import esc, table

TERMS_SHOWN = 8


def domains_section(con, views: list[str]) -> str:
    """The section, or nothing when the generation has no domains."""
    if "domains" not in views or not con.sql("SELECT count(*) FROM domains").fetchall()[0][0]:
        return ""
    return ("<h2>Topic domains</h2><p class=\"note\">Each clustered document's nearest domain. Name a domain in "
            "sources.toml (<code>[domains] names = {3 = \"math\"}</code>) to use the name in mixture keys "
            "(<code>web:domain=math</code>).</p>" + by_source(con) + by_quality_bucket(con))


def by_source(con) -> str:
    sources = [s for (s,) in con.sql("SELECT DISTINCT source FROM domains ORDER BY source").fetchall()]
    rows = con.execute("""
        SELECT domain, any_value(name), any_value(top_terms)[1:$terms],
               list(documents ORDER BY source), list(tokens ORDER BY source), sum(documents), sum(tokens)
        FROM domains GROUP BY domain ORDER BY domain""", {"terms": TERMS_SHOWN}).fetchall()
    columns = ["domain", "name", "top terms", *(f"{s} documents" for s in sources), *(f"{s} tokens" for s in sources),
               "documents", "tokens"]
    body = [[d, name or "", ", ".join(terms), *docs, *tokens, n, t] for d, name, terms, docs, tokens, n, t in rows]
    numeric = {0, *range(3, len(columns))}
    return "<h3>Domains by source</h3>" + table(columns, body, "domains-sources", numeric=numeric, sortable=True)


def by_quality_bucket(con) -> str:
    """Documents per domain and quality bucket; nothing when no clustered document has a bucket."""
    rows = con.sql("""SELECT domain, quality_bucket, count(*) FROM documents
                      WHERE domain IS NOT NULL AND quality_bucket IS NOT NULL GROUP BY ALL ORDER BY ALL""").fetchall()
    if not rows:
        return ""
    buckets = sorted({b for _, b, _ in rows})
    counts = {(d, b): n for d, b, n in rows}
    domains = sorted({d for d, _, _ in rows})
    body = [[d, *(counts.get((d, b), 0) for b in buckets)] for d in domains]
    return (f"<h3>Domains by quality bucket</h3><p class=\"note\">{esc('Documents; bucket 0 is the lowest quality.')}"
            "</p>" + table(["domain", *(f"bucket {b}" for b in buckets)], body, "domains-quality",
                           numeric=set(range(len(buckets) + 1))))
