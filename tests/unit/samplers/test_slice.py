"""The one slice sampler (`pymc_dp.samplers.slice`, and its compiled shrinkage `shrink_1d`): exact on
known densities, and its rule at a collapsed bracket (stay when the current point is in the slice, raise when it is not)."""

import math

import numba
import numpy as np
import pytest

from pymc_dp.samplers.slice import (
    SliceState,
    generator_uniform,
    shrink_1d,
    slice_1d,
    slice_along,
    slice_sweep,
    tuned_width,
)
from tests.support.mc import assert_mc_close


def _chain(log_density, x0, n, seed, width=1.0):
    rng = np.random.default_rng(seed)
    x, lp = x0, log_density(x0)
    out = np.empty(n)
    for i in range(n):
        x, lp, _, _ = slice_1d(rng, log_density, x, lp, width, 50)
        out[i] = x
    return out


def test_normal_moments_within_mcse():
    mu, sd = 1.0, 2.0
    draws = _chain(lambda x: -0.5 * ((x - mu) / sd) ** 2, 0.0, 4000, seed=1, width=0.5)
    assert_mc_close(draws, mu, sd, label="slice Normal(1, 2)")


def test_gamma_moments_within_mcse():
    a, b = 3.0, 2.0  # shape, rate: mean a/b, sd sqrt(a)/b; a boundary at 0 to shrink against

    def log_density(x):
        return (a - 1.0) * math.log(x) - b * x if x > 0 else -math.inf

    draws = _chain(log_density, 1.0, 4000, seed=2, width=3.0)
    assert_mc_close(draws, a / b, math.sqrt(a) / b, label="slice Gamma(3, 2)")


def test_along_directions_and_sweep_on_a_correlated_normal():
    cov = np.array([[1.0, 0.8], [0.8, 1.0]])
    prec = np.linalg.inv(cov)

    def log_density(q):
        return -0.5 * q @ prec @ q

    rng = np.random.default_rng(3)
    basis = np.linalg.eigh(cov)[1]
    theta, lp = np.zeros(2), 0.0
    along = np.empty((3000, 2))
    for k in range(len(along)):
        for i in range(2):
            theta, lp, _ = slice_along(rng, theta, lp, basis[:, i], log_density, 1.0, 50)
        along[k] = theta
    assert_mc_close(along[None], np.zeros(2), np.ones(2), label="slice along the principal axes")

    state = SliceState(np.zeros(2), 0.0, np.ones(2))
    swept = np.empty((3000, 2))
    for k in range(len(swept)):
        state, info = slice_sweep(rng, state, log_density)
        assert info.evals >= 2 and np.all(info.brackets > 0)
        swept[k] = state.q
    assert state.logp == pytest.approx(log_density(state.q))
    assert_mc_close(swept[None], np.zeros(2), np.ones(2), label="slice coordinate sweep")


def test_collapsed_bracket_stays_when_the_point_is_in_the_slice():
    """A spike narrower than float resolution: the exact draw is x0 to 1e-12, returned as is."""
    x0 = 0.3

    def spike(x):
        return 0.0 if x == x0 else -math.inf

    rng = np.random.default_rng(4)
    draw = slice_1d(rng, spike, x0, 0.0, 1.0, 10)
    assert draw.x == x0 and draw.logp == 0.0
    assert draw.bracket <= 1e-12 * (1 + x0)
    theta, lp, _ = slice_along(
        rng, np.array([x0, 1.0]), 0.0, np.array([1.0, 0.0]), lambda q: spike(q[0]), 1.0, 10
    )
    assert theta.tolist() == [x0, 1.0] and lp == 0.0


def test_collapsed_bracket_raises_when_the_point_is_not_in_the_slice():
    """The log density given for x0 (50) is not the target's (0 everywhere): no valid update."""
    with pytest.raises(FloatingPointError, match="not the target's"):
        slice_1d(np.random.default_rng(5), lambda x: 0.0, 0.0, 50.0, 1.0, 10)
    with pytest.raises(FloatingPointError, match="not the target's"):  # NaN at the current point
        slice_1d(np.random.default_rng(5), lambda x: math.nan, 0.0, 0.0, 1.0, 10)


# ------------------------------------------------------------------ compiled shrinkage (shrink_1d)
@numba.njit(cache=True)
def _beta_log_f(x, args):
    a, b = args
    return (a - 1.0) * math.log(x) + (b - 1.0) * math.log(1.0 - x)


@numba.njit(cache=True)
def _spike_log_f(x, args):
    return 0.0 if x == args[0] else -math.inf


@numba.njit(cache=True)
def _beta_chain(rng, a, b, n):
    out = np.empty(n)
    x, evals = 0.5, 0
    for i in range(n):
        level = _beta_log_f(x, (a, b)) - rng.standard_exponential()
        x, k = shrink_1d(_beta_log_f, (a, b), generator_uniform, rng, x, 0.0, 1.0, level, 1e-12)
        evals += k
        out[i] = x
    return out, evals


def test_compiled_shrinkage_beta_moments_within_mcse():
    """`shrink_1d` on (0, 1) leaves Beta(2, 5) invariant (the bounded coordinates of DirichletHyper)."""
    a, b = 2.0, 5.0
    draws, evals = _beta_chain(np.random.default_rng(6), a, b, 4000)
    sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    assert_mc_close(draws, a / (a + b), sd, label="shrink_1d Beta(2, 5)")
    assert evals >= len(draws)


def test_compiled_shrinkage_same_rule_at_a_collapsed_bracket():
    """As `slice_1d`: stay at x0 when it is in the slice, raise when it is not."""
    rng = np.random.default_rng(7)
    x, k = shrink_1d(_spike_log_f, (0.3,), generator_uniform, rng, 0.3, 0.0, 1.0, -1.0, 1e-12)
    assert x == 0.3 and k >= 1
    with pytest.raises(FloatingPointError, match="not in the slice"):
        shrink_1d(_spike_log_f, (0.3,), generator_uniform, rng, 0.3, 0.0, 1.0, 5.0, 1e-12)


def test_compiled_shrinkage_stays_when_the_current_point_has_no_density():
    """A level of −inf (the caller's log density underflowed at x0): x0 stays, nothing evaluated."""
    rng = np.random.default_rng(8)
    x, k = shrink_1d(
        _beta_log_f, (2.0, 5.0), generator_uniform, rng, 0.4, 0.0, 1.0, -math.inf, 1e-12
    )
    assert x == 0.4 and k == 0


def test_tuned_width_is_the_running_mean_of_the_observed_widths():
    """The one width rule (DirichletHyper's α, SufficientTheta, Interweave): after n observations
    the width is their mean, whatever it started at, elementwise, and never below ``floor``."""
    obs = np.array([[0.5, 2.0], [1.5, 4.0], [1.0, 3.0]])
    width = np.array([100.0, 0.01])
    for n, o in enumerate(obs, start=1):
        width = tuned_width(width, o, n)
    np.testing.assert_allclose(width, obs.mean(axis=0), rtol=1e-15)
    assert float(tuned_width(1.0, 0.0, 1, floor=1e-8)) == 1e-8
