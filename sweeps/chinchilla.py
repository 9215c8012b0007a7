"""Chinchilla's approach 3 (Hoffmann et al. 2022): L(N, D) = E + A/N^alpha + B/D^beta over parameters N and
training tokens D, fitted in their log-sum-exp form, log L = LSE(e, a - alpha log N, b - beta log D), with a Huber
loss on log-loss residuals from a grid of starts. N and D are normalized by their geometric means while fitting.

Five parameters need rungs whose N and D vary independently: `identifiability` says when they do not (a ladder at
one tokens-per-parameter ratio lies on one line in (log N, log D), where the two terms cannot be told apart). A
ladder with cooldowns gives several points (N, D) per size, which do.

A prediction's interval is Student-t (delta method) or a bootstrap over the points (`interval_for_ladder` says
which a ladder's points get, and why); `held_out_point` is the honesty check's point. From the fitted law come the
compute-optimal N and D at a compute C = 6 N D and the law of the loss along them, L(C) = E + K C^-gamma
(`Chinchilla.compute_optimal`, `Chinchilla.frontier`).
"""

from dataclasses import dataclass, field
from itertools import product

import numpy as np

from sweeps import intervals
from sweeps.robust import (REFIT_STEPS, as_positive, best_of, check_enough, check_points, huber_batch,
                           no_interval_reason, scalar_or_array)

N_PARAMS = 5
MIN_DISTINCT = 3  # values of N (and of D): with two, a term's coefficient and exponent are one number
MIN_SPREAD = 0.1  # sd of the points across their line in (ln N, ln D): below ~10%, they lie on one line
EXPONENT_BOUNDS = (1e-6, 10.0)
LOG_COEFFICIENT_BOUNDS = (-100.0, 100.0)
# Below ~2 points a parameter a bootstrap's resamples repeat the same few subsets: 6 points give a zero-width band,
# 7 one narrower than Student-t's.
BOOTSTRAP_MIN_POINTS = 2 * N_PARAMS


@dataclass(frozen=True)
class Chinchilla:
    """L(N, D) = e + a/N^alpha + b/D^beta (e is E, the irreducible loss), fitted to `n_points` points."""
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
    interval_method: str = intervals.STUDENT_T
    refits: np.ndarray | None = field(default=None, repr=False, compare=False)  # bootstrap: rows of normalized theta

    def __call__(self, parameters, tokens):
        n, d = as_positive(parameters, "parameters"), as_positive(tokens, "tokens")
        return scalar_or_array(np.exp(self._log_loss(n, d)[0]))

    def interval(self, parameters, tokens, confidence: float = 0.9, run_noise: bool = False):
        """Lower and upper loss at (parameters, tokens) by the fit's interval method, or None (see
        no_interval_reason); run_noise as in PowerLaw.interval."""
        intervals.check_confidence(confidence)
        n, d = as_positive(parameters, "parameters"), as_positive(tokens, "tokens")
        run_sigma = self.residual_scale if run_noise else 0.0
        if self.interval_method == intervals.BOOTSTRAP:
            log_n, log_d = np.broadcast_arrays(np.log(n / self.parameters_ref), np.log(d / self.tokens_ref))
            thetas = self.refits.T.reshape((N_PARAMS, len(self.refits)) + (1,) * log_n.ndim)
            lower, upper = intervals.bootstrap_band(chinchilla_log_loss(thetas, log_n, log_d)[0], confidence,
                                                    run_sigma)
        elif self.covariance is None:
            return None
        else:
            log_pred, gradient = self._log_loss(n, d)
            lower, upper = intervals.student_t(log_pred, gradient, self.covariance, self.dof, confidence,
                                               run_sigma ** 2)
        return scalar_or_array(np.exp(lower)), scalar_or_array(np.exp(upper))

    def compute_optimal(self, flops):
        """The compute-optimal (parameters, tokens, loss) at `flops` (a number or an array), with C = 6 N D:
        N_opt = G (C/6)^(beta/(alpha+beta)), G = (alpha a / (beta b))^(1/(alpha+beta)), D_opt = C / (6 N_opt)."""
        c = as_positive(flops, "flops")
        n_opt = self._frontier_scale() * (c / 6) ** (self.beta / (self.alpha + self.beta))
        d_opt = c / (6 * n_opt)
        return scalar_or_array(n_opt), scalar_or_array(d_opt), self(n_opt, d_opt)

    def frontier(self) -> "FrontierLaw":
        """L(C) along the compute-optimal frontier, exactly E + K C^-gamma: with N_opt and D_opt above, both terms
        fall as (C/6)^-gamma, gamma = alpha beta / (alpha + beta), so K = (a G^-alpha + b G^beta) 6^gamma."""
        g, gamma = self._frontier_scale(), self.alpha * self.beta / (self.alpha + self.beta)
        k = (self.a * g ** -self.alpha + self.b * g ** self.beta) * 6.0 ** gamma
        return FrontierLaw(l_inf=self.e, a=float(k), alpha=float(gamma))

    def to_json(self) -> dict:
        return {"law": "e + a/N^alpha + b/D^beta", "e": float(self.e), "a": float(self.a), "b": float(self.b),
                "alpha": float(self.alpha), "beta": float(self.beta), "n_points": self.n_points, "dof": self.dof,
                "residual_scale": float(self.residual_scale), "noise_floor": float(self.noise_floor),
                "huber_delta": float(self.huber_delta), "interval_method": self.interval_method,
                "no_interval_reason": self.no_interval_reason}

    def _frontier_scale(self) -> float:
        return (self.alpha * self.a / (self.beta * self.b)) ** (1 / (self.alpha + self.beta))

    def _log_loss(self, n, d):
        theta = np.array([np.log(self.e), np.log(self.a) - self.alpha * np.log(self.parameters_ref),
                          np.log(self.b) - self.beta * np.log(self.tokens_ref), self.alpha, self.beta])
        return chinchilla_log_loss(theta, np.log(n / self.parameters_ref), np.log(d / self.tokens_ref))


@dataclass(frozen=True)
class FrontierLaw:
    """L(C) = l_inf + a * C^-alpha on a Chinchilla fit's compute-optimal frontier (derived, not fitted: no
    interval of its own); to_json has PowerLaw's keys."""
    l_inf: float
    a: float
    alpha: float

    def __call__(self, compute):
        return scalar_or_array(self.l_inf + self.a * as_positive(compute, "compute") ** -self.alpha)

    def to_json(self) -> dict:
        return {"law": "l_inf + a * C^-alpha", "l_inf": float(self.l_inf), "a": float(self.a),
                "alpha": float(self.alpha), "derived_from": "e + a/N^alpha + b/D^beta at C = 6 N D"}


def fit_chinchilla(parameters, tokens, loss, huber_delta: float = 1e-3, noise_floor: float = 0.002,
                   interval: str = intervals.STUDENT_T) -> Chinchilla:
    """Fit approach 3 to the rungs' (parameters, tokens, final loss). Call identifiability first: this fits
    whatever it is given, and on points along one line its parameters mean little.

    interval: "student-t" (the delta method from the fit's Jacobian, t with points minus 5 degrees of freedom) or
    "bootstrap" (200 seeded resamples of the points, each refitted from the full fit's optimum, percentiles; 10
    points or more). A ladder should use interval_for_ladder(points)."""
    n, d, loss = check_points({"parameters": parameters, "tokens": tokens, "loss": loss})
    check_enough(len(loss), N_PARAMS, "Chinchilla's approach 3", ", or fit the power law in compute instead")
    intervals.check_method(interval, len(loss), BOOTSTRAP_MIN_POINTS, "points")
    n_ref, d_ref = (float(np.exp(np.mean(np.log(v)))) for v in (n, d))
    log_n, log_d, log_loss = np.log(n / n_ref), np.log(d / d_ref), np.log(loss)
    theta = fit_normalized(log_n, log_d, log_loss, huber_delta)
    residuals = chinchilla_log_loss(theta, log_n, log_d)[0] - log_loss
    dof = len(loss) - N_PARAMS
    sigma = intervals.residual_scale(residuals, dof, noise_floor)
    cov = intervals.covariance(chinchilla_log_loss(theta, log_n, log_d)[1], sigma) if dof > 0 else None
    refits = bootstrap(log_n, log_d, log_loss, huber_delta, theta) if interval == intervals.BOOTSTRAP else None
    e, a, b, alpha, beta = theta
    return Chinchilla(e=float(np.exp(e)), a=float(np.exp(a + alpha * np.log(n_ref))),
                      b=float(np.exp(b + beta * np.log(d_ref))), alpha=float(alpha), beta=float(beta),
                      n_points=len(loss), dof=dof, residual_scale=sigma, parameters_ref=n_ref, tokens_ref=d_ref,
                      huber_delta=huber_delta, noise_floor=noise_floor, covariance=cov,
                      no_interval_reason=no_interval_reason(dof, cov, interval), interval_method=interval,
                      refits=refits)


def fit_normalized(log_n, log_d, log_loss, huber_delta) -> np.ndarray:
    """(e, a, b, alpha, beta) in normalized N and D, the best of the grid of starts (scouted together)."""
    def residuals(theta):
        return chinchilla_log_loss(theta, log_n, log_d)[0] - log_loss

    def jacobian(theta):
        return chinchilla_log_loss(theta, log_n, log_d)[1]

    return best_of(residuals, jacobian, starts(np.exp(log_loss)), bounds(log_loss), huber_delta,
                   batch=(batch_model(log_n, log_d), log_loss))


def bootstrap(log_n, log_d, log_loss, huber_delta, theta) -> np.ndarray:
    """Refits on resampled points (seeded: the band is the same every time), all at once, each started at the full
    fit's optimum; a resample is the points weighted by how often each was drawn."""
    draws = intervals.resamples(len(log_loss), N_PARAMS, intervals.BOOTSTRAP_RESAMPLES, intervals.BOOTSTRAP_SEED)
    weights = np.array([np.bincount(index, minlength=len(log_loss)) for index in draws], dtype=float)
    lower, upper = bounds(log_loss)
    upper = np.tile(upper, (len(draws), 1))
    upper[:, 0] = np.where(weights > 0, log_loss, np.inf).min(axis=1) - 1e-9  # E below each resample's lowest loss
    refits, _ = huber_batch(batch_model(log_n, log_d), np.tile(theta, (len(draws), 1)), log_loss, weights,
                            (lower, upper), huber_delta, REFIT_STEPS)
    return refits


def bounds(log_loss) -> tuple[np.ndarray, np.ndarray]:
    """e below the lowest loss, coefficients and exponents within wide bounds."""
    upper_e = float(log_loss.min()) - 1e-9
    return (np.array([-50.0, LOG_COEFFICIENT_BOUNDS[0], LOG_COEFFICIENT_BOUNDS[0], EXPONENT_BOUNDS[0],
                      EXPONENT_BOUNDS[0]]),
            np.array([upper_e, LOG_COEFFICIENT_BOUNDS[1], LOG_COEFFICIENT_BOUNDS[1], EXPONENT_BOUNDS[1],
                      EXPONENT_BOUNDS[1]]))


def batch_model(log_n, log_d):
    """Predicted log-loss (B, M) and its Jacobian (B, M, 5) for rows of parameters (B, 5)."""
    return lambda thetas: chinchilla_log_loss(thetas.T[:, :, None], log_n, log_d)


def interval_for_ladder(n_points: int) -> str:
    """The interval a ladder's points should get: the bootstrap where there are enough points for it, else
    Student-t. Measured on synthetic ladders (4-5 sizes x 3 budgets, 0.2-0.5% noise, 50 repeats each;
    bench/scaling_fit.py, bench/README.md): the bootstrap's 90% band held the truth at 10x the largest size in 90-96%
    of ladders in every shape, Student-t's in 84-100% (below nominal with 5 sizes at 0.3-0.5% noise: its
    linearization, and the near-L1 Huber fit's residuals), the bootstrap 10-45% wider. Both meet the issue's +-5%
    goal there; the bootstrap is the one whose "90%" held everywhere, for ~50 ms more a fit."""
    return intervals.BOOTSTRAP if n_points >= BOOTSTRAP_MIN_POINTS else intervals.STUDENT_T


def held_out_point(parameters, tokens) -> int:
    """The index of the point an honesty check holds out: the largest N, at its largest D (the point furthest
    along both axes, nearest what the fit is for)."""
    n, d = check_points({"parameters": parameters, "tokens": tokens})
    largest = np.flatnonzero(n == n.max())
    return int(largest[np.argmax(d[largest])])


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
