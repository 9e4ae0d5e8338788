"""GammaCells (``pymc_dp.samplers.gamma_cells``) against enumeration of independent cells.

λ_k ~ Gamma(α_k, β_k) fixed, c_k ~ Poisson(λ_k), c released by ``pdp.Cells``. Each cell's posterior
is its negative-binomial marginal times the releases, enumerated on 0..200; λ_k's posterior moments
follow exactly from c_k's (λ | c is Gamma(α + c, β + 1)). ``pm.sample()``'s own assignment (the
cells moved with λ summed out, then λ drawn given them): mean and sd of every cell and every λ_k
within 4 Monte Carlo standard errors. Cases: per-cell α (one below 1) and β with two releases; a
(2, 3) table of areas with one α and β for all cells (the census tutorial's prior).
"""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from tests.support.mc import assert_mc_close
from tests.support.sampling import assigned, sample

pytestmark = pytest.mark.slow


def exact_moments(alpha, beta, releases):
    """Per cell (flattened): posterior mean and sd of c and of λ by enumeration on 0..200."""
    grid = np.arange(201)
    alpha, beta = np.broadcast_arrays(np.ravel(alpha), np.ravel(beta))
    mc, sc, ml, sl = (np.zeros(alpha.size) for _ in range(4))
    for k in range(alpha.size):
        lw = stats.nbinom(alpha[k], beta[k] / (1 + beta[k])).logpmf(grid)
        for mech, r in releases:
            lw = lw + mech.logpdf(np.ravel(r)[k], grid)
        w = np.exp(lw - lw.max())
        w /= w.sum()
        mc[k] = w @ grid
        sc[k] = np.sqrt(w @ grid**2 - mc[k] ** 2)
        shape, rate = alpha[k] + grid, beta[k] + 1.0
        ml[k] = w @ (shape / rate)
        sl[k] = np.sqrt(w @ (shape * (shape + 1) / rate**2) - ml[k] ** 2)
    return mc, sc, ml, sl


def test_cells_with_their_own_priors_two_releases():
    alpha, beta = np.array([0.4, 2.0, 5.0]), np.array([0.1, 0.5, 1.0])
    releases = [
        (pdp.DiscreteGaussian(sigma=1.5), np.array([0, 6, 3])),
        (pdp.Laplace(scale=2.0), np.array([1.5, 3.0, 5.0])),
    ]
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha, beta, shape=3)
        c = pm.Poisson("c", lam, shape=3)
        for i, (mech, r) in enumerate(releases):
            pdp.DPObserved(f"s{i}", c, statistic=pdp.Cells(), mechanism=mech, observed=r)
    assert assigned(model) == {"GammaCells": ["c", "lam_log__"]}
    idata = sample(model, draws=1500, tune=300, seed=41)
    mc, sc, ml, sl = exact_moments(alpha, beta, releases)
    assert_mc_close(np.asarray(idata.posterior["c"]), mc, sc, label="cells")
    assert_mc_close(np.asarray(idata.posterior["lam"]), ml, sl, label="lam")


def test_areas_with_one_prior():
    mech, r = pdp.DiscreteGaussian(sigma=2.0), np.array([[0, 1, 7], [3, 0, 12]])
    with pm.Model() as model:
        lam = pm.Gamma("lam", 0.5, 0.5 / 4.0, shape=(2, 3))
        c = pm.Poisson("c", lam, shape=(2, 3))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=r)
    assert assigned(model) == {"GammaCells": ["c", "lam_log__"]}
    idata = sample(model, draws=1500, tune=300, seed=42)
    mc, sc, ml, sl = exact_moments(0.5, 0.5 / 4.0 * np.ones(6), [(mech, r)])
    assert_mc_close(np.asarray(idata.posterior["c"]).reshape(2, -1, 6), mc, sc, label="area cells")
    assert_mc_close(np.asarray(idata.posterior["lam"]).reshape(2, -1, 6), ml, sl, label="area lam")
