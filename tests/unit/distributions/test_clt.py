"""CLT normal approximation (seed 001 eq. 8–9): closed-form marginal, moment helpers, errors."""

import math
import re

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats

import pymc_dp as pdp


def _logp_fn(model, name):
    return model.compile_fn(model.logp(vars=[model[name]]), point_fn=True)


def test_gaussian_closed_form_marginal_matches_quadrature():
    n, sigma, y = 40, 0.3, 1.7
    with pm.Model() as model:
        th = pm.HalfNormal("th", 5.0)
        mu, var = pdp.normal_variance_moments(th, a=1)
        pdp.CLTRelease(
            "s", mu, var, n, mechanism=pdp.Gaussian(sigma=sigma), sensitivity=0.25, observed=y
        )
    assert "s_u" not in model.named_vars  # closed form: no latent statistic
    fn = _logp_fn(model, "s")
    theta = 2.0
    m, v = pdp.normal_variance_moments(theta, a=1)
    want, _ = integrate.quad(
        lambda u: stats.norm.pdf(y, u, sigma) * stats.norm.pdf(u, m, math.sqrt(v / n)),
        -20,
        20,
        points=[m],
    )
    assert float(fn({"th_log__": np.log(theta)})) == pytest.approx(math.log(want), rel=1e-8)


def test_vector_statistic_with_covariance_and_calibrated_gaussian():
    n = 25
    cov = np.array([[1.0, 0.3], [0.3, 2.0]])
    mech = pdp.Gaussian(epsilon=1.0, delta=1e-5)
    y = np.array([0.2, -0.4])
    with pm.Model() as model:
        th = pm.Normal("th", shape=2)
        pdp.CLTRelease("s", th, cov, n, mechanism=mech, sensitivity=0.1, observed=y)
    s = mech.bind(pdp.LatentValue(0.1), n=1, dim=2).noise_sd
    fn = _logp_fn(model, "s")
    theta = np.array([0.1, 0.3])
    want = stats.multivariate_normal.logpdf(y, theta, cov / n + s**2 * np.eye(2))
    assert float(fn({"th": theta})) == pytest.approx(want, rel=1e-10)


def test_laplace_release_adds_a_latent_statistic():
    with pm.Model() as model:
        th = pm.HalfNormal("th", 5.0)
        mu, var = pdp.uniform_width_moments(th, a=1)
        pdp.CLTRelease(
            "s", mu, var, 30, mechanism=pdp.Laplace(epsilon=1.0), sensitivity=0.2, observed=0.4
        )
    u = model["s_u"]
    assert u.type.shape == (1,)
    node = pdp.dp_nodes(model)["s"]
    assert node.mechanism.noise_scale == pytest.approx(0.2)
    fn = _logp_fn(model, "s_u")
    m, v = pdp.uniform_width_moments(1.5, a=1)
    got = float(fn({"th_log__": np.log(1.5), "s_u": np.array([0.6])}))
    assert got == pytest.approx(stats.norm.logpdf(0.6, m, math.sqrt(v / 30)), rel=1e-10)


@pytest.mark.parametrize("a", [1, 2, 3])
def test_example1_moments(a):
    theta = 0.7
    m, v = pdp.normal_mean_moments(theta, a=a)
    ex = [
        integrate.quad(lambda x: x ** (a * k) * stats.norm.pdf(x, theta, 1), -np.inf, np.inf)[0]
        for k in (1, 2)
    ]
    assert m == pytest.approx(ex[0], rel=1e-8)
    assert v == pytest.approx(ex[1] - ex[0] ** 2, rel=1e-8)


@pytest.mark.parametrize("a", [0.5, 1, 2])
def test_example2_and_3_moments(a):
    theta = 1.8
    for helper, pdf, lo, hi in [
        (
            pdp.normal_variance_moments,
            lambda x: stats.norm.pdf(x, 0, math.sqrt(theta)),
            -np.inf,
            np.inf,
        ),
        (pdp.uniform_width_moments, lambda x: 1 / (2 * theta), -theta, theta),
    ]:
        m, v = helper(theta, a=a)
        e1 = integrate.quad(
            lambda x: abs(x) ** a * pdf(x), lo, hi, points=[0.0] if hi < np.inf else None
        )[0]
        e2 = integrate.quad(
            lambda x: abs(x) ** (2 * a) * pdf(x), lo, hi, points=[0.0] if hi < np.inf else None
        )[0]
        assert m == pytest.approx(e1, rel=1e-7)
        assert v == pytest.approx(e2 - e1**2, rel=1e-6)


def test_errors():
    with pm.Model():
        th = pm.HalfNormal("th")
        with pytest.raises(
            ValueError, match=re.escape("got mu=None. Give mu=E[s(X)|θ] and var=Var[s(X)|θ]")
        ):
            pdp.CLTStatistic("u", None, th, 10)
        with pytest.raises(ValueError, match=re.escape("as an integer >= 1, got n=0.")):
            pdp.CLTStatistic("u", th, th, 0)
    with pytest.raises(
        ValueError, match=re.escape("needs an integer a >= 1 (s(x) = x**a), got a=1.5.")
    ):
        pdp.normal_mean_moments(1.0, a=1.5)
    with pytest.raises(ValueError, match=re.escape("a must be finite and > 0, got a=0.")):
        pdp.normal_variance_moments(1.0, a=0)
