"""DP penalty MH (seed 002 §3.1): the kernel and pm.sample against exact posteriors."""

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.accounting import epsilon_of_event, iteration_event, run_event
from pymc_dp.samplers.penalty import PenaltyParams
from tests.support.mc import assert_mc_close
from tests.support.models import (
    compound_model,
    compound_steps,
    penalty_model,
    run_kernel,
)
from tests.support.sampling import sample


@pytest.mark.parametrize("proposal", ["rw", "coordinate", "guided"])
def test_exact_posterior_with_noise_and_no_clipping(normal_target, proposal):
    # |r_i| <= ||dθ|| · ||x_i - (θ+θ')/2|| <= 10 ||dθ|| for the states visited: clipping inactive
    params = PenaltyParams(proposal, np.full(2, 0.12), 10.0, 0.4)
    draws, clipped, acc = run_kernel(normal_target, params, 12_000, seed=11)
    draws = draws[1000:]
    mean, var = normal_target.posterior()
    assert clipped == 0.0
    assert 0.1 < acc < 0.9
    assert_mc_close(draws[None], mean, np.sqrt(var), label="penalty kernel")


def test_transformed_variable_exact_by_quadrature():
    # s ~ HalfNormal(2), y_i ~ N(0, s²): θ = log s (transformed space); exact posterior by quadrature
    rng = np.random.default_rng(0)
    y = rng.normal(0, 1.5, size=50)
    with pm.Model() as model:
        s = pm.HalfNormal("s", 2.0)
        pm.Normal("y", 0.0, s, observed=y)
        step = pdp.PenaltyMH(lipschitz=20.0, tau=0.5, scale=0.2)
    idata = sample(model, [step], draws=2000, tune=300, chains=2, seed=1)
    assert float(np.asarray(idata["sample_stats"]["dp_clipped_fraction"]).max()) == 0.0
    grid = np.linspace(0.5, 4.0, 20001)
    logp = -0.125 * grid**2 - y.size * np.log(grid) - 0.5 * np.sum(y**2) / grid**2
    w = np.exp(logp - logp.max())
    w /= w.sum()
    mean = float(np.dot(w, grid))
    var = float(np.dot(w, (grid - mean) ** 2))
    assert_mc_close(idata["posterior"]["s"], mean, np.sqrt(var), label="PenaltyMH on log s")


@pytest.mark.slow
@pytest.mark.parametrize("proposal", ["rw", "coordinate", "guided", "mala"])
def test_pm_sample_exact_posterior(proposal):
    model, x = penalty_model(n=100, seed=3)
    kw = dict(grad_bound=10.0, total_grad_bound=40.0) if proposal == "mala" else {}
    with model:
        step = pdp.PenaltyMH(
            lipschitz=12.0,
            tau=0.5 if proposal != "mala" else 0.1,
            scale=0.12 if proposal != "mala" else 0.08,
            proposal=proposal,
            **kw,
        )
    idata = sample(model, [step], draws=3000, tune=500, chains=2, seed=5)
    prec = 100 + 1 / 100
    mean, var = x.sum(0) / prec, 1 / prec
    draws = np.asarray(idata["posterior"]["mu"])  # (chain, draw, 2)
    assert float(np.asarray(idata["sample_stats"]["dp_clipped_fraction"]).max()) == 0.0
    assert_mc_close(draws, mean, np.sqrt(var), label=f"PenaltyMH {proposal}")


def test_compound_two_chains_both_tune_and_are_exact():
    model, mu, x = compound_model()
    pen, met = compound_steps(model, mu, scale=0.005, tune_interval=50)
    tune, draws = 600, 2500
    idata = sample(model, [pen, met], draws=draws, tune=tune, seed=21, discard_tuned_samples=False)
    ss = idata["sample_stats"]
    warm = np.asarray(idata["warmup_sample_stats"]["dp_scale"])
    scale = np.asarray(ss["dp_scale"])
    # every chain restarts from the declared scale and tunes it (x3 at least; fixed after warm-up)
    assert warm.shape == (2, tune) and np.all(warm[:, 0] == 0.005), warm[:, 0]
    assert np.all(scale[:, 0] > 0.015) and np.all(scale == scale[:, [0]]), scale[:, 0]
    assert float(np.asarray(ss["dp_clipped_fraction"]).max()) == 0.0
    prec = x.size + 1e-2
    assert_mc_close(
        idata["posterior"]["mu"], x.sum() / prec, np.sqrt(1.0 / prec), label="compound step"
    )
    # the privacy accounting counts both chains, tuning included
    assert pen.total_iterations == 2 * (tune + draws)
    assert np.asarray(ss["dp_iterations"])[:, -1].tolist() == [tune + draws] * 2
    expected = epsilon_of_event(run_event(iteration_event(0.5), 2 * (tune + draws)), 1e-5)
    assert pdp.privacy_spent(idata, delta=1e-5) == pytest.approx(expected, rel=1e-6)
