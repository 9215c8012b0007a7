"""Proportional SVG bars for the curation and mixture pages: horizontal bars on one shared scale (a source of
3,805 records drawn 64 times longer than one of 59), a timeline whose x is tokens (each phase a block as wide as
its tokens, split by component share), histograms in a given colour, and legends with one row per shown entry.
Every colour is passed in (reports.colors), so a source looks the same on every page."""

from dataclasses import dataclass

from reports.html import esc, number
from reports.markup import legend as markup_legend

LABEL_WIDTH = 170
BAR_HEIGHT = 18
BAR_GAP = 7


@dataclass(frozen=True)
class Segment:
    """A part of a bar: `value` in the bar's unit (records, tokens), drawn in `color`."""
    name: str
    value: float
    color: str


@dataclass(frozen=True)
class Bar:
    """One row: its label, its segments left to right, and a note written after its end ("3,805 records")."""
    label: str
    segments: list
    note: str = ""

    @property
    def total(self) -> float:
        return sum(s.value for s in self.segments)


def bar_chart(bars: list[Bar], chart_id: str, width: int = 620, scale: float | None = None) -> str:
    """Bars on one scale: a bar's length is its total over `scale` (default the largest total) times `width`.
    Each bar is a `<g class="bar" data-total=...>` of its segments' rects."""
    scale = scale or max((b.total for b in bars), default=0) or 1
    note_width = 230
    height = len(bars) * (BAR_HEIGHT + BAR_GAP) + BAR_GAP
    parts = [f'<svg class="chart" id="{esc(chart_id)}" width="{LABEL_WIDTH + width + note_width}" '
             f'height="{height}" role="img">']
    for row, bar in enumerate(bars):
        y = BAR_GAP + row * (BAR_HEIGHT + BAR_GAP)
        parts.append(f'<text x="{LABEL_WIDTH - 6}" y="{y + 13}" font-size="12" text-anchor="end">'
                     f"{esc(_clip(bar.label, 26))}<title>{esc(bar.label)}</title></text>")
        parts.append(f'<g class="bar" data-label="{esc(bar.label)}" data-total="{bar.total:g}">')
        x = float(LABEL_WIDTH)
        for segment in bar.segments:
            w = width * segment.value / scale
            if w > 0:
                parts.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{BAR_HEIGHT}" fill="{segment.color}">'
                             f"<title>{esc(bar.label)} / {esc(segment.name)}: {number(segment.value)}</title></rect>")
            x += w
        parts.append("</g>")
        if bar.note:
            parts.append(f'<text x="{x + 6:.1f}" y="{y + 13}" font-size="11" fill="#555">{esc(bar.note)}</text>')
    return "".join(parts) + "</svg>"


def legend(entries: list[tuple[str, str]], note: str = "") -> str:
    """One swatch per (name, colour) entry, in order; `note` follows them."""
    return markup_legend([name for name, _ in entries], [color for _, color in entries], note)


@dataclass(frozen=True)
class PhaseBlock:
    """A phase on the token timeline: `tokens` wide, split top to bottom by its segments (components' tokens);
    `lines` are written above it (its name, tokens, steps, epochs)."""
    name: str
    tokens: int
    segments: list
    lines: tuple = ()


def timeline(blocks: list[PhaseBlock], chart_id: str, width: int = 1000, height: int = 150) -> str:
    """The phases side by side on one x axis of tokens: each a `<rect class="phase" data-tokens=...>` as wide as
    its share of all tokens, its components stacked inside it by their share of the phase."""
    total = sum(b.tokens for b in blocks) or 1
    head = 16 * max((len(b.lines) for b in blocks), default=0) + 6
    parts = [f'<svg class="chart" id="{esc(chart_id)}" width="{width + 2}" height="{head + height + 18}" role="img">']
    x = 1.0
    for block in blocks:
        w = width * block.tokens / total
        parts += [_block_text(block, x, w), *_block_segments(block, x, w, head, height)]
        parts.append(f'<rect class="phase" data-phase="{esc(block.name)}" data-tokens="{block.tokens}" x="{x:.2f}" '
                     f'y="{head}" width="{w:.2f}" height="{height}" fill="none" stroke="#222" stroke-width="1.5">'
                     f"<title>{esc(block.name)}: {number(block.tokens)} tokens</title></rect>")
        x += w
    parts.append(f'<text x="1" y="{head + height + 14}" font-size="10" fill="#666">0 tokens</text>'
                 f'<text x="{width}" y="{head + height + 14}" font-size="10" fill="#666" text-anchor="end">'
                 f"{number(total)} tokens</text>")
    return "".join(parts) + "</svg>"


def _block_text(block: PhaseBlock, x: float, w: float) -> str:
    chars = max(int(w / 6.2), 4)
    styles = ['font-size="12" font-weight="bold"'] + ['font-size="11"'] * len(block.lines)
    return "".join(f'<text x="{x + 3:.1f}" y="{14 + 16 * i}" {styles[i]}>{esc(_clip(line, chars))}'
                   f"<title>{esc(line)}</title></text>" for i, line in enumerate(block.lines))


def _block_segments(block: PhaseBlock, x: float, w: float, top: int, height: int) -> list[str]:
    phase_total = sum(s.value for s in block.segments) or 1
    parts, y = [], float(top)
    for segment in block.segments:
        h = height * segment.value / phase_total
        if h <= 0:
            continue
        share = segment.value / phase_total
        parts.append(f'<rect class="component" data-name="{esc(segment.name)}" x="{x:.2f}" y="{y:.2f}" '
                     f'width="{w:.2f}" height="{h:.2f}" fill="{segment.color}" stroke="#fff" stroke-width="0.5">'
                     f"<title>{esc(block.name)} / {esc(segment.name)}: {share:.1%}, {number(segment.value)} tokens"
                     "</title></rect>")
        if h >= 13 and w >= 60:
            label = _clip(f"{segment.name} {share:.0%}", int(w / 6.2))
            parts.append(f'<text x="{x + 4:.1f}" y="{y + h / 2 + 4:.1f}" font-size="11" fill="#111">{esc(label)}</text>')
        y += h
    return parts


def histogram(bins: list[tuple[str, int]], chart_id: str, color: str, width: int = 340, height: int = 70) -> str:
    """Vertical bars in `color` with their labels underneath (every other one past twelve)."""
    peak = max((n for _, n in bins), default=0) or 1
    bar_w = width / max(len(bins), 1)
    step = 1 if len(bins) <= 12 else 2
    parts = [f'<svg class="chart" id="{esc(chart_id)}" width="{width}" height="{height + 28}" role="img">']
    for i, (label, n) in enumerate(bins):
        h = (height - 6) * n / peak
        x = i * bar_w
        parts.append(f'<rect x="{x + 1:.1f}" y="{height - h:.1f}" width="{max(bar_w - 2, 1):.1f}" height="{h:.1f}" '
                     f'fill="{color}"><title>{esc(label)}: {n:,}</title></rect>')
        if i % step == 0:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{height + 13}" font-size="9" text-anchor="middle">'
                         f"{esc(label)}</text>")
    return "".join(parts) + "</svg>"


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:max(chars - 1, 1)] + "…"
