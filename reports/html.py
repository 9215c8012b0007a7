"""Small pieces of self-contained HTML: a page, tables and SVG bar charts. No script, no external URL:
every string that comes from data goes through `esc`."""

import html
import math

REPORT_FILE = "report.html"  # a page's name in the folder it reports on: a mixture's, a run's
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; color: #222; padding: 0 1rem; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; } h3 { margin-bottom: .3rem; }
table { border-collapse: collapse; margin: .6rem 0; } td, th { padding: .2rem .6rem; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.headline { display: flex; flex-wrap: wrap; gap: 1rem; } .headline div { background: #f6f6f6; padding: .5rem .9rem; }
.headline b { display: block; font-size: 1.3rem; } pre.doc { white-space: pre-wrap; background: #fafafa;
border-left: 3px solid #ccc; padding: .5rem; max-height: 22rem; overflow: auto; font-size: 12px; }
.legend span { display: inline-block; margin-right: 1rem; } .legend i { display: inline-block; width: .8rem;
height: .8rem; margin-right: .3rem; vertical-align: -1px; } .note { color: #666; font-size: 12px; }
"""


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def number(value, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.{digits}f}"
    return f"{int(value):,}"


def page(title: str, body: list[str], refresh_seconds: int | None = None) -> str:
    """A whole page; `refresh_seconds` makes the browser reload it (a live report, without script)."""
    refresh = f'<meta http-equiv="refresh" content="{int(refresh_seconds)}">' if refresh_seconds else ""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{refresh}<title>{esc(title)}</title>'
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def table(columns: list[str], rows: list[list], table_id: str = "", numeric: set[int] | None = None) -> str:
    numeric = numeric if numeric is not None else {i for i in range(len(columns))
                                                   if rows and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows)}
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f'<td class="num" data-value="{esc(v)}">{number(v)}</td>' if i in numeric else f"<td>{esc(v)}</td>"
                         for i, v in enumerate(row)) + "</tr>"
        for row in rows)
    ident = f' id="{esc(table_id)}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def legend(names: list[str]) -> str:
    return '<div class="legend">' + "".join(
        f'<span><i style="background:{PALETTE[i % len(PALETTE)]}"></i>{esc(n)}</span>' for i, n in enumerate(names)) + "</div>"


def stacked_bars(rows: list[tuple[str, list[float]]], names: list[str], chart_id: str, width: int = 760) -> str:
    """One horizontal bar per row, split into segments by share; `names` label the segments."""
    label_w, bar_h, gap = 150, 22, 8
    height = len(rows) * (bar_h + gap) + gap
    parts = [f'<svg class="chart" id="{esc(chart_id)}" width="{width + label_w}" height="{height}" role="img">']
    for r, (label, values) in enumerate(rows):
        y = gap + r * (bar_h + gap)
        parts.append(f'<text x="0" y="{y + 15}" font-size="12">{esc(label)}</text>')
        total, x = sum(values) or 1, float(label_w)
        for i, value in enumerate(values):
            w = width * value / total
            if w > 0:
                parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{PALETTE[i % len(PALETTE)]}">'
                             f"<title>{esc(label)} / {esc(names[i])}: {number(value)}</title></rect>")
            x += w
    parts.append("</svg>")
    return legend(names) + "".join(parts)


def histogram(bins: list[tuple[str, int]], chart_id: str, width: int = 520, height: int = 90, color: int = 0) -> str:
    """Vertical bars with their labels underneath."""
    peak = max((n for _, n in bins), default=0) or 1
    bar_w = width / max(len(bins), 1)
    parts = [f'<svg class="chart" id="{esc(chart_id)}" width="{width}" height="{height + 30}" role="img">']
    for i, (label, n) in enumerate(bins):
        h = (height - 10) * n / peak
        x = i * bar_w
        parts.append(f'<rect x="{x + 1:.1f}" y="{height - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                     f'fill="{PALETTE[color % len(PALETTE)]}"><title>{esc(label)}: {n:,}</title></rect>')
        if len(bins) <= 16 or i % math.ceil(len(bins) / 16) == 0:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{height + 14}" font-size="10" text-anchor="middle">{esc(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if m * step >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _tick_label(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def line_chart(series: list[tuple[str, list[tuple[float, float]]]], chart_id: str, y_label: str = "",
               markers: list[tuple[float, str]] = (), flags: list[tuple[float, float, str]] = (),
               width: int = 760, height: int = 220) -> str:
    """Lines of (x, y) points sharing axes; `markers` are labelled vertical lines at an x (a phase switch),
    `flags` are red rings on points with a tooltip (a spike and its cause)."""
    points = [p for _, line in series for p in line if p[1] is not None and math.isfinite(p[1])]
    if not points:
        return f'<p class="note" id="{esc(chart_id)}">no data yet</p>'
    left, bottom, top = 60, 26, 10
    xs, ys = [p[0] for p in points] + [m[0] for m in markers], [p[1] for p in points]
    x_lo, x_hi, y_lo, y_hi = min(xs), max(xs), min(ys), max(ys)
    x_hi, y_hi = (x_hi if x_hi > x_lo else x_lo + 1), (y_hi if y_hi > y_lo else y_lo + 1)
    x_of = lambda x: left + (x - x_lo) / (x_hi - x_lo) * (width - left - 10)  # noqa: E731
    y_of = lambda y: top + (1 - (y - y_lo) / (y_hi - y_lo)) * (height - top - bottom)  # noqa: E731
    parts = [f'<svg class="chart" id="{esc(chart_id)}" width="{width}" height="{height}" role="img">',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="#999"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#999"/>']
    for tick in _ticks(y_lo, y_hi, 4):
        parts.append(f'<text x="{left - 4}" y="{y_of(tick) + 4:.1f}" font-size="10" text-anchor="end">{_tick_label(tick)}</text>')
    for tick in _ticks(x_lo, x_hi, 6):
        parts.append(f'<text x="{x_of(tick):.1f}" y="{height - 8}" font-size="10" text-anchor="middle">{_tick_label(tick)}</text>')
    if y_label:
        parts.append(f'<text x="{left + 4}" y="{top + 10}" font-size="11" fill="#666">{esc(y_label)}</text>')
    for x, label in markers:
        parts.append(f'<line class="marker" x1="{x_of(x):.1f}" y1="{top}" x2="{x_of(x):.1f}" y2="{height - bottom}" '
                     f'stroke="#888" stroke-dasharray="4 3"><title>{esc(label)}</title></line>'
                     + (f'<text x="{x_of(x) - 3:.1f}" y="{top + 22}" font-size="10" fill="#555" text-anchor="end">'
                        if x_of(x) > 0.6 * width else f'<text x="{x_of(x) + 3:.1f}" y="{top + 22}" font-size="10" fill="#555">')
                     + f"{esc(label)}</text>")
    for i, (name, line) in enumerate(series):
        coords = " ".join(f"{x_of(x):.1f},{y_of(y):.1f}" for x, y in line if y is not None and math.isfinite(y))
        parts.append(f'<polyline class="series" data-name="{esc(name)}" fill="none" stroke="{PALETTE[i % len(PALETTE)]}" '
                     f'stroke-width="1.5" points="{coords}"><title>{esc(name)}</title></polyline>')
    for x, y, label in flags:
        parts.append(f'<circle class="flag" cx="{x_of(x):.1f}" cy="{y_of(y):.1f}" r="5" fill="none" stroke="#e15759" '
                     f'stroke-width="2"><title>{esc(label)}</title></circle>')
    parts.append("</svg>")
    return (legend([name for name, _ in series]) if len(series) > 1 else "") + "".join(parts)
