"""Two more of a search's baselines, beside proportional, uniform and UniMax (sweeps.search_space):

stratified  Aioli's stratified sampling baseline (Chen et al. 2024, "Aioli: A Unified Optimization Framework for
            Language Model Data Mixing", arXiv 2411.05735): every data group sampled with the same probability,
            1/m of m groups, which the paper finds no mixing method it studied beats consistently. A group here
            is a source: a search over sources gives each the same weight (so it is the uniform mixture, and its
            confirm run is not trained twice); a search over a source's cells (--over) gives each source the
            same weight and splits it over the source's cells by their tokens, where uniform would give every
            cell the same weight and so the sources with more cells more of the run.
no-mixing   the whole budget on one source (its cells by their tokens): of the sources whose one-hot mixture is
            within the caps, the one the surrogate predicts best. Known only once the surrogate is fitted.
"""

import numpy as np

from mixtures.cells import is_tag_key, parse_conditions
from sweeps.search_space import SearchSpace, quantize

STRATIFIED = "stratified"
NO_MIXING = "no-mixing"


def source_of(key: str) -> str:
    """The source a weight key draws from: a slice's or cell's source; a source or a tag is its own."""
    parsed = None if is_tag_key(key) else parse_conditions(key)
    return parsed[0] if parsed else key


def stratified(space: SearchSpace) -> np.ndarray:
    """Per phase, each source 1 / sources, split over its keys by their natural (token) shares."""
    phases = []
    for keys, natural in zip(space.keys, space.natural):
        sources = [source_of(k) for k in keys]
        groups = list(dict.fromkeys(sources))
        phases.append(np.array([_share_within(keys, natural, sources, s, i) / len(groups)
                                for i, s in enumerate(sources)]))
    return quantize(space, np.concatenate(phases))


def single_sources(space: SearchSpace) -> dict[str, np.ndarray]:
    """Each source's one-hot mixture (its keys by their natural shares), for the sources every searched phase
    draws from; its caps are not checked here."""
    per_phase = [[source_of(k) for k in keys] for keys in space.keys]
    common = [s for s in dict.fromkeys(per_phase[0]) if all(s in sources for sources in per_phase)]
    found = {}
    for source in common:
        phases = [np.array([_share_within(keys, natural, sources, source, i) if s == source else 0.0
                            for i, s in enumerate(sources)])
                  for keys, natural, sources in zip(space.keys, space.natural, per_phase)]
        found[source] = quantize(space, np.concatenate(phases))
    return found


def _share_within(keys, natural, sources, source: str, index: int) -> float:
    """Key `index`'s share of its source's natural weight in a phase (equal shares where the source has none)."""
    members = [i for i, s in enumerate(sources) if s == source]
    total = sum(natural[i] for i in members)
    return natural[index] / total if total > 0 else 1.0 / len(members)
