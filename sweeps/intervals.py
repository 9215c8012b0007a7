"""Intervals for a fitted curve's prediction, all in log-loss space: Student-t by the delta method from the fit's
Jacobian at the optimum, or percentiles of bootstrap refits over the rungs. Callers exponentiate the bounds.

The residual scale is floored (`noise_floor`): a fit through as many points as it has parameters plus one can be
exact, and a zero residual would claim a zero-width band. The floor stands for the run-to-run noise of a final
validation loss (default 0.002 in log-loss, about 0.2% of the loss at toy scale), below which no fit can know better.
"""

import numpy as np

STUDENT_T = "student-t"
BOOTSTRAP = "bootstrap"
METHODS = (STUDENT_T, BOOTSTRAP)
BOOTSTRAP_MIN_POINTS = 5
BOOTSTRAP_RESAMPLES = 200
BOOTSTRAP_SEED = 0


def residual_scale(residuals: np.ndarray, dof: int, noise_floor: float) -> float:
    """sigma of the log-loss residuals over the fit's degrees of freedom, never below the noise floor."""
    if dof <= 0:
        return float(noise_floor)
    return max(float(np.sqrt(np.sum(residuals ** 2) / dof)), float(noise_floor))


def covariance(jacobian: np.ndarray, sigma: float) -> np.ndarray | None:
    """The parameters' covariance sigma^2 (J^T J)^-1, or None when J^T J is singular (a parameter the points do not
    pin down). No pseudo-inverse: it would drop the unidentified directions and report a band too narrow."""
    information = jacobian.T @ jacobian
    if not np.all(np.isfinite(information)) or np.linalg.cond(information) > 1e14:
        return None
    return sigma ** 2 * np.linalg.inv(information)


def student_t(log_pred: np.ndarray, gradient: np.ndarray, cov: np.ndarray, dof: int, confidence: float,
              run_variance: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper log-loss bounds: log_pred -/+ t_{dof} * se, with se^2 = g^T Cov g (+ a new run's own noise
    variance when the interval is for one measured run rather than for the curve)."""
    from scipy import stats  # on first use (sweeps/robust.py says why)

    variance = np.einsum("...i,ij,...j->...", gradient, cov, gradient) + run_variance
    half = stats.t.ppf(0.5 + confidence / 2, dof) * np.sqrt(np.maximum(variance, 0.0))
    return log_pred - half, log_pred + half


def resamples(n_points: int, n_params: int, count: int, seed: int) -> list[np.ndarray]:
    """`count` bootstrap resamples of point indices (with replacement), each with at least n_params + 1 distinct
    points: a resample with fewer cannot be fitted with any residual left and is drawn again."""
    rng = np.random.default_rng(seed)
    drawn: list[np.ndarray] = []
    for _ in range(count * 20):  # bounded: with >= 5 points most draws are usable
        index = rng.integers(0, n_points, n_points)
        if len(np.unique(index)) >= n_params + 1:
            drawn.append(index)
            if len(drawn) == count:
                break
    return drawn


def percentile(log_preds: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper percentiles over the refits (axis 0) of their predicted log-loss."""
    tail = 100 * (1 - confidence) / 2
    return np.percentile(log_preds, tail, axis=0), np.percentile(log_preds, 100 - tail, axis=0)


def bootstrap_band(log_preds: np.ndarray, confidence: float, run_sigma: float = 0.0):
    """Percentile bounds over refits' predictions (axis 0); run_sigma > 0 adds one run's noise to each refit's
    prediction, drawn the same way every call (where one measured run would land, not the curve)."""
    if run_sigma > 0:
        noise = np.random.default_rng(BOOTSTRAP_SEED).normal(0.0, run_sigma, len(log_preds))
        log_preds = log_preds + noise.reshape((-1,) + (1,) * (np.ndim(log_preds) - 1))
    return percentile(log_preds, confidence)


def check_method(method: str, n_points: int, min_points: int = BOOTSTRAP_MIN_POINTS, what: str = "rungs") -> None:
    if method not in METHODS:
        raise ValueError(f"unknown interval method '{method}'; use one of {', '.join(METHODS)}")
    if method == BOOTSTRAP and n_points < min_points:
        raise ValueError(f"a bootstrap interval needs at least {min_points} {what}; got {n_points}: add {what} or "
                         f"use interval='student-t'")


def check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.9); got {confidence}")
