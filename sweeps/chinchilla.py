"""Chinchilla's approach 3 (Hoffmann et al. 2022): L(N, D) = E + A/N^alpha + B/D^beta over parameters N and
training tokens D, fitted in their log-sum-exp form, log L = LSE(e, a - alpha log N, b - beta log D), with a Huber
loss on log-loss residuals from a grid of starts. N and D are normalized by their geometric means while fitting.

Five parameters need rungs whose N and D vary independently: `identifiability` says when they do not (a ladder at
one tokens-per-parameter ratio lies on one line in (log N, log D), where the two terms cannot be told apart).
"""

from dataclasses import dataclass, field
from itertools import product

import numpy as np

from sweeps import intervals
from sweeps.robust import as_positive, best_of, check_enough, check_points, no_interval_reason, scalar_or_array

N_PARAMS = 5
MIN_DISTINCT = 3  # values of N (and of D): with two, a term's coefficient and exponent are one number
MIN_SPREAD = 0.1  # sd of the points across their line in (ln N, ln D): below ~10%, they lie on one line
EXPONENT_BOUNDS = (1e-6, 10.0)
LOG_COEFFICIENT_BOUNDS = (-100.0, 100.0)


@dataclass(frozen=True)
class Chinchilla:
    """L(N, D) = e + a/N^alpha + b/D^beta (e is E, the irreducible loss), fitted to `n_points` rungs."""
    e: float
    a: float
    b: float
    alpha: float
    beta: float
    n_points: int
    dof: int
    residual_scale: float  # sigma in log-loss, after the noise floor
    parameters_ref: float
    tokens_ref: float
    huber_delta: float
    noise_floor: float
    covariance: np.ndarray | None = field(default=None, repr=False, compare=False)
    no_interval_reason: str | None = None

    def __call__(self, parameters, tokens):
        n, d = as_positive(parameters, "parameters"), as_positive(tokens, "tokens")
        return scalar_or_array(np.exp(self._log_loss(n, d)[0]))

    def interval(self, parameters, tokens, confidence: float = 0.9, run_noise: bool = False):
        """Student-t lower and upper loss at (parameters, tokens), or None (see no_interval_reason); run_noise as
        in PowerLaw.interval."""
        intervals.check_confidence(confidence)
        if self.covariance is None:
            return None
        n, d = as_positive(parameters, "parameters"), as_positive(tokens, "tokens")
        log_pred, gradient = self._log_loss(n, d)
        lower, upper = intervals.student_t(log_pred, gradient, self.covariance, self.dof, confidence,
                                           self.residual_scale ** 2 if run_noise else 0.0)
        return scalar_or_array(np.exp(lower)), scalar_or_array(np.exp(upper))

    def to_json(self) -> dict:
        return {"law": "e + a/N^alpha + b/D^beta", "e": float(self.e), "a": float(self.a), "b": float(self.b),
                "alpha": float(self.alpha), "beta": float(self.beta), "n_points": self.n_points, "dof": self.dof,
                "residual_scale": float(self.residual_scale), "noise_floor": float(self.noise_floor),
                "huber_delta": float(self.huber_delta), "interval_method": intervals.STUDENT_T,
                "no_interval_reason": self.no_interval_reason}

    def _log_loss(self, n, d):
        theta = np.array([np.log(self.e), np.log(self.a) - self.alpha * np.log(self.parameters_ref),
                          np.log(self.b) - self.beta * np.log(self.tokens_ref), self.alpha, self.beta])
        return chinchilla_log_loss(theta, np.log(n / self.parameters_ref), np.log(d / self.tokens_ref))


def fit_chinchilla(parameters, tokens, loss, huber_delta: float = 1e-3, noise_floor: float = 0.002) -> Chinchilla:
    """Fit approach 3 to the rungs' (parameters, tokens, final loss). Call identifiability first: this fits
    whatever it is given, and on points along one line its parameters mean little."""
    n, d, loss = check_points({"parameters": parameters, "tokens": tokens, "loss": loss})
    check_enough(len(loss), N_PARAMS, "Chinchilla's approach 3", ", or fit the power law in compute instead")
    n_ref, d_ref = (float(np.exp(np.mean(np.log(v)))) for v in (n, d))
    log_n, log_d, log_loss = np.log(n / n_ref), np.log(d / d_ref), np.log(loss)

    def residuals(theta):
        return chinchilla_log_loss(theta, log_n, log_d)[0] - log_loss

    def jacobian(theta):
        return chinchilla_log_loss(theta, log_n, log_d)[1]

    upper_e = np.log(loss.min()) - 1e-9
    bounds = ([-50.0, LOG_COEFFICIENT_BOUNDS[0], LOG_COEFFICIENT_BOUNDS[0], EXPONENT_BOUNDS[0], EXPONENT_BOUNDS[0]],
              [upper_e, LOG_COEFFICIENT_BOUNDS[1], LOG_COEFFICIENT_BOUNDS[1], EXPONENT_BOUNDS[1], EXPONENT_BOUNDS[1]])
    theta = best_of(residuals, jacobian, starts(loss), bounds, huber_delta)
    dof = len(loss) - N_PARAMS
    sigma = intervals.residual_scale(residuals(theta), dof, noise_floor)
    cov = intervals.covariance(jacobian(theta), sigma) if dof > 0 else None
    e, a, b, alpha, beta = theta
    return Chinchilla(e=float(np.exp(e)), a=float(np.exp(a + alpha * np.log(n_ref))),
                      b=float(np.exp(b + beta * np.log(d_ref))), alpha=float(alpha), beta=float(beta),
                      n_points=len(loss), dof=dof, residual_scale=sigma, parameters_ref=n_ref, tokens_ref=d_ref,
                      huber_delta=huber_delta, noise_floor=noise_floor, covariance=cov,
                      no_interval_reason=no_interval_reason(dof, cov, intervals.STUDENT_T))


def chinchilla_log_loss(theta, log_n, log_d) -> tuple[np.ndarray, np.ndarray]:
    """LSE(e, a - alpha log n, b - beta log d) and its gradient in (e, a, b, alpha, beta), one row per point."""
    e, a, b, alpha, beta = theta
    log_n, log_d = np.broadcast_arrays(log_n, log_d)
    terms = np.stack(np.broadcast_arrays(e, a - alpha * log_n, b - beta * log_d), axis=-1)
    top = terms.max(axis=-1, keepdims=True)
    weights = np.exp(terms - top)
    total = weights.sum(axis=-1, keepdims=True)
    shares = weights / total  # each term's share of the predicted loss
    log_pred = (top + np.log(total))[..., 0]
    gradient = np.concatenate([shares, -shares[..., 1:2] * log_n[..., None], -shares[..., 2:3] * log_d[..., None]],
                              axis=-1)
    return log_pred, gradient


def starts(loss: np.ndarray) -> list[tuple]:
    """36 starts: E a share of the lowest loss, the rest of the mean loss split between the two terms, and a few
    exponents each (in normalized N and D, a term's coefficient is its value at the mean rung)."""
    lowest, mean = float(loss.min()), float(np.exp(np.mean(np.log(loss))))
    grid = []
    for e_share, n_share, alpha, beta in product((0.3, 0.6, 0.9), (0.25, 0.5, 0.75), (0.25, 0.6), (0.25, 0.6)):
        e = e_share * lowest
        grid.append((np.log(e), np.log(n_share * (mean - e)), np.log((1 - n_share) * (mean - e)), alpha, beta))
    return grid


def identifiability(parameters, tokens) -> str | None:
    """None when approach 3 can be fitted to these rungs; else why not, in one line naming the fix."""
    n, d = check_points({"parameters": parameters, "tokens": tokens})
    if len(n) < N_PARAMS + 1:
        return (f"approach 3 has {N_PARAMS} parameters and needs at least {N_PARAMS + 1} rungs; got {len(n)}: "
                f"add rungs")
    if min(len(np.unique(n)), len(np.unique(d))) < MIN_DISTINCT:
        return (f"approach 3 needs at least {MIN_DISTINCT} different sizes and {MIN_DISTINCT} different token "
                f"counts; got {len(np.unique(n))} and {len(np.unique(d))}: vary both across the rungs")
    points = np.column_stack([np.log(n), np.log(d)])
    across = np.linalg.svd(points - points.mean(axis=0), compute_uv=False)[-1] / np.sqrt(len(n))
    if across < MIN_SPREAD:
        return ("the rungs lie on one line in (log parameters, log tokens), e.g. one tokens-per-parameter ratio, "
                "so the size and data terms cannot be told apart: train some sizes at 2-3 token budgets")
    return None


def varies_independently(parameters, tokens) -> bool:
    """Whether the rungs' sizes and token counts vary independently enough to fit approach 3's five parameters."""
    return identifiability(parameters, tokens) is None
