"""ConjugateTheta with DataAugmentation (and Interweave) against exact posteriors (slow tier)."""

import math

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support import exact
from tests.support.exact import linear_posterior
from tests.support.mc import assert_mc_close
from tests.support.models import released_beta_bernoulli
from tests.support.sampling import sample


@pytest.mark.slow
def test_exact_beta_bernoulli_sum_laplace():
    n = 30
    model, s = released_beta_bernoulli(n, 31, 0.3)
    with model:
        idata = sample(
            model,
            [pdp.DataAugmentation([model["x"]]), pdp.ConjugateTheta([model["p"]])],
            draws=2000,
            tune=300,
            seed=7,
        )
    assert_mc_close(
        np.asarray(idata.posterior["p"]),
        *exact.beta_bernoulli_laplace(s, n, 2, 2, 1.0),
        label="DA + ConjugateTheta beta-bernoulli",
    )


@pytest.mark.slow
def test_exact_normal_mean_sum_gaussian():
    rng = np.random.default_rng(32)
    n = 50
    s = float(rng.normal(1.0, 1.0, n).sum() + rng.normal(0, 5.0))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=5.0), observed=s)
        idata = sample(
            model,
            [pdp.DataAugmentation([x]), pdp.ConjugateTheta([mu])],
            draws=2000,
            tune=300,
            seed=8,
        )
    assert_mc_close(
        np.asarray(idata.posterior["mu"]),
        *exact.normal_sum_gaussian(s, n, 3.0, 5.0),
        label="DA + ConjugateTheta normal-gaussian",
    )


@pytest.mark.slow
def test_exact_regression_records_sum_gaussian():
    """Latent responses y ~ N(Xβ, σ²) (X public), s = Σ y + N(0, τ²): s | β ~ N(1ᵀXβ, nσ² + τ²).

    The weak-release regime: the centred draw β | y alone mixes slowly (ESS ≈ 40 of 4000), so the
    non-centred Interweave move on β runs alongside (and is tested with it).
    """
    rng = np.random.default_rng(33)
    n, sigma, tau = 30, 1.0, 4.0
    X = np.column_stack([np.ones(n), rng.normal(1.0, 1.0, n)])
    s = float((X @ np.array([0.5, 1.0]) + rng.normal(0, sigma, n)).sum() + rng.normal(0, tau))
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 2.0, shape=2)
        y = pm.Normal("y", pm.math.dot(X, beta), sigma, shape=n)
        pdp.DPObserved("s", y, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=tau), observed=s)
        steps = [pdp.DataAugmentation([y]), pdp.ConjugateTheta([beta]), pdp.Interweave([beta])]
        idata = sample(model, steps, draws=1500, tune=300, seed=9)
    v = X.sum(axis=0)
    mean, cov = linear_posterior(v[None, :], np.array([s]), math.sqrt(n * sigma**2 + tau**2), 2.0)
    b = np.asarray(idata.posterior["beta"])
    for k in range(2):
        assert_mc_close(
            b[..., k],
            mean[k],
            math.sqrt(cov[k, k]),
            label=f"DA + ConjugateTheta + Interweave regression beta[{k}]",
        )
