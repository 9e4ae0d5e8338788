"""Collapsed likelihoods (pdp.marginalize): NUTS against known posteriors and exact record recovery (slow tier)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pymc as pm
import pytest
from scipy import special

import pymc_dp as pdp
from tests.support import exact
from tests.support.mc import assert_mc_close
from tests.support.sampling import sample


def _nuts(model, seed, draws=1500):
    return sample(pdp.marginalize(model), draws=draws, tune=700, seed=seed)


def _draws(idata, name):
    return np.asarray(idata.posterior[name].values)


@pytest.mark.slow
def test_nuts_beta_bernoulli_laplace_exact():
    n, a, b, scale = 30, 2.0, 2.0, 2.0
    s = 19.3
    with pm.Model() as model:
        p = pm.Beta("p", a, b)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=1),
            mechanism=pdp.Laplace(scale=scale),
            observed=s,
        )
    assert_mc_close(
        _draws(_nuts(model, 11), "p"),
        *exact.beta_bernoulli_laplace(s, n, a, b, scale),
        label="collapsed beta-bernoulli",
    )


@pytest.mark.slow
def test_nuts_randomized_response_exact():
    rng = np.random.default_rng(21)
    eps = 0.8
    mech = pdp.RandomizedResponse(eps)
    r = mech.sample(rng.random(60) < 0.3, rng)
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=len(r))
        pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=r)
    # 600 draws: with 1500 the ESS of p was 1120 (mean) / 1672 (squared deviations), ≥ 0.37 per
    # draw; measured with 600: 492 / 638
    assert_mc_close(
        _draws(_nuts(model, 12, draws=600), "p"),
        *exact.randomized_response(r, eps),
        label="collapsed randomized response",
    )


# 4000 draws: at 1500 (seed 13) the sd check of assert_mc_close failed at -4.6 MCSE; seeds 14-24 at
# 1500 draws gave z(sd) in [-2.4, +1.3] (mean square 0.94) and 2 x 5000 draws gave sd 0.2677 / 0.2661
# against the exact 0.2622: no bias, but the sd estimate of this skewed posterior has a heavy left
# tail at ESS ~ 1500, so the check runs with more draws.
@pytest.mark.slow
def test_nuts_poisson_discrete_laplace_exact():
    n, s = 40, 95
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=3.0, beta=1.0)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(), mechanism=pdp.DiscreteLaplace(scale=3.0), observed=s
        )
    assert_mc_close(
        _draws(_nuts(model, 13, draws=4000), "lam"),
        *exact.poisson_discrete_laplace(s, n, 3.0, 1.0, 3.0),
        label="collapsed poisson",
    )


@pytest.mark.slow
def test_nuts_dirichlet_counts_exact_and_recovery():
    n, alpha, s = 8, np.array([1.0, 2.0, 3.0]), np.array([3.4, -0.6, 4.1])
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", alpha)
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved(
            "s", x, statistic=pdp.Counts(3), mechanism=pdp.Laplace(scale=1.0), observed=s
        )
    new = pdp.marginalize(model)
    # 550 draws: with 800 the ESS of π_0 was 654 (mean) / 690 (squared deviations) and of the
    # recovered c_0 834 / 1037, i.e. ≥ 0.41 per draw; measured with 550: 455 / 565 and 769 / 793
    idata = sample(new, draws=550, tune=500, seed=14)
    assert_mc_close(
        _draws(idata, "pi")[..., 0],
        *exact.dirichlet_counts_laplace(s, n, alpha, 1.0, 0),
        label="collapsed counts",
    )
    x = _draws(pdp.recover_records(idata, new, random_seed=5), "x")
    comps = np.array([c for c in itertools.product(range(n + 1), repeat=3) if sum(c) == n])
    logw = (
        -special.gammaln(comps + 1).sum(1)
        + special.gammaln(alpha + comps).sum(1)
        - np.abs(s - comps).sum(1)
    )
    w = special.softmax(logw)
    c0 = np.sum(w * comps[:, 0])
    assert_mc_close(
        (x == 0).sum(-1),
        c0,
        math.sqrt(np.sum(w * comps[:, 0] ** 2) - c0**2),
        label="recovered counts c_0",
    )
