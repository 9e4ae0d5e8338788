"""Every step method runs with ``cores=2`` and is reproducible by ``random_seed`` (per-chain rngs)."""

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp


def records_model():
    with pm.Model() as model:
        th = pm.Normal("th", 0, 2)
        x = pm.Normal("x", th, 1.0, shape=6)
        pdp.DPObserved("s", x, statistic=pdp.Sum(lower=-5, upper=5), mechanism=pdp.Laplace(scale=1.0),
                       observed=3.0)
    return model


def _confidential_model():
    data = np.random.default_rng(0).normal(1.0, 1.0, size=(200, 1))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 10, shape=1)
        pm.Normal("y", mu, 1.0, observed=data)
    return model


CASES = {
    "PMMH": (records_model, "th", lambda m: [pdp.PMMH([m["th"]], n_particles=8)]),
    "MHAAR": (records_model, "th", lambda m: [pdp.MHAAR([m["th"]], n_particles=8)]),
    "PenaltyMH": (_confidential_model, "mu", lambda m: [pdp.PenaltyMH(lipschitz=10.0, tau=1.0, scale=0.05)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_two_cores_reproducible_by_seed(name):
    make_model, var, make_step = CASES[name]
    model = make_model()
    runs = []
    for seed in (5, 5, 6):
        with model:
            idata = pm.sample(step=make_step(model), draws=100, tune=50, chains=2, cores=2,
                              random_seed=seed, progressbar=False, compute_convergence_checks=False)
        runs.append(np.asarray(idata.posterior[var]))
    assert runs[0].shape[:2] == (2, 100)
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])
    assert not np.array_equal(runs[0][0], runs[0][1])  # the two chains got different rngs
