"""How a filter removal's detail spells what was measured: `name value op threshold` (`alpha_words 0.61 < 0.8`), or
the start of the line a whole-document rule found; shared by Loom's filter rules and curation.steps.filter_details."""

import math

LINE_START = 60  # characters of the line a whole-document rule (curly_bracket, lorem_ipsum) names
EMPTY = "no text"


def number(value: float, digits: int = 3) -> str:
    """A measured value or threshold as a detail shows it: integers whole, others to `digits` significant digits."""
    if isinstance(value, int) or math.isfinite(value) and abs(value) >= 10**digits:
        return str(round(value))
    return f"{value:.{digits}g}"


def measured(name: str, value: float, op: str, threshold: float) -> str:
    """`name value op threshold`, the value to 3 significant digits, or as many more (up to 8) as it takes not to
    read as the threshold itself (`0.79996 < 0.8`, not `0.8 < 0.8`)."""
    digits = 3
    while digits < 8 and number(value, digits) == number(threshold, 8):
        digits += 1
    return f"{name} {number(value, digits)} {op} {number(threshold, 8)}"


def line_start(line: str) -> str:
    """The start of the line a whole-document rule found, quoted."""
    return f'line "{line[:LINE_START]}{"…" if len(line) > LINE_START else ""}"'
