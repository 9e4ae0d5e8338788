"""Interweave (non-centred θ-move, Yu & Meng 2011): target graph, kernel, refusals, exactness."""

import math
import re

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from tests.support.sampling import sample
from pymc_dp.samplers.interweave import (
    InterweaveTarget,
)
from tests.support.models import L, U, clamped_model, pt_concat


# ---------------------------------------------------------------------------------------------
# the target log π(θ | z) against a hand computation
# ---------------------------------------------------------------------------------------------
def test_target_is_prior_plus_release_on_clamped_records():
    model, s, b = clamped_model(30, 0.5, seed=1, mu_sigma=True)
    target = InterweaveTarget(model, [model["mu"], model["sigma"]])
    assert target.kinds == {"x": "location-scale"}
    point = model.initial_point(random_seed=0)
    point["x"] = np.random.default_rng(2).normal(1.0, 2.0, 30)
    point["mu"], point["sigma_log__"] = np.array(0.7), np.array(math.log(1.3))
    zs = target.z_of(point)
    np.testing.assert_allclose(zs[0], (point["x"] - 0.7) / 1.3, rtol=1e-12)

    def by_hand(mu, log_sigma):
        x = mu + math.exp(log_sigma) * zs[0]
        t = np.clip(x, L, U).sum()
        return (
            stats.norm.logpdf(mu, 0, 3)
            + stats.halfnorm.logpdf(math.exp(log_sigma), scale=2.0)
            + log_sigma
            + stats.laplace.logpdf(s, t, b)
        )

    values = [(0.7, math.log(1.3)), (-1.5, math.log(0.4)), (3.0, math.log(2.5))]
    got = [target.logp(target.with_theta(point, np.array(v)), zs) for v in values]
    want = [by_hand(*v) for v in values]
    np.testing.assert_allclose(np.diff(got), np.diff(want), rtol=1e-9, atol=1e-9)
    moved = target.update(point, np.array([-1.5, math.log(0.4)]), zs)
    np.testing.assert_allclose(moved["x"], -1.5 + 0.4 * zs[0], rtol=1e-12)
    back = target.update(point, target.theta_flat(point), zs)
    np.testing.assert_allclose(back["x"], point["x"], rtol=1e-12)


def test_icdf_representation_for_positive_records():
    """Exponential records: x = F_λ⁻¹(u), stored in log space like the point."""
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 1.0)
        x = pm.Exponential("x", lam, shape=4)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=1.0), observed=3.0)
    target = InterweaveTarget(model, [lam])
    assert target.kinds == {"x": "icdf"}
    point = model.initial_point(random_seed=0)
    point["x_log__"] = np.log([0.2, 1.0, 2.5, 0.05])
    point["lam_log__"] = np.array(math.log(1.7))
    zs = target.z_of(point)
    np.testing.assert_allclose(zs[0], 1 - np.exp(-1.7 * np.exp(point["x_log__"])), rtol=1e-10)
    back = target.update(point, target.theta_flat(point), zs)
    np.testing.assert_allclose(back["x_log__"], point["x_log__"], rtol=1e-8, atol=1e-12)
    moved = target.update(point, np.array([math.log(3.4)]), zs)  # doubling the rate halves x
    np.testing.assert_allclose(np.exp(moved["x_log__"]), np.exp(point["x_log__"]) / 2, rtol=1e-8)


# ---------------------------------------------------------------------------------------------
# refusals
# ---------------------------------------------------------------------------------------------
def test_refuses_discrete_records():
    # Bernoulli / categorical records are written through uniforms in their cells; Poisson has none
    with pm.Model():
        lam = pm.Gamma("lam", 2, 1)
        x = pm.Poisson("x", lam, shape=5)
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(0, 9), mechanism=pdp.Laplace(epsilon=1.0), observed=2.0
        )
        with pytest.raises(
            ValueError, match=re.escape("Interweave needs records with a θ-free representation")
        ):
            pdp.Interweave([lam])


def test_refuses_bad_arguments():
    model, _, _ = clamped_model(5, 1.0, seed=0)
    with model:
        with pytest.raises(
            ValueError, match=re.escape("n_steps must be an integer >= 1, got n_steps=0.")
        ):
            pdp.Interweave([model["mu"]], n_steps=0)
        with pytest.raises(
            ValueError,
            match=re.escape("initial_width must be finite and > 0, got initial_width=-1.0."),
        ):
            pdp.Interweave([model["mu"]], initial_width=-1.0)
        with pytest.raises(ValueError, match=re.escape("'x' is both in vars and in records")):
            pdp.Interweave([model["mu"], model["x"]], records=[model["x"]])
    with pm.Model():
        mu = pm.Normal("mu")
        pm.Normal("x", mu, 1.0, shape=3)
        with pytest.raises(ValueError, match=re.escape("Interweave found no pdp.DPObserved node")):
            pdp.Interweave([mu])


def test_step_moves_theta_and_records_together():
    model, _, _ = clamped_model(20, 0.5, seed=4)
    with model:
        step = pdp.Interweave([model["mu"]], rng=np.random.default_rng(0))
    point = model.initial_point(random_seed=0)
    point["x"] = np.random.default_rng(1).normal(0.0, 1.0, 20)
    z = point["x"] - point["mu"]
    new, (st,) = step.step(point)
    assert set(new) == set(point) and st["dp_iw_evals"] >= 1 and st["tune"] is True
    np.testing.assert_allclose(new["x"] - new["mu"], z, rtol=1e-10, atol=1e-12)


def test_records_depending_on_a_kept_record():
    """Regression records (x0, y): y = Xβ + σz is moved, the MvNormal covariates x0 are kept."""
    n = 6
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 2.0, shape=2)
        x0 = pm.MvNormal("x0", np.zeros(2), np.eye(2), shape=(n, 2))
        y = pm.Normal("y", x0 @ beta, 0.5, shape=n)
        stat = pdp.RecordSum(lambda a, b: pt_concat(a, b), sensitivity=8.0)
        pdp.DPObserved(
            "s", (x0, y), statistic=stat, mechanism=pdp.Laplace(epsilon=1.0), observed=np.zeros(3)
        )
    assert InterweaveTarget(model, [beta]).kinds == {"y": "location-scale"}  # default: records of β
    target = InterweaveTarget(model, [beta], records=[x0, y])
    assert target.kinds == {"x0": "fixed", "y": "location-scale"}
    point = model.initial_point(random_seed=0)
    rng = np.random.default_rng(5)
    point["x0"], point["y"] = rng.normal(size=(n, 2)), rng.normal(size=n)
    zs = target.z_of(point)
    new_beta = np.array([0.3, -1.2])
    moved = target.update(point, new_beta, zs)
    np.testing.assert_allclose(moved["x0"], point["x0"])
    np.testing.assert_allclose(moved["y"], point["x0"] @ new_beta + 0.5 * zs[0], rtol=1e-12)

    def by_hand(b):
        yy = point["x0"] @ b + 0.5 * zs[0]
        t = np.concatenate([np.clip(point["x0"], -1, 1).sum(axis=0), [np.clip(yy, -1, 1).sum()]])
        return stats.norm.logpdf(b, 0, 2).sum() + stats.laplace.logpdf(0.0, t, 8.0).sum()

    got = [target.logp(target.with_theta(point, b), zs) for b in (new_beta, np.array([1.0, 0.5]))]
    np.testing.assert_allclose(
        got[0] - got[1], by_hand(new_beta) - by_hand(np.array([1.0, 0.5])), rtol=1e-9
    )


def _custom_dist_records_model():
    rng = np.random.default_rng(101)
    n, sig = 20, 2.0
    s = rng.normal(1, 1, n).sum() + rng.normal(0, sig)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.CustomDist(
            "x", mu, dist=lambda mu, size: pm.Normal.dist(mu, 1.0, size=size), shape=n
        )
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sig), observed=s)
    return model


def test_custom_dist_records_without_a_theta_free_map_are_refused():
    """Records from ``pm.CustomDist(dist=...)``: PyMC derives their icdf from a clone of the
    graph, with clones of θ that the value replacement does not reach, so the θ-free map drew
    a fresh θ and the slice move crashed (log density -inf) inside pm.sample(). Refused now;
    pm.sample() runs DataAugmentation without the θ-move."""
    model = _custom_dist_records_model()
    with model, pytest.raises(ValueError, match="has none"):
        pdp.Interweave([model["mu"]], records=[model["x"]])
    with model:
        step = pdp.DataAugmentation([model["x"]])
    assert not step.interweave_decisions[0]["enabled"]
    sample(model, draws=60, tune=60, chains=1, seed=3)  # the default route samples
