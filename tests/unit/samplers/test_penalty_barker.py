"""DP Barker (seed 002 §3.2): mixture correction error, acceptance probability, exactness, PyMC adapter."""

import math
import re

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

import pymc_dp as pdp
from pymc_dp.accounting import epsilon_of_event, iteration_event, run_event
from pymc_dp.samplers.penalty.barker import (
    MAX_ERROR,
    barker_accept,
    correction_cdf,
    fit_correction,
    sample_correction,
)
from tests.support.models import penalty_model
from tests.support.sampling import sample


@pytest.mark.parametrize("sigma", [0.25, 0.5, 1.0, 1.25])
def test_correction_cdf_error_is_certified_and_small(sigma):
    corr = fit_correction(sigma)
    assert corr.error < (1e-5 if sigma <= 1.0 else MAX_ERROR)
    assert fit_correction(sigma) is corr  # cached
    assert corr.cum_weights[-1] == 1.0 and np.all(corr.weights >= 0)
    np.testing.assert_allclose(corr.means, -corr.means[::-1])  # symmetric
    # the certified bound holds at points off the certification grid, including far tails
    x = np.concatenate(
        [np.random.default_rng(0).uniform(-15, 15, 5000), [-80.0, -40.0, 0.0, 40.0, 80.0]]
    )
    assert np.max(np.abs(correction_cdf(x, corr, sigma**2) - expit(x))) <= corr.error
    # Var(V_cor) = pi^2/3 - sigma^2 (seed §3.2), up to the fit
    var = float(np.dot(corr.weights, corr.means**2 + corr.sds**2))
    assert var == pytest.approx(math.pi**2 / 3 - sigma**2, abs=5e-3)


def test_correction_draws_are_logistic():
    corr = fit_correction(1.0)
    v = sample_correction(np.random.default_rng(1), corr, size=200_000, extra_var=1.0)
    res = stats.kstest(v, stats.logistic.cdf)
    assert res.statistic < 1.95 / math.sqrt(v.size) + corr.error  # KS 0.1% critical value
    # the same draws agree with the closed-form mixture CDF
    res = stats.kstest(v, lambda x: correction_cdf(x, corr, 1.0))
    assert res.statistic < 1.95 / math.sqrt(v.size)


@pytest.mark.parametrize("lam", [-3.0, -0.7, 0.0, 1.2, 2.5])
def test_barker_accept_probability_is_logistic(lam):
    corr = fit_correction(1.0)
    rng = np.random.default_rng(int(10 * lam) + 50)
    m = 20_000
    acc, p_sum = 0, 0.0
    for i in range(m):
        a, p, _ = barker_accept(rng, lam, 0.6 if i % 2 else 1.0, corr)  # with and without top-up
        acc, p_sum = acc + a, p_sum + p
    g = float(expit(lam))
    se = math.sqrt(g * (1 - g) / m)
    assert abs(acc / m - g) < 4 * se + corr.error
    assert abs(p_sum / m - g) < 4 * se + corr.error  # E[accept_prob | lambda] = g(lambda)
    assert barker_accept(rng, math.nan, 0.5, corr)[:2] == (False, 0.0)


def test_pm_sample_stats_privacy_and_reproducible():
    model, _ = penalty_model()
    with model:
        step = pdp.PenaltyMH(
            lipschitz=10.0, tau=2.0, scale=0.01, proposal="guided", acceptance="barker"
        )
    assert step.barker_error == fit_correction(1.0).error < 1e-6
    idata = sample(model, [step], draws=200, tune=50, chains=2, seed=1)
    ss = idata["sample_stats"]
    p = np.asarray(ss["dp_accept_prob"])
    assert np.all((p >= 0) & (p <= 1)) and np.asarray(ss["dp_accepted"]).mean() > 0.1
    trunc = np.asarray(ss["dp_noise_sd"]) > 1.0  # rejected without reading the data
    assert not np.asarray(ss["dp_accepted"])[trunc].any() and np.all(p[trunc] == 0)
    # the Barker test is post-processing of the same Gaussian mechanism
    expected = epsilon_of_event(run_event(iteration_event(2.0), 500), 1e-5)
    assert pdp.privacy_spent(idata, delta=1e-5) == pytest.approx(expected, rel=1e-6)
    assert pdp.privacy_spent(step, delta=1e-5) == pytest.approx(expected, rel=1e-6)
    a, b = [
        np.asarray(
            sample(
                model,
                [
                    pdp.PenaltyMH(
                        lipschitz=10.0, tau=0.05, scale=0.05, acceptance="barker", model=model
                    )
                ],
                draws=50,
                tune=0,
                chains=1,
                seed=7,
            )["posterior"]["mu"]
        )
        for _ in range(2)
    ]
    np.testing.assert_array_equal(a, b)


def test_errors():
    model, _ = penalty_model()
    with model:
        with pytest.raises(
            ValueError,
            match=re.escape(
                "acceptance must be one of ('penalty', 'barker'), got acceptance='mh'."
            ),
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, acceptance="mh")
        with pytest.raises(
            ValueError,
            match=re.escape(
                "barker_sigma must lie in [0.1, 1.25], got barker_sigma=1.5: the Gaussian-mixture correction"
            ),
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, acceptance="barker", barker_sigma=1.5)
        with pytest.raises(
            ValueError,
            match=re.escape("impossible for barker_sigma^2 >= pi^2/3). Use e.g. barker_sigma=1.0"),
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, acceptance="barker", barker_sigma=0.01)
        with pytest.raises(
            ValueError,
            match=re.escape(
                "acceptance='barker' supports proposal='rw', 'coordinate' or 'guided' on the full data, "
                "got proposal='rw', batch_size=10."
            ),
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, acceptance="barker", batch_size=10)
        with pytest.raises(ValueError, match=re.escape("got proposal='mala', batch_size=None.")):
            pdp.PenaltyMH(
                lipschitz=1.0, tau=1.0, acceptance="barker", proposal="mala", grad_bound=1.0
            )
        assert pdp.PenaltyMH(lipschitz=1.0, tau=1.0).barker_error is None  # default unchanged
    with pytest.raises(ValueError, match=re.escape("sigma must lie in [0.1, 1.25], got sigma=2")):
        fit_correction(2)
