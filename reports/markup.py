"""The smallest pieces every report draws with: escaping, numbers as a reader wants them, the default palette, a
legend and round axis ticks. `reports.html` re-exports them; `reports.linechart` builds on them."""

import html
import math

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")


class Html(str):
    """Markup already escaped (a link built with `esc`): a table puts it in a cell as it is."""


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def scientific(value: float, digits: int = 2) -> str:
    """A number across many decades, compactly: 1e12, 3.8e12."""
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def number(value, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.{digits}f}"
    return f"{int(value):,}"


def palette_colors(count: int, colors=None) -> list[str]:
    """`colors` as given (one per item), or the default palette in turn."""
    return list(colors) if colors else [PALETTE[i % len(PALETTE)] for i in range(count)]


def legend(names: list[str], colors=None, note: str = "") -> str:
    """A swatch per name, in its colour (the palette's by default); `note` follows them."""
    colors = palette_colors(len(names), colors)
    spans = "".join(f'<span><i style="background:{esc(c)}"></i>{esc(n)}</span>' for n, c in zip(names, colors))
    return f'<div class="legend">{spans}{f"<span>{esc(note)}</span>" if note else ""}</div>'


def ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round values (1, 2 or 5 times a power of ten apart) from lo to hi, about n of them."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if m * step >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def tick_label(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
