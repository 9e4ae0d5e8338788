"""PenaltyMH follows ``pm.set_data``: it reads the records from the model's data containers, never a
copy frozen at construction (seed 002 §3.1 step): the cached log-likelihood, covariate and cast
containers, and the subsampled step's refusal of a new record count (unit tier). Exactness after
``pm.set_data`` against the conjugate posterior is in
``tests/statistical/samplers/test_penalty_set_data.py``.
"""

import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.models import data_normal_model
from tests.support.sampling import sample


def test_set_data_between_iterations_rebuilds_the_cached_loglik():
    rng = np.random.default_rng(3)
    model = data_normal_model(rng.normal(0.0, 1.0, 10))
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
    model = data_normal_model(rng.normal(0.0, 1.0, 12))
    with model:
        step = pdp.PenaltyMH(
            lipschitz=10.0, tau=0.5, scale=0.3, batch_size=5, rng=np.random.default_rng(1)
        )
    msg = (
        "batch_size=5 was planned with n=12 records (the subsampling rate batch_size/n enters every "
        "iteration's privacy accounting), but the observed data ['x'] now hold n=15 records after "
        "pm.set_data. With batch_size the record count must stay n=12; build a new pdp.PenaltyMH "
        "for data with another number of records."
    )
    pm.set_data({"obs": rng.normal(0.0, 1.0, 15)}, model=model)
    with pytest.raises(ValueError, match=re.escape(msg)):
        step.step(model.initial_point())
    with pytest.raises(
        ValueError, match=re.escape(msg)
    ):  # refused again, not taken the second time
        sample(model, [step], seed=2, draws=5, tune=0)
    assert step.total_iterations == 0
    same_n = rng.normal(4.0, 1.0, 12)  # the same record count with new values is followed
    pm.set_data({"obs": same_n}, model=model)
    idata = sample(model, [step], seed=2, draws=5, tune=0)
    assert set(np.asarray(idata["sample_stats"]["dp_n_records"]).ravel().tolist()) == {12}
    np.testing.assert_array_equal(step.target.data[0], same_n)
