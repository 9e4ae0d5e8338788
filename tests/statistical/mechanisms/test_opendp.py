"""pdp.from_opendp: an OpenDP release round trip has the exact posterior (slow tier)."""

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support import exact
from tests.support.mc import assert_mc_close
from tests.support.sampling import sample

import opendp.prelude as dp  # a hard dependency: never skipped

dp.enable_features("contrib")


@pytest.mark.slow
def test_round_trip_opendp_release_exact_posterior():
    """Curator: OpenDP clamp → sum → Laplace on Bernoulli records (an integer release, drawn by
    OpenDP's secure sampler, so not seedable: the check holds for every released value).
    Analyst: DPObserved with pdp.from_opendp(meas); DataAugmentation vs enumeration of Σx."""
    rng = np.random.default_rng(31)
    n = 20
    records = rng.binomial(1, 0.3, n)
    meas = (
        (dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance())
        >> dp.t.then_clamp((0, 1))
        >> dp.t.then_sum()
        >> dp.m.then_laplace(1.0)
    )
    s = int(meas([int(v) for v in records]))
    mech = pdp.from_opendp(meas)
    with pm.Model() as model:
        p = pm.Beta("p", 2, 2)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(lower=0, upper=1), mechanism=mech, observed=s)
        idata = sample(model, [pdp.DataAugmentation([x])], draws=1500, tune=500, seed=3)
    # discrete Laplace on integers has the same kernel e^{-|s-k|/b} as the continuous one
    assert_mc_close(
        np.asarray(idata.posterior["p"]),
        *exact.beta_bernoulli_laplace(s, n, 2, 2, 1.0),
        label=f"opendp round trip (s={s})",
    )
