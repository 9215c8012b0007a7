"""The mixture `loom mix search` proposes: the x minimizing the surrogate's predicted objective plus a KL pull
towards the prior, each searched phase's weights on its simplex and every component within its epoch cap.

SLSQP runs from the prior, the caller's starts and a few random feasible points; the best feasible answer wins
and is rounded to whole sequences (search_space.quantize), which may move it by one sequence per key. The prior in
the KL has its zeros floored (search_space.floored_prior), so the search may still add a component it left out.
"""

import numpy as np

from base.errors import UserError
from sweeps.search_space import ROUNDING_TOLERANCE, SearchSpace, floored_prior, quantize
from sweeps.surrogate import Surrogate

RANDOM_STARTS = 4
RANDOM_SEED = 0
LOG_FLOOR = 1e-12  # where a weight is 0, its KL term's gradient is taken here (0 log 0 = 0 itself)
MAX_ITERATIONS = 500


def optimize(space: SearchSpace, surrogate: Surrogate, weights, kl_weight: float, starts=(), bounds=None) -> np.ndarray:
    """The quantized x minimizing objective(surrogate.predict(x)) + kl_weight * kl_to_prior(x) within the caps and
    `bounds` (a (low, high) per weight; default 0 to 1)."""
    if kl_weight < 0:
        raise UserError(f"the KL weight must be at least 0; got {kl_weight}")
    from scipy.optimize import minimize  # on first use (sweeps/robust.py says why)

    weights = np.asarray(weights, dtype=float)
    weights = weights / weights.sum()
    prior = floored_prior(space)

    def penalized(x):
        value = float(surrogate.predict(x) @ weights) + kl_weight * _kl(space, x, prior)
        gradient = weights @ surrogate.jacobian(x) + kl_weight * _kl_gradient(space, x, prior)
        return value, gradient

    answers = []
    box = list(bounds) if bounds is not None else [(0.0, 1.0)] * space.dims
    for x0 in _starts(space, starts):
        result = minimize(penalized, x0, jac=True, method="SLSQP", bounds=box,
                          constraints=_constraints(space), options={"maxiter": MAX_ITERATIONS, "ftol": 1e-12})
        if _within(space, result.x):
            answers.append((float(penalized(result.x)[0]), result.x))
    if not answers:
        raise UserError("no mixture keeps every component within its epoch cap: raise max_epochs or lower the "
                        "budget")
    return quantize(space, min(answers, key=lambda a: a[0])[1])


def kl_to_prior(space: SearchSpace, x) -> float:
    """sum over searched phases of fraction_p * KL(w_p || prior_p), the prior's zeros floored."""
    return _kl(space, np.asarray(x, dtype=float), floored_prior(space))


def _kl(space: SearchSpace, x: np.ndarray, prior: np.ndarray) -> float:
    w = np.clip(x, 0.0, None)
    terms = np.where(w > 0, w * np.log(np.maximum(w, LOG_FLOOR) / prior), 0.0)
    return float(_phase_fractions(space) @ terms)


def _kl_gradient(space: SearchSpace, x: np.ndarray, prior: np.ndarray) -> np.ndarray:
    w = np.maximum(x, LOG_FLOOR)
    return _phase_fractions(space) * (np.log(w / prior) + 1.0)


def _phase_fractions(space: SearchSpace) -> np.ndarray:
    """Each coordinate of x's phase fraction."""
    return np.concatenate([np.full(len(k), f) for f, k in zip(space.fractions, space.keys)])


def _constraints(space: SearchSpace) -> list[dict]:
    """Each phase sums to 1; every capped key's usage is at most its capacity (both linear in x)."""
    constraints = []
    offset = 0
    for keys in space.keys:
        row = np.zeros(space.dims)
        row[offset:offset + len(keys)] = 1.0
        constraints.append({"type": "eq", "fun": lambda x, r=row: r @ x - 1.0, "jac": lambda x, r=row: r})
        offset += len(keys)
    capped = np.isfinite(space.capacity_vector)
    if capped.any():
        matrix = space.usage_matrix[capped]
        room = space.capacity_vector[capped] - space.fixed_vector[capped]
        constraints.append({"type": "ineq", "fun": lambda x: room - matrix @ x, "jac": lambda x: -matrix})
    return constraints


def _within(space: SearchSpace, x: np.ndarray) -> bool:
    sums = np.array([w.sum() for w in space.split(x)])
    return (np.all(np.isfinite(x)) and np.all(x >= -ROUNDING_TOLERANCE) and np.allclose(sums, 1.0, atol=1e-6)
            and bool(np.all(space.usage_vector(x) <= space.capacity_vector + ROUNDING_TOLERANCE)))


def _starts(space: SearchSpace, given) -> list[np.ndarray]:
    """The prior, the caller's starts, then random feasible points (seeded: the answer is the same every run)."""
    starts = [space.vector(space.prior)] + [np.asarray(s, dtype=float) for s in given]
    rng = np.random.default_rng(RANDOM_SEED)
    for _ in range(RANDOM_STARTS * 50):
        if len(starts) >= 1 + len(given) + RANDOM_STARTS:
            break
        x = np.concatenate([rng.dirichlet(np.ones(len(k))) for k in space.keys])
        if space.feasible(x):
            starts.append(x)
    return starts
