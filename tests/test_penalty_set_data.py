"""PenaltyMH follows ``pm.set_data``: it reads the records from the model's data containers, never a
copy frozen at construction (seed 002 §3.1 step; exactness against a conjugate posterior).

Model: μ ~ N(0, 2²), x_i ~ N(μ, 1) observed through ``pm.Data``; the posterior given n records is
N(Σx / (n + 1/4), 1 / (n + 1/4)). The step is built on one data set and sampled after
``pm.set_data`` on another; the draws must match the *new* posterior within 4 MCSE (and the old
posterior must lie far outside that tolerance, so the test can fail). No ratio may be clipped
(the penalty chain is exact only then).
"""

import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.exact import assert_moments

PRIOR_SD = 2.0


def _posterior(x):
    prec = len(x) + 1.0 / PRIOR_SD**2
    mean = float(np.sum(x)) / prec
    return mean, mean**2 + 1.0 / prec


def _model(x):
    with pm.Model() as model:
        obs = pm.Data("obs", x)
        mu = pm.Normal("mu", 0.0, PRIOR_SD)
        pm.Normal("x", mu, 1.0, observed=obs)
    return model


def _sample(model, step, seed, draws=1500, tune=300):
    with model:
        return pm.sample(draws=draws, tune=tune, chains=2, cores=1, step=[step], random_seed=seed,
                         progressbar=False, compute_convergence_checks=False)


def _mu(idata):
    return np.asarray(idata["posterior"]["mu"])


@pytest.mark.parametrize("n_new", [20, 32], ids=["same-n", "new-n"])
def test_pm_sample_after_set_data_targets_the_new_posterior(n_new):
    rng = np.random.default_rng(20261123)
    old, new = rng.normal(-1.0, 1.0, 20), rng.normal(1.5, 1.0, n_new)
    model = _model(old)
    with model:
        # |log f(x|μ') - log f(x|μ)| <= |Δμ| |x - (μ+μ')/2| < 10 |Δμ| here: nothing is clipped
        step = pdp.PenaltyMH(lipschitz=10.0, tau=0.2, scale=0.3)
    pm.set_data({"obs": new}, model=model)
    idata = _sample(model, step, seed=11)
    stats = idata["sample_stats"]
    assert float(np.asarray(stats["dp_clipped_fraction"]).max()) == 0.0
    assert set(np.asarray(stats["dp_n_records"]).ravel().tolist()) == {n_new}
    assert step.n == n_new
    draws = _mu(idata)
    report = assert_moments(draws, *_posterior(new), label=f"PenaltyMH after pm.set_data (n={n_new})")
    # the old data's posterior is far outside the tolerance: stale data would fail this test
    mcse = float(draws.std()) / np.sqrt(report[0][4])
    assert abs(_posterior(old)[0] - _posterior(new)[0]) > 50 * mcse


def test_set_data_between_iterations_rebuilds_the_cached_loglik():
    rng = np.random.default_rng(3)
    model = _model(rng.normal(0.0, 1.0, 10))
    with model:
        step = pdp.PenaltyMH(lipschitz=10.0, tau=0.2, scale=0.3, rng=np.random.default_rng(0))
    point = model.initial_point()
    for _ in range(5):
        point, _ = step.step(point)
    new = rng.normal(3.0, 1.0, 14)
    pm.set_data({"obs": new}, model=model)
    point, stats = step.step(point)
    assert stats[0]["dp_n_records"] == 14
    mu = float(np.asarray(step._state.theta)[0])
    expected = -0.5 * (new - mu) ** 2 - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(step._state.loglik, expected, rtol=1e-12)


def test_covariates_and_cast_containers_are_followed():
    """A covariate container (read by the compiled likelihood) and an integer container (observed
    through a cast) both reach the step after pm.set_data."""
    rng = np.random.default_rng(5)
    with pm.Model() as model:
        z = pm.Data("z", rng.normal(size=8))
        k = pm.Data("k", rng.poisson(2.0, 8))
        beta = pm.Normal("beta", 0.0, 1.0)
        pm.Poisson("y", pm.math.exp(0.5 + beta * z), observed=k)
        step = pdp.PenaltyMH(lipschitz=10.0, tau=0.2, scale=0.1)
    assert not step._sync_data()
    new_z, new_k = rng.normal(size=6), rng.poisson(3.0, 6)
    pm.set_data({"z": new_z, "k": new_k}, model=model)
    assert step._sync_data() and step.n == 6
    from scipy import stats

    theta = np.array([0.3])
    expected = stats.poisson.logpmf(new_k, np.exp(0.5 + 0.3 * new_z))
    np.testing.assert_allclose(step.target.loglik(theta), expected, rtol=1e-10)
    pm.set_data({"z": new_z + 1.0}, model=model)  # covariates only: the cache must be rebuilt too
    assert step._sync_data()


def test_subsampled_step_refuses_a_new_record_count():
    rng = np.random.default_rng(8)
    model = _model(rng.normal(0.0, 1.0, 12))
    with model:
        step = pdp.PenaltyMH(lipschitz=10.0, tau=0.5, scale=0.3, batch_size=5,
                             rng=np.random.default_rng(1))
    msg = (
        "batch_size=5 was planned with n=12 records (the subsampling rate batch_size/n enters every "
        "iteration's privacy accounting), but the observed data ['x'] now hold n=15 records after "
        "pm.set_data. With batch_size the record count must stay n=12; build a new pdp.PenaltyMH "
        "for data with another number of records."
    )
    pm.set_data({"obs": rng.normal(0.0, 1.0, 15)}, model=model)
    with pytest.raises(ValueError, match=re.escape(msg)):
        step.step(model.initial_point())
    with pytest.raises(ValueError, match=re.escape(msg)):  # refused again, not taken the second time
        _sample(model, step, seed=2, draws=5, tune=0)
    assert step.total_iterations == 0
    same_n = rng.normal(4.0, 1.0, 12)  # the same record count with new values is followed
    pm.set_data({"obs": same_n}, model=model)
    idata = _sample(model, step, seed=2, draws=5, tune=0)
    assert set(np.asarray(idata["sample_stats"]["dp_n_records"]).ravel().tolist()) == {12}
    np.testing.assert_array_equal(step.target.data[0], same_n)
