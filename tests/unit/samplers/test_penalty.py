"""DP penalty MH (seed 002 §3.1): kernel exactness on a conjugate model, PyMC adapter, accounting, errors."""

import re

import numpy as np
import pymc as pm
import pytest
from packaging.version import Version

import pymc_dp as pdp
from pymc_dp.accounting import (
    PrivacyBudgetExceeded,
    epsilon_of_event,
    iteration_event,
    run_event,
)
from pymc_dp.samplers.penalty import (
    BudgetExhaustedWarning,
    ClippingWarning,
    PenaltyParams,
    PenaltyState,
    penalty_kernel,
)
from tests.support.models import (
    NormalMeans,
    compound_model,
    compound_steps,
    penalty_model,
    run_kernel,
)
from tests.support.sampling import sample


def test_heavy_clipping_is_reported(normal_target):
    params = PenaltyParams("rw", np.full(2, 0.12), 0.3, 0.4)
    _, clipped, _ = run_kernel(normal_target, params, 300, seed=2)
    assert clipped > 0.5


def test_clipping_advice_raise_lipschitz_not_shrink_the_scale(normal_target):
    """Issue 22.4: the ClippingWarning's advice — the scale leaves the clipped fraction unchanged
    (ratio and bound shrink together), a larger lipschitz reduces it."""

    def clipped(lip, scale):
        return run_kernel(
            normal_target, PenaltyParams("rw", np.full(2, scale), lip, 0.05), 1500, seed=2
        )[1]

    assert clipped(0.5, 0.012) > 0.5 and clipped(0.5, 0.0012) > 0.5
    assert clipped(2.0, 0.012) < 0.1


def test_pm_sample_stats_and_privacy_spent():
    model, _ = penalty_model()
    with model:
        step = pdp.PenaltyMH(lipschitz=10.0, tau=5.0, scale=0.05, proposal="guided")
    idata = sample(model, [step], draws=200, tune=50, chains=2, seed=1)
    ss = idata["sample_stats"]
    for name in [
        "dp_accepted",
        "dp_clipped_fraction",
        "dp_noise_sd",
        "dp_iterations",
        "dp_accept_prob",
    ]:
        assert name in ss
    its = np.asarray(ss["dp_iterations"])
    assert its.shape == (2, 200) and its[:, -1].tolist() == [250, 250]  # tuning iterations counted
    assert step.total_iterations == 500
    expected = epsilon_of_event(run_event(iteration_event(5.0), 500), 1e-5)
    assert pdp.privacy_spent(idata, delta=1e-5) == pytest.approx(expected, rel=1e-6)
    assert pdp.privacy_spent(step, delta=1e-5) == pytest.approx(expected, rel=1e-6)
    assert pdp.privacy_spent(idata, delta=1e-5, accountant="rdp") >= expected
    assert np.isfinite(np.asarray(idata["posterior"]["mu"])).all()


def test_pm_sample_is_reproducible():
    model, _ = penalty_model()
    a, b = [
        np.asarray(
            sample(
                model,
                [pdp.PenaltyMH(lipschitz=10.0, tau=5.0, scale=0.05, model=model)],
                draws=50,
                tune=0,
                chains=1,
                seed=7,
            )["posterior"]["mu"]
        )
        for _ in range(2)
    ]
    np.testing.assert_array_equal(a, b)


def test_heavy_clipping_warns_in_pm_sample():
    model, _ = penalty_model()
    with model:
        step = pdp.PenaltyMH(lipschitz=0.05, tau=1.0, scale=0.1)
    with pytest.warns(ClippingWarning, match="The proposal scale does not change this fraction"):
        idata = sample(model, [step], draws=80, tune=0, chains=1, seed=1)
    assert float(np.asarray(idata["sample_stats"]["dp_clipped_fraction"]).mean()) > 0.5


def test_budget_stops_before_exceeding():
    model, _ = penalty_model()
    with model:
        step = pdp.PenaltyMH(lipschitz=10.0, tau=20.0, scale=0.05, budget=(1.0, 1e-5), init="model")
    k = step.max_iterations
    assert epsilon_of_event(run_event(iteration_event(20.0), k), 1e-5) <= 1.0
    assert epsilon_of_event(run_event(iteration_event(20.0), k + 1), 1e-5) > 1.0
    point = model.initial_point()
    step.set_rng(np.random.default_rng(0))
    for _ in range(k):
        point, _ = step.step(point)
    with pytest.warns(
        BudgetExhaustedWarning, match=re.escape(f"after {k} iterations of this chain")
    ):
        new, [stats] = step.step(point)  # no data read: the last state, marked
    assert stats["dp_budget_exhausted"] and step.total_iterations == k and step.budget_exhausted
    np.testing.assert_array_equal(new["mu"], point["mu"])
    assert pdp.privacy_spent(step, delta=1e-5) <= 1.0


def test_budget_stops_pm_sample_and_keeps_the_draws():
    model, _ = penalty_model()
    with model:
        step = pdp.PenaltyMH(
            lipschitz=10.0, tau=20.0, scale=0.002, budget=(1.0, 1e-5), init="model"
        )
    k = step.max_iterations
    if Version(pm.__version__) >= Version(
        "6.3"
    ):  # the chain's length is known: refused before any data
        with pytest.raises(
            PrivacyBudgetExceeded, match=re.escape(f"0 already ran and {k + 30} more")
        ):
            sample(model, [step], draws=k + 30, tune=0, chains=1, seed=1)
        assert step.total_iterations == 0
        return
    with pytest.warns(BudgetExhaustedWarning, match="dp_budget_exhausted=True"):
        idata = sample(model, [step], draws=k + 30, tune=0, chains=1, seed=1)
    ss = idata["sample_stats"]
    done = np.asarray(ss["dp_budget_exhausted"])[0]
    assert done.sum() == 30 and not done[:k].any()
    mu = np.asarray(idata["posterior"]["mu"])[0]
    assert np.all(mu[k:] == mu[k - 1]) and len(np.unique(mu[:k, 0])) > 1
    assert step.total_iterations == k
    assert pdp.privacy_spent(idata, delta=1e-5) <= 1.0


def test_errors():
    model, _ = penalty_model()
    with model:
        with pytest.raises(
            ValueError, match=re.escape("lipschitz must be finite and > 0, got lipschitz=0.")
        ):
            pdp.PenaltyMH(lipschitz=0, tau=1.0)
        with pytest.raises(ValueError, match=re.escape("tau must be finite and > 0, got tau=-2.")):
            pdp.PenaltyMH(lipschitz=1.0, tau=-2)
        with pytest.raises(
            ValueError, match=re.escape("A zero proposal scale never moves the chain")
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, scale=0.0)
        with pytest.raises(
            ValueError,
            match=re.escape("batch_size must be an integer in [2, n=100], got batch_size=101."),
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, batch_size=101)
        with pytest.raises(
            ValueError,
            match=re.escape(
                "budget delta must lie in the open interval (0, 1), got budget delta=1.0."
            ),
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, budget=(1.0, 1.0))
        with pytest.raises(
            ValueError,
            match=re.escape("budget epsilon must be finite and > 0, got budget epsilon=-1."),
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, budget=(-1, 1e-5))
        with pytest.raises(
            ValueError,
            match=re.escape(
                "proposal must be one of ('rw', 'coordinate', 'guided', 'mala'), got proposal='hmc'."
            ),
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, proposal="hmc")
        with pytest.raises(
            ValueError,
            match=re.escape(
                "scale must be one value or one per coordinate of the updated variables (d=2), got 3 values"
            ),
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, scale=[0.1, 0.2, 0.3])
        with pytest.raises(
            ValueError, match=re.escape("accountant must be 'pld' or 'rdp', got accountant='zcdp'.")
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, accountant="zcdp")
        with pytest.raises(ValueError, match=re.escape("proposal='mala' needs grad_bound")):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, proposal="mala")
    with pm.Model():
        pm.Normal("mu", 0, 1)
        with pytest.raises(
            ValueError,
            match=re.escape(
                "PenaltyMH needs observed confidential data, but the model has no observed variable."
            ),
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0)


def test_partial_vars_warns():
    rng = np.random.default_rng(0)
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        s = pm.HalfNormal("s", 1)
        pm.Normal("y", mu, s, observed=rng.normal(size=20))
        with pytest.warns(UserWarning, match="not in privacy_spent"):
            pdp.PenaltyMH([mu], lipschitz=1.0, tau=1.0)


class _NanAbove(NormalMeans):
    """Per-record log-likelihood NaN where θ₀ > 0.3 (a model bug, or records outside the support)."""

    def loglik(self, theta, idx=None):
        out = super().loglik(theta, idx)
        return out * np.nan if theta[0] > 0.3 else out


def test_nan_per_record_ratios_contribute_zero(normal_target):
    """Issue 20.1: a NaN ratio may not decide the test (a data-dependent reject); it is clipped to 0."""
    target = _NanAbove(normal_target.x)
    params = PenaltyParams("rw", np.full(2, 0.3), 10.0, 0.4)
    rng = np.random.default_rng(1)
    st = PenaltyState(
        np.zeros(2), target.loglik(np.zeros(2)), target.logprior(np.zeros(2)), np.ones(2)
    )
    for _ in range(300):
        st, info = penalty_kernel(rng, st, target, params)
        assert np.isfinite(info.log_ratio)
        if st.theta[0] > 0.3:
            break
    assert st.theta[0] > 0.3  # the NaN region is reachable: its ratios count as 0, not as a reject


def test_scale_tuning_only_during_warmup():
    model, _ = penalty_model()
    with model:
        step = pdp.PenaltyMH(lipschitz=10.0, tau=0.5, scale=1e-3, tune_interval=50, init="model")
    idata = sample(model, [step], draws=100, tune=300, chains=1, seed=1)
    assert np.all(step.scale > 1e-2)  # grew from a far too small start
    tuned = step.scale.copy()
    step.set_rng(np.random.default_rng(1))  # a new chain restarts from the declared scale
    assert np.all(step.scale == 1e-3)
    assert float(np.asarray(idata["sample_stats"]["dp_accepted"]).mean()) > 0.1
    with model:
        fixed = pdp.PenaltyMH(lipschitz=10.0, tau=0.5, scale=1e-3, tune_interval=0)
    sample(model, [fixed], draws=20, tune=100, chains=1, seed=1)
    assert np.all(fixed.scale == 1e-3) and np.all(tuned != 1e-3)
    with pytest.raises(
        ValueError, match=re.escape("tune_interval must be an integer >= 0, got tune_interval=-1.")
    ):
        pdp.PenaltyMH(lipschitz=1.0, tau=1.0, tune_interval=-1, model=model)


def test_tuning_settles_at_the_noise_optimum_when_the_noise_dominates():
    """Issue 22.4: at large τ the warm-up neither shrinks the step by the noise's rejections nor
    leaves it where the noise rejects almost everything: mean noise sd near 2.4 (the optimum)."""
    model, _ = penalty_model()
    tau, lip = 200.0, 10.0
    s_opt = 2.4 / (tau * 2 * lip * np.sqrt(2 / np.pi))  # guided: E|ξ| = √(2/π)
    for start in (10 * s_opt, 0.1 * s_opt):
        with model:
            step = pdp.PenaltyMH(
                lipschitz=lip, tau=tau, scale=start, proposal="guided", init="model"
            )
        idata = sample(
            model, [step], draws=10, tune=1500, chains=1, seed=2, discard_tuned_samples=False
        )
        sd = np.asarray(idata["warmup_sample_stats"]["dp_noise_sd"])[0, -500:].mean()
        assert 1.8 < sd < 3.0, (
            start,
            sd,
        )  # old rule from 10x: ~4 (acceptance 0.2 from noise alone)


# ------------------------------------------------------- compound step, several chains (issue 10)


def test_budget_counts_both_chains_of_a_compound_step():
    model, mu, _ = compound_model()
    pen, met = compound_steps(model, mu, tau=20.0, scale=0.1, budget=(1.0, 1e-5))
    k = pen.max_iterations
    assert k > 20
    draws = int(0.6 * k)  # the first chain fits, the second stops at the budget
    with model, pytest.warns(BudgetExhaustedWarning):
        idata = pm.sample(
            draws=draws,
            tune=0,
            chains=2,
            cores=1,
            step=[pen, met],
            random_seed=2,
            progressbar=False,
            compute_convergence_checks=False,
        )
    assert pen.total_iterations == k
    done = np.asarray(idata["sample_stats"]["dp_budget_exhausted"])
    assert not done[0].any() and done[1].sum() == 2 * draws - k
    assert pdp.privacy_spent(idata, delta=1e-5) <= 1.0
