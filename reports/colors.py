"""One colour per source across every page of a workspace, and its slices as shades of it.

A source's colour comes from its place in the published generation's sources (sources.toml's order): the first
nine take the palette, the rest hues spaced by the golden angle; a name the generation does not know (a run trained
on an older one) gets a hue from its name's digest. A mixture component that is a slice of a source
(`code:quality_bucket>=3`, or a cell `web:domain=3`) is a shade of that source's colour; a tag's component is its
first source's, darker."""

import colorsys
import hashlib
import json

from base.store import as_path
from base.workspace import Workspace
from reports.markup import PALETTE

SOURCE_PALETTE = PALETTE[:9]  # the palette's tenth is a grey, too like OTHER's
OTHER = "#c8c8c8"  # "other": the sources left out of a chart's top N
GOLDEN_ANGLE = 0.381966  # of a turn: hues that never repeat and stay apart


class SourceColors:
    """Colours by source name, in the order the workspace lists its sources."""

    def __init__(self, sources: list[str]):
        self.rank = {name: i for i, name in enumerate(dict.fromkeys(sources))}

    def of(self, source: str) -> str:
        rank = self.rank.get(source)
        if rank is not None and rank < len(SOURCE_PALETTE):
            return SOURCE_PALETTE[rank]
        turn = (rank - len(SOURCE_PALETTE)) * GOLDEN_ANGLE if rank is not None else _digest_turn(source)
        return _hsl(turn % 1.0, 0.55, 0.5)

    def of_component(self, key: str, sources: list[str], keys: list[str] = ()) -> str:
        """A component's colour: its source's when it is the source itself; a shade when it is one of its slices
        (`keys`, the mixture's components, say which slice it is) or a tag of several sources."""
        base = self.of(sources[0]) if sources else OTHER
        if key in self.rank or not sources:
            return base
        siblings = [k for k in keys if k not in self.rank and k.split(":", 1)[0] == sources[0]] or [key]
        place = siblings.index(key) + 1 if key in siblings else 1
        if ":" not in key:
            return shade(base, -0.3)
        if len(siblings) > 3:  # a wildcard's cells: shades spread from near the source's to light, none repeated
            return shade(base, 0.12 + 0.68 * (place - 1) / (len(siblings) - 1))
        return shade(base, 0.35 + 0.3 * (place % 3) / 2)


def shade(color: str, amount: float) -> str:
    """`color` moved towards white (amount > 0) or black (amount < 0) by that fraction."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    target = 255 if amount > 0 else 0
    mixed = [round(c + (target - c) * abs(amount)) for c in (r, g, b)]
    return "#" + "".join(f"{c:02x}" for c in mixed)


def _hsl(hue: float, saturation: float, lightness: float) -> str:
    r, g, b = colorsys.hls_to_rgb(hue, lightness, saturation)
    return "#" + "".join(f"{round(c * 255):02x}" for c in (r, g, b))


def _digest_turn(name: str) -> float:
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) / 16 ** 8


def workspace_colors(root) -> SourceColors:
    """The colours of the workspace at `root`: its published generation's sources, in sources.toml's order (none
    published: every name gets its digest's hue)."""
    ws = Workspace(as_path(root))
    try:
        info = json.loads(ws.published().curation_info.read_text())
    except (OSError, ValueError):
        return SourceColors([])
    return SourceColors(list(info.get("sources", {})))
