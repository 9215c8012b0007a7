"""The mixture search's mathematics (sweeps.search_space, sweeps.surrogate, sweeps.mix_optimize) on synthetic
mixing laws of known optimum, no training: designs, baselines, quantization to whole sequences, the surrogates'
fits and how far to trust them, and the optimum under epoch caps and a KL pull to the prior."""

import time
from itertools import combinations

import numpy as np
import pytest
from scipy.optimize import minimize

from base.errors import UserError
from mixtures.schedule import largest_remainder
from sweeps.mix_optimize import kl_to_prior, optimize
from sweeps.search_space import (SearchSpace, natural_weights, proportional, quantize, sample_designs, uniform,
                                 unimax)
from sweeps.surrogate import (bootstrap_interval, fit_surrogate, leave_one_out, minimum_points, objective,
                               spearman)

NOISE = 0.003  # a proxy's final losses, multiplicative
METRIC_WEIGHTS = np.array([1.0, 1.0, 1.0])

# two phases, 4 + 3 keys, code and books in both; per metric (web, code, math validation loss) y = c + exp(t . x)
TWO_PHASE_KEYS = (("web", "code", "books", "wiki"), ("code", "math", "books"))
TWO_PHASE_C = np.array([2.0, 1.5, 1.8])
TWO_PHASE_T = np.array([[0.2, 1.0, 0.7, 0.6, 0.9, 1.0, 0.6],
                        [1.0, 0.2, 0.9, 1.0, 0.1, 0.7, 0.9],
                        [1.0, 0.8, 0.9, 1.0, 0.6, 0.1, 0.9]])
# one phase, 4 keys
ONE_PHASE_KEYS = (("web", "code", "books", "math"),)
ONE_PHASE_C = np.array([2.0, 2.5, 1.8])
ONE_PHASE_T = np.array([[0.2, 1.0, 1.1, 0.9], [1.0, 0.3, 0.9, 1.1], [1.0, 1.1, 0.2, 1.0]])


def space(keys=ONE_PHASE_KEYS, fractions=(1.0,), prior=None, natural=None, capacity=None, fixed=None, batch=64):
    prior = prior or tuple(tuple(1.0 / len(phase) for _ in phase) for phase in keys)
    return SearchSpace(phases=tuple(f"p{i}" for i in range(len(keys))), fractions=fractions, keys=keys,
                       prior=prior, natural=natural or prior, capacity=capacity or {}, fixed=fixed or {},
                       global_batch=batch)


def two_phase(capacity=None):
    return space(TWO_PHASE_KEYS, (0.7, 0.3), capacity=capacity)


def true_losses(X, c, t):
    return c + np.exp(np.asarray(X) @ t.T)


def proxies(X, c, t, seed=0):
    return true_losses(X, c, t) * np.exp(np.random.default_rng(seed).normal(0.0, NOISE, (len(X), len(c))))


def simplex_grid(n_keys, steps):
    """Every point of the simplex with coordinates in multiples of 1/steps (stars and bars)."""
    points = []
    for bars in combinations(range(steps + n_keys - 1), n_keys - 1):
        edges = (-1,) + bars + (steps + n_keys - 1,)
        points.append([edges[i + 1] - edges[i] - 1 for i in range(n_keys)])
    return np.array(points, dtype=float) / steps


def true_optimum(sp, c, t, steps):
    """The true law's constrained optimum: the best point of a simplex grid, then polished by SLSQP on the law."""
    grids = [simplex_grid(len(k), steps) for k in sp.keys]
    X = grids[0]
    for g in grids[1:]:
        X = np.hstack([np.repeat(X, len(g), axis=0), np.tile(g, (len(X), 1))])
    X = X[[sp.feasible(x) for x in X]]
    best = X[np.argmin(objective(true_losses(X, c, t), METRIC_WEIGHTS))]
    phase_sums = [{"type": "eq", "fun": lambda x, p=p: sp.split(x)[p].sum() - 1.0} for p in range(len(sp.keys))]
    caps = [{"type": "ineq", "fun": lambda x: np.nan_to_num(sp.capacity_vector - sp.usage_vector(x), posinf=1.0)}]
    polished = minimize(lambda x: objective(true_losses(x[None], c, t), METRIC_WEIGHTS)[0], best, method="SLSQP",
                        bounds=[(0, 1)] * sp.dims, constraints=phase_sums + caps, options={"ftol": 1e-14}).x
    found = [x for x in (best, polished) if sp.feasible(x, -1e-9)]
    return min(objective(true_losses(np.array(found), c, t), METRIC_WEIGHTS))


def search(sp, c, t, count, kl_weight=0.0):
    X = sample_designs(sp, count, seed=0)
    Y = proxies(X, c, t)
    chosen = optimize(sp, fit_surrogate(X, Y), METRIC_WEIGHTS, kl_weight)
    return X, Y, chosen


# -- the search end to end on a known law ------------------------------------------------------------------------

def test_two_phase_search_finds_the_true_optimum_and_ranks_held_out_proxies():
    sp = two_phase()
    X, Y, chosen = search(sp, TWO_PHASE_C, TWO_PHASE_T, count=16)
    found = objective(true_losses(chosen[None], TWO_PHASE_C, TWO_PHASE_T), METRIC_WEIGHTS)[0]
    truth = true_optimum(sp, TWO_PHASE_C, TWO_PHASE_T, steps=20)
    measured = objective(Y, METRIC_WEIGHTS)
    assert found <= truth * 1.01
    assert found < measured.min()  # better than every proxy it was fitted to
    assert spearman(leave_one_out(X, Y, METRIC_WEIGHTS, "loglinear"), measured) >= 0.8
    assert sp.feasible(chosen) and np.allclose([w.sum() for w in sp.split(chosen)], 1.0)


def test_a_binding_cap_holds_the_optimum_on_it():
    free = space()
    _, _, unbounded = search(free, ONE_PHASE_C, ONE_PHASE_T, count=14)
    assert unbounded[0] > 0.4  # web's share without a cap, which the cap below cuts
    sp = space(capacity={"web": 0.3})
    _, _, chosen = search(sp, ONE_PHASE_C, ONE_PHASE_T, count=14)
    found = objective(true_losses(chosen[None], ONE_PHASE_C, ONE_PHASE_T), METRIC_WEIGHTS)[0]
    assert sp.usage(chosen)["web"] <= 0.3
    assert sp.usage(chosen)["web"] >= 0.3 - 1 / sp.global_batch
    assert found <= true_optimum(sp, ONE_PHASE_C, ONE_PHASE_T, steps=40) * 1.01


def test_a_large_kl_weight_keeps_the_prior_and_none_moves_away():
    prior = ((0.4, 0.3, 0.2, 0.1),)
    sp = space(prior=prior)
    X = sample_designs(sp, 12, seed=1)
    fit = fit_surrogate(X, proxies(X, ONE_PHASE_C, ONE_PHASE_T))
    held = optimize(sp, fit, METRIC_WEIGHTS, kl_weight=1000.0)
    free = optimize(sp, fit, METRIC_WEIGHTS, kl_weight=0.0)
    assert np.abs(held - np.array(prior[0])).max() <= 1 / sp.global_batch
    assert np.abs(free - np.array(prior[0])).max() > 0.1
    assert kl_to_prior(sp, np.array(prior[0])) == pytest.approx(0.0, abs=1e-12)
    assert kl_to_prior(sp, free) > kl_to_prior(sp, held)


# -- designs -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("design", ["dirichlet", "spacefill"])
def test_designs_are_feasible_distinct_whole_sequences_and_repeatable(design):
    sp = two_phase(capacity={"math": 0.1, "books": 0.2})
    X = sample_designs(sp, 20, design, seed=3)
    assert X.shape == (20, sp.dims)
    assert all(sp.feasible(x) for x in X)
    assert len(np.unique(X, axis=0)) == 20
    assert np.allclose(X * sp.global_batch, np.rint(X * sp.global_batch), atol=1e-9)
    assert np.allclose([[w.sum() for w in sp.split(x)] for x in X], 1.0)
    assert np.array_equal(X, sample_designs(sp, 20, design, seed=3))
    assert not np.array_equal(X, sample_designs(sp, 20, design, seed=4))


def test_spacefill_spreads_the_designs_more_than_dirichlet():
    sp = space()
    spread = {d: min_distance(sample_designs(sp, 12, d, seed=0)) for d in ("dirichlet", "spacefill")}
    assert spread["spacefill"] > 1.5 * spread["dirichlet"]


def min_distance(X):
    distances = np.linalg.norm(X[:, None, :] - X[None, :, :], axis=-1)
    return distances[np.triu_indices(len(X), 1)].min()


def test_dirichlet_designs_gather_around_the_prior():
    prior = ((0.7, 0.1, 0.1, 0.1),)
    X = sample_designs(space(prior=prior), 30, concentration=5.0)
    assert X.mean(axis=0) == pytest.approx(prior[0], abs=0.06)


def test_more_designs_than_the_space_holds_is_a_user_error():
    sp = space(keys=(("a", "b"),), batch=4)  # 5 mixtures in quarters: 0/4 .. 4/4
    assert len(sample_designs(sp, 5, "spacefill")) == 5
    with pytest.raises(UserError, match="found only 5 distinct mixtures"):
        sample_designs(sp, 6)


# -- baselines and quantization ----------------------------------------------------------------------------------

def test_unimax_water_fills_against_what_is_left_of_each_cap():
    # 'a' may supply 30% of the run; the unsearched phases take 5%, the first searched phase can take only
    # 25% of the run = half of its 50%, and the second phase none of it
    sp = space(keys=(("a", "b"), ("a", "b")), fractions=(0.5, 0.5), capacity={"a": 0.3}, fixed={"a": 0.05},
               batch=8)
    assert np.allclose(unimax(sp), [0.5, 0.5, 0.0, 1.0])
    small = space(capacity={"web": 0.1}, batch=20)
    assert np.allclose(unimax(small), [0.1, 0.3, 0.3, 0.3])
    assert not small.feasible(uniform(small))  # 25% of the run from web, over its 10%


def test_unimax_refuses_caps_that_cannot_cover_a_phase():
    with pytest.raises(UserError, match="epoch caps cover less"):
        unimax(space(keys=(("a", "b"),), capacity={"a": 0.3, "b": 0.6}))


def test_proportional_is_the_natural_mixture_in_whole_sequences():
    natural = natural_weights(ONE_PHASE_KEYS, {"web": 5000, "code": 1200, "books": 3000, "math": 800})
    sp = space(natural=natural, batch=32)
    assert np.abs(proportional(sp) - np.array(natural[0])).max() <= 1 / 32
    assert np.allclose(proportional(sp) * 32, np.rint(proportional(sp) * 32))


def test_quantize_moves_a_rounded_up_unit_off_a_capped_key():
    sp = space(keys=(("a", "b", "c"),), capacity={"a": 0.29}, batch=10)
    x = np.array([0.29, 0.355, 0.355])
    assert largest_remainder(list(x), 10)[0] == 3  # plain rounding would give 'a' 30%, over its 29%
    q = quantize(sp, x)
    assert sp.feasible(q) and q.sum() == pytest.approx(1.0)
    assert q[0] == pytest.approx(0.2)


def test_quantize_leaves_an_already_infeasible_x_and_refuses_an_impossible_rounding():
    sp = space(keys=(("a", "b"),), capacity={"a": 0.29, "b": 0.71}, batch=10)
    with pytest.raises(UserError, match="'a' cannot keep within its epoch cap"):
        quantize(sp, np.array([0.29, 0.71]))  # 3 + 7 puts a over; 2 + 8 puts b over
    assert not sp.feasible(quantize(sp, np.array([0.5, 0.5])))  # over before rounding: not the rounding's doing


# -- surrogates --------------------------------------------------------------------------------------------------

def test_loglinear_recovers_its_parameters_from_noise_free_points():
    X = sample_designs(space(), 10, seed=2)
    fit = fit_surrogate(X, true_losses(X, ONE_PHASE_C, ONE_PHASE_T))
    assert fit.intercepts == pytest.approx(ONE_PHASE_C, rel=1e-3)
    assert fit.slopes == pytest.approx(ONE_PHASE_T, abs=1e-3)
    assert fit.to_json()["metrics"][0]["c"] == pytest.approx(ONE_PHASE_C[0], rel=1e-3)
    assert fit.to_json()["law"] == "y = c + exp(t . x)"


def test_linear_recovers_its_parameters_and_predicts_across_phases():
    t = TWO_PHASE_T + 2.0
    X = sample_designs(two_phase(), 12, seed=2)
    fit = fit_surrogate(X, X @ t.T, "linear")
    fresh = sample_designs(two_phase(), 5, seed=9)
    # with two phases t is known only up to a constant moved between phases; its predictions are exact
    assert fit.predict(fresh) == pytest.approx(fresh @ t.T, rel=1e-9)
    one_phase = sample_designs(space(), 6, seed=2)
    assert fit_surrogate(one_phase, one_phase @ ONE_PHASE_T.T, "linear").slopes == pytest.approx(ONE_PHASE_T)


def test_too_few_mixtures_names_the_minimum():
    X = sample_designs(space(), 5, seed=0)
    with pytest.raises(ValueError, match="needs at least 6 mixtures; got 5"):
        fit_surrogate(X, true_losses(X, ONE_PHASE_C, ONE_PHASE_T))
    assert fit_surrogate(X, X @ ONE_PHASE_T.T, "linear").n_points == 5


def test_bootstrap_band_holds_the_fit_and_widens_with_noise():
    sp = space()
    X = sample_designs(sp, 14, seed=0)
    x = np.array([0.4, 0.2, 0.3, 0.1])
    bands = {}
    for noise_seed, scale in ((0, 1.0), (0, 10.0)):
        Y = true_losses(X, ONE_PHASE_C, ONE_PHASE_T) * np.exp(
            np.random.default_rng(noise_seed).normal(0.0, NOISE * scale, (len(X), 3)))
        lower, upper = bootstrap_interval(X, Y, x, METRIC_WEIGHTS, "loglinear", count=30)
        predicted = objective(fit_surrogate(X, Y).predict(x[None]), METRIC_WEIGHTS)[0]
        assert lower <= predicted <= upper
        bands[scale] = upper - lower
    assert bands[10.0] > 3 * bands[1.0]


def test_spearman_ranks():
    assert spearman([1, 2, 3, 4], [10, 20, 25, 90]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))


# -- tens of components: the cells of one source (loom mix search --over) ------------------------------------------

CELL_KEYS = tuple(f"web:domain={d},quality_bucket={b}" for d in range(8) for b in range(3))


def cells_space(keys=CELL_KEYS, room=None):
    """One phase over the cells, natural shares skewed as a crawl's are; `room`: each cap as this many natural
    shares (max_epochs x available / target tokens)."""
    share = np.random.default_rng(0).lognormal(0.0, 1.0, len(keys))
    share = tuple(share / share.sum())
    capacity = {} if room is None else {k: 0.95 * room * s for k, s in zip(keys, share)}
    return space((keys,), prior=(share,), capacity=capacity, batch=256)


def cells_law(seed):
    """A slope per cell: its domain's plus its quality bucket's (the better bucket lowers the loss)."""
    rng = np.random.default_rng(seed)
    return (rng.normal(0.0, 0.5, 8)[:, None] + np.array([0.6, 0.0, -0.6])[None, :]).ravel() + 0.3


def test_ridge_ranks_held_out_proxies_over_24_cells_from_20_where_loglinear_cannot_fit():
    X = sample_designs(cells_space(), 20, "dirichlet", seed=0)
    y = (2.0 + np.exp(X @ cells_law(100))) * np.exp(np.random.default_rng(1).normal(0.0, 0.002, len(X)))
    held_out = leave_one_out(X, y[:, None], [1.0], "ridge")
    assert spearman(held_out, y) >= 0.8
    with pytest.raises(ValueError, match="over 24 weights needs at least 26 mixtures; got 20"):
        leave_one_out(X, y[:, None], [1.0], "loglinear")
    assert minimum_points("ridge", 24) == 15 and minimum_points("ridge", 40) == 23


def test_ridge_has_a_bootstrap_interval_over_24_cells_from_20_proxies():
    """A resample of 20 holds about 13 distinct proxies, fewer than the fit's minimum of 15: the ridge's
    resamples need only its own resample_points."""
    X = sample_designs(cells_space(), 20, "dirichlet", seed=0)
    y = (2.0 + np.exp(X @ cells_law(100))) * np.exp(np.random.default_rng(1).normal(0.0, 0.002, len(X)))
    x = X.mean(axis=0)
    lower, upper = bootstrap_interval(X, y[:, None], x, [1.0], "ridge", count=30)
    assert lower <= fit_surrogate(X, y, "ridge").predict(x[None])[0, 0] <= upper


def test_ridge_pulls_less_the_more_proxies_there_are():
    sp = cells_space()
    fresh = sample_designs(sp, 10, "dirichlet", seed=9)
    t = cells_law(100)
    errors = {}
    for count in (16, 120):
        X = sample_designs(sp, count, "dirichlet", seed=0)
        fit = fit_surrogate(X, 2.0 + np.exp(X @ t), "ridge")
        errors[count] = np.abs(fit.predict(fresh)[:, 0] - (2.0 + np.exp(fresh @ t))).max()
    assert errors[120] < 0.002 < errors[16]
    assert fit.to_json()["law"].endswith("ridge on t - mean(t)")


@pytest.mark.parametrize("design", ["dirichlet", "spacefill"])
def test_designs_over_40_cells_with_tight_caps_are_found_within_the_caps_in_under_a_second(design):
    keys = tuple(f"web:domain={d},quality_bucket={b}" for d in range(10) for b in range(4))
    sp = cells_space(keys, room=2.0)  # no cell above twice its natural share: most uniform draws are over a cap
    started = time.perf_counter()
    X = sample_designs(sp, 24, design, seed=0)
    assert time.perf_counter() - started < 1.0
    assert len(np.unique(X, axis=0)) == 24 and all(sp.feasible(x) for x in X)
    assert np.allclose(X.sum(axis=1), 1.0)


def test_over_cells_the_choice_stays_within_the_weights_the_proxies_tried():
    """A law fitted to 20 proxies over 24 cells, whose slopes favour one cell, is not followed to that cell alone."""
    from sweeps.search_results import tried_range

    sp = cells_space()
    X = sample_designs(sp, 20, "dirichlet", seed=0)
    t = cells_law(100)
    t[5] -= 3.0  # one cell far better than the rest
    fit = fit_surrogate(X, 2.0 + np.exp(X @ t), "ridge")
    free = optimize(sp, fit, [1.0], 0.05, starts=X[:3])
    held = optimize(sp, fit, [1.0], 0.05, starts=X[:3], bounds=tried_range(X))
    assert free[5] > 0.9
    assert np.all(held >= X.min(axis=0) - 1e-6) and np.all(held <= X.max(axis=0) + 1e-6)
    assert held[5] == pytest.approx(X[:, 5].max(), abs=2 / sp.global_batch)  # as far as the proxies went
