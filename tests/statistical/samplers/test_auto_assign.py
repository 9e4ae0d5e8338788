"""``pm.sample()`` without ``step=``: the default assignment is exact on known posteriors (slow tier)."""

import math

import arviz as az
import numpy as np
import pytest
from scipy import stats

from tests.support import exact
from tests.support.exact import clamped_normal_sum_laplace
from tests.support.mc import assert_mc_close
from tests.support.models import (
    clamped_model,
    normal_model,
    poisson_model,
    quickstart_model,
)
from tests.support.sampling import sample


def _exact_normal(s, n, b, prior_sd=3.0):
    """mu ~ N(0, prior_sd), Σx ~ N(n mu, n), s ~ Laplace(Σx, b): posterior mean and sd by 2-d quadrature."""
    t = np.linspace(s - 40 * b - 10 * math.sqrt(n), s + 40 * b + 10 * math.sqrt(n), 8001)
    mu = np.linspace(-4 * prior_sd, 4 * prior_sd, 4001)
    lik = np.trapezoid(
        stats.norm.pdf(t[None, :], n * mu[:, None], math.sqrt(n))
        * stats.laplace.pdf(s, t, b)[None, :],
        t,
        axis=1,
    )
    post = lik * stats.norm.pdf(mu, 0, prior_sd)
    post /= np.trapezoid(post, mu)
    m = np.trapezoid(mu * post, mu)
    return m, math.sqrt(np.trapezoid((mu - m) ** 2 * post, mu))


@pytest.mark.slow
@pytest.mark.parametrize("case", ["normal", "poisson"])
def test_pm_sample_default_assignment_exact(case):
    if case == "normal":
        model, s = normal_model()
        var, moments = "mu", _exact_normal(s, 40, 2.0)
    else:
        model, s = poisson_model()
        var, moments = "lam", exact.poisson_discrete_laplace(s, 60, 3.0, 1.0, 2.0, kmax=1500)
    idata = sample(model, draws=2000, tune=500, seed=42)
    assert ("dp_accept_rate" if case == "normal" else "dp_accept_rw") in idata.sample_stats
    assert_mc_close(np.asarray(idata.posterior[var]), *moments, label=f"pm.sample() {case}")
    assert float(np.asarray(az.rhat(idata, var_names=[var])[var])) < 1.05


def _weak_exact(n, eps, seed, h):
    """Quadrature of tests.support.exact.clamped_normal_sum_laplace (grid step h for the clipped record: binning adds
    n·h²/12 to the sum's variance, 0.2 at n = 1000, h = 0.05, against the noise variance 2·120²)."""
    model, s, b = clamped_model(n, eps, seed)

    return model, "mu", clamped_normal_sum_laplace(s, n, 3.0, b, h=h)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["quickstart", "weak-n50", "weak-n1000"])
def test_pm_sample_default_assignment_exact_new_routes(case):
    """Default assignment (ConjugateTheta, DataAugmentation, interweaving) against exact posteriors."""
    if (
        case == "quickstart"
    ):  # p: ConjugateTheta + DA on Bernoulli records; enumeration of the count
        model, s, scale = quickstart_model()
        var, moments = "p", exact.beta_bernoulli_laplace(s, 300, 1.0, 1.0, scale)
    elif case == "weak-n50":
        model, var, moments = _weak_exact(50, 0.1, 21, 0.01)
    else:
        model, var, moments = _weak_exact(1000, 0.05, 22, 0.05)
    idata = sample(model, draws=1000, tune=300, seed=42)
    draws = np.asarray(idata.posterior[var])
    assert_mc_close(draws, *moments, label=f"pm.sample() {case}")
    ess = float(np.asarray(az.ess(idata, var_names=[var])[var]))
    assert ess / draws.size > 0.2, f"{case}: θ ESS/draw {ess / draws.size:.3f} (target >= 0.2)"
