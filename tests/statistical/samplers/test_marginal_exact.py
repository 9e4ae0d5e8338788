"""PMMH and MHAAR exact on the issue's four cases, default settings but n_particles (slow tier).

Binary randomized response (n = 300, ε = 1) is ``tests/statistical/samplers/test_discrete_records.py::
test_randomized_response_300_records_exact`` (fast, exact support sums).
"""

import functools
import math

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from tests.support import exact
from tests.support.mc import assert_mc_close
from tests.support.models import released_beta_bernoulli
from tests.support.sampling import sample

pytestmark = pytest.mark.slow


def _beta_bernoulli():
    n = 20
    model, s = released_beta_bernoulli(n, 60, 0.4)
    return model, "p", exact.beta_bernoulli_laplace(s, n, 2, 2, 1.0)


def _normal_gaussian():
    rng = np.random.default_rng(61)
    n = 50
    s = float(rng.normal(1.0, 1.0, n).sum() + rng.normal(0, 5.0))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=5.0), observed=s)
    return model, "mu", exact.normal_sum_gaussian(s, n, 3.0, 5.0)


LO, HI, N_CL, B_CL = -1.0, 2.0, 5, 0.6


@functools.cache
def _exact_clamped_mean(y, h=0.002):
    """mu ~ N(0, 2), x_i ~ N(mu, 1), y ~ Laplace(mean(clip(x, LO, HI)), B_CL): the law of
    clip(x) (atoms at the bounds + density) on a grid of step h, convolved N_CL times."""
    grid = np.arange(LO, HI + h / 2, h)
    mus = np.linspace(-5, 6, 441)
    post = np.empty_like(mus)
    for j, mu in enumerate(mus):
        edges = np.concatenate([[-np.inf], (grid[:-1] + grid[1:]) / 2, [np.inf]])
        pmf = np.diff(stats.norm.cdf(edges, mu, 1.0))  # cell masses; the end cells hold the atoms
        size = N_CL * (pmf.size - 1) + 1  # the N_CL-fold convolution by FFT (no wrap-around)
        dist = np.clip(np.fft.irfft(np.fft.rfft(pmf, 2 * size) ** N_CL, 2 * size)[:size], 0, None)
        totals = N_CL * LO + h * np.arange(dist.size)
        post[j] = np.sum(dist * stats.laplace.pdf(y, totals / N_CL, B_CL))
    post *= stats.norm.pdf(mus, 0, 2)
    post /= np.trapezoid(post, mus)
    m = np.trapezoid(mus * post, mus)
    return m, math.sqrt(np.trapezoid((mus - m) ** 2 * post, mus))


def _clamped_mean():
    rng = np.random.default_rng(62)
    stat, mech = pdp.Mean(lower=LO, upper=HI), pdp.Laplace(scale=B_CL)
    y = float(pdp.release(rng.normal(0.8, 1.0, N_CL), stat, mech, rng=rng))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        x = pm.Normal("x", mu, 1.0, shape=N_CL)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=y)
    return model, "mu", _exact_clamped_mean(y)


CASES = {
    "beta_bernoulli_sum_laplace": _beta_bernoulli,
    "normal_mean_gaussian": _normal_gaussian,
    "clamped_normal_mean_laplace": _clamped_mean,
}


@pytest.mark.parametrize("sampler", ["PMMH", "MHAAR"])
@pytest.mark.parametrize("case", list(CASES))
def test_exact(case, sampler):
    model, var, (mean, sd) = CASES[case]()
    cls = getattr(pdp, sampler)
    idata = sample(
        model, lambda: [cls([model[var]], n_particles=20)], draws=2000, tune=500, seed=63
    )
    assert_mc_close(idata.posterior[var], mean, sd, label=f"{sampler} {case}")
