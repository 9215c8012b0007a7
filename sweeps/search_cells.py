"""`loom mix search --over domain[,quality_bucket]`: the searched phases' components replaced by their cells, so
that a search over one crawl has tens of weights instead of one.

Each searched phase's source key `web` becomes the wildcard `web:domain=*,quality_bucket=*`, and a slice of one
source `web:lang=en` becomes `web:lang=en,domain=*,...` (an axis the slice already conditions on is not added, nor
one the source has no values of: the domains may be fitted on some sources only);
mixtures.cells expands them (in mixtures.compile.measure) into one component per non-empty cell, weighted by the
cells' natural token shares. A tag stays one component (its sources' cells would be several sources' cells: name
the sources instead). The phases not searched keep their keys.

Such a search has many weights and few proxies per weight: `--over` picks the ridge surrogate (sweeps/ridge.py)
and Dirichlet designs around the natural shares unless --surrogate or --design is given (over 24 cells, 20
spacefill designs sit near the simplex's corners, one cell each, and leave-one-out cannot predict a corner from
the others: Spearman 0.24-0.83 over six laws against 0.83-0.99 for Dirichlet draws, tests/sweeps/test_search_math.py's
law)."""

import dataclasses

import duckdb

from base.errors import UserError
from mixtures.cells import NO_DOMAINS, domain_names, is_wildcard, parse_conditions
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


def source_axes(con: duckdb.DuckDBPyConnection, over: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Per source, the axes of `over` its documents have values of (the domains may cover some sources only; a
    source curated without a quality model has no buckets)."""
    present = ", ".join(f"count({axis}) > 0" for axis in over)
    rows = con.execute(f"SELECT source, {present} FROM documents GROUP BY source").fetchall()
    return {source: tuple(axis for axis, has in zip(over, flags) if has) for source, *flags in rows}


def with_wildcards(spec: MixtureSpec, searched: list[str], over: tuple[str, ...],
                   axes: dict[str, tuple[str, ...]]) -> MixtureSpec:
    """The spec with each searched phase's source and slice keys made wildcards over the axes `over` their source
    has values of (`axes`, source_axes'); UserError where no key of a searched phase has any."""
    phases = []
    for phase in spec.phases:
        if phase.name not in searched:
            phases.append(phase)
            continue
        weights = tuple((_wildcard(k, over, axes), w) for k, w in phase.weights)
        if not any(is_wildcard(k) for k, _ in weights):  # a key the user made a wildcard already is searched too
            raise UserError(f"--over {','.join(over)}: no source of phase '{phase.name}' has {' or '.join(over)} "
                            f"values; {_fix(over)}")
        phases.append(dataclasses.replace(phase, weights=weights))
    return dataclasses.replace(spec, phases=tuple(phases))


def _fix(over: tuple[str, ...]) -> str:
    fixes = {"domain": "list the sources in [domains] sources", "quality_bucket": "curate with a quality model "
             "(`loom quality train`, then `loom curate`)"}
    return " or ".join(fixes[axis] for axis in over)


def _wildcard(key: str, over: tuple[str, ...], axes: dict[str, tuple[str, ...]]) -> str:
    parsed = parse_conditions(key)
    source = key if parsed is None else parsed[0]
    if source not in axes:
        return key  # a tag (its sources' cells would be several sources' cells)
    conditioned = set() if parsed is None else {c.column for c in parsed[1]}
    added = [f"{axis}=*" for axis in over if axis in axes[source] and axis not in conditioned]
    if not added:
        return key
    return f"{key}{',' if parsed else ':'}" + ",".join(added)


def check_cells(expanded: MixtureSpec, searched: list[str], over: tuple[str, ...]) -> None:
    """A searched phase left with one component has nothing to search."""
    for phase in expanded.phases:
        if phase.name in searched and len(phase.weights) < 2:
            raise UserError(f"--over {','.join(over)}: phase '{phase.name}' has one cell ({phase.weights[0][0]}); "
                            "nothing to search: search more axes, or curate with more domains or quality buckets")
