"""PMMH (seed 001 Algorithm 5): kernel unit tests, errors, exactness through pm.sample."""

import math
import re

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.samplers.pmmh import PMMHState, pmmh_kernel
from tests.support.models import records_model

# ------------------------------------------------------------------------------------------------
# kernel
# ------------------------------------------------------------------------------------------------


def test_kernel_carries_the_estimate_and_uses_the_pseudo_marginal_ratio():
    rng = np.random.default_rng(0)
    calls = []

    def estimate(rng, theta):
        calls.append(theta.copy())
        log_w = rng.normal(-1.0 - theta[0] ** 2, 1.0, size=4)
        return log_w, [np.full(3, j) for j in range(4)]

    def propose(rng, th):
        return th + 0.5 * rng.standard_normal(1), 0.0

    def log_prior(th):
        return -0.5 * float(th[0] ** 2)

    state = PMMHState(np.zeros(1), 0.0, -1.0, [np.zeros(3)])
    for _ in range(200):
        prev = state
        state, info = pmmh_kernel(
            rng, state, propose_theta=propose, log_prior=log_prior, estimate=estimate
        )
        # the current estimate is never re-estimated: one estimate (the proposal's) per iteration
        if info.accepted:
            assert state.log_lik == pytest.approx(info.log_lik_proposal)
            assert np.array_equal(state.theta, calls[-1])
        else:
            assert state.log_lik == prev.log_lik and np.array_equal(state.theta, prev.theta)
        log_alpha = log_prior(calls[-1]) + info.log_lik_proposal - prev.log_prior - prev.log_lik
        assert info.accept_prob == pytest.approx(min(1.0, math.exp(log_alpha)))
    assert len(calls) == 200


def test_kernel_nan_estimate_rejects():
    state = PMMHState(np.zeros(1), 0.0, -1.0, [np.zeros(1)])
    out, info = pmmh_kernel(
        np.random.default_rng(1),
        state,
        propose_theta=lambda rng, th: (th + 1.0, 0.0),
        log_prior=lambda th: 0.0,
        estimate=lambda rng, th: (np.array([np.nan, np.nan]), [np.ones(1), np.ones(1)]),
    )
    assert not info.accepted and out is state


@pytest.mark.parametrize("user_proposal", [False, True])
def test_likelihood_estimate_is_unbiased(user_proposal):
    n, b, y, theta = 50, 0.05, 1.3, 2.5
    with pm.Model() as model:
        th = pm.HalfNormal("th", 5.0)
        mu, var = pdp.normal_variance_moments(th, a=1)
        pdp.CLTRelease("s", mu, var, n, mechanism=pdp.Laplace(scale=b), sensitivity=0.2, observed=y)

        def proposal(rng, point, n_particles):
            u = rng.normal(y, 0.2, size=(n_particles, 1))
            return [u], stats.norm.logpdf(u[:, 0], y, 0.2)

        step = pdp.PMMH([th], n_particles=5, proposal=proposal if user_proposal else None)
    step.set_rng(np.random.default_rng(7))
    estimate = step.estimator(model.initial_point(random_seed=0))
    rng = np.random.default_rng(8)
    z = np.array([np.exp(estimate(rng, np.array([np.log(theta)]))[0]).mean() for _ in range(3000)])
    m, v = pdp.normal_variance_moments(theta, a=1)
    u = np.linspace(m - 2, m + 2, 40001)
    exact = np.trapezoid(stats.norm.pdf(u, m, math.sqrt(v / n)) * stats.laplace.pdf(y, u, b), u)
    assert abs(z.mean() - exact) < 4 * z.std() / math.sqrt(z.size), (z.mean(), exact)


@pytest.mark.parametrize("bad", [0, -2, 2.5, True])
def test_n_particles_must_be_a_positive_integer(bad):
    model = records_model()
    with (
        model,
        pytest.raises(
            ValueError,
            match=re.escape(f"n_particles must be an integer >= 1, got n_particles={bad!r}."),
        ),
    ):
        pdp.PMMH([model["th"]], n_particles=bad)


def test_latent_that_no_dpobserved_depends_on():
    model = records_model()
    with model:
        other = pm.Normal("other", model["th"], 1.0, shape=6)
        with pytest.raises(
            ValueError,
            match=re.escape(
                "latent must be variables a pdp.DPObserved node depends on, got latent=['other']"
            ),
        ):
            pdp.PMMH([model["th"]], latent=[other])


def test_theta_that_no_dpobserved_depends_on():
    model = records_model()
    with model:
        phi = pm.Normal("phi")
        with pytest.raises(ValueError, match=re.escape("vars='phi', but none does")):
            pdp.PMMH([phi])


def test_mechanism_without_density():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Opaque(pdp.mechanisms.Mechanism):
        norm = None

        @property
        def calibrated(self):
            return True

        def random_graph(self, statistic, size=None):
            return pm.Normal.dist(statistic, 1.0, size=size)

    model = records_model(mechanism=Opaque())
    with (
        model,
        pytest.raises(
            ValueError, match=re.escape("PMMH needs the density of the release, but the mechanism")
        ),
    ):
        pdp.PMMH([model["th"]])


def test_pmmh_must_own_every_parent_of_the_records():
    with pm.Model():
        mu = pm.Normal("mu")
        sd = pm.HalfNormal("sd")
        x = pm.Normal("x", mu, sd, shape=4)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.RecordSum(lambda x: x, sensitivity=1.0),
            mechanism=pdp.Laplace(scale=1.0),
            observed=3.0,
        )
        with pytest.raises(
            ValueError, match=re.escape("'sd' is missing from vars='mu'. Pass vars=['mu', 'sd']")
        ):
            pdp.PMMH([mu])
