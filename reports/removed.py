"""The curation report's removed documents (when the generation holds a removed sample, the `removed` view): for
the sources that lost the most records, a few removed texts per reason, each with its detail (the measured value
against its threshold) and input#record, beside a few of the source's kept texts; each source folded in a
`<details>`, closed, so that the page stays readable. Every query is bounded: a window picks the few texts per
source and reason, and only those reach Python."""

from base.sql import literal_list
from reports.html import esc
from reports.markup import number
from reports.sections import SourceStats, largest

PER_REASON = 3  # removed texts shown per source and reason
KEPT_SHOWN = 3  # kept texts shown beside them, per source
TEXT_CHARS = 300


def removed_section(con, views: list[str], stats: dict[str, SourceStats]) -> str:
    """The section, or nothing when the generation holds no removed sample or nothing was removed."""
    if "removed" not in views or not con.sql("SELECT 1 FROM removed LIMIT 1").fetchall():
        return ""  # a generation published before removed samples were kept has the view, empty
    lost = {name: s.raw - s.fates.get("kept", 0) for name, s in stats.items()}
    sources = [name for name in largest(stats, key=lambda s: lost[s.name]) if lost[name]]
    if not sources:
        return ""
    removed, counts, kept = removed_texts(con, sources), reason_counts(con, sources), kept_texts(con, sources)
    scope = (f"the {len(sources)} sources that lost the most records (of {len(stats)})" if len(stats) > len(sources)
             else "each source that lost records")
    parts = ["<h2>Removed documents</h2>",
             f'<p class="note">For {esc(scope)}: per reason, up to {PER_REASON} removed documents of the sample the '
             f"generation keeps (<code>[inspect] removed_sample</code>), each with what the step measured and its "
             f"input#record (<code>loom show INPUT#RECORD</code> tells its whole story), beside {KEPT_SHOWN} kept "
             f"documents; the first {TEXT_CHARS} characters of each. Every one is in <code>loom sql \"SELECT * FROM "
             "removed\"</code>.</p>"]
    parts += [source_part(source, counts.get(source, []), removed.get(source, {}), kept.get(source, []))
              for source in sources]
    return "".join(parts)


def source_part(source: str, counts: list[tuple], removed: dict[str, list[tuple]], kept: list[tuple]) -> str:
    total = sum(n for _, _, _, n in counts)
    reasons = ", ".join(f"{reason} {number(n)}" for reason, _, _, n in counts[:4]) + (", ..." * (len(counts) > 4))
    parts = [f'<details class="removed" id="removed-{esc(source)}"><summary><b>{esc(source)}</b>: {number(total)} '
             f"removed ({esc(reasons)})</summary>", "<h4>kept</h4>"]
    parts += [text_block(f"{where} · kept", text, size) for where, text, size in kept] or ['<p class="note">none</p>']
    for reason, fate, stage, n in counts:
        parts.append(f"<h4>{esc(reason)} ({esc(fate)}{f' at {esc(stage)}' if stage else ''}): {number(n)}</h4>")
        sampled = removed.get(reason, [])
        parts += [text_block(f"{where} · {detail}" if detail else where, text, size)
                  for where, detail, text, size in sampled]
        if not sampled:
            parts.append('<p class="note">none in the sample</p>')
    return "".join(parts) + "</details>"


def text_block(meta: str, text: str | None, size: int | None) -> str:
    more = f" … ({number(size)} characters in all)" if size and size > TEXT_CHARS else ""
    return f'<p class="note removed-meta">{esc(meta)}</p><pre class="doc">{esc(text or "")}{esc(more)}</pre>'


def removed_texts(con, sources: list[str]) -> dict[str, dict[str, list[tuple]]]:
    """{source: {reason: [(input#record, detail, text's start, its length), ...]}}: PER_REASON per source and
    reason, the first by shard and record."""
    rows = con.execute(f"""
        SELECT source, reason, input || '#' || record, detail, left(text, {TEXT_CHARS}), length(text)
        FROM removed WHERE source IN {literal_list(sources)}
        QUALIFY row_number() OVER (PARTITION BY source, reason ORDER BY shard, record) <= {PER_REASON}
        ORDER BY source, reason, shard, record""").fetchall()
    texts: dict[str, dict[str, list[tuple]]] = {}
    for source, reason, *shown in rows:
        texts.setdefault(source, {}).setdefault(reason, []).append(tuple(shown))
    return texts


def reason_counts(con, sources: list[str]) -> dict[str, list[tuple]]:
    """{source: [(reason, fate, stage, records), ...]}, the most frequent reason first."""
    rows = con.execute(f"""
        SELECT source, reason, any_value(fate), any_value(stage), count(*) AS n FROM funnel
        WHERE fate <> 'kept' AND source IN {literal_list(sources)} GROUP BY source, reason
        ORDER BY source, n DESC, reason""").fetchall()
    counts: dict[str, list[tuple]] = {}
    for source, *count in rows:
        counts.setdefault(source, []).append(tuple(count))
    return counts


def kept_texts(con, sources: list[str]) -> dict[str, list[tuple]]:
    """{source: [(doc id, text's start, its length), ...]}: KEPT_SHOWN per source, its first rows. The manifest
    picks them (no text read); then the curated parts, which hold one source each, are read for those ids only."""
    picks = con.execute(f"""
        SELECT source, id FROM doc_stats WHERE source IN {literal_list(sources)}
        QUALIFY row_number() OVER (PARTITION BY source ORDER BY shard, row) <= {KEPT_SHOWN}""").fetchall()
    if not picks:
        return {}
    rows = con.execute(f"""
        SELECT source, id, left(text, {TEXT_CHARS}), length(text) FROM documents
        WHERE source IN {literal_list(sorted({s for s, _ in picks}))}
          AND id IN {literal_list(sorted({i for _, i in picks}))}
        ORDER BY source, id""").fetchall()
    kept: dict[str, list[tuple]] = {}
    for source, *shown in rows:
        kept.setdefault(source, []).append(tuple(shown))
    return kept
