"""PenaltyMH through ``pm.sample`` after ``pm.set_data`` targets the new data's posterior (seed 002
§3.1 step; exactness against a conjugate posterior, 4 MCSE of the mean and the sd).

Model: μ ~ N(0, 2²), x_i ~ N(μ, 1) observed through ``pm.Data``; the posterior given n records is
N(Σx / (n + 1/4), 1 / (n + 1/4)). The step is built on one data set and sampled after
``pm.set_data`` on another; the draws must match the *new* posterior within 4 MCSE (and the old
posterior mean must lie more than 50 MCSE away, so the test can fail). No ratio may be clipped
(the penalty chain is exact only then).
"""

import math

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.mc import assert_mc_close, mcse
from tests.support.models import data_normal_model
from tests.support.sampling import sample

PRIOR_SD = 2.0


def _posterior(x):
    """Posterior mean and sd of μ given the records ``x``."""
    prec = len(x) + 1.0 / PRIOR_SD**2
    return float(np.sum(x)) / prec, 1.0 / math.sqrt(prec)


@pytest.mark.parametrize("n_new", [20, 32], ids=["same-n", "new-n"])
def test_pm_sample_after_set_data_targets_the_new_posterior(n_new):
    rng = np.random.default_rng(20261123)
    old, new = rng.normal(-1.0, 1.0, 20), rng.normal(1.5, 1.0, n_new)
    model = data_normal_model(old, PRIOR_SD)
    with model:
        # |log f(x|μ') - log f(x|μ)| <= |Δμ| |x - (μ+μ')/2| < 10 |Δμ| here: nothing is clipped
        step = pdp.PenaltyMH(lipschitz=10.0, tau=0.2, scale=0.3)
    pm.set_data({"obs": new}, model=model)
    idata = sample(model, [step], draws=1500, tune=300, seed=11)
    stats = idata["sample_stats"]
    assert float(np.asarray(stats["dp_clipped_fraction"]).max()) == 0.0
    assert set(np.asarray(stats["dp_n_records"]).ravel().tolist()) == {n_new}
    assert step.n == n_new
    draws = np.asarray(idata["posterior"]["mu"])
    z = assert_mc_close(draws, *_posterior(new), label=f"PenaltyMH after pm.set_data (n={n_new})")
    # the old data's posterior is far outside the tolerance: stale data would fail this test
    se = float(mcse(draws, "mean"))
    z_old = (draws.mean() - _posterior(old)[0]) / se
    print(f"  z(new mean) {float(z['mean']):+.2f}, z(old mean) {z_old:+.1f}")
    assert abs(_posterior(old)[0] - _posterior(new)[0]) > 50 * se
