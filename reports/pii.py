"""The curation report's personal-data section: per source whose pii step ran, and per kind, the kept documents
holding a span, the spans redacted (or counted) in them, and the documents max_pii removed (the `pii` view,
manifest/pii.parquet)."""

from reports.html import esc, table

MODE_WORDS = {"redact": "redacted", "count": "counted"}


def pii_section(con, views: list[str]) -> str:
    """The section; where no source's pii step ran (or the generation was curated before it), a line saying so."""
    head = "<h2>Personal data</h2>"
    rows = con.sql("SELECT source, kind, mode, documents, spans, removed FROM pii").fetchall() if "pii" in views else []
    if not rows:
        return head + ('<p class="note" id="pii-none">No source looked for personal data (pii = "off"; the default '
                       "of sources that are not web text), so no email, IP address, phone number or secret was "
                       "redacted or counted.</p>")
    modes = ", ".join(f"{esc(source)} {MODE_WORDS[mode]}" for source, mode in dict((r[0], r[2]) for r in rows).items())
    note = (f'<p class="note" id="pii-modes">Spans in the kept documents: {modes}. A redacted span is replaced by its '
            "kind's placeholder (&lt;EMAIL&gt;, &lt;IP_ADDRESS&gt;, &lt;PHONE&gt;, &lt;SECRET&gt;) before dedup and "
            "tokenization; removed: documents over the source's max_pii (reason pii_KIND, pii_total for total).</p>")
    return head + note + table(["source", "kind", "documents with any", "spans", "removed by max_pii"],
                               [[source, kind, documents, spans, removed]
                                for source, kind, _, documents, spans, removed in rows], "pii-counts",
                               numeric={2, 3, 4})
