"""Small pieces of self-contained HTML: a page, tables and SVG bar charts. No script, no external URL:
every string that comes from data goes through `esc`."""

import html
import math

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


def page(title: str, body: list[str]) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
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
