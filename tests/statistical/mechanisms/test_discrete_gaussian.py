"""DiscreteGaussian counts: the exact posterior by enumeration of the latent counts (slow tier)."""

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.exact import dirichlet_counts_posterior
from tests.support.mc import assert_mc_close
from tests.support.sampling import sample


@pytest.mark.slow
def test_discrete_gaussian_counts_exact_posterior():
    """N = 400 categorical records, 4 cells, σ = 6.25: DataAugmentation vs exact enumeration."""
    rng = np.random.default_rng(20)
    n, alpha, sigma = 400, np.array([1.0, 1.0, 2.0, 2.0]), 6.25
    mech = pdp.DiscreteGaussian(sigma=sigma)
    records = rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1])
    s = mech.sample(np.bincount(records, minlength=4), rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", alpha)
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved("c", x, statistic=pdp.Counts(4), mechanism=mech, observed=s)
        idata = sample(model, [pdp.DataAugmentation([x])], draws=1500, tune=500, seed=7)
    draws = np.asarray(idata.posterior["pi"])
    for k in range(4):
        m = dirichlet_counts_posterior(s, n, alpha, lambda z: -z * z / (2 * sigma**2), k)
        assert_mc_close(draws[..., k], *m, label=f"discrete gaussian pi[{k}]")
