"""Decision accuracy (DataDecide, Magnusson et al. 2025, arXiv 2504.11393): over pairs of candidate mixtures, the
share whose order at a small scale (which of the two scores lower) is their order at the large scale. A search
measures it over its confirm mixtures (the searched one and the baselines): their objectives at the proxy rung,
and the surrogate's predictions, against their objectives at the confirm rung."""

from itertools import combinations


def decision_accuracy(small: dict[str, float | None], large: dict[str, float | None]) -> dict | None:
    """The pairs of mixtures scored at both scales, how many keep their order, and each that does not with its
    scores at both; None with fewer than two such mixtures. A tie at either scale is a pair that does not keep its
    order (it decides nothing)."""
    names = [m for m in large if small.get(m) is not None and large[m] is not None]
    pairs = list(combinations(names, 2))
    if not pairs:
        return None
    disagree = [{"pair": [a, b], "small": [small[a], small[b]], "large": [large[a], large[b]]}
                for a, b in pairs if (small[a] - small[b]) * (large[a] - large[b]) <= 0]
    return {"pairs": len(pairs), "agree": len(pairs) - len(disagree),
            "accuracy": (len(pairs) - len(disagree)) / len(pairs), "disagree": disagree}


def swapped_text(result: dict) -> str:
    """Each pair that swapped: `searched vs uniform: 6.100 < 6.120 small, 6.310 > 6.300 large`."""
    def order(a, b):
        return "<" if a < b else ">" if a > b else "="
    swapped = ((d["pair"], d["small"], d["large"]) for d in result["disagree"])
    return "; ".join(f"{a} vs {b}: {sa:.3f} {order(sa, sb)} {sb:.3f} small, {la:.3f} {order(la, lb)} {lb:.3f} large"
                     for (a, b), (sa, sb), (la, lb) in swapped)
