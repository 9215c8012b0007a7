"""`loom mix search --over domain[,quality_bucket]`: the searched phases' components replaced by their cells, so
that a search over one crawl has tens of weights instead of one.

Each searched phase's source key `web` becomes the wildcard `web:domain=*,quality_bucket=*`, and a slice of one
source `web:lang=en` becomes `web:lang=en,domain=*,...` (an axis the slice already conditions on is not added);
mixtures.cells expands them (in mixtures.compile.measure) into one component per non-empty cell, weighted by the
cells' natural token shares. A tag stays one component (its sources' cells would be several sources' cells: name
the sources instead). The phases not searched keep their keys.

Such a search has many weights and few proxies per weight: `--over` picks the ridge surrogate (sweeps/ridge.py)
and Dirichlet designs around the natural shares unless --surrogate or --design is given (over 24 cells, 20
spacefill designs sit near the simplex's corners, one cell each, and leave-one-out cannot predict a corner from
the others: Spearman 0.24-0.83 over six laws against 0.83-0.99 for Dirichlet draws, tests/sweeps/test_search_math.py's
law)."""

import dataclasses

from base.errors import UserError
from mixtures.cells import NO_DOMAINS, domain_names, parse_conditions
from mixtures.spec import MixtureSpec

CELL_AXES = ("domain", "quality_bucket")
OVER_DESIGN, OVER_SURROGATE = "dirichlet", "ridge"


def parse_over(text: str | None) -> tuple[str, ...]:
    """--over's comma list as a tuple of CELL_AXES, in the order given; () for none."""
    if text is None:
        return ()
    axes = tuple(a.strip() for a in text.split(","))
    for axis in axes:
        if axis not in CELL_AXES:
            raise UserError(f"--over {text}: '{axis}' is not an axis to search; use domain, quality_bucket or "
                            "domain,quality_bucket")
    if len(set(axes)) != len(axes):
        raise UserError(f"--over {text}: an axis is named twice; use domain, quality_bucket or domain,quality_bucket")
    return axes


def defaults(over: tuple[str, ...], design: str | None, surrogate: str | None) -> tuple[str, str]:
    """The design and surrogate a search uses: the ones given, else those for cells with --over, else the
    defaults of a search over sources."""
    return design or (OVER_DESIGN if over else "spacefill"), surrogate or (OVER_SURROGATE if over else "loglinear")


def check_over(over: tuple[str, ...], curation: dict) -> None:
    """`--over domain` on data curated without [domains] is refused before anything is measured."""
    if "domain" in over and domain_names(curation) is None:
        raise UserError(f"--over {','.join(over)}: the curated data has no domains; {NO_DOMAINS}")


def with_wildcards(spec: MixtureSpec, searched: list[str], over: tuple[str, ...], sources: dict) -> MixtureSpec:
    """The spec with each searched phase's source and slice keys made wildcards over the axes `over`."""
    phases = tuple(dataclasses.replace(p, weights=tuple((_wildcard(k, over, sources), w) for k, w in p.weights))
                   if p.name in searched else p for p in spec.phases)
    return dataclasses.replace(spec, phases=phases)


def _wildcard(key: str, over: tuple[str, ...], sources: dict) -> str:
    if key in sources:
        return f"{key}:" + ",".join(f"{axis}=*" for axis in over)
    parsed = parse_conditions(key)
    if parsed is None:
        return key  # a tag
    conditioned = {c.column for c in parsed[1]}
    added = [f"{axis}=*" for axis in over if axis not in conditioned]
    return ",".join([key, *added]) if added else key


def check_cells(expanded: MixtureSpec, searched: list[str], over: tuple[str, ...]) -> None:
    """A searched phase left with one component has nothing to search."""
    for phase in expanded.phases:
        if phase.name in searched and len(phase.weights) < 2:
            raise UserError(f"--over {','.join(over)}: phase '{phase.name}' has one cell ({phase.weights[0][0]}); "
                            "nothing to search: search more axes, or curate with more domains or quality buckets")
