"""Scaling-law fits for `loom ladder`: the final loss of a ladder of runs as a power law in compute,
L(C) = l_inf + a * C^-alpha (l_inf free or pinned), and Chinchilla's approach 3, L(N, D) = E + A/N^alpha + B/D^beta
(sweeps.chinchilla), each with an interval for a prediction (sweeps.intervals).

Both are fitted as Hoffmann et al. (2022) did: a Huber loss (delta 1e-3) on residuals in log-loss space,
log L_pred - log L_obs, minimized from a grid of starts, the best kept. Compute is normalized by its geometric mean
while fitting, so that C from 1e9 to 1e24 is numerically alike; parameters are reported in original units.
"""

from dataclasses import dataclass, field
from itertools import product

import numpy as np

from sweeps import intervals
from sweeps.chinchilla import (Chinchilla, fit_chinchilla, held_out_point, identifiability, interval_for_ladder,
                               varies_independently)
from sweeps.robust import (REFIT_STEPS, as_positive, best_of, check_enough, check_points, huber_batch,
                           no_interval_reason, scalar_or_array)

__all__ = ["Chinchilla", "PowerLaw", "fit_chinchilla", "fit_power_law", "held_out_point", "identifiability",
           "interval_for_ladder", "relative_error", "varies_independently"]

ALPHA_BOUNDS = (1e-6, 10.0)
LOG_A_BOUNDS = (-100.0, 100.0)  # of the coefficient in normalized compute, where it is of the order of the loss


@dataclass(frozen=True)
class PowerLaw:
    """L(C) = l_inf + a * C^-alpha, fitted to `n_points` rungs. `residual_scale` is sigma in log-loss, after the
    noise floor. The interval is for the curve (where the mean of many runs at C would land); pass run_noise=True
    for where one more measured run would land (the curve's uncertainty and one run's noise together)."""
    l_inf: float
    a: float
    alpha: float
    pinned: bool
    n_points: int
    dof: int
    residual_scale: float
    compute_ref: float  # the points' geometric mean compute, the unit the fit worked in
    huber_delta: float
    noise_floor: float
    interval_method: str = intervals.STUDENT_T
    covariance: np.ndarray | None = field(default=None, repr=False, compare=False)  # of free_params()
    refits: np.ndarray | None = field(default=None, repr=False, compare=False)  # bootstrap, rows of (log_a, alpha, l)
    no_interval_reason: str | None = None

    def __call__(self, compute):
        return scalar_or_array(np.exp(self._log_loss(as_positive(compute, "compute"), self._normalized())[0]))

    def interval(self, compute, confidence: float = 0.9, run_noise: bool = False):
        """Lower and upper loss at `compute` (a number or an array), or None (see no_interval_reason)."""
        intervals.check_confidence(confidence)
        c = as_positive(compute, "compute")
        if self.interval_method == intervals.BOOTSTRAP:
            lower, upper = self._bootstrap_band(c, confidence, run_noise)
        elif self.covariance is None:
            return None
        else:
            log_pred, gradient = self._log_loss(c, self._normalized())
            gradient = gradient if not self.pinned else gradient[..., :2]
            lower, upper = intervals.student_t(log_pred, gradient, self.covariance, self.dof, confidence,
                                               self.residual_scale ** 2 if run_noise else 0.0)
        return scalar_or_array(np.exp(lower)), scalar_or_array(np.exp(upper))

    def to_json(self) -> dict:
        return {"law": "l_inf + a * C^-alpha", "l_inf": float(self.l_inf), "a": float(self.a),
                "alpha": float(self.alpha), "pinned": self.pinned, "n_points": self.n_points, "dof": self.dof,
                "residual_scale": float(self.residual_scale), "noise_floor": float(self.noise_floor),
                "huber_delta": float(self.huber_delta), "compute_ref": float(self.compute_ref),
                "interval_method": self.interval_method, "no_interval_reason": self.no_interval_reason}

    def _normalized(self) -> np.ndarray:
        """(log a', alpha, l_inf) with a' the coefficient in compute / compute_ref."""
        return np.array([np.log(self.a) - self.alpha * np.log(self.compute_ref), self.alpha, self.l_inf])

    def _log_loss(self, compute: np.ndarray, theta: np.ndarray):
        return power_log_loss(theta, np.log(compute / self.compute_ref))

    def _bootstrap_band(self, compute, confidence, run_noise):
        log_x = np.log(compute / self.compute_ref)
        log_preds = np.stack([power_log_loss(theta, log_x)[0] for theta in self.refits])
        return intervals.bootstrap_band(log_preds, confidence, self.residual_scale if run_noise else 0.0)


def fit_power_law(compute, loss, l_inf: float | None = None, huber_delta: float = 1e-3,
                  noise_floor: float = 0.002, interval: str = intervals.STUDENT_T) -> PowerLaw:
    """Fit L(C) = l_inf + a * C^-alpha to the rungs' (compute, final loss); l_inf given pins it (2 parameters)."""
    compute, loss = check_points({"compute": compute, "loss": loss})
    pinned = l_inf is not None
    n_params = 2 if pinned else 3
    check_enough(len(loss), n_params, "a power law with l_inf pinned" if pinned else
                 "a power law with l_inf free", "" if pinned else " or pin l_inf", spare=0)
    if len(np.unique(compute)) < n_params:
        raise ValueError(f"the rungs span {len(np.unique(compute))} different compute value(s) and a power law with "
                         f"{n_params} parameters needs at least {n_params}: give the rungs different sizes")
    if pinned:
        check_pinned(l_inf, loss)
    intervals.check_method(interval, len(loss))
    compute_ref = float(np.exp(np.mean(np.log(compute))))
    log_x, log_loss = np.log(compute / compute_ref), np.log(loss)
    theta, residuals, jacobian = fit_power_normalized(log_x, log_loss, l_inf, huber_delta)
    dof = len(loss) - n_params
    sigma = intervals.residual_scale(residuals, dof, noise_floor)
    cov = intervals.covariance(jacobian, sigma) if dof > 0 else None
    refits = None
    if interval == intervals.BOOTSTRAP:
        refits = bootstrap_power(log_x, log_loss, l_inf, huber_delta, theta, n_params)
    log_a, alpha, l_fit = theta
    return PowerLaw(l_inf=float(l_fit), a=float(np.exp(log_a + alpha * np.log(compute_ref))), alpha=float(alpha),
                    pinned=pinned, n_points=len(loss), dof=dof, residual_scale=sigma, compute_ref=compute_ref,
                    huber_delta=huber_delta, noise_floor=noise_floor, interval_method=interval, covariance=cov,
                    refits=refits, no_interval_reason=no_interval_reason(dof, cov, interval))


def power_log_loss(theta: np.ndarray, log_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log(l + exp(log_a) * x^-alpha) and its gradient in (log_a, alpha, l), one row per point."""
    log_a, alpha, l_inf = theta
    term = np.exp(log_a - alpha * log_x)
    pred = l_inf + term
    gradient = np.stack([term / pred, -term * log_x / pred, 1.0 / pred], axis=-1)
    return np.log(pred), gradient


def fit_power_normalized(log_x, log_loss, l_inf, huber_delta):
    """The best of a grid of starts: (log_a, alpha, l_inf) in normalized compute, the residuals and the Jacobian
    of the free parameters at the optimum."""
    pinned = l_inf is not None
    l_max = float(np.exp(log_loss.min()))
    mean_loss = float(np.exp(log_loss.mean()))
    fractions = (0.0,) if pinned else (0.0, 0.6, 0.9)
    starts = [(np.log(mean_loss - (l_inf if pinned else f * l_max)), alpha, f * l_max)
              for alpha, f in product((0.1, 0.3, 0.8), fractions)]
    lower = [LOG_A_BOUNDS[0], ALPHA_BOUNDS[0]] + ([] if pinned else [0.0])
    upper = [LOG_A_BOUNDS[1], ALPHA_BOUNDS[1]] + ([] if pinned else [l_max * (1 - 1e-9)])
    n_free = len(lower)

    def full(free):
        return np.append(free, l_inf) if pinned else free

    def residuals(free):
        return power_log_loss(full(free), log_x)[0] - log_loss

    def jacobian(free):
        return power_log_loss(full(free), log_x)[1][:, :n_free]

    best = best_of(residuals, jacobian, [np.asarray(s)[:n_free] for s in starts], (lower, upper), huber_delta,
                   batch=(batch_power_model(log_x, l_inf), log_loss))
    return full(best), residuals(best), jacobian(best)


def batch_power_model(log_x, l_inf):
    """Predicted log-loss (B, M) and its Jacobian in the free parameters (B, M, 2 or 3) for rows of them."""
    def model(free):
        full = free if l_inf is None else np.column_stack([free, np.full(len(free), l_inf)])
        log_pred, gradient = power_log_loss(full.T[:, :, None], log_x)
        return log_pred, gradient[..., :free.shape[1]]
    return model


def bootstrap_power(log_x, log_loss, l_inf, huber_delta, theta, n_params) -> np.ndarray:
    """Refits on resampled rungs (seeded, so the band is the same every time), all at once, each started at the
    full fit; a resample is the rungs weighted by how often each was drawn."""
    draws = intervals.resamples(len(log_x), n_params, intervals.BOOTSTRAP_RESAMPLES, intervals.BOOTSTRAP_SEED)
    weights = np.array([np.bincount(index, minlength=len(log_x)) for index in draws], dtype=float)
    free = theta[:n_params]
    lower = np.array([LOG_A_BOUNDS[0], ALPHA_BOUNDS[0], 0.0][:n_params])
    upper = np.tile([LOG_A_BOUNDS[1], ALPHA_BOUNDS[1], 0.0][:n_params], (len(draws), 1))
    if l_inf is None:  # l_inf below each resample's lowest loss
        upper[:, 2] = np.exp(np.where(weights > 0, log_loss, np.inf).min(axis=1)) * (1 - 1e-9)
    refits, _ = huber_batch(batch_power_model(log_x, l_inf), np.tile(free, (len(draws), 1)), log_loss, weights,
                            (lower, upper), huber_delta, REFIT_STEPS)
    return refits if l_inf is None else np.column_stack([refits, np.full(len(refits), l_inf)])


def relative_error(predicted: float, measured: float) -> float:
    """(predicted - measured) / measured: positive when the prediction was pessimistic."""
    return (float(predicted) - float(measured)) / float(measured)


def check_pinned(l_inf: float, loss: np.ndarray) -> None:
    if not np.isfinite(l_inf) or l_inf < 0 or l_inf >= loss.min():
        raise ValueError(f"a pinned l_inf must be at least 0 and below the lowest loss ({loss.min():.4g}); got "
                         f"{l_inf}: pin a smaller irreducible loss or leave it free")
