"""ConjugateTheta: detected patterns draw from the closed-form full conditional; refusals; exactness."""

import math
import re

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor
import pytest
from scipy import stats

import pymc_dp as pdp
from tests.support.exact import linear_posterior

N_DRAWS = 1500


def draws_at(step, point, name, n=N_DRAWS):
    """Repeated draws of ``name`` from the step at a fixed point (iid from the full conditional)."""
    out = []
    for _ in range(n):
        new, _ = step.step(point)
        out.append(np.asarray(new[name], dtype=float))
    return np.array(out)


def ks_ok(sample, cdf):
    p = stats.kstest(sample, cdf).pvalue
    assert p > 1e-3, f"KS p-value {p:.2e}"


def test_full_conditionals_match_closed_forms():
    """Every family at once, from observed children and latent DP records, checked by KS tests."""
    rng = np.random.default_rng(0)
    yn = rng.normal(1.0, 1.5, 30)
    yt = rng.normal(0.5, 2.0, 25)
    yb, ybi = rng.binomial(1, 0.3, 25), rng.binomial(4, 0.3, 5)
    yp, ye = rng.poisson(2.0, 20), rng.exponential(0.5, 10)
    yc = rng.integers(0, 3, 30)
    with pm.Model() as model:
        mu = pm.Normal("mu", 1.0, 2.0)
        sd = pm.HalfNormal("sd", 1.0)
        pm.Normal("yn", mu, sd, observed=yn)
        tau = pm.Gamma("tau", 2.0, 1.5)
        pm.Normal("yt", 0.5, tau=tau, observed=yt)
        v = pm.InverseGamma("v", 3.0, 2.0)
        pm.Normal("yv", -1.0, pm.math.sqrt(v), observed=yt)
        p = pm.Beta("p", 2.0, 3.0)
        pm.Bernoulli("yb", p, observed=yb)
        pm.Binomial("ybi", 4, p, observed=ybi)
        lam = pm.Gamma("lam", 3.0, 2.0)
        pm.Poisson("yp", lam, observed=yp)
        pm.Exponential("ye", lam, observed=ye)
        pi = pm.Dirichlet("pi", np.array([1.0, 2.0, 3.0]))
        pm.Categorical("yc", pi, observed=yc)
        step = pdp.ConjugateTheta([mu, tau, v, p, lam, pi], rng=np.random.default_rng(1))
    assert [pat.family for pat in step.patterns] == [
        "normal",
        "gamma",
        "inverse_gamma",
        "beta",
        "gamma",
        "dirichlet",
    ]
    point = model.initial_point(random_seed=0)
    point["sd_log__"] = np.array(np.log(1.3))
    d = {
        name: draws_at(step, point, name)
        for name in ["mu", "tau_log__", "v_log__", "p_logodds__", "lam_log__"]
    }
    prec = 1 / 4 + 30 / 1.3**2
    ks_ok(d["mu"], stats.norm(((1.0 / 4) + yn.sum() / 1.3**2) / prec, prec**-0.5).cdf)
    ks_ok(
        np.exp(d["tau_log__"]),
        stats.gamma(2.0 + 12.5, scale=1 / (1.5 + ((yt - 0.5) ** 2).sum() / 2)).cdf,
    )
    ks_ok(
        np.exp(d["v_log__"]),
        stats.invgamma(3.0 + 12.5, scale=2.0 + ((yt + 1.0) ** 2).sum() / 2).cdf,
    )
    pb = 1 / (1 + np.exp(-d["p_logodds__"]))
    ks_ok(pb, stats.beta(2.0 + yb.sum() + ybi.sum(), 3.0 + (25 - yb.sum()) + (20 - ybi.sum())).cdf)
    ks_ok(
        np.exp(d["lam_log__"]),
        stats.gamma(3.0 + yp.sum() + 10, scale=1 / (2.0 + 20 + ye.sum())).cdf,
    )
    counts = np.bincount(yc, minlength=3)
    simplex = draws_at(step, point, "pi_simplex__")
    value = pytensor.tensor.matrix("v")
    backward = pytensor.function([value], model.rvs_to_transforms[pi].backward(value))
    pis = np.asarray(backward(simplex))
    assert pis.shape == (N_DRAWS, 3)
    a = np.array([1.0, 2.0, 3.0]) + counts
    for k in range(3):
        ks_ok(pis[:, k], stats.beta(a[k], a.sum() - a[k]).cdf)


def test_latent_records_behind_a_release_are_children():
    """The DPObserved node downstream of the records is not a term of θ: accepted."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=10)
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(-2, 4), mechanism=pdp.Laplace(epsilon=1.0), observed=5.0
        )
        step = pdp.ConjugateTheta([mu], rng=np.random.default_rng(0))
    assert [c.name for c in step.patterns[0].children] == ["x"]
    point = model.initial_point(random_seed=0)
    point["x"] = np.linspace(-1, 3, 10)
    ks_ok(
        draws_at(step, point, "mu", 2000), stats.norm(10 / (1 / 9 + 10), (1 / 9 + 10) ** -0.5).cdf
    )


def test_refusals_name_the_variable_and_the_term():
    with pm.Model():
        sd = pm.HalfNormal("sd", 1.0)
        pm.Normal("y", 0, sd, observed=[1.0, 2.0])
        with pytest.raises(
            ValueError,
            match=re.escape(
                "ConjugateTheta has no conjugate update for 'sd' with prior HalfNormal"
            ),
        ):
            pdp.ConjugateTheta([sd])
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        pm.Poisson("y", 2 * mu, observed=[1, 2])
        with pytest.raises(
            ValueError, match=re.escape("but 'y' is not. Update 'mu' with NUTS instead.")
        ):
            pdp.ConjugateTheta([mu])
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu**2, 1.0, observed=[1.0, 2.0])
        with pytest.raises(
            ValueError,
            match=re.escape(
                "ConjugateTheta treats the children of 'mu' as Normal with a mean affine in 'mu', but "
                "their mean is not affine"
            ),
        ):
            pdp.ConjugateTheta([mu])
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1.0, observed=[1.0, 2.0])
        pm.Potential("pen", -(mu**2))
        with pytest.raises(ValueError, match=re.escape("but 'pen' is not.")):
            pdp.ConjugateTheta([mu])
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, pm.math.exp(mu), observed=[1.0, 2.0])
        with pytest.raises(ValueError, match=re.escape("but 'y' is not.")):
            pdp.ConjugateTheta([mu])
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        with pytest.raises(
            ValueError, match=re.escape("ConjugateTheta found nothing that depends on 'mu'")
        ):
            pdp.ConjugateTheta([mu])


def test_linear_gaussian_regression_coefficients():
    """β ~ N(0, 2²I), y ~ N(β₀ + Xβ₁:, 1.5²) observed: the closed-form Gaussian posterior (KS per coordinate)."""
    rng = np.random.default_rng(40)
    X = rng.normal(size=(25, 2))
    y = 1.0 + X @ np.array([2.0, -1.0]) + rng.normal(0, 1.5, 25)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 2.0, shape=3)
        pm.Normal("y", beta[0] + pm.math.dot(X, beta[1:]), 1.5, observed=y)
        step = pdp.ConjugateTheta([beta], rng=np.random.default_rng(2))
    assert step.patterns[0].family == "normal_linear"
    mean, cov = linear_posterior(np.column_stack([np.ones(25), X]), y, 1.5, 2.0)
    d = draws_at(step, model.initial_point(random_seed=0), "beta")
    for k in range(3):
        ks_ok(d[:, k], stats.norm(mean[k], math.sqrt(cov[k, k])).cdf)
    ks_ok(
        d[:, 1] + d[:, 2],
        stats.norm(mean[1] + mean[2], math.sqrt(cov[1, 1] + cov[2, 2] + 2 * cov[1, 2])).cdf,
    )
