"""PMMH likelihood-estimate noise against its exact value, particle planning, IAC."""

import math
import re

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.diagnostics import iac, loglik_estimate_sd, particles_for_sd

N_REC, B, Y = 6, 1.0, 3.0


def _pmmh(n_particles):
    with pm.Model() as model:
        th = pm.Normal("th", 0.0, 2.0)
        x = pm.Normal("x", th, 1.0, shape=N_REC)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.RecordSum(lambda x: x, sensitivity=1.0),
            mechanism=pdp.Laplace(scale=B),
            observed=Y,
        )
        step = pdp.PMMH([th], n_particles=n_particles)
    step.set_rng(np.random.default_rng(0))
    return model, step


def _relative_variance(theta):
    """Var_f[g] / E_f[g]^2 for g = Laplace(Y | S, B), S = Σx ~ N(nθ, n): quadrature."""
    s = np.linspace(-80, 80, 32001)
    f = stats.norm.pdf(s, N_REC * theta, math.sqrt(N_REC))
    g = stats.laplace.pdf(Y, s, B)
    m1, m2 = np.trapezoid(f * g, s), np.trapezoid(f * g * g, s)
    return m2 / m1**2 - 1.0


@pytest.mark.parametrize(("theta", "n_particles"), [(0.5, 400), (0.5, 100), (0.0, 200)])
def test_loglik_estimate_sd_matches_the_delta_method(theta, n_particles):
    """Where c/N is small, sd(log Ẑ) = sqrt(c/N), c the relative variance of one weight (quadrature)."""
    repeats = 400
    model, step = _pmmh(n_particles)
    point = model.initial_point(random_seed=0)
    point["th"] = np.asarray(theta)
    sd = loglik_estimate_sd(step, point, repeats=repeats, rng=np.random.default_rng(1))
    c = _relative_variance(theta)
    assert c / n_particles < 0.02  # the delta method's regime (its bias is O(c/N))
    expected = math.sqrt(c / n_particles)
    # the sample sd of `repeats` near-Gaussian values has relative standard error 1/sqrt(2(repeats-1))
    tol = 4 * expected / math.sqrt(2 * (repeats - 1))
    assert abs(sd - expected) < tol, (sd, expected, tol)


def test_particles_for_sd_scales_like_one_over_n():
    assert particles_for_sd(2.4, 10) == 40
    assert particles_for_sd(0.6, 10, target=1.2) == 3
    assert particles_for_sd(0.0, 10) == 1


def test_iac_is_draws_over_ess():
    rng = np.random.default_rng(3)
    ar = np.zeros((2, 2000))
    for c in range(2):
        for t in range(1, 2000):
            ar[c, t] = 0.8 * ar[c, t - 1] + rng.normal()
    draws = {"a": ar, "w": rng.normal(size=(2, 2000))}
    if int(az.__version__.split(".")[0]) >= 1:
        idata = az.from_dict({"posterior": draws})  # ArviZ 1.x: groups as a dict
    else:
        idata = az.from_dict(posterior=draws)
    out = iac(idata)
    # AR(1) with φ = 0.8: IAC = (1 + φ)/(1 − φ) = 9; white noise: 1
    assert abs(out["w"] - 1.0) < 0.15
    assert 6.5 < out["a"] < 12.0


def test_bad_input():
    model, step = _pmmh(5)
    point = model.initial_point(random_seed=0)
    with pytest.raises(TypeError, match=re.escape("step must be a pymc_dp.PMMH, got str.")):
        loglik_estimate_sd("nope", point, rng=np.random.default_rng(0))
    with pytest.raises(
        ValueError, match=re.escape("repeats must be an integer >= 2, got repeats=1.")
    ):
        loglik_estimate_sd(step, point, repeats=1, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator, got NoneType"):
        loglik_estimate_sd(step, point)
    with pytest.raises(
        ValueError, match=re.escape("n_particles must be an integer >= 1, got n_particles=0.")
    ):
        particles_for_sd(1.0, 0)
    with pytest.raises(
        ValueError, match=re.escape("target must be finite and > 0, got target=-1.")
    ):
        particles_for_sd(1.0, 5, target=-1)
