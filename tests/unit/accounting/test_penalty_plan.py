"""Plans from the accountant that enforces the budget (issue 22.2) and the feasibility planner (22.1)."""

import re
import warnings

import pytest

from pymc_dp.accounting import (
    InfeasibleRunWarning,
    budget_iterations,
    epsilon_of_event,
    iteration_event,
    max_iterations,
    penalty_tau,
    plan_penalty,
    plan_tau,
    run_event,
)


def _check_plan(k, **kw):
    tau = penalty_tau(1.0, 1e-5, k, **kw)
    allowed = budget_iterations(tau, 1.0, 1e-5, **kw)
    assert allowed >= k  # old code: k - 1 (the closed form planned, PLD enforced)
    assert allowed <= k * (1 + 5e-4) + 1  # and τ is not wastefully large
    return tau, allowed


@pytest.mark.parametrize("k", [1, 100, 3000, 10**5])
def test_planned_tau_allows_k_iterations(k):
    _check_plan(k)


@pytest.mark.slow
def test_planned_tau_allows_k_iterations_log_grid():
    # half-decades between the default test's k = 1, 100, 3000, 10^5 (16 points cost 30 s)
    for k in (3, 32, 316, 10_000, 31_623):
        _check_plan(k)


def test_budget_iterations_is_the_step_predicate():
    for tau in (3.0, 30.0, 334.0):
        k = budget_iterations(tau, 1.0, 1e-5)
        assert epsilon_of_event(run_event(iteration_event(tau), k), 1e-5) <= 1.0
        assert epsilon_of_event(run_event(iteration_event(tau), k + 1), 1e-5) > 1.0
    assert budget_iterations(30.0, 1.0, 1e-5) == max_iterations(iteration_event(30.0), 1.0, 1e-5)


def test_mala_plan_from_the_accountant():
    tau, allowed = _check_plan(500, grad_noise_multiplier=200.0)
    ev = iteration_event(tau, grad_noise_multiplier=200.0)
    assert epsilon_of_event(run_event(ev, allowed), 1e-5) <= 1.0
    with pytest.raises(
        ValueError, match=re.escape("the DP-MALA drift alone (grad_noise_multiplier=5.0)")
    ):
        plan_tau(1.0, 1e-5, 500, grad_noise_multiplier=5.0)


@pytest.mark.slow
def test_subsampled_plan_from_the_accountant():
    tau, _ = _check_plan(300, n=400, batch_size=40)
    assert tau < penalty_tau(1.0, 1e-5, 300)  # amplification by subsampling
    with pytest.raises(ValueError, match=re.escape("batch_size=40 needs n, the number of records")):
        plan_tau(1.0, 1e-5, 300, batch_size=40)


def test_planner_warns_when_the_run_cannot_move():
    """Issue 22.1: n = 442, ε = 1, δ = 1e-5, 8 000 iterations, 10 coefficients."""
    with pytest.warns(InfeasibleRunWarning, match="this PenaltyMH run cannot move"):
        plan = plan_penalty(442, 1.0, 1e-5, 8000, lipschitz=5.0, dim=10, posterior_scale=0.04)
    assert plan.tau == pytest.approx(penalty_tau(1.0, 1e-5, 8000))
    assert 330 < plan.tau < 340 and not plan.feasible
    assert plan.scale == pytest.approx(2.0 / (plan.tau * 2 * 5.0))
    assert plan.steps_per_sd > 50 and plan.expected_moves < 1
    assert plan.noise_sd == pytest.approx(2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = plan_penalty(10**4, 100.0, 1e-5, 8000, lipschitz=5.0, dim=2, posterior_scale=0.01)
    assert ok.feasible and ok.expected_moves > 10
    assert ok.scale == pytest.approx(min(2.4 * 0.01, 2.0 / (ok.tau * 2 * 5.0)))
    with pytest.raises(
        ValueError,
        match=re.escape("proposal must be 'guided', 'coordinate' or 'rw' for plan_penalty"),
    ):
        plan_penalty(100, 1.0, 1e-5, 100, 1.0, 1, proposal="mala")
