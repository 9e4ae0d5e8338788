"""Issue 17's silent wrong posterior: ``pm.Normal("mu", 0, 100)`` (int8 constants) under ``pm.sample()``.

The default assignment gives mu to ConjugateTheta, which computed ``1 / 100**2`` in int8 (prior sd 4:
posterior mean 27 MCSE off); the chain here runs DataAugmentation + ConjugateTheta alone (no other
θ-move to dilute an error). Records N(mu, 1), n = 2, an unclamped sum with Gaussian noise: the
posterior of mu is conjugate (``exact.normal_sum_gaussian``).
"""

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support import exact
from tests.support.mc import assert_mc_close
from tests.support.sampling import assigned, sample


@pytest.mark.slow
@pytest.mark.parametrize("prior_sd", [100, 16])
def test_int8_prior_sd_posterior_is_exact(prior_sd):
    n, s, sigma = (
        2,
        20.0,
        1.0,
    )  # the prior sd matters (4 instead of 100: mean 14.3, not 15) and DA mixes well
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, prior_sd)  # Python ints: int8 constants
        x = pm.Normal("x", mu, 1, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sigma), observed=s)
    assert model["mu"].owner.inputs[-1].dtype == "int8"
    # pm.sample() itself sums these Normal records out (Collapsed); ConjugateTheta is asked for
    assert assigned(model) == {"Collapsed": ["mu", "x"]}
    idata = sample(
        model,
        lambda: [pdp.DataAugmentation([x]), pdp.ConjugateTheta([mu])],
        draws=1500,
        tune=300,
        seed=11,
    )
    assert_mc_close(
        np.asarray(idata.posterior["mu"]),
        *exact.normal_sum_gaussian(s, n, prior_sd, sigma),
        label=f"pm.Normal('mu', 0, {prior_sd}) with int8 constants",
    )
