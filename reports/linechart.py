"""Line charts of values against step: server-side SVG that reads without JavaScript, and the same data
(downsampled) in the wrapper's data-chart attribute, from which reports/interactive.js redraws the chart with hover
values, series toggled from the legend, zoom, smoothing, a log y-axis and a token x-axis."""

import json
import math

from reports.markup import esc, legend, palette_colors, tick_label, ticks

MAX_POINTS = 2000  # per series in a page: a long run's page stays small; each bucket keeps its min and max
LEFT, TOP, RIGHT, BOTTOM = 60, 20, 10, 30  # margins: y ticks, the y label, -, x ticks and the x label


def line_chart(series: list[tuple[str, list[tuple[float, float]]]], chart_id: str, y_label: str = "",
               markers: list[tuple[float, str]] = (), flags: list[tuple[float, float, str]] = (),
               width: int = 760, height: int = 220, colors=None, x_label: str = "step", alt_x=None) -> str:
    """Lines of (x, y) points sharing axes, one colour each (`colors`, or the palette); a series of one point is a
    marker. `markers` are labelled vertical lines at an x (a phase switch): one outside the data's x range is
    listed in a note under the chart instead of stretching the axis. `flags` are red rings on points with a tooltip
    (a spike and its cause). `alt_x` = (label, [(x, value)]) is a monotone mapping the reader can switch the x-axis
    to (tokens seen)."""
    series = [(name, downsample(sorted((x, y) for x, y in line if _finite(x, y)))) for name, line in series]
    points = [p for _, line in series for p in line]
    if not points:
        return f'<p class="note" id="{esc(chart_id)}">no data yet</p>'
    colors = palette_colors(len(series), colors)
    x_range, y_range = _range([x for x, _ in points], 0.0), _range([y for _, y in points], 0.04)
    inside = [m for m in markers if x_range[0] <= m[0] <= x_range[1]]
    flags = [f for f in flags if _finite(f[0], f[1]) and x_range[0] <= f[0] <= x_range[1]]
    data = {"series": [{"name": str(name), "color": color, "points": [[x, _short(y)] for x, y in line]}
                       for (name, line), color in zip(series, colors)],
            "markers": [[x, str(label)] for x, label in inside], "flags": [[x, y, str(label)] for x, y, label in flags],
            "x_label": x_label, "y_label": y_label, "box": [LEFT, TOP, width - RIGHT, height - BOTTOM],
            "alt": _alt_axis(alt_x)}
    svg = _svg(series, colors, chart_id, y_label, x_label, inside, flags, width, height, x_range, y_range)
    missed = [f"{label}: not reached" if x > x_range[1] else f"{label}: before the data" for x, label in markers
              if not x_range[0] <= x <= x_range[1]]
    note = f'<p class="note chart-note">{esc("; ".join(missed))}</p>' if missed else ""
    keys = legend([name for name, _ in series], colors) if len(series) > 1 else ""
    payload = esc(json.dumps(data, separators=(",", ":"), allow_nan=False))
    return f'<div class="linechart" data-chart="{payload}">{keys}{svg}{note}</div>'


def downsample(points: list[tuple], limit: int = MAX_POINTS) -> list[tuple]:
    """At most about `limit` points: consecutive buckets, each kept as its lowest and highest point (in x order),
    so a spike survives."""
    if len(points) <= limit:
        return points
    size = math.ceil(len(points) / (limit // 2))
    kept = []
    for start in range(0, len(points), size):
        bucket = points[start:start + size]
        low, high = min(bucket, key=lambda p: p[1]), max(bucket, key=lambda p: p[1])
        kept += [low] if low is high else sorted((low, high))
    return kept


def _alt_axis(alt_x) -> dict | None:
    if not alt_x:
        return None
    label, mapping = alt_x
    mapping = sorted((x, v) for x, v in mapping if _finite(x, v))
    step = math.ceil(len(mapping) / MAX_POINTS) or 1
    kept = mapping[::step] + ([mapping[-1]] if mapping and (len(mapping) - 1) % step else [])
    return {"label": str(label), "points": [list(p) for p in kept]} if len(kept) > 1 else None


def _finite(*values) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def _short(y: float) -> float:
    return float(f"{y:.6g}")  # six digits are more than a reader sees, and a long run's page is half the size


def _range(values: list[float], pad: float) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    if hi <= lo:
        return lo - (abs(lo) * 0.05 or 1), hi + (abs(hi) * 0.05 or 1)
    return lo - (hi - lo) * pad, hi + (hi - lo) * pad


def _svg(series, colors, chart_id, y_label, x_label, markers, flags, width, height, x_range, y_range) -> str:
    (x_lo, x_hi), (y_lo, y_hi) = x_range, y_range
    left, top, right, bottom = LEFT, TOP, width - RIGHT, height - BOTTOM
    x_of = lambda x: left + (x - x_lo) / (x_hi - x_lo) * (right - left)  # noqa: E731
    y_of = lambda y: top + (1 - (y - y_lo) / (y_hi - y_lo)) * (bottom - top)  # noqa: E731
    parts = [f'<svg class="chart" id="{esc(chart_id)}" width="{width}" height="{height}" role="img">',
             f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#999"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#999"/>']
    parts += [f'<text class="ytick" x="{left - 4}" y="{y_of(t) + 4:.1f}" font-size="10" text-anchor="end">'
              f"{tick_label(t)}</text>" for t in ticks(y_lo, y_hi, 5)]
    parts += [f'<text class="xtick" x="{x_of(t):.1f}" y="{bottom + 14}" font-size="10" text-anchor="middle">'
              f"{tick_label(t)}</text>" for t in ticks(x_lo, x_hi, 6)]
    if x_label:
        parts.append(f'<text class="xlabel" x="{right}" y="{height - 3}" font-size="11" fill="#666" '
                     f'text-anchor="end">{esc(x_label)}</text>')
    if y_label:
        parts.append(f'<text class="ylabel" x="{left}" y="{top - 8}" font-size="11" fill="#666">{esc(y_label)}</text>')
    parts += [_marker(x_of(x), label, top, bottom, width) for x, label in markers]
    for i, ((name, line), color) in enumerate(zip(series, colors)):
        parts.append(_series(i, name, [(x_of(x), y_of(y)) for x, y in line], color))
    parts += [f'<circle class="flag" cx="{x_of(x):.1f}" cy="{y_of(y):.1f}" r="5" fill="none" stroke="#e15759" '
              f'stroke-width="2"><title>{esc(label)}</title></circle>' for x, y, label in flags]
    return "".join(parts) + "</svg>"


def _marker(x: float, label: str, top: float, bottom: float, width: int) -> str:
    anchor = f'x="{x - 3:.1f}" text-anchor="end"' if x > 0.6 * width else f'x="{x + 3:.1f}"'
    return (f'<line class="marker" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#888" '
            f'stroke-dasharray="4 3"><title>{esc(label)}</title></line>'
            f'<text {anchor} y="{top + 22}" font-size="10" fill="#555">{esc(label)}</text>')


def _series(i: int, name: str, pixels: list[tuple[float, float]], color: str) -> str:
    """A polyline; a single point as a filled circle, which a polyline would not show."""
    if len(pixels) == 1:
        (x, y), = pixels
        return (f'<circle class="series point" data-i="{i}" data-name="{esc(name)}" cx="{x:.1f}" cy="{y:.1f}" r="3.5" '
                f'fill="{esc(color)}"><title>{esc(name)}</title></circle>')
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in pixels)
    return (f'<polyline class="series" data-i="{i}" data-name="{esc(name)}" fill="none" stroke="{esc(color)}" '
            f'stroke-width="1.5" points="{coords}"><title>{esc(name)}</title></polyline>')
