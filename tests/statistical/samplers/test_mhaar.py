"""MHAAR (seed 001 Algorithms 6–8): exactness of each variant (slow tier)."""

import itertools
import math

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.statistics.order import order_smooth_sensitivity
from tests.support.exact import exact_clt_laplace, exact_records_sum
from tests.support.mc import assert_mc_close
from tests.support.models import records_model
from tests.support.sampling import sample


# ------------------------------------------------------------------------------------------------
# exactness (slow tier)
# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("subset_size", [None, 2])
def test_z_space_records_exact(subset_size):
    model = records_model()
    idata = sample(
        model,
        lambda: [pdp.MHAAR([model["th"]], n_particles=8, subset_size=subset_size)],
        draws=1000,
        tune=300,
        seed=2,
    )
    assert_mc_close(
        idata.posterior["th"], *exact_records_sum(), label=f"MHAAR z-space subset {subset_size}"
    )


@pytest.mark.slow
def test_u_space_latent_statistic_exact():
    n, A, eps, y = 50, 10.0, 5.0, 1.3
    with pm.Model() as model:
        th = pm.HalfNormal("th", 5.0)
        mu, var = pdp.normal_variance_moments(th, a=1)
        pdp.CLTRelease(
            "s", mu, var, n, mechanism=pdp.Laplace(epsilon=eps), sensitivity=A / n, observed=y
        )
    with model:
        assert pdp.MHAAR([th]).space == "u"
    idata = sample(model, lambda: [pdp.MHAAR([th], n_particles=10)], draws=1000, tune=300, seed=4)
    assert_mc_close(
        idata.posterior["th"], *exact_clt_laplace(y, n, A / (n * eps)), label="MHAAR u-space"
    )


@pytest.mark.slow
def test_local_releases_exact():
    y = np.array([2.5, -0.3, 1.8, 4.0])
    with pm.Model() as model:
        th = pm.Normal("th", 0.0, 2.0)
        x = pm.Normal("x", th, 1.0, shape=4)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Local(lower=-3, upper=3),
            mechanism=pdp.Laplace(scale=1.5),
            observed=y,
        )
    with model:
        assert pdp.MHAAR([th]).space == "local"
    idata = sample(model, lambda: [pdp.MHAAR([th], n_particles=6)], draws=1000, tune=300, seed=5)
    xs = np.linspace(-12, 12, 2401)
    th_g = np.linspace(-7, 8, 801)
    f = stats.norm.pdf(xs[None, :], th_g[:, None], 1.0)
    lik = np.ones_like(th_g)
    for yi in y:
        lik *= np.trapezoid(f * stats.laplace.pdf(yi, np.clip(xs, -3, 3), 1.5)[None, :], xs, axis=1)
    post = lik * stats.norm.pdf(th_g, 0, 2)
    post /= np.trapezoid(post, th_g)
    mean = np.trapezoid(th_g * post, th_g)
    assert_mc_close(
        idata.posterior["th"],
        mean,
        math.sqrt(np.trapezoid((th_g - mean) ** 2 * post, th_g)),
        label="MHAAR local releases",
    )


def exact_geometric_order(stat, mech, y, n=3):
    """p ~ Beta(2, 2), x_i ~ Geometric(p), clipped to [1, 4]: enumerate the clipped records."""
    p = np.linspace(1e-4, 1 - 1e-4, 2001)
    lik = np.zeros_like(p)
    for rec in itertools.product([1, 2, 3, 4], repeat=n):
        rec = np.array(rec, float)
        pr = np.ones_like(p)
        for k in rec:
            pr *= (1 - p) ** 3 if k == 4 else (1 - p) ** (k - 1) * p
        value = np.sort(rec)[stat.rank(n) - 1]
        scale = order_smooth_sensitivity(rec - 1, stat.rank(n), 3.0, mech.beta) / mech.alpha
        lik += pr * stats.laplace.pdf(y, value, scale)
    post = lik * stats.beta.pdf(p, 2, 2)
    post /= np.trapezoid(post, p)
    mean = np.trapezoid(p * post, p)
    return mean, math.sqrt(np.trapezoid((p - mean) ** 2 * post, p))


@pytest.mark.slow
@pytest.mark.parametrize("which, y", [("median", 1.2), ("max", 3.4)])
def test_z_space_median_and_max_with_smooth_laplace_exact(which, y):
    stat = pdp.Median(1, 4) if which == "median" else pdp.Max(1, 4)
    mech = pdp.SmoothLaplace(epsilon=2.0, delta=0.1)
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        x = pm.Geometric("x", p, shape=3)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=y)
    idata = sample(model, lambda: [pdp.MHAAR([p], n_particles=6)], draws=1000, tune=300, seed=6)
    assert_mc_close(
        idata.posterior["p"], *exact_geometric_order(stat, mech, y), label=f"MHAAR {which}"
    )
