"""CLT normal approximation (seed 001 eq. 8–9): NUTS on the closed-form marginal against quadrature (slow tier)."""

import math

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from tests.support.mc import assert_mc_close
from tests.support.sampling import sample


@pytest.mark.slow
def test_nuts_on_the_closed_form_marginal_matches_quadrature():
    n, A, eps, y = 100, 10.0, 1.0, 1.05
    sigma = A / (n * eps)
    with pm.Model() as model:
        th = pm.HalfNormal("th", 5.0)
        mu, var = pdp.normal_variance_moments(th, a=1)
        pdp.CLTRelease(
            "s", mu, var, n, mechanism=pdp.Gaussian(sigma=sigma), sensitivity=A / n, observed=y
        )
    idata = sample(model, draws=1000, tune=500, seed=3)
    g = np.linspace(1e-4, 10, 20001)
    m, v = pdp.normal_variance_moments(g, a=1)
    post = stats.norm.pdf(y, m, np.sqrt(v / n + sigma**2)) * stats.halfnorm.pdf(g, scale=5.0)
    post /= np.trapezoid(post, g)
    mean = np.trapezoid(g * post, g)
    sd = math.sqrt(np.trapezoid((g - mean) ** 2 * post, g))
    assert_mc_close(idata.posterior["th"], mean, sd, label="NUTS on the CLT marginal")
