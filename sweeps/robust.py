"""What both scaling laws share: the Huber fit from a grid of starts, in log-loss space, and the checks on the
rungs' numbers before any fitting.

scipy is imported where it is first used, here and in the other sweeps modules: importing it costs ~0.75 s of
every `loom ladder` or `loom mix search`, and one refused on its options fits nothing."""

import numpy as np

from sweeps import intervals


SCOUT_EVALUATIONS = 20  # per start, before only the most promising few are run to convergence
SCOUT_STEPS = 20  # the same, for starts scouted together (huber_batch)
REFIT_STEPS = 100  # at most, for a bootstrap's refits run together from the full fit's optimum (bands as at 400)
FINALISTS = 3


def best_of(residuals, jacobian, starts, bounds, huber_delta, batch=None) -> np.ndarray:
    """Huber on the residuals from each start (clipped into the bounds); the lowest cost wins. Every start is run a
    short way first and only the best few to convergence: near-L1 Huber converges slowly, and most starts of a grid
    end in the same basin. batch, (model, targets) as huber_batch takes them: the starts are scouted together."""
    lower, upper = (np.asarray(b, dtype=float) for b in bounds)
    clipped = np.array([np.clip(np.asarray(s, dtype=float), lower + 1e-12, upper - 1e-12) for s in starts])
    if batch is not None and len(clipped) > FINALISTS:
        model, targets = batch
        scouted, cost = huber_batch(model, clipped, targets, np.ones((len(clipped), len(targets))), (lower, upper),
                                    huber_delta, SCOUT_STEPS)
        finalists = scouted[np.argsort(np.where(np.isfinite(cost), cost, np.inf))[:FINALISTS]]
    else:
        scouts = [huber_least_squares(residuals, jacobian, x0, (lower, upper), huber_delta, SCOUT_EVALUATIONS)
                  for x0 in clipped]
        finalists = [r.x for r in sorted((r for r in scouts if np.isfinite(r.cost)), key=lambda r: r.cost)]
    finals = [huber_least_squares(residuals, jacobian, x0, (lower, upper), huber_delta)
              for x0 in finalists[:FINALISTS]]
    finals = [r for r in finals if np.isfinite(r.cost)]
    if not finals:
        raise ValueError("the fit diverged from every start: check that the losses fall with size")
    return min(finals, key=lambda r: r.cost).x


def huber_least_squares(residuals, jacobian, x0, bounds, huber_delta, max_evaluations=None):
    from scipy.optimize import least_squares  # on first use, as in every sweeps module

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return least_squares(residuals, x0, jac=jacobian, bounds=bounds, loss="huber", f_scale=huber_delta,
                             method="trf", x_scale="jac", max_nfev=max_evaluations)


def no_interval_reason(dof: int, cov, method: str) -> str | None:
    if method == intervals.BOOTSTRAP:
        return None
    if dof <= 0:
        return "no degrees of freedom left (as many parameters as rungs): add a rung for an interval"
    if cov is None:
        return "the rungs do not pin down every parameter (singular Jacobian): spread the rungs' sizes"
    return None


def check_points(columns: dict) -> list[np.ndarray]:
    """Each named column as a 1-D float array, all of one length, every value finite and positive."""
    arrays = [np.asarray(values, dtype=float).ravel() for values in columns.values()]
    lengths = {len(a) for a in arrays}
    if len(lengths) > 1:
        raise ValueError(f"{', '.join(columns)} must have one value per rung each; got lengths "
                         f"{', '.join(str(len(a)) for a in arrays)}")
    for name, values in zip(columns, arrays):
        bad = ~np.isfinite(values) | (values <= 0)
        if bad.any():
            raise ValueError(f"{name} must be finite and positive; rung {int(np.argmax(bad))} has "
                             f"{values[bad][0]}: drop or rerun that rung")
    return arrays


def check_enough(n_points: int, n_params: int, what: str, alternative: str = "", spare: int = 1) -> None:
    """At least n_params + spare points: spare 0 allows an exact fit (a prediction, with no interval)."""
    if n_points < n_params + spare:
        raise ValueError(f"{what} has {n_params} parameters and needs at least {n_params + spare} rungs; got "
                         f"{n_points}: add {n_params + spare - n_points} rung(s){alternative}")


def as_positive(values, what: str) -> np.ndarray:
    c = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(c) & (c > 0)):
        raise ValueError(f"{what} to predict at must be finite and positive")
    return c


def scalar_or_array(values: np.ndarray):
    """A float for one point asked, else the array."""
    return float(values) if np.ndim(values) == 0 else values


def huber_batch(model, starts, targets, weights, bounds, huber_delta, iterations) -> tuple[np.ndarray, np.ndarray]:
    """Many Huber fits at once, one per row of `starts` (B, P), each with its own point weights (B, M) and bounds
    ((B, P) or (P,) each): Levenberg-Marquardt on the Huber loss's quadratic majorizer (point weights
    min(1, delta/|r|)), `iterations` steps. `model(thetas)` -> predictions (B, M) and Jacobians (B, M, P). What
    the bootstrap's refits and the scouting of a grid of starts need: scipy's solver one fit at a time costs ~5 ms a
    fit, this ~0.1 ms. Stops early once every fit has settled. Returns the parameters (B, P) and each fit's Huber
    cost."""
    lower, upper = (np.broadcast_to(np.asarray(b, dtype=float), starts.shape) for b in bounds)
    theta = np.clip(np.asarray(starts, dtype=float), lower, upper)
    damping = np.full(len(theta), 1e-3)

    def cost(pred):
        return np.sum(weights * huber(pred - targets, huber_delta), axis=1)

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        pred, jac = model(theta)
        current = cost(pred)
        for _ in range(iterations):
            r = pred - targets
            u = weights * np.minimum(1.0, huber_delta / np.maximum(np.abs(r), 1e-300))
            hessian = np.einsum("bm,bmi,bmj->bij", u, jac, jac)
            gradient = np.einsum("bm,bmi->bi", u * r, jac)
            diagonal = np.einsum("bii->bi", hessian)
            system = hessian + (damping[:, None] * diagonal + 1e-12)[:, :, None] * np.eye(theta.shape[1])
            step = np.linalg.solve(system, -gradient[..., None])[..., 0]
            trial = np.clip(theta + step, lower, upper)
            trial_pred, trial_jac = model(trial)
            trial_cost = cost(trial_pred)
            better = np.isfinite(trial_cost) & (trial_cost <= current)
            moved = np.abs(trial - theta).max(axis=1)
            theta = np.where(better[:, None], trial, theta)
            pred = np.where(better[:, None], trial_pred, pred)
            jac = np.where(better[:, None, None], trial_jac, jac)
            current = np.where(better, trial_cost, current)
            damping = np.where(better, damping * 0.3, damping * 10.0).clip(1e-9, 1e9)
            settled = (better & (moved < 1e-9)) | (damping >= 1e6)
            if settled.all():
                break
    return theta, current


def huber(r: np.ndarray, delta: float) -> np.ndarray:
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r ** 2, delta * (a - 0.5 * delta))
