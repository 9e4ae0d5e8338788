"""PenaltyMH's per-iteration privacy on neighbouring datasets, non-finite ratios included (issue 20.1).

One iteration is a Gaussian mechanism with noise multiplier τ on the clipped log ratio; the
accept decision is post-processing, so for a fixed proposal θ → θ′ and neighbouring datasets
D, D′ (one record substituted) P(accept | D) ≤ e^ε P(accept | D′) + δ_τ(ε) for every ε ≥ 0, with
δ_τ the Gaussian mechanism's privacy profile. Checked by many kernel calls with the proposal fixed,
on a model whose support depends on θ (`pm.Uniform("y", 0, th)`): a record above both th and th′
gives (−inf) − (−inf) = NaN, which the old code let through (a NaN ratio always rejects).
"""

import math

import numpy as np
import pymc as pm
import pytest
from scipy.stats import norm

from pymc_dp.samplers.penalty.kernel import (
    Move,
    PenaltyParams,
    Proposal,
    clipped_diff_sum,
    penalty_init,
    penalty_kernel,
)
from pymc_dp.samplers.penalty.target import ModelTarget

TAU, L, CALLS = 5.0, 2.0, 6000


class _Fixed(Proposal):
    """Always proposes the same θ′ (a symmetric proposal fixed for the test)."""

    name = "fixed"

    def __init__(self, theta):
        self.theta = np.asarray(theta, dtype=float)

    def draw(self, rng, state, params):
        return Move(self.theta.copy(), float(np.linalg.norm(self.theta - state.theta)), -1)


def _gaussian_delta(eps, z):
    """Privacy profile of the Gaussian mechanism with noise multiplier z (Balle & Wang 2018)."""
    return norm.cdf(-eps * z + 0.5 / z) - np.exp(eps) * norm.cdf(-eps * z - 0.5 / z)


def _exact_accept(lam, sigma):
    """E[min(1, exp(λ + ξ − σ²/2))], ξ ~ N(0, σ²): the penalty test's acceptance probability."""
    return norm.cdf(lam / sigma - sigma / 2) + math.exp(lam) * norm.cdf(-lam / sigma - sigma / 2)


def _uniform_target(x):
    with pm.Model() as model:
        th = pm.Uniform("th", 0.0, 5.0)
        pm.Uniform("y", 0.0, th, observed=x)
    target = ModelTarget(model, model.value_vars).compile()
    target.set_point(model.initial_point())
    return model, target


def _accept_rate(x, th_from, th_to, seed):
    model, target = _uniform_target(x)
    point = dict(model.initial_point())
    theta0 = target.theta_of({**point, "th_interval__": np.asarray(_to_interval(th_from))})
    theta1 = target.theta_of({**point, "th_interval__": np.asarray(_to_interval(th_to))})
    params = PenaltyParams(_Fixed(theta1), np.ones(1), L, TAU)
    state = penalty_init(target, theta0, params)
    rng = np.random.default_rng(seed)
    acc = 0
    for _ in range(CALLS):
        _, info = penalty_kernel(rng, state, target, params)
        acc += bool(info.accepted)
    # the exact acceptance probability from the clipped ratio (rule of clip_ratios)
    bound = L * float(np.linalg.norm(theta1 - theta0))
    with np.errstate(invalid="ignore"):
        r = target.loglik(theta1) - target.loglik(theta0)
    rc = np.clip(np.where(np.isnan(r), 0.0, r), -bound, bound)  # the documented rule
    lam = float(rc.sum()) + target.logprior(theta1) - target.logprior(theta0)
    return acc / CALLS, _exact_accept(lam, TAU * 2 * bound)


def _to_interval(th):
    p = th / 5.0
    return math.log(p / (1 - p))


def test_nonfinite_ratios_are_clipped_by_the_rule():
    from pymc_dp.samplers.penalty.kernel import clip_ratios

    new = np.array([0.0, -np.inf, -np.inf, 1.0, np.inf, 5.0])
    old = np.array([0.0, 0.0, -np.inf, -np.inf, np.inf, 0.0])
    with np.errstate(invalid="ignore"):
        rc, count = clip_ratios(new - old, 0.5)
    np.testing.assert_array_equal(rc, [0.0, -0.5, 0.0, 0.5, 0.0, 0.5])
    assert count == 5
    with np.errstate(invalid="ignore"):
        total, n_clip = clipped_diff_sum(new, old, 0.5)
    assert total == pytest.approx(0.5) and n_clip == 5


@pytest.mark.parametrize("th_from, th_to", [(1.0, 1.02), (1.02, 1.0)])
def test_neighbouring_acceptance_within_the_gaussian_bound_with_theta_dependent_support(
    th_from, th_to
):
    rng = np.random.default_rng(5)
    inside = rng.uniform(0.0, 0.95, size=29)
    d = np.append(inside, 3.0)  # one record above th and th': impossible at both points
    d_prime = np.append(inside, 0.5)  # its neighbour: that record substituted
    p_d, exact_d = _accept_rate(d, th_from, th_to, seed=1)
    p_dp, exact_dp = _accept_rate(d_prime, th_from, th_to, seed=2)
    se = math.sqrt((p_d * (1 - p_d) + p_dp * (1 - p_dp)) / CALLS + 1e-8)
    # per-iteration (ε, δ_τ(ε))-DP of the accept decision, both directions, on a grid of ε
    for eps in np.linspace(0.0, 3.0, 31):
        delta = _gaussian_delta(eps, TAU)
        for a, b in ((p_d, p_dp), (p_dp, p_d)):
            assert a <= math.exp(eps) * b + delta + 4 * se * math.exp(eps)
    # the kernel's frequencies are the exact acceptance probabilities (4 binomial SE)
    for p, exact in ((p_d, exact_d), (p_dp, exact_dp)):
        assert abs(p - exact) < 4 * math.sqrt(exact * (1 - exact) / CALLS + 1e-8)
    assert max(exact_d, exact_dp) > 0.05  # a test of a move that can be accepted
    for eps in np.linspace(0.0, 3.0, 31):  # and the same for the exact probabilities
        delta = _gaussian_delta(eps, TAU)
        for a, b in ((exact_d, exact_dp), (exact_dp, exact_d)):
            assert a <= math.exp(eps) * b + delta + 1e-12


def test_mala_gradients_of_impossible_records_contribute_zero():
    from pymc_dp.samplers.penalty.mala import clipped_grad_sum

    g = np.array([[3.0, 4.0], [np.nan, np.nan], [0.3, -np.inf]])
    np.testing.assert_allclose(clipped_grad_sum(g, 1.0), [0.6, 0.8])  # old code: NaN
