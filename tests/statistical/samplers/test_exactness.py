"""Statistical tier: DataAugmentation + PyMC samplers against exact posteriors.

Each problem has a closed-form or enumerable posterior (see ``tests/support/exact.py``); the sampled
posterior mean and sd must lie within 4 Monte Carlo standard errors (ArviZ MCSE, ``assert_mc_close``).
"""

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support import exact
from tests.support.mc import assert_mc_close
from tests.support.models import released_beta_bernoulli
from tests.support.sampling import sample

pytestmark = pytest.mark.slow


def run(model, records, steps=(), seed=0, draws=1500):
    """DataAugmentation on ``records`` plus the given step builders, 1500 draws after 500 tuning."""
    return sample(
        model,
        lambda: [pdp.DataAugmentation(records), *[make() for make in steps]],
        draws=draws,
        tune=500,
        seed=seed,
    )


def draws(idata, name, index=None):
    d = np.asarray(idata.posterior[name])
    return d if index is None else d[..., index]


def test_beta_bernoulli_sum_laplace():
    n = 20
    model, s = released_beta_bernoulli(n, 10, 0.3)
    idata = run(model, [model["x"]], seed=1)
    assert_mc_close(
        draws(idata, "p"), *exact.beta_bernoulli_laplace(s, n, 2, 2, 1.0), label="beta-bernoulli"
    )


def test_two_releases_of_the_same_records():
    """Two DPObserved nodes on one record variable: their ratios multiply."""
    rng = np.random.default_rng(16)
    n = 15
    x_conf = rng.binomial(1, 0.6, n)
    stat = pdp.Sum(lower=0, upper=1)
    s1 = float(pdp.release(x_conf, stat, pdp.Laplace(epsilon=0.5), rng=rng))
    s2 = float(pdp.release(x_conf, stat, pdp.Laplace(epsilon=2.0), rng=rng))
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s1", x, statistic=stat, mechanism=pdp.Laplace(epsilon=0.5), observed=s1)
        pdp.DPObserved("s2", x, statistic=stat, mechanism=pdp.Laplace(epsilon=2.0), observed=s2)
    idata = run(model, [x], seed=7)
    assert_mc_close(
        draws(idata, "p"),
        *exact.beta_bernoulli_laplace([s1, s2], n, 1, 1, [2.0, 0.5]),
        label="two releases",
    )
    assert np.asarray(idata.sample_stats["dp_min_accept"]).min() >= np.exp(-2.5) - 1e-12


def test_normal_mean_sum_gaussian():
    rng = np.random.default_rng(11)
    n = 50
    s = float(rng.normal(1.0, 1.0, n).sum() + rng.normal(0, 5.0))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=5.0), observed=s)
    idata = run(model, [x], seed=2)
    assert_mc_close(draws(idata, "mu"), *exact.normal_sum_gaussian(s, n, 3.0, 5.0), label="normal")


def test_binary_randomized_response():
    rng = np.random.default_rng(12)
    n, eps = 60, 1.0
    mech = pdp.RandomizedResponse(epsilon=eps)
    r = pdp.release(rng.binomial(1, 0.3, n), pdp.Local(), mech, rng=rng)
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=r)
    idata = run(model, [x], seed=3)
    assert_mc_close(
        draws(idata, "p"), *exact.randomized_response(r, eps), label="randomized response"
    )


def test_poisson_sum_discrete_laplace_with_metropolis():
    rng = np.random.default_rng(13)
    n = 10
    mech = pdp.DiscreteLaplace(scale=2.0)
    s = int(mech.sample(np.asarray(rng.poisson(2.0, n).sum()), rng))
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=3.0, beta=1.0)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    idata = run(model, [x], steps=[lambda: pm.Metropolis([lam])], seed=4, draws=3000)
    assert_mc_close(
        draws(idata, "lam"), *exact.poisson_discrete_laplace(s, n, 3.0, 1.0, 2.0), label="poisson"
    )


def test_categorical_counts_laplace():
    rng = np.random.default_rng(14)
    n, alpha = 8, np.array([1.0, 2.0, 3.0])
    stat, mech = pdp.Counts(3), pdp.Laplace(epsilon=1.0)
    s = pdp.release(rng.choice(3, size=n, p=[0.5, 0.3, 0.2]), stat, mech, rng=rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", alpha)
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved("c", x, statistic=stat, mechanism=mech, observed=s)
    idata = run(model, [x], seed=5)
    for k in range(3):
        assert_mc_close(
            draws(idata, "pi", k),
            *exact.dirichlet_counts_laplace(s, n, alpha, 2.0, index=k),
            label=f"dirichlet pi[{k}]",
        )


def test_positive_records_exponential_sum_gaussian():
    """Records on a log-transformed space: proposals must be transformed like the point."""
    rng = np.random.default_rng(15)
    n = 5
    s = float(rng.exponential(1 / 1.5, n).sum() + rng.normal(0, 1.0))
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=2.0, beta=1.0)
        x = pm.Exponential("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=1.0), observed=s)
    idata = run(model, [x], seed=6)
    assert_mc_close(
        draws(idata, "lam"),
        *exact.exponential_sum_gaussian(s, n, 2.0, 1.0, 1.0),
        label="exponential",
    )
