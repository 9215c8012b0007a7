"""Small pieces of self-contained HTML: a page, tables, SVG bar, line and log-log charts. Nothing external: the one
script is reports/interactive.js, written inline, and the page reads fully without it (the charts are SVG drawn
here). Every string that comes from data goes through `esc`, except `Html`, which is markup built here."""

import math
from dataclasses import dataclass, replace
from pathlib import Path

from base.workspace import REPORT_FILE  # noqa: F401 (a page's name in the folder it reports on)
from reports.linechart import line_chart  # noqa: F401 (a primitive of this module for its callers)
from reports.markup import PALETTE, Html, esc, legend, number, palette_colors, scientific, tick_label, ticks  # noqa: F401

LONG_TABLE_ROWS = 30  # a table longer than this scrolls in a box of its own, its header kept in view


def _inline(source: str) -> str:
    """The script as a page carries it: without indentation, blank lines and whole-line comments (it has no string
    spanning lines), and never closing its own element."""
    lines = [line.strip() for line in source.splitlines()]
    text = "\n".join(line for line in lines if line and not line.startswith("//"))
    assert "</script" not in text.lower()
    return text


SCRIPT = _inline(Path(__file__).with_name("interactive.js").read_text(encoding="utf-8"))
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
.panels { display: flex; flex-wrap: wrap; gap: .5rem 1rem; } .panels > div { width: 350px; }
.panels h3 { font-size: .95rem; overflow-wrap: anywhere; }
.long-table { max-height: 34rem; overflow: auto; display: inline-block; max-width: 100%; }
.long-table th { position: sticky; top: 0; }
.hidden { display: none; } .linechart { position: relative; } .linechart .legend span { cursor: pointer; }
.legend span.off { opacity: .35; text-decoration: line-through; } .chart-controls { font-size: 12px; color: #555; }
.chart-controls label { margin-right: 1rem; } .chart-controls input[type=range] { width: 7rem; vertical-align: middle; }
.tip { position: absolute; pointer-events: none; background: #fff; border: 1px solid #bbb; padding: .2rem .4rem;
font-size: 12px; white-space: nowrap; box-shadow: 0 1px 4px rgba(0,0,0,.15); } .tip i { display: inline-block;
width: .6rem; height: .6rem; margin-right: .3rem; } table.sortable th { cursor: pointer; user-select: none; }
th[aria-sort=ascending]::after { content: " \\25b2"; } th[aria-sort=descending]::after { content: " \\25bc"; }
.table-filter { margin: .4rem 0 0; font: inherit; padding: .1rem .3rem; }
"""


def page(title: str, body: list[str], refresh_seconds: int | None = None) -> str:
    """A whole page; `refresh_seconds` makes the browser reload it (a live report). The script comes last, so the
    document is parsed when it runs."""
    refresh = f'<meta http-equiv="refresh" content="{int(refresh_seconds)}">' if refresh_seconds else ""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{refresh}<title>{esc(title)}</title>'
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + f"\n<script>{SCRIPT}</script>\n</body></html>\n")


def table(columns: list[str], rows: list[list], table_id: str = "", numeric: set[int] | None = None,
          sortable: bool = False) -> str:
    """`numeric` columns (by default those holding only numbers) are right-aligned with their value in data-value.
    `sortable`: with JavaScript, clicking a header sorts by it (numeric columns by value) and a text box filters the
    rows; without, a plain table."""
    numeric = numeric if numeric is not None else {i for i in range(len(columns))
                                                   if rows and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows)}
    head = "".join(f'<th class="num">{esc(c)}</th>' if sortable and i in numeric else f"<th>{esc(c)}</th>"
                   for i, c in enumerate(columns))
    body = "".join("<tr>" + "".join(_cell(v, i in numeric) for i, v in enumerate(row)) + "</tr>" for row in rows)
    ident = f' id="{esc(table_id)}"' if table_id else ""
    sorting = ' class="sortable"' if sortable else ""
    markup = f"<table{ident}{sorting}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f'<div class="long-table">{markup}</div>' if len(rows) > LONG_TABLE_ROWS else markup


def _cell(value, numeric: bool) -> str:
    if numeric:
        return f'<td class="num" data-value="{esc(value)}">{number(value)}</td>'
    return f"<td>{value if isinstance(value, Html) else esc(value)}</td>"


def stacked_bars(rows: list[tuple[str, list[float]]], names: list[str], chart_id: str, width: int = 760,
                 colors=None) -> str:
    """One horizontal bar per row, split into segments by share; `names` label the segments, `colors` colour them
    (one per name; the palette by default)."""
    colors = palette_colors(len(names), colors)
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
                parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{esc(colors[i])}">'
                             f"<title>{esc(label)} / {esc(names[i])}: {number(value)}</title></rect>")
            x += w
    parts.append("</svg>")
    return legend(names, colors) + "".join(parts)


@dataclass(frozen=True)
class Line:
    """A polyline through (x, y) points; `dash` is an SVG dash pattern ("6 4"), empty for a solid line."""
    name: str
    points: list
    color: str
    css_class: str = "series"
    width: float = 1.5
    dash: str = ""


@dataclass(frozen=True)
class Band:
    """A shaded area through (x, lower, upper) points: an interval around a line."""
    name: str
    points: list
    color: str
    css_class: str = "band"


@dataclass(frozen=True)
class Dot:
    """A marker at (x, y): a filled "circle", a "ring" or a hollow "diamond"; `error` (low, high) adds a vertical
    error bar and `label` a text beside it. `name` is its tooltip."""
    name: str
    x: float
    y: float
    color: str
    css_class: str = "dot"
    shape: str = "circle"
    error: tuple | None = None
    label: str = ""


def _positive(*values) -> bool:
    return all(v is not None and math.isfinite(v) and v > 0 for v in values)


def _log_range(values: list[float], pad: float = 0.05) -> tuple[float, float]:
    lo, hi = math.log10(min(values)), math.log10(max(values))
    margin = (hi - lo) * pad if hi > lo else 0.1
    return 10 ** (lo - margin), 10 ** (hi + margin)


def _log_axis(lo: float, hi: float, start: float, end: float):
    """Where a value lands between pixel `start` (at lo) and `end` (at hi) on a log scale."""
    span = math.log10(hi) - math.log10(lo)
    return lambda v: start + (math.log10(v) - math.log10(lo)) / span * (end - start)


def log_ticks(lo: float, hi: float) -> list[float]:
    """Decades when three or more lie in range (every other one past eight); else 1, 2 and 5 times a decade; else
    1, 1.5, 2, 3, 4, 5, 6 and 8 times; else, for a narrow range (a loss from 3.2 to 5.9), evenly spaced round values."""
    decades = [10.0 ** k for k in range(math.ceil(math.log10(lo)), math.floor(math.log10(hi)) + 1)]
    if len(decades) >= 3:
        return decades[:: math.ceil(len(decades) / 8)]
    for mantissas in ((1, 2, 5), (1, 1.5, 2, 3, 4, 5, 6, 8)):
        steps = [m * 10.0 ** k for k in range(math.floor(math.log10(lo)), math.floor(math.log10(hi)) + 1)
                 for m in mantissas if lo <= m * 10.0 ** k <= hi]
        if len(steps) >= 3:
            return steps
    return [t for t in ticks(lo, hi, 6) if t > 0]


def _log_tick_label(value: float) -> str:
    return scientific(value) if value >= 1e4 or value < 1e-3 else f"{value:.3g}"


def _log_grid(x_ticks, y_ticks, x_of, y_of, box: tuple[float, float, float, float], label=_log_tick_label) -> list[str]:
    """Tick lines and labels across the plot and its axes; `label` writes a tick's value (xy_chart's are linear)."""
    left, top, right, bottom = box
    parts = [f'<line class="grid" x1="{x_of(t):.1f}" y1="{top}" x2="{x_of(t):.1f}" y2="{bottom}" stroke="#eee"/>'
             f'<text x="{x_of(t):.1f}" y="{bottom + 14}" font-size="10" text-anchor="middle">{label(t)}</text>'
             for t in x_ticks]
    parts += [f'<line class="grid" x1="{left}" y1="{y_of(t):.1f}" x2="{right}" y2="{y_of(t):.1f}" stroke="#eee"/>'
              f'<text x="{left - 4}" y="{y_of(t) + 4:.1f}" font-size="10" text-anchor="end">{label(t)}</text>'
              for t in y_ticks]
    return parts + [f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#999"/>',
                    f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#999"/>']


def _band(band: Band, x_of, y_of) -> str:
    points = [p for p in band.points if _positive(*p)]
    if not points:
        return ""
    outline = [(x_of(x), y_of(upper)) for x, _, upper in points] + [(x_of(x), y_of(lower)) for x, lower, _ in reversed(points)]
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in outline)
    return (f'<polygon class="{esc(band.css_class)}" data-name="{esc(band.name)}" points="{coords}" '
            f'fill="{band.color}" fill-opacity="0.16" stroke="none"><title>{esc(band.name)}</title></polygon>')


def _line(line: Line, x_of, y_of) -> str:
    coords = " ".join(f"{x_of(x):.1f},{y_of(y):.1f}" for x, y in line.points if _positive(x, y))
    dash = f' stroke-dasharray="{line.dash}"' if line.dash else ""
    return (f'<polyline class="{esc(line.css_class)}" data-name="{esc(line.name)}" fill="none" stroke="{line.color}" '
            f'stroke-width="{line.width}"{dash} points="{coords}"><title>{esc(line.name)}</title></polyline>')


def _dot(dot: Dot, x_of, y_of, right: float) -> str:
    x, y = x_of(dot.x), y_of(dot.y)
    parts = [f'<g class="{esc(dot.css_class)}" data-name="{esc(dot.name)}"><title>{esc(dot.name)}</title>']
    if dot.error and _positive(*dot.error):
        low, high = y_of(dot.error[0]), y_of(dot.error[1])
        parts.append(f'<path d="M{x:.1f},{low:.1f}V{high:.1f}M{x - 4:.1f},{low:.1f}h8M{x - 4:.1f},{high:.1f}h8" '
                     f'stroke="{dot.color}" stroke-width="1.5" fill="none"/>')
    if dot.shape == "diamond":
        parts.append(f'<polygon points="{x:.1f},{y - 6:.1f} {x + 6:.1f},{y:.1f} {x:.1f},{y + 6:.1f} {x - 6:.1f},{y:.1f}" '
                     f'fill="#fff" stroke="{dot.color}" stroke-width="2"/>')
    elif dot.shape == "ring":
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="#fff" stroke="{dot.color}" stroke-width="2.5"/>')
    else:
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" fill="{dot.color}" stroke="#fff" stroke-width="1"/>')
    if dot.label:
        parts.append(_dot_label(dot, x, y, y_of, right))
    return "".join(parts) + "</g>"


def _dot_label(dot: Dot, x: float, y: float, y_of, right: float) -> str:
    """Right of the marker, or above its error bar and ending at it where the chart's right edge is near."""
    if x + 14 + 6 * len(dot.label) < right:
        return f'<text x="{x + 9:.1f}" y="{y - 7:.1f}" font-size="11" fill="{dot.color}">{esc(dot.label)}</text>'
    top = min(y - 6, y_of(dot.error[1]) if dot.error and _positive(*dot.error) else y)
    return (f'<text x="{x + 6:.1f}" y="{top - 5:.1f}" font-size="11" fill="{dot.color}" text-anchor="end">'
            f"{esc(dot.label)}</text>")


def log_log_chart(chart_id: str, lines: list[Line] = (), bands: list[Band] = (), dots: list[Dot] = (),
                  x_label: str = "", y_label: str = "", width: int = 760, height: int = 300) -> str:
    """Lines, shaded bands and markers on log-log axes with round ticks; values that are not positive are left
    out (a log axis has no place for them)."""
    dots = [d for d in dots if _positive(d.x, d.y)]
    xs = ([x for line in lines for x, y in line.points if _positive(x, y)] + [p[0] for b in bands for p in b.points
          if _positive(*p)] + [d.x for d in dots])
    ys = ([y for line in lines for x, y in line.points if _positive(x, y)]
          + [v for b in bands for p in b.points if _positive(*p) for v in p[1:]]
          + [v for d in dots for v in (d.y, *(d.error if d.error and _positive(*d.error) else ()))])
    if not xs:
        return f'<p class="note" id="{esc(chart_id)}">no data yet</p>'
    left, top, right, bottom = 46, 22 if y_label else 12, width - 14, height - 34  # the y label above the plot
    (x_lo, x_hi), (y_lo, y_hi) = _log_range(xs), _log_range(ys)
    x_of, y_of = _log_axis(x_lo, x_hi, left, right), _log_axis(y_lo, y_hi, bottom, top)
    parts = [f'<svg class="chart" id="{esc(chart_id)}" width="{width}" height="{height}" role="img">',
             *_log_grid(log_ticks(x_lo, x_hi), log_ticks(y_lo, y_hi), x_of, y_of, (left, top, right, bottom))]
    if x_label:
        parts.append(f'<text x="{right}" y="{height - 4}" font-size="11" fill="#666" text-anchor="end">{esc(x_label)}</text>')
    if y_label:
        parts.append(f'<text x="{left - 40}" y="12" font-size="11" fill="#666">{esc(y_label)}</text>')
    parts += [_band(b, x_of, y_of) for b in bands] + [_line(line, x_of, y_of) for line in lines]
    parts += [_dot(d, x_of, y_of, width) for d in dots]
    return "".join(parts) + "</svg>"


def _finite(*values) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def _linear_range(values: list[float], pad: float = 0.05) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    margin = (hi - lo) * pad if hi > lo else (abs(lo) * pad or 1.0)
    return lo - margin, hi + margin


def xy_chart(chart_id: str, lines: list[Line] = (), dots: list[Dot] = (), x_label: str = "", y_label: str = "",
             width: int = 760, height: int = 300) -> str:
    """Lines and markers on linear axes with round ticks: a scatter of labelled points, curves against step.
    Points that are not finite numbers are left out."""
    lines = [replace(line, points=[p for p in line.points if _finite(*p)]) for line in lines]
    dots = [d for d in dots if _finite(d.x, d.y)]
    xs = [x for line in lines for x, _ in line.points] + [d.x for d in dots]
    ys = ([y for line in lines for _, y in line.points]
          + [v for d in dots for v in (d.y, *(d.error if d.error and _finite(*d.error) else ()))])
    if not xs:
        return f'<p class="note" id="{esc(chart_id)}">no data yet</p>'
    left, top, right, bottom = 46, 22 if y_label else 12, width - 14, height - 34
    (x_lo, x_hi), (y_lo, y_hi) = _linear_range(xs), _linear_range(ys)
    x_of = lambda x: left + (x - x_lo) / (x_hi - x_lo) * (right - left)  # noqa: E731
    y_of = lambda y: bottom - (y - y_lo) / (y_hi - y_lo) * (bottom - top)  # noqa: E731
    parts = [f'<svg class="chart" id="{esc(chart_id)}" width="{width}" height="{height}" role="img">',
             *_log_grid(ticks(x_lo, x_hi, 6), ticks(y_lo, y_hi, 5), x_of, y_of, (left, top, right, bottom),
                        _linear_tick_label)]
    if x_label:
        parts.append(f'<text x="{right}" y="{height - 4}" font-size="11" fill="#666" text-anchor="end">{esc(x_label)}</text>')
    if y_label:
        parts.append(f'<text x="{left - 40}" y="12" font-size="11" fill="#666">{esc(y_label)}</text>')
    parts += [_linear_line(line, x_of, y_of) for line in lines]
    parts += [_dot(d, x_of, y_of, width) for d in dots]
    return "".join(parts) + "</svg>"


def _linear_tick_label(value: float) -> str:
    return tick_label(0.0 if abs(value) < 1e-12 else value)  # a tick summed to 1e-17 is 0


def _linear_line(line: Line, x_of, y_of) -> str:
    coords = " ".join(f"{x_of(x):.1f},{y_of(y):.1f}" for x, y in line.points)
    dash = f' stroke-dasharray="{line.dash}"' if line.dash else ""
    return (f'<polyline class="{esc(line.css_class)}" data-name="{esc(line.name)}" fill="none" stroke="{line.color}" '
            f'stroke-width="{line.width}"{dash} points="{coords}"><title>{esc(line.name)}</title></polyline>')
