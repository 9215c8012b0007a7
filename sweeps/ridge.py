"""The "ridge" surrogate: the log-linear mixing law y = c + exp(t . x) with an L2 pull of the slopes t towards
their mean, for searches over tens of components (the cells of `loom mix search --over`) with about half as many
proxies as weights.

Why a penalty, and why this one. A plain log-linear law has one slope per weight plus c: over 24 cells it needs
26 proxies before it can leave a residual, and leave-one-out one more. Olmix (arXiv 2602.12237) finds the swarm must
grow about linearly with the number of domains; its own fit keeps the slopes small implicitly (gradient steps from
small starts, stopped early). Here the shrinkage is explicit and measured: minimize
    sum_i (log(y_i - c) - t . x_i)^2 + lam * |t - mean(t)|^2.
The penalty pulls every component towards the same slope, which is the law "the mixture does not matter" (each
phase's weights sum to 1, so a slope shared by all components is only the law's scale, exp(t . x) = exp(t0), and
is left free). A cell the proxies barely move keeps the common slope instead of an arbitrary one, so the optimizer
is not sent to a cell on noise. Grouping small cells instead would change the keys the user searches and still
leave a plain fit of as many weights as groups; a penalty keeps every cell and lets the data say how much
each one differs.

How it is fitted: for each c on a grid of fractions of min(y) and each lam on a log grid scaled to X, the slopes are
a closed-form ridge solve in log(y - c); each candidate is scored by its closed-form leave-one-out error (the
hat matrix: e_i / (1 - H_ii)) on log y, and the best wins, and c is then refined by a bounded line search at that lam. Deterministic, no starts, milliseconds at 40 weights.
Least squares, not Huber: a diverged proxy should be rerun, and the held-out check shows one that was not.

Enough proxies: the penalty leaves about as many effective parameters as the data support (trace of H), so a fit
needs no point per weight. minimum_points is ceil(dims / 2) + 3 (c, the law's scale, one residual, and one more
so that leave-one-out has a point to choose lam by): 15 proxies for 24 cells, 23 for 40, with the held-out check
one more. Fewer than that and the choice of lam itself rests on too few points to be trusted.
"""

import math

import numpy as np

C_FRACTIONS = (0.0, 0.5, 0.8, 0.9, 0.95)  # c as these fractions of min(y), as the plain log-linear fit starts
C_CEILING = 0.999  # of min(y): c refined up to here (y - c must stay positive)
PENALTY_SCALES = tuple(10.0 ** k for k in np.linspace(-4, 2, 13))  # lam / (trace(X'X) / dims)
LEVERAGE_CEILING = 1 - 1e-9  # a point its own fit passes through says nothing about the others: its error is inf


class RidgeLogLinear:
    """y = c + exp(t . x), t pulled towards its mean by lam chosen with c by closed-form leave-one-out."""

    help = "c + exp(t . w) with t pulled towards one value (ridge, strength by leave-one-out): tens of weights"
    law = "y = c + exp(t . x), ridge on t - mean(t)"
    search_law = "L = c + exp(t . w), ridge on t - mean(t)"
    intercept = True
    positive = True

    def minimum_points(self, dims: int) -> int:
        return math.ceil(dims / 2) + 3

    def resample_points(self, dims: int) -> int:
        """Distinct points a bootstrap resample needs: a resample of n holds about 0.63 n distinct, fewer than
        minimum_points; the pull, chosen again on each, keeps the refit defined."""
        return math.ceil(dims / 4) + 3

    def fit(self, X, y, start=None) -> tuple[float, np.ndarray]:
        """(c, t); `start` is ignored: the fit has no starts to take."""
        from scipy.optimize import minimize_scalar  # on first use (sweeps/robust.py says why)

        X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        held_out = _HeldOut(X, y)
        grid = [(held_out.error(f * y.min(), p), f * y.min(), p) for f in C_FRACTIONS for p in PENALTY_SCALES]
        error, c, penalty = min(grid, key=lambda g: g[0])
        if not np.isfinite(error):
            raise ValueError("every ridge fit passes through the points it leaves out: sample more mixtures")
        refined = minimize_scalar(lambda v: held_out.error(v, penalty), bounds=(0.0, C_CEILING * y.min()),
                                  method="bounded", options={"xatol": 1e-6 * y.min()})
        c = float(refined.x) if refined.fun < error else c
        return c, held_out.slopes(c, penalty)

    def predict(self, intercepts, slopes, X) -> np.ndarray:
        return intercepts + np.exp(np.asarray(X, dtype=float) @ slopes.T)

    def jacobian(self, intercepts, slopes, x) -> np.ndarray:
        return np.exp(slopes @ np.asarray(x, dtype=float))[:, None] * slopes


class _HeldOut:
    """For one set of points: the slopes and the closed-form leave-one-out error on log y of any (c, lam)."""

    def __init__(self, X: np.ndarray, y: np.ndarray):
        dims = X.shape[1]
        self.X, self.y, self.log_y = X, y, np.log(y)
        self.gram = X.T @ X
        self.centering = np.eye(dims) - np.full((dims, dims), 1.0 / dims)
        self.scale = max(np.trace(self.gram) / dims, 1e-12)

    def _solve(self, c: float, penalty: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        inverse = np.linalg.pinv(self.gram + penalty * self.scale * self.centering)
        z = np.log(self.y - c)
        return z, inverse @ self.X.T @ z, np.einsum("ij,jk,ik->i", self.X, inverse, self.X)

    def slopes(self, c: float, penalty: float) -> np.ndarray:
        return self._solve(c, penalty)[1]

    def error(self, c: float, penalty: float) -> float:
        z, t, leverage = self._solve(c, penalty)
        if np.any(leverage >= LEVERAGE_CEILING):
            return np.inf
        z_held_out = z - (z - self.X @ t) / (1 - leverage)
        with np.errstate(over="ignore"):
            error = float(np.sum((np.log(c + np.exp(z_held_out)) - self.log_y) ** 2))
        return error if np.isfinite(error) else np.inf
