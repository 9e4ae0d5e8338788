"""PenaltyMH's released ratio moves by at most its stated sensitivity on neighbouring datasets.

Each iteration releases λ* = λ(D) + N(0, σ²) with σ = τ·c; it is a Gaussian mechanism with noise
multiplier τ only if |λ(D) − λ(D′)| ≤ c for every pair D, D′ differing in one record, every move
θ → θ′ and every variant (tempering, subsampling, Barker, DP MALA). Run with the same generator
seed on D and D′, the kernel draws the same move, batch and noise, so the difference of the two
released ratios is exactly λ(D) − λ(D′). Checked on records the clipping must tame: far outside
the bulk, impossible at θ (θ-dependent support), infinite, integer-valued and vector-valued.
"""

import functools

import numpy as np
import pymc as pm
import pytest

from pymc_dp.samplers.penalty.barker import BarkerTest, fit_correction
from pymc_dp.samplers.penalty.kernel import (
    Move,
    PenaltyParams,
    PenaltyState,
    PenaltyTest,
    penalty_init,
    penalty_kernel,
)
from pymc_dp.samplers.penalty.mala import MalaProposal
from pymc_dp.samplers.penalty.subsampled import SubsampledTest
from pymc_dp.samplers.penalty.target import ModelTarget

N, TRIALS = 6, 60


def _normal(data):
    with pm.Model() as model:
        d = pm.Data("d", data)
        mu = pm.Normal("mu", 0, 3)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", mu, sigma, observed=d)
    return model


def _uniform(data):
    with pm.Model() as model:
        d = pm.Data("d", data)
        th = pm.Uniform("th", 0.0, 5.0)
        pm.Uniform("y", 0.0, th, observed=d)
    return model


def _poisson(data):
    with pm.Model() as model:
        d = pm.Data("d", data)
        a = pm.Normal("a", 0, 2)
        pm.Poisson("y", pm.math.exp(a), observed=d)
    return model


def _mvnormal(data):
    with pm.Model() as model:
        d = pm.Data("d", data)
        mu = pm.Normal("mu", 0, 3, shape=2)
        pm.Normal("y", mu, 1.0, observed=d)
    return model


_rng = np.random.default_rng(11)
CASES = {
    # model, D, the substituted record (far out, impossible, infinite, integer, vector)
    "normal_far": (_normal, _rng.normal(0.5, 1.0, N), 1e6),
    "normal_inf": (_normal, _rng.normal(0.5, 1.0, N), np.inf),
    "uniform_outside_support": (_uniform, _rng.uniform(0, 0.9, N), 4.0),
    "poisson_huge_count": (_poisson, _rng.poisson(2.0, N), 10**6),
    "vector_records": (_mvnormal, _rng.normal(0, 1, (N, 2)), np.array([1e5, -1e5])),
}


class _Fixed(MalaProposal):
    """DP MALA's q-ratio and sensitivity with a fixed θ′ (the drift's own release is separate)."""

    def draw(self, rng, state, params):
        theta = state.theta + rng.normal(0.0, 0.3, state.theta.size)
        step = theta - state.theta
        return Move(theta, float(np.sqrt(step @ step)), -1)


def _variants():
    yield "penalty", dict(acceptance=PenaltyTest(), proposal="rw"), False
    yield "tempered_0.25", dict(acceptance=PenaltyTest(), proposal="rw", temperature=0.25), False
    yield "tempered_4", dict(acceptance=PenaltyTest(), proposal="guided", temperature=4.0), False
    yield "subsampled", dict(acceptance=SubsampledTest(4), proposal="coordinate"), False
    yield "barker", dict(acceptance=BarkerTest(fit_correction(1.0)), proposal="rw", tau=0.2), False
    yield "mala", dict(acceptance=PenaltyTest(), proposal=_Fixed(0.2, 1.5)), True


@functools.cache
def _compiled(case, need_grad):
    """One model and compiled target per case: D and its neighbour D′ go into the same ``pm.Data``
    container (as ``pm.set_data`` does), so every variant reuses one compilation."""
    build, data, _ = CASES[case]
    model = build(np.asarray(data, dtype=float))
    return model, ModelTarget(model, model.value_vars, need_grad=need_grad).compile()


def _released(model, target, data, params, theta0, seed):
    target.set_point(model.initial_point())
    out = []
    with np.errstate(all="ignore"):
        for t in range(TRIALS):
            model["d"].set_value(data)
            target.refresh()
            state = penalty_init(target, theta0[t], params)
            _, info = penalty_kernel(np.random.default_rng([seed, t]), state, target, params)
            out.append((info.log_ratio, info.sensitivity))
    return np.array(out)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("variant", [v[0] for v in _variants()])
def test_released_ratio_moves_within_its_sensitivity(case, variant):
    _, data, record = CASES[case]
    kw, need_grad = next((k, g) for name, k, g in _variants() if name == variant)
    data = np.asarray(data, dtype=float)
    neighbour = data.copy()
    neighbour[0] = record
    model, target = _compiled(case, need_grad)
    d = sum(np.size(v) for v in model.initial_point().values())
    theta0 = np.random.default_rng(3).normal(0.0, 0.5, (TRIALS, d))
    params = PenaltyParams(
        kw["proposal"],
        np.full(d, 0.3),
        1.5,
        kw.get("tau", 2.0),
        kw["acceptance"],
        kw.get("temperature", 1.0),
    )
    a = _released(model, target, data, params, theta0, seed=5)
    b = _released(model, target, neighbour, params, theta0, seed=5)
    np.testing.assert_array_equal(a[:, 1], b[:, 1])  # the sensitivity is data-free
    both = np.isfinite(a[:, 0]) & np.isfinite(b[:, 0])
    # non-finite released ratios: only a −∞ prior (data-free), on both datasets alike
    np.testing.assert_array_equal(np.isfinite(a[:, 0]), np.isfinite(b[:, 0]))
    assert both.sum() >= TRIALS // 3
    gap = np.abs(a[both, 0] - b[both, 0])
    assert np.all(gap <= a[both, 1] * (1 + 1e-9) + 1e-12), (gap / a[both, 1]).max()
    assert gap.max() > 0  # the substituted record was read
    if variant not in ("subsampled", "mala") and case != "uniform_outside_support":
        assert (gap / a[both, 1]).max() > 0.2  # the bound is nearly attained


class _SignTarget:
    """y_i ~ Laplace(θ, 1/K): per-record gradient K·sign(y_i − θ), all on one side of θ."""

    K = 5.0

    def __init__(self, y):
        self.y = np.asarray(y, dtype=float)
        self.n = self.y.size

    def loglik(self, theta, idx=None):
        return -self.K * np.abs(self.y - theta[0])

    def loglik_grad(self, theta, idx=None):
        return self.loglik(theta), (self.K * np.sign(self.y - theta[0]))[:, None]

    def logprior(self, theta):
        return 0.0


@pytest.mark.parametrize("total_grad_bound", [None, 1.0, 10.0])
def test_mala_total_gradient_bound_is_enforced_not_trusted(total_grad_bound):
    """DP MALA's c_l with L_S (``total_grad_bound``) assumes ‖Σ clip(∇ log p(x_i))‖ ≤ L_S on every
    data set. It was trusted: with 1,000 records whose clipped gradients all point one way (norm
    1,000) the released log ratio moved 39-135× its c_l between neighbours. The summed gradient
    is now projected onto the ball of radius L_S."""
    n, theta, theta_new = 1000, np.array([0.0]), np.array([0.001])
    data = np.full(n, 1.0)
    data[0] = 0.0005  # between θ and θ′
    neighbour = data.copy()
    neighbour[0] = -1.0
    mala = MalaProposal(step_size=0.1, grad_bound=1.0, a=1.0, total_grad_bound=total_grad_bound)
    params = PenaltyParams(mala, np.array([0.1]), _SignTarget.K, 1.0, PenaltyTest(), 1.0)
    test, released = PenaltyTest(), []
    move = Move(theta_new, float(abs(theta_new - theta)[0]), -1)
    for y in (data, neighbour):
        target = _SignTarget(y)
        ll, g = mala.evaluate(target, theta)
        if total_grad_bound is not None:
            assert np.linalg.norm(g) <= total_grad_bound * (1 + 1e-12)
        state = PenaltyState(theta, ll, 0.0, np.ones(1), g)
        lam, _, _, cache = test.estimate(None, state, target, move, mala, params)
        released.append(lam + mala.log_q_ratio(state, move, cache))
    c = test.sensitivity(params, move.norm, n) + mala.q_sensitivity(params, move, n)
    gap = abs(released[0] - released[1])
    assert 0 < gap <= c * (1 + 1e-9), gap / c
