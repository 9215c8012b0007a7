"""The space `loom mix search` explores: the searched phases' weights as one vector x, each phase on its simplex,
every component's usage of the run's tokens under its epoch cap, and every weight a whole number of sequences of
the global batch (what the compiler realizes). Here too: the designs the proxies train on (Dirichlet draws around
the prior, or a space-filling maximin pick) and the baselines (proportional, uniform, UniMax).

UniMax is Chung et al. (2023): a uniform budget across components, each capped at max_epochs of its tokens, the
leftover spread uniformly over the uncapped (water-filling).

DESIGNS maps each `--design` name to a Design: its help text and its sampler. How to add a design: a module with a
function (space, rng, count, concentration) -> distinct feasible quantized mixtures (`distinct_feasible` draws
them), and one line in DESIGNS.
"""

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np

from base.errors import UserError
from mixtures.schedule import largest_remainder

DEFAULT_CONCENTRATION = 1.0  # with a uniform prior, Dirichlet(1): every mixture of a phase equally likely
PRIOR_FLOOR = 0.01  # a prior's zero, floored: designs still try the component, and KL to the prior stays finite
DRAWS_PER_DESIGN = 200  # rejection sampling gives up after this many draws per design asked for
SPACEFILL_CANDIDATES = 50  # per design asked for (at least MIN_CANDIDATES): the pool maximin picks from
MIN_CANDIDATES = 2000
TOLERANCE = 1e-9  # of the run's tokens: below this a usage over its capacity is float rounding, not a violation
ROUNDING_TOLERANCE = 1e-6  # a continuous x this close to a cap (an optimizer's answer) counts as within it


@dataclass(frozen=True)
class SearchSpace:
    """The searched phases of a mixture, their components, the prior, and every component's capacity (see the
    module docstring). Vector form x: the searched phases' weights concatenated, in order."""
    phases: tuple[str, ...]
    fractions: tuple[float, ...]  # each searched phase's fraction of the run's tokens (need not sum to 1)
    keys: tuple[tuple[str, ...], ...]
    prior: tuple[tuple[float, ...], ...]
    natural: tuple[tuple[float, ...], ...]
    capacity: dict[str, float]  # fraction of the run's tokens a key may supply (max_epochs x available); inf: none
    fixed: dict[str, float]  # fraction of the run's tokens the phases not searched take of a key
    global_batch: int

    def __post_init__(self):
        n = len(self.phases)
        if not (len(self.fractions) == len(self.keys) == len(self.prior) == len(self.natural) == n) or n == 0:
            raise ValueError("a search space needs at least one phase, and one fraction, key list, prior and "
                             "natural weights per phase")
        for name, keys, prior, natural in zip(self.phases, self.keys, self.prior, self.natural):
            if not keys or len(prior) != len(keys) or len(natural) != len(keys):
                raise ValueError(f"phase '{name}': its prior and natural weights need one value per key")
            if min(prior) < 0 or abs(sum(prior) - 1) > 1e-6:
                raise ValueError(f"phase '{name}': the prior must be non-negative and sum to 1; got {prior}")
        if self.global_batch < 1 or min(self.fractions) <= 0:
            raise ValueError("global_batch and every searched phase's fraction must be positive")

    @property
    def dims(self) -> int:
        return sum(len(k) for k in self.keys)

    def split(self, x) -> list[np.ndarray]:
        x = np.asarray(x, dtype=float)
        return np.split(x, np.cumsum([len(k) for k in self.keys])[:-1], axis=-1)

    def as_weights(self, x) -> dict[str, dict[str, float]]:
        return {phase: {key: float(w) for key, w in zip(keys, weights)}
                for phase, keys, weights in zip(self.phases, self.keys, self.split(x))}

    def usage(self, x) -> dict[str, float]:
        return {key: float(u) for key, u in zip(self.all_keys, self.usage_vector(x))}

    def feasible(self, x, slack: float = 0.0) -> bool:
        return bool(np.all(self.usage_vector(x) <= self.capacity_vector * (1 - slack) + TOLERANCE))

    # the linear form the optimizer and the samplers share: usage = fixed_vector + usage_matrix @ x
    @cached_property
    def all_keys(self) -> tuple[str, ...]:
        ordered = [k for keys in self.keys for k in keys] + list(self.capacity) + list(self.fixed)
        return tuple(dict.fromkeys(ordered))

    @cached_property
    def usage_matrix(self) -> np.ndarray:
        matrix = np.zeros((len(self.all_keys), self.dims))
        row = {key: i for i, key in enumerate(self.all_keys)}
        column = 0
        for fraction, keys in zip(self.fractions, self.keys):
            for key in keys:
                matrix[row[key], column] = fraction
                column += 1
        return matrix

    @cached_property
    def fixed_vector(self) -> np.ndarray:
        return np.array([self.fixed.get(k, 0.0) for k in self.all_keys])

    @cached_property
    def capacity_vector(self) -> np.ndarray:
        return np.array([self.capacity.get(k, np.inf) for k in self.all_keys])

    def usage_vector(self, x) -> np.ndarray:
        """Per key of all_keys (rows, or the last axis for a stack of x)."""
        return self.fixed_vector + np.asarray(x, dtype=float) @ self.usage_matrix.T

    def vector(self, weights: tuple[tuple[float, ...], ...]) -> np.ndarray:
        return np.concatenate([np.asarray(w, dtype=float) for w in weights])


def natural_weights(keys: tuple[tuple[str, ...], ...],
                    available_tokens: dict[str, int]) -> tuple[tuple[float, ...], ...]:
    """Per phase, each key's share of the phase's available tokens."""
    weights = []
    for phase_keys in keys:
        tokens = [float(available_tokens.get(k, 0)) for k in phase_keys]
        if sum(tokens) <= 0:
            raise UserError(f"components {', '.join(phase_keys)} have no tokens available: check the mixture's "
                            "weight keys against `loom mix show`")
        weights.append(tuple(t / sum(tokens) for t in tokens))
    return tuple(weights)


def floored_prior(space: SearchSpace) -> np.ndarray:
    """The prior as x, each zero raised to PRIOR_FLOOR and each phase renormalized."""
    phases = [np.maximum(np.asarray(p, dtype=float), PRIOR_FLOOR) for p in space.prior]
    return np.concatenate([p / p.sum() for p in phases])


def quantize(space: SearchSpace, x) -> np.ndarray:
    """x realized in whole sequences: each phase's largest remainder to global_batch, / global_batch. Where the
    rounding (not x itself) pushed a key over its capacity, units of 1/global_batch move from it to the key of its
    phase with the most slack until it fits; UserError if none has room."""
    x = np.asarray(x, dtype=float)
    counts = [np.array(largest_remainder(list(np.clip(w, 0.0, None)), space.global_batch))
              for w in space.split(x)]
    within = space.usage_vector(x) <= space.capacity_vector + ROUNDING_TOLERANCE
    repaired = _repair(space, counts, within)
    return np.concatenate(repaired) / space.global_batch


def _repair(space: SearchSpace, counts: list[np.ndarray], within: np.ndarray) -> list[np.ndarray]:
    row = {key: i for i, key in enumerate(space.all_keys)}
    for _ in range(space.global_batch * len(counts) * 4):  # each move lowers an overrun; this bound is never met
        usage = space.usage_vector(np.concatenate(counts) / space.global_batch)
        over = within & (usage > space.capacity_vector + TOLERANCE)
        if not over.any():
            return counts
        key = space.all_keys[int(np.argmax(over))]
        move = _best_move(space, counts, key, space.capacity_vector - usage, row)
        if move is None:
            raise UserError(f"'{key}' cannot keep within its epoch cap once the weights are rounded to whole "
                            f"sequences of global_batch {space.global_batch}: raise global_batch or max_epochs")
        phase, giver, taker = move
        counts[phase][giver] -= 1
        counts[phase][taker] += 1
    raise UserError("rounding the weights to whole sequences did not settle: raise global_batch or max_epochs")


def _best_move(space, counts, key, slack, row) -> tuple[int, int, int] | None:
    """(phase, index of `key`, index of the receiver): the phase holding `key` whose other key has the most slack,
    enough for one more unit."""
    best, best_slack = None, -np.inf
    for p, (fraction, keys) in enumerate(zip(space.fractions, space.keys)):
        if key not in keys or counts[p][keys.index(key)] == 0:
            continue
        unit = fraction / space.global_batch
        for j, other in enumerate(keys):
            room = slack[row[other]]
            if other != key and room >= unit - TOLERANCE and room > best_slack:
                best, best_slack = (p, keys.index(key), j), room
    return best


@dataclass(frozen=True)
class Design:
    """How the proxies' mixtures are drawn. `sample(space, rng, count, concentration)`: up to `count` distinct,
    feasible, quantized mixtures (x), fewer only when the caps leave no more."""

    help: str
    sample: Callable[["SearchSpace", np.random.Generator, int, float], list[np.ndarray]]


def dirichlet(space: SearchSpace, rng, count: int, concentration: float) -> list[np.ndarray]:
    """Dirichlet draws around the (floored) prior, alpha = concentration x components x prior."""
    alphas = [concentration * len(p) * w for p, w in zip(space.prior, space.split(floored_prior(space)))]
    return distinct_feasible(space, rng, alphas, count, count * DRAWS_PER_DESIGN)


def spacefill(space: SearchSpace, rng, count: int, concentration: float) -> list[np.ndarray]:
    """A maximin pick from a pool of uniform draws, starting nearest the prior."""
    alphas = [np.ones(len(k)) for k in space.keys]
    pool = distinct_feasible(space, rng, alphas, None, max(MIN_CANDIDATES, count * SPACEFILL_CANDIDATES))
    return _maximin(pool, count, floored_prior(space))


DESIGNS = {
    "dirichlet": Design("around the prior", dirichlet),
    "spacefill": Design("spread over the whole simplex, within the caps", spacefill),
}


def sample_designs(space: SearchSpace, count: int, design: str = "dirichlet",
                   concentration: float = DEFAULT_CONCENTRATION, seed: int = 0) -> np.ndarray:
    """[count, dims]: feasible, quantized, pairwise distinct mixtures for the proxies (see DESIGNS)."""
    if design not in DESIGNS:
        raise UserError(f"unknown design '{design}'; use one of {', '.join(DESIGNS)}")
    if count < 1 or concentration <= 0:
        raise UserError(f"the design needs a positive count and concentration; got {count} and {concentration}")
    designs = DESIGNS[design].sample(space, np.random.default_rng(seed), count, concentration)
    if len(designs) < count:
        raise UserError(f"found only {len(designs)} distinct mixtures within the epoch caps of the {count} asked "
                        f"for: lower the count, or raise global_batch or max_epochs")
    return np.array(designs)


def distinct_feasible(space, rng, alphas, wanted: int | None, draws: int) -> list[np.ndarray]:
    """Distinct quantized feasible draws, in the order drawn: until `wanted` are found or `draws` are spent. A draw
    over a cap is pulled within the caps (pulled_within) rather than thrown away."""
    found, seen = [], set()
    batch = min(draws, 512)
    center = interior_point(space)
    for _ in range(0, draws, batch):
        candidates = np.concatenate([rng.dirichlet(a, size=batch) for a in alphas], axis=1)
        for x in pulled_within(space, candidates, center):
            if not (np.all(np.isfinite(x)) and space.feasible(x)):
                continue
            try:
                q = quantize(space, x)
            except UserError:
                continue
            signature = tuple(np.rint(q * space.global_batch).astype(int))
            if signature in seen or not space.feasible(q):
                continue
            seen.add(signature)
            found.append(q)
            if wanted is not None and len(found) == wanted:
                return found
    return found


def interior_point(space: SearchSpace) -> np.ndarray | None:
    """A mixture strictly within every cap to pull draws towards: the natural one, else the (floored) prior, else
    uniform weights; None when none is."""
    uniform_x = np.concatenate([np.full(len(k), 1.0 / len(k)) for k in space.keys])
    for x in (space.vector(space.natural), floored_prior(space), uniform_x):
        if np.all(space.usage_vector(x) < space.capacity_vector - TOLERANCE):
            return x
    return None


def pulled_within(space: SearchSpace, candidates: np.ndarray, center: np.ndarray | None) -> np.ndarray:
    """Each candidate over a cap moved along the line to `center` until it is within every cap (on the nearest
    cap's boundary). Over tens of components with caps of a few natural shares almost every uniform draw is over
    some cap: rejecting them would leave no designs, and the moved ones keep their direction from the center.
    The line stays on each phase's simplex (a convex combination of two points on it)."""
    if center is None:
        return candidates
    usage, at_center = space.usage_vector(candidates), space.usage_vector(center)
    capacity = space.capacity_vector
    with np.errstate(divide="ignore", invalid="ignore"):
        reach = np.where(usage > capacity, (capacity - at_center) / (usage - at_center), 1.0)
    step = np.clip(reach.min(axis=1), 0.0, 1.0)[:, None]
    return np.where(step < 1, center + step * (1 - 1e-9) * (candidates - center), candidates)


def _maximin(pool: list[np.ndarray], count: int, prior: np.ndarray) -> list[np.ndarray]:
    """Greedy farthest-point selection from the pool, starting from the candidate nearest the prior."""
    if not pool:
        return []
    points = np.array(pool)
    chosen = [int(np.argmin(np.linalg.norm(points - prior, axis=1)))]
    nearest = np.linalg.norm(points - points[chosen[0]], axis=1)
    while len(chosen) < min(count, len(points)):
        chosen.append(int(np.argmax(nearest)))
        nearest = np.minimum(nearest, np.linalg.norm(points - points[chosen[-1]], axis=1))
    return [points[i] for i in chosen]


def proportional(space: SearchSpace) -> np.ndarray:
    return quantize(space, space.vector(space.natural))


def uniform(space: SearchSpace) -> np.ndarray:
    """Equal weights in each phase; may be over a cap (the caller checks `feasible`)."""
    return quantize(space, np.concatenate([np.full(len(k), 1.0 / len(k)) for k in space.keys]))


def unimax(space: SearchSpace) -> np.ndarray:
    """Per searched phase in order, its tokens water-filled across its keys against what each key has left
    (capacity - fixed - what earlier searched phases took)."""
    remaining = dict(zip(space.all_keys, space.capacity_vector - space.fixed_vector))
    phases = []
    for name, fraction, keys in zip(space.phases, space.fractions, space.keys):
        tokens = _water_fill([max(remaining[k], 0.0) for k in keys], fraction, name)
        for key, t in zip(keys, tokens):
            remaining[key] -= t
        phases.append(np.array(tokens) / fraction)
    return quantize(space, np.concatenate(phases))


def _water_fill(room: list[float], budget: float, phase: str) -> list[float]:
    """An equal share of `budget` to each key, none above its room, what a full key cannot take spread evenly
    over the others."""
    if sum(room) < budget * (1 - 1e-12):
        raise UserError(f"phase '{phase}': its components' epoch caps cover less than its tokens; raise max_epochs "
                        "or lower the budget")
    given = [0.0] * len(room)
    left, open_keys = budget, len(room)
    for i in sorted(range(len(room)), key=lambda i: room[i]):
        share = left / open_keys
        given[i] = min(room[i], share)
        left -= given[i]
        open_keys -= 1
    return given
