"""Surrogates for `loom mix search`: one law per metric (a per-source validation loss or an evaluation set's loss)
as a function of the mixture x, fitted to the proxies, and how far to trust them: each proxy's objective predicted
by a fit on the others (leave-one-out, ranked against the measured ones by Spearman), and a bootstrap interval.

"ridge" (sweeps/ridge.py) is the log-linear law with its slopes pulled together, for tens of weights with
about half as many proxies. "loglinear" is RegMix's and Olmix's mixing law, y = c + exp(t . x), 0 <= c < min(y), fitted with a Huber loss on
log-loss residuals from a grid of starts (sweeps.robust.best_of), as the ladder's laws are. "linear" is y = t . x by
least squares, with no intercept: each phase's weights sum to 1, so an intercept is already in t. With several
phases t is not unique (a constant added to one phase's t and taken from another's changes nothing); the
predictions are.

SURROGATES maps each `--surrogate` name to its law: help text, formulas, and how it is fitted, predicts and
differentiates (and, where a law needs other than one mixture more than its parameters, minimum_points and
resample_points). How to add a surrogate: a module with a class
like Linear below, and one line in SURROGATES.
"""

from dataclasses import dataclass, field

import numpy as np

from sweeps import intervals
from sweeps.ridge import RidgeLogLinear
from sweeps.robust import best_of

# A proxy's loss is noisy by a few tenths of a percent; a residual past 1% (log-loss) counts as an outlier (a
# diverged or mis-logged proxy) and weighs linearly, not quadratically.
HUBER_DELTA = 0.01
C_FRACTIONS = (0.0, 0.5, 0.8, 0.9, 0.95)  # starts: c as these fractions of min(y), t by least squares given c
T_BOUND = 50.0


class LogLinear:
    """y = c + exp(t . x), 0 <= c < min(y): Huber on log-loss residuals from a grid of starts."""

    help = "c + exp(t . w), RegMix's and Olmix's mixing law"
    law = "y = c + exp(t . x)"
    search_law = "L = c + exp(t . w)"  # as search.json and its page write it, over the weights w
    intercept = True  # a parameter besides one slope per weight
    positive = True  # fits positive losses only

    def fit(self, X, y, start=None) -> tuple[float, np.ndarray]:
        """(c, t); `start` (c, t) starts the fit instead of the grid."""
        return _fit_loglinear(X, y, None if start is None else [np.append(*start)])

    def predict(self, intercepts, slopes, X) -> np.ndarray:
        return intercepts + np.exp(np.asarray(X, dtype=float) @ slopes.T)

    def jacobian(self, intercepts, slopes, x) -> np.ndarray:
        return np.exp(slopes @ np.asarray(x, dtype=float))[:, None] * slopes


class Linear:
    """y = t . x by least squares, with no intercept."""

    help = "t . w, by least squares"
    law = "y = t . x"
    search_law = "L = t . w"
    intercept = False
    positive = False

    def fit(self, X, y, start=None) -> tuple[float, np.ndarray]:
        return 0.0, np.linalg.lstsq(X, y, rcond=None)[0]

    def predict(self, intercepts, slopes, X) -> np.ndarray:
        return np.asarray(X, dtype=float) @ slopes.T

    def jacobian(self, intercepts, slopes, x) -> np.ndarray:
        return slopes.copy()


SURROGATES = {"loglinear": LogLinear(), "linear": Linear(), "ridge": RidgeLogLinear()}


@dataclass(frozen=True, eq=False)  # its arrays have no one truth value to compare by
class Surrogate:
    """Per metric m: intercept c_m (0 without one), slopes t_m over x, and the residual scale of its fit (the rms
    of y_pred - y over the points' degrees of freedom). `model`: its name in SURROGATES."""
    model: str
    intercepts: np.ndarray = field(repr=False)  # [m]
    slopes: np.ndarray = field(repr=False)  # [m, dims]
    residual_scales: np.ndarray = field(repr=False)  # [m]
    n_points: int

    def predict(self, X) -> np.ndarray:
        """[n, m] for X [n, dims] (or [m] for one x)."""
        return SURROGATES[self.model].predict(self.intercepts, self.slopes, X)

    def jacobian(self, x) -> np.ndarray:
        """d predict(x) / dx, [m, dims], for one x."""
        return SURROGATES[self.model].jacobian(self.intercepts, self.slopes, x)

    def to_json(self) -> dict:
        metrics = [{"c": float(c), "t": [float(v) for v in t], "residual_scale": float(s)}
                   for c, t, s in zip(self.intercepts, self.slopes, self.residual_scales)]
        return {"model": self.model, "law": SURROGATES[self.model].law, "n_points": self.n_points,
                "metrics": metrics}


def minimum_points(model: str, dims: int) -> int:
    """The fewest mixtures the law fits with a residual left to measure: its parameters plus one, unless the law
    says otherwise (the ridge law needs fewer, sweeps/ridge.py)."""
    law = SURROGATES[model]
    return law.minimum_points(dims) if hasattr(law, "minimum_points") else dims + 1 + law.intercept


def resample_points(model: str, dims: int) -> int:
    """The fewest distinct mixtures a bootstrap resample needs: minimum_points unless the law says otherwise."""
    law = SURROGATES[model]
    return law.resample_points(dims) if hasattr(law, "resample_points") else minimum_points(model, dims)


def fit_surrogate(X, Y, model: str = "loglinear", starts: "Surrogate | None" = None) -> Surrogate:
    """One law per column of Y [n, m] over the rows of X [n, dims]. `starts`: a fit whose parameters start each
    metric's fit instead of the grid (refits on resampled points)."""
    X, Y = _check(X, Y, model)
    law = SURROGATES[model]
    intercepts, slopes, scales = [], [], []
    for m in range(Y.shape[1]):
        y = Y[:, m]
        c, t = law.fit(X, y, None if starts is None else (starts.intercepts[m], starts.slopes[m]))
        prediction = law.predict(c, t, X)  # t one metric's slopes: [n]
        dof = len(y) - minimum_points(model, X.shape[1]) + 1
        intercepts.append(c)
        slopes.append(t)
        scales.append(float(np.sqrt(np.sum((prediction - y) ** 2) / dof)))
    return Surrogate(model=model, intercepts=np.array(intercepts, dtype=float), slopes=np.array(slopes),
                     residual_scales=np.array(scales), n_points=len(X))


def _check(X, Y, model: str) -> tuple[np.ndarray, np.ndarray]:
    if model not in SURROGATES:
        raise ValueError(f"unknown surrogate '{model}'; use one of {', '.join(SURROGATES)}")
    X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
    Y = Y[:, None] if Y.ndim == 1 else Y
    if X.ndim != 2 or Y.ndim != 2 or len(X) != len(Y):
        raise ValueError(f"X must be [mixtures, weights] and Y [mixtures, metrics] with as many rows; got shapes "
                         f"{X.shape} and {Y.shape}")
    if not np.all(np.isfinite(X)) or not np.all(np.isfinite(Y)):
        raise ValueError("the mixtures and their losses must be finite: drop or rerun the proxies that diverged")
    needed = minimum_points(model, X.shape[1])
    if len(X) < needed:
        raise ValueError(f"a {model} surrogate over {X.shape[1]} weights needs at least {needed} mixtures; got "
                         f"{len(X)}: sample {needed - len(X)} more")
    if SURROGATES[model].positive and np.any(Y <= 0):
        raise ValueError(f"a {model} surrogate needs positive losses")
    return X, Y


def _fit_loglinear(X: np.ndarray, y: np.ndarray, starts=None) -> tuple[float, np.ndarray]:
    """(c, t) of y = c + exp(X t), Huber on log(prediction) - log(y), the best of the starts."""
    ceiling = float(y.min()) * (1 - 1e-9)
    log_y = np.log(y)
    if starts is None:
        starts = [np.append(f * y.min(), np.linalg.lstsq(X, np.log(y - f * y.min()), rcond=None)[0])
                  for f in C_FRACTIONS]

    def residuals(theta):
        return np.log(theta[0] + np.exp(X @ theta[1:])) - log_y

    def jacobian(theta):
        grown = np.exp(X @ theta[1:])
        prediction = theta[0] + grown
        return np.column_stack([1.0 / prediction, X * (grown / prediction)[:, None]])

    lower = np.append(0.0, np.full(X.shape[1], -T_BOUND))
    upper = np.append(ceiling, np.full(X.shape[1], T_BOUND))
    theta = best_of(residuals, jacobian, starts, (lower, upper), HUBER_DELTA)
    return float(theta[0]), theta[1:]


def objective(Y, weights) -> np.ndarray:
    """Each row's weighted mean of its metrics."""
    weights = np.asarray(weights, dtype=float)
    if weights.sum() <= 0 or np.any(weights < 0):
        raise ValueError(f"the objective's weights must be non-negative with a positive sum; got {weights}")
    return np.asarray(Y, dtype=float) @ weights / weights.sum()


def leave_one_out(X, Y, weights, model) -> np.ndarray:
    """Each row's objective predicted by a fit on all the other rows (each refit from the same grid of starts as
    a full fit: a start from the full fit would have seen the row it predicts). Metrics of weight 0 are skipped."""
    X, Y = _check(X, Y, model)
    used = np.asarray(weights, dtype=float) > 0
    predicted = []
    for i in range(len(X)):
        others = np.arange(len(X)) != i
        fit = fit_surrogate(X[others], Y[others][:, used], model)
        predicted.append(objective(fit.predict(X[i:i + 1]), np.asarray(weights)[used])[0])
    return np.array(predicted)


def spearman(a, b) -> float:
    """Rank correlation of a and b; nan when either is constant."""
    from scipy import stats  # on first use (sweeps/robust.py says why)

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"spearman needs two sequences of one length, at least 2; got {len(a)} and {len(b)}")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(stats.spearmanr(a, b).statistic)


def bootstrap_interval(X, Y, x, weights, model, confidence: float = 0.9, count: int = 200,
                       seed: int = 0) -> tuple[float, float]:
    """Lower and upper percentiles of the objective predicted at x by refits on resampled rows."""
    return bootstrap_intervals(X, Y, [x], weights, model, confidence, count, seed)[0]


def bootstrap_intervals(X, Y, points, weights, model, confidence: float = 0.9, count: int = 200,
                        seed: int = 0) -> list[tuple[float, float]]:
    """bootstrap_interval at each of `points` from one set of refits (seeded; a resample with fewer distinct rows
    than the law's resample_points is drawn again). Each refit starts from the full fit."""
    intervals.check_confidence(confidence)
    X, Y = _check(X, Y, model)
    used = np.asarray(weights, dtype=float) > 0
    Y, weights = Y[:, used], np.asarray(weights, dtype=float)[used]
    full = fit_surrogate(X, Y, model)
    points = np.asarray(points, dtype=float)
    predicted = []  # [refits, points]
    for index in intervals.resamples(len(X), resample_points(model, X.shape[1]) - 1, count, seed):
        try:
            refit = fit_surrogate(X[index], Y[index], model, starts=full)
        except ValueError:  # diverged from its start: the resample says nothing, not that the band is narrow
            continue
        predicted.append(objective(refit.predict(points), weights))
    if not predicted:
        raise ValueError(f"no bootstrap resample of {len(X)} mixtures could be fitted: sample more mixtures")
    lower, upper = intervals.percentile(np.array(predicted), confidence)
    return [(float(low), float(high)) for low, high in zip(lower, upper)]
