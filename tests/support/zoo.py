"""The model zoo: user-style models with a DP release, each run by ``pm.sample()`` without ``step=``.

Every builder returns ``(model, exact, description)``: ``exact`` maps a parameter name to its exact
posterior ``(mean, sd)`` (arrays for a vector parameter) computed here without pymc_dp's code —
conjugacy, enumeration over the latent statistic, or 1-d quadrature — or is ``None`` where no exact
answer is computable. The releases are drawn with ``pdp.release`` (seeded); the models are written
the way users write them: Python ints and floats as parameters, ``dims``/``coords``, ``pm.Data``,
hierarchical priors, vector parameters, several releases, several record variables.

``CASES`` lists them with their tier (``fast``: the default test tier) and, for a model that exposes a
known bug, the strict-xfail reason. ``tests/statistical/test_zoo.py`` checks them;
``benchmarks/bench_zoo.py`` measures them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import special, stats

import pymc_dp as pdp
from tests.support import exact as ex
from tests.support.models import L, U, quickstart_model

__all__ = ["CASES", "Case", "case"]


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable
    statistic: str  # additive / local / counts / recordsum / order / latent
    mechanism: str
    records: str  # continuous / finite / unbounded / none
    fast: bool = False
    xfail: str | None = None


CASES: list[Case] = []


def case(statistic, mechanism, records, *, fast=False, xfail=None):
    def deco(fn):
        CASES.append(Case(fn.__name__, fn, statistic, mechanism, records, fast, xfail))
        return fn

    return deco


# ---------------------------------------------------------------------------------------------
# exact posteriors: a scalar θ on a grid, log p(release | θ) by enumeration or quadrature
# ---------------------------------------------------------------------------------------------
def _grid_moments(grid, logpost):
    w = np.exp(logpost - np.max(logpost))
    w /= np.trapezoid(w, grid)
    m1 = np.trapezoid(w * grid, grid)
    return float(m1), math.sqrt(max(np.trapezoid(w * grid**2, grid) - m1**2, 0.0))


def _lse(a, axis=-1):
    return special.logsumexp(a, axis=axis)


def _beta_grid():
    return np.linspace(1e-6, 1 - 1e-6, 4001)


def _count_loglik(log_pmf_k, k, log_noise):
    """log Σ_k P(K = k | θ) η(s − k) for every θ row of ``log_pmf_k`` (θ, k)."""
    return _lse(log_pmf_k + log_noise(k)[None, :])


def _laplace(s, b):
    return lambda k: -np.abs(s - k) / b


def _gauss(s, sigma):
    return lambda k: -0.5 * ((s - k) / sigma) ** 2


def _normal_conjugate(n, s, prior_mean, prior_sd, noise_var, rec_sd=1.0, stat_scale=1.0):
    """mu ~ N(m0, s0²), x_i ~ N(mu, rec_sd²), release = scale·Σx + N(0, noise_var)."""
    a = stat_scale * n  # release mean = a·mu
    var = stat_scale**2 * n * rec_sd**2 + noise_var
    prec = 1 / prior_sd**2 + a**2 / var
    mean = (prior_mean / prior_sd**2 + a * s / var) / prec
    return mean, math.sqrt(1 / prec)


def _rel(data, stat, mech, rng):
    """A simulated release. An unbounded ``Sum`` (the exact conjugate cases) has no sensitivity, so
    ``pdp.release`` refuses it; these draw the mechanism's exact noise on the plain sum instead."""
    if isinstance(stat, pdp.Sum) and stat.lower is None and stat.upper is None:
        value = np.asarray(data, dtype=float).sum(axis=0)
        s = np.asarray(mech.sample(value, rng), dtype=float)
        return s, s
    r = pdp.release(data, stat, mech, rng=rng)
    return r, np.asarray(r, dtype=float)


# ---------------------------------------------------------------------------------------------
# continuous records
# ---------------------------------------------------------------------------------------------
@case("additive", "Gaussian", "continuous", fast=True)
def normal_sum_gaussian():
    """mu ~ N(0., 3.), x ~ N(mu, 1.) (n = 30), Σx + Gaussian(σ = 2) — floats, conjugate."""
    rng = np.random.default_rng(101)
    n, sig = 30, 2.0
    _, s = _rel(rng.normal(1.0, 1.0, n), pdp.Sum(), pdp.Gaussian(sigma=sig), rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sig), observed=s)
    return (
        model,
        {"mu": _normal_conjugate(n, float(s), 0.0, 3.0, sig**2)},
        normal_sum_gaussian.__doc__,
    )


@case("additive", "Gaussian", "continuous", fast=True)  # was xfail: the int8 prior overflow (fixed)
def normal_sum_gaussian_int_prior():
    """mu ~ N(0, 100) with Python ints (issue 17 item 1), x ~ N(mu, 1) around 40, n = 20, Σx + Gaussian(σ = 2)."""
    rng = np.random.default_rng(102)
    n, sig = 20, 2.0
    _, s = _rel(rng.normal(40.0, 1.0, n), pdp.Sum(), pdp.Gaussian(sigma=sig), rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 100)
        x = pm.Normal("x", mu, 1, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sig), observed=s)
    return (
        model,
        {"mu": _normal_conjugate(n, float(s), 0.0, 100.0, sig**2)},
        normal_sum_gaussian_int_prior.__doc__,
    )


@case("additive", "Gaussian", "continuous")
def normal_mean_gaussian_pm_data():
    """Prior constants and the release in pm.Data; Mean(−10, 10) (clamping negligible) + Gaussian."""
    rng = np.random.default_rng(103)
    n, sig = 25, 0.3
    _, s = _rel(
        rng.normal(1.0, 1.0, n), pdp.Mean(lower=-10, upper=10), pdp.Gaussian(sigma=sig), rng
    )
    with pm.Model() as model:
        m0, s0 = pm.Data("m0", 0.5), pm.Data("s0", 2.0)
        obs = pm.Data("obs", s)
        mu = pm.Normal("mu", m0, s0)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Mean(lower=-10, upper=10),
            mechanism=pdp.Gaussian(sigma=sig),
            observed=obs,
        )
    exact = _normal_conjugate(n, float(s), 0.5, 2.0, sig**2, stat_scale=1 / n)
    return model, {"mu": exact}, normal_mean_gaussian_pm_data.__doc__


@case("additive", "Laplace", "continuous")
def normal_clamped_sum_laplace():
    """mu ~ N(0, 3.), x ~ N(mu, 1.), n = 20, Σ clip(x, −2, 4) + Laplace(ε = 1)."""
    rng = np.random.default_rng(104)
    n, eps = 20, 1.0
    stat = pdp.Sum(lower=L, upper=U)
    _, s = _rel(rng.normal(1.0, 1.0, n), stat, pdp.Laplace(epsilon=eps), rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=pdp.Laplace(epsilon=eps), observed=s)
    return (
        model,
        {"mu": ex.clamped_normal_sum_laplace(float(s), n, 3.0, (U - L) / eps)},
        normal_clamped_sum_laplace.__doc__,
    )


@case("additive", "Laplace", "continuous")
def normal_clamped_mean_laplace_dims():
    """coords/dims: x over dim "person" (n = 24), mean clipped to [−2, 4] + Laplace(ε = 2)."""
    rng = np.random.default_rng(105)
    n, eps = 24, 2.0
    stat = pdp.Mean(lower=L, upper=U)
    _, s = _rel(rng.normal(0.5, 1.0, n), stat, pdp.Laplace(epsilon=eps), rng)
    with pm.Model(coords={"person": np.arange(n)}) as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        x = pm.Normal("x", mu, 1.0, dims="person")
        pdp.DPObserved("s", x, statistic=stat, mechanism=pdp.Laplace(epsilon=eps), observed=s)
    exact = ex.clamped_normal_sum_laplace(float(s) * n, n, 3.0, (U - L) / eps)
    return model, {"mu": exact}, normal_clamped_mean_laplace_dims.__doc__


@case("local", "Gaussian", "continuous", fast=True)
def normal_local_gaussian():
    """One noisy answer per person: x_i ~ N(mu, 1), r_i = clip(x_i, ±20) + N(0, 0.5²) (clip negligible)."""
    rng = np.random.default_rng(106)
    n, sig = 30, 0.5
    stat = pdp.Local(lower=-20, upper=20)
    _, r = _rel(rng.normal(0.5, 1.0, n), stat, pdp.Gaussian(sigma=sig), rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("r", x, statistic=stat, mechanism=pdp.Gaussian(sigma=sig), observed=r)
    var = 1.0 + sig**2
    prec = 1 / 4.0 + n / var
    return model, {"mu": (r.sum() / var / prec, math.sqrt(1 / prec))}, normal_local_gaussian.__doc__


@case("local", "Laplace", "continuous")
def normal_local_laplace():
    """x_i ~ N(mu, 1), r_i = clip(x_i, −3, 3) + Laplace(ε = 1) per person (n = 20): 1-d quadrature."""
    rng = np.random.default_rng(107)
    n, eps = 20, 1.0
    stat = pdp.Local(lower=-3, upper=3)
    _, r = _rel(rng.normal(0.5, 1.0, n), stat, pdp.Laplace(epsilon=eps), rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("r", x, statistic=stat, mechanism=pdp.Laplace(epsilon=eps), observed=r)
    b = 6.0 / eps
    mus = np.linspace(-8, 8, 1601)
    xs = np.linspace(-3, 3, 3001)
    loglik = np.zeros_like(mus)
    for ri in r:
        lap_in = stats.laplace.pdf(ri, xs, b)  # interior x
        inner = np.trapezoid(
            stats.norm.pdf(xs[None, :], mus[:, None]) * lap_in[None, :], xs, axis=1
        )
        atoms = stats.norm.cdf(-3 - mus) * stats.laplace.pdf(ri, -3, b) + stats.norm.sf(
            3 - mus
        ) * stats.laplace.pdf(ri, 3, b)
        loglik += np.log(inner + atoms)
    return (
        model,
        {"mu": _grid_moments(mus, stats.norm.logpdf(mus, 0, 2) + loglik)},
        normal_local_laplace.__doc__,
    )


@case("additive", "Gaussian", "continuous")
def normal_vector_theta():
    """Vector θ: mu (dims "k", 2 entries), x ~ N(mu, 1) of shape (n, 2), column sums + Gaussian(σ = 2)."""
    rng = np.random.default_rng(108)
    n, sig = 30, 2.0
    _, s = _rel(rng.normal([1.0, -1.0], 1.0, (n, 2)), pdp.Sum(), pdp.Gaussian(sigma=sig), rng)
    with pm.Model(coords={"k": ["a", "b"]}) as model:
        mu = pm.Normal("mu", 0.0, 3.0, dims="k")
        x = pm.Normal("x", mu, 1.0, shape=(n, 2))
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sig), observed=s)
    ms = [_normal_conjugate(n, float(si), 0.0, 3.0, sig**2) for si in s]
    return (
        model,
        {"mu": (np.array([m for m, _ in ms]), np.array([d for _, d in ms]))},
        normal_vector_theta.__doc__,
    )


@case("additive", "Gaussian", "continuous")
def hierarchical_group_sums():
    """Four groups, one Gaussian release each: mu_g = mu0 + tau z_g (non-centred), n = 15 per group."""
    rng = np.random.default_rng(109)
    G, n, sig = 4, 15, 3.0
    true = rng.normal(1.0, 0.7, G)
    with pm.Model(coords={"group": np.arange(G)}) as model:
        mu0 = pm.Normal("mu0", 0.0, 2.0)
        tau = pm.HalfNormal("tau", 1.0)
        z = pm.Normal("z", 0.0, 1.0, dims="group")
        s_all = []
        for g in range(G):
            _, s = _rel(rng.normal(true[g], 1.0, n), pdp.Sum(), pdp.Gaussian(sigma=sig), rng)
            s_all.append(float(s))
            x = pm.Normal(f"x{g}", mu0 + tau * z[g], 1.0, shape=n)
            pdp.DPObserved(
                f"s{g}", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sig), observed=s
            )
    # exact: given tau, s_g | mu0 ~ N(n mu0, n² tau² + n + σ²) independent; mu0 ~ N(0, 4)
    s_all = np.array(s_all)
    taus = np.linspace(1e-4, 6, 3001)
    v = n**2 * taus**2 + n + sig**2
    prec = 1 / 4.0 + G * n**2 / v
    m = (n * s_all.sum() / v) / prec
    cov = 4.0 * n**2 * np.ones((G, G))
    logml = np.array(
        [stats.multivariate_normal.logpdf(s_all, np.zeros(G), cov + vi * np.eye(G)) for vi in v]
    )
    logw = logml + stats.halfnorm.logpdf(taus, scale=1.0)
    w = np.exp(logw - logw.max())
    w /= np.trapezoid(w, taus)
    e1 = np.trapezoid(w * m, taus)
    e2 = np.trapezoid(w * (m**2 + 1 / prec), taus)
    exact = {"mu0": (float(e1), math.sqrt(e2 - e1**2)), "tau": _grid_moments(taus, logw)}
    return model, exact, hierarchical_group_sums.__doc__


@case("additive", "Gaussian", "continuous (Exponential)")
def exponential_sum_gaussian():
    """lam ~ Gamma(2., 1.), x ~ Exponential(lam) (n = 12), Σx + Gaussian(σ = 2)."""
    rng = np.random.default_rng(110)
    n, sig = 12, 2.0
    _, s = _rel(rng.exponential(1.0, n), pdp.Sum(), pdp.Gaussian(sigma=sig), rng)
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=2.0, beta=1.0)
        x = pm.Exponential("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sig), observed=s)
    return (
        model,
        {"lam": ex.exponential_sum_gaussian(float(s), n, 2.0, 1.0, sig)},
        exponential_sum_gaussian.__doc__,
    )


@case("additive", "Gaussian", "continuous (Gamma)")
def gamma_sum_gaussian():
    """beta ~ Gamma(2., 1.), x ~ Gamma(2, rate beta) (n = 10), Σx + Gaussian(σ = 1.5): 1-d quadrature."""
    rng = np.random.default_rng(111)
    n, sig, a_rec, a, b = 10, 1.5, 2.0, 2.0, 1.0
    _, s = _rel(rng.gamma(a_rec, 1.0, n), pdp.Sum(), pdp.Gaussian(sigma=sig), rng)
    with pm.Model() as model:
        beta = pm.Gamma("beta", alpha=a, beta=b)
        x = pm.Gamma("x", alpha=a_rec, beta=beta, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sig), observed=s)
    # S = Σx | beta ~ Gamma(n a_rec, beta); marginal of S: beta-prime; beta | S ~ Gamma(a + n a_rec, b + S)
    A = n * a_rec
    t = np.linspace(1e-6, float(s) + 12 * sig + 40, 40001)
    logp_t = (A - 1) * np.log(t) - (A + a) * np.log(b + t) + stats.norm.logpdf(float(s), t, sig)
    w = np.exp(logp_t - logp_t.max())
    w /= np.trapezoid(w, t)
    e1 = np.trapezoid(w * (a + A) / (b + t), t)
    e2 = np.trapezoid(w * (a + A) * (a + A + 1) / (b + t) ** 2, t)
    return model, {"beta": (float(e1), math.sqrt(e2 - e1**2))}, gamma_sum_gaussian.__doc__


@case("recordsum", "Laplace", "continuous")
def normal_recordsum_indicator():
    """RecordSum(fn = 1[x > 0]): how many records are positive, x ~ N(mu, 1), n = 30, Laplace(scale 1)."""
    rng = np.random.default_rng(112)
    n = 30
    stat = pdp.RecordSum(lambda x: pt.switch(pt.gt(x, 0), 1.0, 0.0), sensitivity=1.0)
    x_conf = rng.normal(0.3, 1.0, n)
    s = float(
        (x_conf > 0).sum() + rng.laplace(0, 1.0)
    )  # the test's release: the count + Laplace noise
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=pdp.Laplace(scale=1.0), observed=s)
    mus = np.linspace(-5, 5, 2001)
    k = np.arange(n + 1)
    lp = stats.binom.logpmf(k[None, :], n, stats.norm.cdf(mus)[:, None])
    loglik = _count_loglik(lp, k, _laplace(s, 1.0))
    return (
        model,
        {"mu": _grid_moments(mus, stats.norm.logpdf(mus) + loglik)},
        normal_recordsum_indicator.__doc__,
    )


@case("latent", "Laplace", "none (CLT latent statistic)")
def clt_latent_variance():
    """seed 001 §5.3: th ~ HalfNormal(5), mean |x| of n = 50 N(0, th) records by its CLT + Laplace."""
    n, A, eps, y = 50, 10.0, 5.0, 1.3
    with pm.Model() as model:
        th = pm.HalfNormal("th", 5.0)
        mu, var = pdp.normal_variance_moments(th, a=1)
        pdp.CLTRelease(
            "s", mu, var, n, mechanism=pdp.Laplace(epsilon=eps), sensitivity=A / n, observed=y
        )
    return model, {"th": ex.exact_clt_laplace(y, n, A / (n * eps))}, clt_latent_variance.__doc__


@case("order", "SmoothLaplace", "continuous")
def normal_median_smooth_laplace():
    """Median(1, 4) of 9 records N(mu, 1) + SmoothLaplace(ε = 2, δ = 1e-3): no exact answer here."""
    rng = np.random.default_rng(113)
    n = 9
    stat, mech = pdp.Median(1, 4), pdp.SmoothLaplace(epsilon=2.0, delta=1e-3)
    _, s = _rel(rng.normal(2.5, 1.0, n), stat, mech, rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 2.0, 2.0)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    return model, None, normal_median_smooth_laplace.__doc__


def median_posterior(s, n, lower, upper, b, prior_mean, prior_sd):
    """mu ~ N(m0, s0), x_i ~ N(mu, 1) (n odd), s = clip(median x, lower, upper) + Laplace(b):
    the median is the (n+1)/2-th order statistic (its density in closed form, atoms at the
    bounds), integrated against the noise on a grid; posterior mean and sd of mu by quadrature."""
    k = (n + 1) // 2
    mus = np.linspace(prior_mean - 6 * prior_sd, prior_mean + 6 * prior_sd, 2401)
    m = np.linspace(lower, upper, 3001)
    z = m[None, :] - mus[:, None]
    log_c = special.gammaln(n + 1) - 2 * special.gammaln(k)
    dens = np.exp(
        log_c + (k - 1) * (stats.norm.logcdf(z) + stats.norm.logsf(z)) + stats.norm.logpdf(z)
    )
    inner = np.trapezoid(dens * stats.laplace.pdf(s, m, b)[None, :], m, axis=1)
    low_atom = stats.binom.sf(k - 1, n, stats.norm.cdf(lower - mus))  # ≥ k records below lower
    high_atom = stats.binom.cdf(k - 1, n, stats.norm.cdf(upper - mus))  # < k records below upper
    lik = (
        inner
        + low_atom * stats.laplace.pdf(s, lower, b)
        + high_atom * stats.laplace.pdf(s, upper, b)
    )
    return _grid_moments(mus, stats.norm.logpdf(mus, prior_mean, prior_sd) + np.log(lik))


@case("order", "Laplace", "continuous")
def normal_median_laplace():
    """Median(1, 4) of 9 records N(mu, 1) + Laplace(ε = 2) (global sensitivity 3): order-statistic
    density in closed form, 1-d quadrature (issue 17: pm.sample() measures NUTS against MHAAR)."""
    rng = np.random.default_rng(115)
    n = 9
    stat, mech = pdp.Median(1, 4), pdp.Laplace(epsilon=2.0)
    r, s = _rel(rng.normal(2.5, 1.0, n), stat, mech, rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 2.0, 2.0)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=r)
    b = r.mechanism.noise_scale
    return (
        model,
        {"mu": median_posterior(float(s), n, 1.0, 4.0, b, 2.0, 2.0)},
        normal_median_laplace.__doc__,
    )


@case("additive", "Laplace", "continuous (sd unknown)")
def normal_mean_and_sd_clamped_mean():
    """Issue 17: x ~ N(mu, sigma) with mu, sigma unknown, only a clamped mean released (n = 40, ε = 1)."""
    rng = np.random.default_rng(114)
    n = 40
    stat = pdp.Mean(lower=L, upper=U)
    _, s = _rel(rng.normal(1.0, 1.0, n), stat, pdp.Laplace(epsilon=1.0), rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        sigma = pm.HalfNormal("sigma", 2.0)
        x = pm.Normal("x", mu, sigma, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=pdp.Laplace(epsilon=1.0), observed=s)
    return model, None, normal_mean_and_sd_clamped_mean.__doc__


# ---------------------------------------------------------------------------------------------
# finite integer records
# ---------------------------------------------------------------------------------------------
def _bernoulli_exact(s_list, noise_list, n, a=1.0, b=1.0):
    grid = _beta_grid()
    k = np.arange(n + 1)
    lp = stats.binom.logpmf(k[None, :], n, grid[:, None])
    releases = [noise(s) for s, noise in zip(s_list, noise_list)]  # all of the same records: one k
    loglik = _count_loglik(lp, k, lambda kk: sum(f(kk) for f in releases))
    return _grid_moments(grid, stats.beta.logpdf(grid, a, b) + loglik)


@case("additive", "Laplace", "finite (Bernoulli)")
def bernoulli_sum_laplace_ints():
    """p ~ Beta(1, 1) (ints), x ~ Bernoulli(p) (n = 50), clamped Σx + Laplace(ε = 1)."""
    rng = np.random.default_rng(201)
    n, stat, mech = 50, pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=1.0)
    _, s = _rel(rng.binomial(1, 0.3, n), stat, mech, rng)
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    return (
        model,
        {"p": _bernoulli_exact([float(s)], [lambda v: _laplace(v, 1.0)], n)},
        bernoulli_sum_laplace_ints.__doc__,
    )


@case("additive", "DiscreteLaplace", "finite (Bernoulli)")
def bernoulli_sum_discrete_laplace():
    """p ~ Beta(2., 2.), n = 40 Bernoulli records, Σx + DiscreteLaplace(ε = 0.5)."""
    rng = np.random.default_rng(202)
    n, stat, mech = 40, pdp.Sum(lower=0, upper=1), pdp.DiscreteLaplace(epsilon=0.5)
    _, s = _rel(rng.binomial(1, 0.6, n), stat, mech, rng)
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    return (
        model,
        {"p": _bernoulli_exact([float(s)], [lambda v: _laplace(v, 2.0)], n, 2, 2)},
        bernoulli_sum_discrete_laplace.__doc__,
    )


@case("additive", "DiscreteGaussian", "finite (Bernoulli)", fast=True)
def bernoulli_sum_discrete_gaussian():
    """p ~ Beta(1., 1.), n = 60 Bernoulli records, Σx + DiscreteGaussian(σ = 3)."""
    rng = np.random.default_rng(203)
    n, stat, mech = 60, pdp.Sum(lower=0, upper=1), pdp.DiscreteGaussian(sigma=3.0)
    _, s = _rel(rng.binomial(1, 0.2, n), stat, mech, rng)
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    return (
        model,
        {"p": _bernoulli_exact([float(s)], [lambda v: _gauss(v, 3.0)], n)},
        bernoulli_sum_discrete_gaussian.__doc__,
    )


@case("additive", "Laplace + Gaussian", "finite (Bernoulli)")
def bernoulli_two_releases():
    """Several releases of the same records: Σx + Laplace(scale 2) and Σx + Gaussian(σ = 3), n = 30."""
    rng = np.random.default_rng(204)
    n, stat = 30, pdp.Sum(lower=0, upper=1)
    conf = rng.binomial(1, 0.4, n)
    _, s1 = _rel(conf, stat, pdp.Laplace(scale=2.0), rng)
    _, s2 = _rel(conf, stat, pdp.Gaussian(sigma=3.0), rng)
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s1", x, statistic=stat, mechanism=pdp.Laplace(scale=2.0), observed=s1)
        pdp.DPObserved("s2", x, statistic=stat, mechanism=pdp.Gaussian(sigma=3.0), observed=s2)
    exact = _bernoulli_exact(
        [float(s1), float(s2)], [lambda v: _laplace(v, 2.0), lambda v: _gauss(v, 3.0)], n, 2, 2
    )
    return model, {"p": exact}, bernoulli_two_releases.__doc__


@case("additive", "Laplace", "finite (Bernoulli)")
def bernoulli_groups_shared_p():
    """Several record groups sharing p: three groups of 8, each Σ + Laplace(scale 1)."""
    rng = np.random.default_rng(205)
    stat, mech = pdp.Sum(lower=0, upper=1), pdp.Laplace(scale=1.0)
    ss = [float(_rel(rng.binomial(1, 0.5, 8), stat, mech, rng)[1]) for _ in range(3)]
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        for g, s in enumerate(ss):
            x = pm.Bernoulli(f"x{g}", p, shape=8)
            pdp.DPObserved(f"s{g}", x, statistic=stat, mechanism=mech, observed=s)
    grid = _beta_grid()
    k = np.arange(9)
    lp = stats.binom.logpmf(k[None, :], 8, grid[:, None])
    loglik = sum(_count_loglik(lp, k, _laplace(s, 1.0)) for s in ss)
    return (
        model,
        {"p": _grid_moments(grid, stats.beta.logpdf(grid, 2, 2) + loglik)},
        bernoulli_groups_shared_p.__doc__,
    )


@case("recordsum", "Laplace", "finite (two Bernoulli record variables)", fast=True)
def bernoulli_pair_records():
    """Several record variables: (a_i, b_i) ~ Bernoulli(p) each, RecordSum(a + b, Δ = 2) + Laplace(scale 2)."""
    rng = np.random.default_rng(206)
    n = 25
    a_c, b_c = rng.binomial(1, 0.3, n), rng.binomial(1, 0.3, n)
    s = float((a_c + b_c).sum() + rng.laplace(0, 2.0))  # the test's release
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        a = pm.Bernoulli("a", p, shape=n)
        b = pm.Bernoulli("b", p, shape=n)
        pdp.DPObserved(
            "s",
            (a, b),
            statistic=pdp.RecordSum(lambda a, b: a + b, 2.0),
            mechanism=pdp.Laplace(scale=2.0),
            observed=s,
        )
    return (
        model,
        {"p": _bernoulli_exact([s], [lambda v: _laplace(v, 2.0)], 2 * n)},
        bernoulli_pair_records.__doc__,
    )


@case("local", "RandomizedResponse", "finite (Bernoulli)")
def bernoulli_randomized_response():
    """Local randomized response (ε = 1), n = 300 yes/no answers, p ~ Beta(1, 1)."""
    rng = np.random.default_rng(207)
    n, mech = 300, pdp.RandomizedResponse(epsilon=1.0)
    _, r = _rel(rng.binomial(1, 0.3, n), pdp.Local(), mech, rng)
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=r.astype(int))
    return model, {"p": ex.randomized_response(r, 1.0)}, bernoulli_randomized_response.__doc__


@case("local", "Laplace", "finite (Bernoulli)")
def bernoulli_local_laplace():
    """One Laplace-noised 0/1 answer per person (ε = 2), n = 60: 1-d quadrature over p."""
    rng = np.random.default_rng(208)
    n, stat, mech = 60, pdp.Local(lower=0, upper=1), pdp.Laplace(epsilon=2.0)
    _, r = _rel(rng.binomial(1, 0.3, n), stat, mech, rng)
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("r", x, statistic=stat, mechanism=mech, observed=r)
    grid = _beta_grid()
    f1, f0 = stats.laplace.pdf(r, 1, 0.5), stats.laplace.pdf(r, 0, 0.5)
    loglik = np.log(grid[:, None] * f1[None, :] + (1 - grid[:, None]) * f0[None, :]).sum(axis=1)
    return model, {"p": _grid_moments(grid, loglik)}, bernoulli_local_laplace.__doc__


@case("counts", "Laplace", "finite (Categorical)")
def categorical_counts_laplace():
    """pi ~ Dirichlet(ones(3)), x ~ Categorical(pi) (n = 15), Counts(3) + Laplace(ε = 1)."""
    rng = np.random.default_rng(209)
    n, stat, mech = 15, pdp.Counts(3), pdp.Laplace(epsilon=1.0)
    rel, s = _rel(rng.choice(3, n, p=[0.5, 0.3, 0.2]), stat, mech, rng)
    b = rel.mechanism.noise_scale
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(3))
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    m0, sd0 = ex.dirichlet_counts_laplace(s, n, np.ones(3), b, index=0)
    return model, {"pi[0]": (m0, sd0)}, categorical_counts_laplace.__doc__


@case("counts", "DiscreteGaussian", "finite (Categorical)")
def categorical_counts_discrete_gaussian():
    """A 4-cell table: pi ~ Dirichlet(2·ones), n = 40 Categorical records, Counts + DiscreteGaussian(σ = 2)."""
    rng = np.random.default_rng(210)
    n, stat, mech = 40, pdp.Counts(4), pdp.DiscreteGaussian(sigma=2.0)
    _, s = _rel(rng.choice(4, n, p=[0.4, 0.3, 0.2, 0.1]), stat, mech, rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", 2.0 * np.ones(4))
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    m0 = ex.dirichlet_counts_posterior(s, n, 2.0 * np.ones(4), lambda d: -0.5 * (d / 2.0) ** 2, 0)
    return model, {"pi[0]": m0}, categorical_counts_discrete_gaussian.__doc__


@case("cells", "DiscreteGaussian", "none (a Multinomial count table)")
def dirichlet_table_cells():
    """A 3-cell table released as it is: pi ~ Dirichlet([1, 2, 1.5]), c ~ Multinomial(7, pi),
    Cells + DiscreteGaussian(σ = 1.5): enumeration over the 36 tables."""
    rng = np.random.default_rng(221)
    n, a, mech = 7, np.array([1.0, 2.0, 1.5]), pdp.DiscreteGaussian(sigma=1.5)
    s = np.asarray(pdp.release(rng.multinomial(n, [0.2, 0.5, 0.3]), pdp.Cells(), mech, rng=rng))
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", [1, 2, 1.5])
        c = pm.Multinomial("c", n=n, p=pi)
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=s)
    tables = np.array([(i, j, n - i - j) for i in range(n + 1) for j in range(n + 1 - i)])
    lw = np.array(
        [
            np.sum(special.gammaln(t + a) - special.gammaln(t + 1))
            + np.sum(stats.norm.logpdf(s, t, 1.5))  # the discrete Gaussian's shape in c
            for t in tables
        ]
    )
    # the discrete Gaussian's normaliser does not depend on c (integer release minus integer count)
    w = np.exp(lw - lw.max())
    w /= w.sum()
    post = (tables[:, 0] + a[0]) / (a.sum() + n)
    m1 = w @ post
    m2 = w @ (post * (tables[:, 0] + a[0] + 1) / (a.sum() + n + 1))
    return model, {"pi[0]": (m1, math.sqrt(m2 - m1**2))}, dirichlet_table_cells.__doc__


@case("cells", "DiscreteLaplace", "none (Poisson cells, Gamma rates)")
def gamma_poisson_cells():
    """Poisson cells with Gamma rates written with Python ints: lam ~ Gamma(2, 1, shape=3),
    c ~ Poisson(lam), Cells + DiscreteLaplace(scale 1): each cell enumerated on 0..150."""
    rng = np.random.default_rng(222)
    mech = pdp.DiscreteLaplace(scale=1.0)
    s = np.asarray(pdp.release(rng.poisson([1.0, 3.0, 0.5]), pdp.Cells(), mech, rng=rng))
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2, 1, shape=3)
        c = pm.Poisson("c", lam, shape=3)
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=s)
    grid = np.arange(151)
    lw = stats.nbinom(2, 0.5).logpmf(grid) - np.abs(s[0] - grid)  # Gamma(2, 1) → NB(2, 1/2)
    w = np.exp(lw - lw.max())
    w /= w.sum()
    shape, rate = 2 + grid, 2.0
    m1 = w @ (shape / rate)
    m2 = w @ (shape * (shape + 1) / rate**2)
    return model, {"lam[0]": (m1, math.sqrt(m2 - m1**2))}, gamma_poisson_cells.__doc__


@case("cells", "DiscreteGaussian", "none (Poisson cells of areas, dims)")
def gamma_poisson_area_cells_dims():
    """Poisson cells of 2 areas × 3 cells written with coords and dims (no shape=): lam ~
    Gamma(2, 1, dims=("area", "cell")), c ~ Poisson(lam, dims=...), Cells + DiscreteGaussian
    (σ = 1.5): column "a" of both areas enumerated on 0..150."""
    rng = np.random.default_rng(224)
    mech = pdp.DiscreteGaussian(sigma=1.5)
    true = rng.poisson([[1.0, 3.0, 0.5], [4.0, 0.2, 2.0]])
    s = np.asarray(pdp.release(true, pdp.Cells(), mech, rng=rng))
    coords = {"area": ["north", "south"], "cell": ["a", "b", "c"]}
    with pm.Model(coords=coords) as model:
        lam = pm.Gamma("lam", 2, 1, dims=("area", "cell"))
        c = pm.Poisson("c", lam, dims=("area", "cell"))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=s)
    grid = np.arange(151)
    m, sd = [], []
    for r in s[:, 0]:
        lw = stats.nbinom(2, 0.5).logpmf(grid) + stats.norm.logpdf(r, grid, 1.5)
        w = np.exp(lw - lw.max())  # (the discrete Gaussian's normaliser is the same for all c)
        w /= w.sum()
        shape, rate = 2 + grid, 2.0
        m1 = w @ (shape / rate)
        m.append(m1)
        sd.append(math.sqrt(w @ (shape * (shape + 1) / rate**2) - m1**2))
    return model, {"lam[0]": (np.array(m), np.array(sd))}, gamma_poisson_area_cells_dims.__doc__


@case("cells", "DiscreteGaussian", "none (Binomial cells, Beta p)")
def beta_binomial_cells():
    """Binomial cells out of a known n with Beta rates written with Python ints: p ~ Beta(2, 3,
    shape=3), c ~ Binomial([6, 10, 4], p), Cells + DiscreteGaussian(σ = 1.5): each cell
    enumerated on 0..n."""
    rng = np.random.default_rng(223)
    n = np.array([6, 10, 4])
    mech = pdp.DiscreteGaussian(sigma=1.5)
    s = np.asarray(pdp.release(rng.binomial(n, [0.3, 0.5, 0.2]), pdp.Cells(), mech, rng=rng))
    with pm.Model() as model:
        p = pm.Beta("p", 2, 3, shape=3)
        c = pm.Binomial("c", n=n, p=p, shape=3)
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=s)
    grid = np.arange(n[0] + 1)
    lw = stats.betabinom(n[0], 2, 3).logpmf(grid) + mech.logpdf(s[0], grid)
    w = np.exp(lw - lw.max())
    w /= w.sum()
    a, b = 2 + grid, 3 + n[0] - grid  # p | c = Beta(2 + c, 3 + n − c)
    m1 = w @ (a / (a + b))
    m2 = w @ (a * (a + 1) / ((a + b) * (a + b + 1)))
    return model, {"p[0]": (m1, math.sqrt(m2 - m1**2))}, beta_binomial_cells.__doc__


@case("local", "RandomizedResponse", "finite (Categorical)")
def categorical_randomized_response():
    """Local K = 3 randomized response (ε = 1.5), n = 150, pi ~ Dirichlet(1, 1, 1): 2-d quadrature."""
    rng = np.random.default_rng(211)
    n, eps = 150, 1.5
    mech = pdp.RandomizedResponse(epsilon=eps, n_categories=3)
    _, r = _rel(rng.choice(3, n, p=[0.5, 0.3, 0.2]), pdp.Local(), mech, rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(3))
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=r.astype(int))
    keep, other = math.exp(eps) / (math.exp(eps) + 2), 1 / (math.exp(eps) + 2)
    counts = np.bincount(r.astype(int), minlength=3)
    h = 1 / 600
    g = np.arange(h / 2, 1, h)
    p0, p1 = np.meshgrid(g, g, indexing="ij")
    p2 = 1 - p0 - p1
    ok = p2 > 0
    q = [keep * pk + other * (1 - pk) for pk in (p0, p1, np.where(ok, p2, 0.5))]
    logw = np.where(ok, sum(c * np.log(qk) for c, qk in zip(counts, q)), -np.inf)
    w = np.exp(logw - logw[ok].max())
    w /= w.sum()
    m1 = (w * p0).sum()
    return (
        model,
        {"pi[0]": (float(m1), math.sqrt((w * p0**2).sum() - m1**2))},
        categorical_randomized_response.__doc__,
    )


@case("additive", "Laplace", "finite (Binomial)")
def binomial_sum_laplace():
    """x ~ Binomial(5, p) (n = 20 people × 5 trials), Σx clipped to [0, 5] + Laplace(ε = 1)."""
    rng = np.random.default_rng(212)
    n, stat, mech = 20, pdp.Sum(lower=0, upper=5), pdp.Laplace(epsilon=1.0)
    _, s = _rel(rng.binomial(5, 0.3, n), stat, mech, rng)
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        x = pm.Binomial("x", 5, p, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    return (
        model,
        {"p": _bernoulli_exact([float(s)], [lambda v: _laplace(v, 5.0)], 5 * n)},
        binomial_sum_laplace.__doc__,
    )


# ---------------------------------------------------------------------------------------------
# unbounded integer records
# ---------------------------------------------------------------------------------------------
def _poisson_exact(s, n, a, b, noise, kmax=800):
    lam = np.linspace(1e-4, 12, 4001)
    k = np.arange(kmax + 1)
    lp = stats.poisson.logpmf(k[None, :], n * lam[:, None])
    return _grid_moments(lam, stats.gamma.logpdf(lam, a, scale=1 / b) + _count_loglik(lp, k, noise))


@case("additive", "DiscreteLaplace", "unbounded (Poisson)", fast=True)
def poisson_sum_discrete_laplace():
    """lam ~ Gamma(3., 1.), x ~ Poisson(lam) (n = 60), Σx + DiscreteLaplace(scale 2)."""
    rng = np.random.default_rng(301)
    n, mech = 60, pdp.DiscreteLaplace(scale=2.0)
    _, s = _rel(rng.poisson(2.0, n), pdp.Sum(), mech, rng)
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=3.0, beta=1.0)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    return (
        model,
        {"lam": _poisson_exact(float(s), n, 3.0, 1.0, _laplace(float(s), 2.0))},
        poisson_sum_discrete_laplace.__doc__,
    )


@case("additive", "DiscreteGaussian", "unbounded (Poisson)")
def poisson_sum_discrete_gaussian_int_prior():
    """lam ~ Gamma(2, 1) with Python ints, n = 50 Poisson records, Σx + DiscreteGaussian(σ = 4)."""
    rng = np.random.default_rng(302)
    n, mech = 50, pdp.DiscreteGaussian(sigma=4.0)
    _, s = _rel(rng.poisson(3.0, n), pdp.Sum(), mech, rng)
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2, 1)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    return (
        model,
        {"lam": _poisson_exact(float(s), n, 2.0, 1.0, _gauss(float(s), 4.0))},
        poisson_sum_discrete_gaussian_int_prior.__doc__,
    )


@case("additive", "Laplace", "unbounded (Poisson)")
def poisson_sum_laplace():
    """lam ~ Gamma(2., 0.5), n = 40 Poisson records, Σx + continuous Laplace(scale 3)."""
    rng = np.random.default_rng(303)
    n, mech = 40, pdp.Laplace(scale=3.0)
    _, s = _rel(rng.poisson(4.0, n), pdp.Sum(), mech, rng)
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=2.0, beta=0.5)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    return (
        model,
        {"lam": _poisson_exact(float(s), n, 2.0, 0.5, _laplace(float(s), 3.0))},
        poisson_sum_laplace.__doc__,
    )


@case("additive", "DiscreteLaplace", "unbounded (Geometric)")
def geometric_sum_discrete_laplace():
    """p ~ Beta(2., 2.), x ~ Geometric(p) on {1, 2, …} (n = 20), Σx + DiscreteLaplace(scale 2)."""
    rng = np.random.default_rng(304)
    n, mech, a, b = 20, pdp.DiscreteLaplace(scale=2.0), 2.0, 2.0
    _, s = _rel(rng.geometric(0.4, n), pdp.Sum(), mech, rng)
    with pm.Model() as model:
        p = pm.Beta("p", a, b)
        x = pm.Geometric("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    # Σx = k ≥ n: P(k | p) = C(k−1, n−1) pⁿ (1−p)^(k−n); p | k ~ Beta(a + n, b + k − n)
    k = np.arange(n, n + 1500)
    logw = (
        special.gammaln(k)
        - special.gammaln(n)
        - special.gammaln(k - n + 1)
        + special.betaln(a + n, b + k - n)
        + _laplace(float(s), 2.0)(k)
    )
    w = np.exp(logw - logw.max())
    w /= w.sum()
    A, B = a + n, b + k - n
    m1 = np.sum(w * A / (A + B))
    m2 = np.sum(w * A * (A + 1) / ((A + B) * (A + B + 1)))
    return model, {"p": (float(m1), math.sqrt(m2 - m1**2))}, geometric_sum_discrete_laplace.__doc__


# ---------------------------------------------------------------------------------------------
# mixed models (several parts)
# ---------------------------------------------------------------------------------------------
@case("additive", "Laplace", "finite + continuous (Gamma)")
def quickstart_two_releases():
    """examples/quickstart.py: a Beta–Bernoulli count and Gamma stays (clamped mean), n = 300."""
    model, s_count, b = quickstart_model()
    n = 300
    return (
        model,
        {"p": _bernoulli_exact([s_count], [lambda v: _laplace(v, b)], n)},
        quickstart_two_releases.__doc__,
    )


@case("local", "RandomizedResponse", "finite (2×2 table, two answers per record)")
def rr_table_two_answers():
    """Issue 17: a 2×2 table, two randomized-response answers per record (Local(fn), ε = 1), N = 200."""
    rng = np.random.default_rng(401)
    N, eps = 200, 1.0
    mech = pdp.RandomizedResponse(epsilon=eps, n_categories=2)
    cell = rng.choice(4, N, p=[0.4, 0.2, 0.1, 0.3])
    stat = pdp.Local(fn=lambda c: pt.stack([c // 2, c % 2], axis=-1))
    _, r = _rel(cell, stat, mech, rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(4))
        c = pm.Categorical("c", pi, shape=N)
        pdp.DPObserved("r", c, statistic=stat, mechanism=mech, observed=r.astype(int))
    return model, None, rr_table_two_answers.__doc__


# ---------------------------------------------------------------------------------------------
# models written for the red-team pass (link functions, other record families, other priors)
# ---------------------------------------------------------------------------------------------
def _poisson_binomial(ps):
    """pmf of a sum of independent Bernoulli(p_i) (convolution)."""
    pmf = np.array([1.0])
    for p in ps:
        pmf = np.convolve(pmf, [1.0 - p, p])
    return pmf


@case("additive", "Laplace", "finite (Bernoulli, logit link with a covariate)")
def bernoulli_logit_covariate():
    """x_i ~ Bernoulli(sigmoid(a + 0.8 z_i)) with a public covariate z (NumPy), a ~ N(0, 1.5),
    n = 40, Sum(0, 1) + Laplace(ε = 1): records not iid given a (Poisson-binomial enumeration)."""
    rng = np.random.default_rng(501)
    n = 40
    z = rng.normal(size=n)
    stat, mech = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=1.0)
    _, s = _rel((rng.random(n) < special.expit(0.3 + 0.8 * z)).astype(int), stat, mech, rng)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 1.5)
        x = pm.Bernoulli("x", pm.math.sigmoid(a + 0.8 * z), shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    grid = np.linspace(-5, 5, 801)
    k = np.arange(n + 1)
    lik = np.exp(-np.abs(float(s) - k))  # Laplace scale Δ/ε = 1
    loglik = np.array([np.log(_poisson_binomial(special.expit(u + 0.8 * z)) @ lik) for u in grid])
    return (
        model,
        {"a": _grid_moments(grid, stats.norm.logpdf(grid, 0, 1.5) + loglik)},
        bernoulli_logit_covariate.__doc__,
    )


@case("additive", "Gaussian", "continuous (NormalMixture records)")
def normal_mixture_weight():
    """x_i ~ NormalMixture(w = (1 − w1, w1), μ = (−2, 2), σ = 1), w1 ~ Beta(1, 1), n = 20,
    Σx + Gaussian(σ = 2): enumeration over the number of records in the second component."""
    rng = np.random.default_rng(502)
    n, sig = 20, 2.0
    comp = rng.random(n) < 0.3
    _, s = _rel(
        np.where(comp, 2.0, -2.0) + rng.normal(size=n), pdp.Sum(), pdp.Gaussian(sigma=sig), rng
    )
    with pm.Model() as model:
        w1 = pm.Beta("w1", 1, 1)
        x = pm.NormalMixture(
            "x", w=pt.stack([1 - w1, w1]), mu=np.array([-2.0, 2.0]), sigma=1.0, shape=n
        )
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sig), observed=s)
    grid, k = _beta_grid(), np.arange(n + 1)
    log_noise = stats.norm.logpdf(float(s), 4.0 * k - 2.0 * n, math.sqrt(n + sig**2))
    loglik = _lse(stats.binom.logpmf(k[None, :], n, grid[:, None]) + log_noise[None, :])
    return model, {"w1": _grid_moments(grid, loglik)}, normal_mixture_weight.__doc__


@case("additive", "DiscreteLaplace", "unbounded (NegativeBinomial)")
def negative_binomial_sum_discrete_laplace():
    """x_i ~ NegativeBinomial(mu, alpha = 2), mu ~ Gamma(2, 1) (ints), n = 20, Σx +
    DiscreteLaplace(scale 3): Σx ~ NB(n mu, n alpha) summed against the noise."""
    rng = np.random.default_rng(503)
    n, alpha, b = 20, 2.0, 3.0
    mech = pdp.DiscreteLaplace(scale=b)
    _, s = _rel(rng.negative_binomial(alpha, alpha / (alpha + 2.5), n), pdp.Sum(), mech, rng)
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2, 1)
        x = pm.NegativeBinomial("x", mu=mu, alpha=alpha, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    grid, k, A = np.linspace(0.05, 10, 2000), np.arange(800), n * alpha
    lp = stats.nbinom.logpmf(k[None, :], A, A / (A + n * grid[:, None]))
    loglik = _count_loglik(lp, k, lambda kk: -np.abs(float(s) - kk) / b)
    return (
        model,
        {"mu": _grid_moments(grid, stats.gamma.logpdf(grid, 2) + loglik)},
        negative_binomial_sum_discrete_laplace.__doc__,
    )


@case("additive", "Staircase", "finite (Bernoulli)")
def bernoulli_sum_staircase():
    """p ~ Beta(1, 1) (ints), x ~ Bernoulli(p), n = 30, Sum(0, 1) + Staircase(ε = 1)."""
    rng = np.random.default_rng(504)
    n, stat = 30, pdp.Sum(lower=0, upper=1)
    r, s = _rel((rng.random(n) < 0.3).astype(int), stat, pdp.Staircase(epsilon=1.0), rng)
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=pdp.Staircase(epsilon=1.0), observed=r)
    mech = r.mechanism  # calibrated (Δ = 1): its density, checked against scipy in the unit tests
    log_noise = lambda k: np.array([float(mech.logpdf(s, kk)) for kk in k])  # noqa: E731
    grid, k = _beta_grid(), np.arange(n + 1)
    loglik = _count_loglik(stats.binom.logpmf(k[None, :], n, grid[:, None]), k, log_noise)
    return model, {"p": _grid_moments(grid, loglik)}, bernoulli_sum_staircase.__doc__


@case("additive", "Gaussian", "continuous (per-record random effects)")
def normal_record_random_effects():
    """b_i ~ N(mu, 0.7) per record, x_i ~ N(b_i, 1), mu ~ N(0, 3), n = 15, Σx + Gaussian(σ = 2):
    conjugate (Σx ~ N(n mu, n(1 + 0.7²)))."""
    rng = np.random.default_rng(505)
    n, sig, tau = 15, 2.0, 0.7
    _, s = _rel(rng.normal(1 + rng.normal(0, tau, n), 1), pdp.Sum(), pdp.Gaussian(sigma=sig), rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        b = pm.Normal("b", mu, tau, shape=n)
        x = pm.Normal("x", b, 1, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sig), observed=s)
    exact = _normal_conjugate(n, float(s), 0.0, 3.0, sig**2, rec_sd=math.sqrt(1 + tau**2))
    return model, {"mu": exact}, normal_record_random_effects.__doc__


@case("counts", "Laplace", "finite (Categorical, Counts and a Sum of category values)")
def categorical_counts_and_value_sum():
    """pi ~ Dirichlet(1, 1, 1), x ~ Categorical(pi), n = 20; two releases of the same records:
    Counts(3) + Laplace(ε = 0.5) and Sum(0, 5, fn = value[x]) + Laplace(ε = 0.5), values (0, 1, 5)."""
    rng = np.random.default_rng(506)
    n, vals = 20, np.array([0.0, 1.0, 5.0])
    stat2 = pdp.Sum(lower=0, upper=5, fn=lambda c: pt.as_tensor(vals)[c])
    xc = rng.choice(3, n, p=[0.3, 0.3, 0.4])
    r1, c_obs = _rel(xc, pdp.Counts(3), pdp.Laplace(epsilon=0.5), rng)
    r2, t_obs = _rel(xc, stat2, pdp.Laplace(epsilon=0.5), rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(3))
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved(
            "c", x, statistic=pdp.Counts(3), mechanism=pdp.Laplace(epsilon=0.5), observed=r1
        )
        pdp.DPObserved("t", x, statistic=stat2, mechanism=pdp.Laplace(epsilon=0.5), observed=r2)
    comps = np.array([(a, b, n - a - b) for a in range(n + 1) for b in range(n + 1 - a)])
    post = 1.0 + comps  # Dirichlet parameters given the counts
    logw = (
        special.gammaln(n + 1)
        - special.gammaln(comps + 1).sum(1)
        + special.gammaln(post).sum(1)
        - special.gammaln(post.sum(1))
        - np.abs(c_obs - comps).sum(1) * 0.5 / 2.0  # Counts: Δ₁ = 2
        - np.abs(float(t_obs) - comps @ vals) * 0.5 / 5.0  # Sum(0, 5): Δ₁ = 5
    )
    w = np.exp(logw - logw.max())
    w /= w.sum()
    tot = post.sum(1, keepdims=True)
    mean = w @ (post / tot)
    sd = np.sqrt(w @ (post * (post + 1) / (tot * (tot + 1))) - mean**2)
    return (
        model,
        {f"pi[{j}]": (mean[j], sd[j]) for j in range(3)},
        categorical_counts_and_value_sum.__doc__,
    )


# ---------------------------------------------------------------------------------------------
# red team 2 (issue 17.4): other record families, links, Deterministics, censoring, two record
# variables, two statistics of the same records
# ---------------------------------------------------------------------------------------------
def _clipped_sum_loglik(cdf, lower, upper, n, log_noise, h=0.005):
    """log p(s | θ) for s = Σ clip(x_i, lower, upper) + noise, x_i iid with cdf ``cdf(t)``: the
    clipped record on a grid of step h (atoms at the bounds, each interior cell's mass at its
    centre), the n-fold sum by FFT, summed against ``log_noise(totals)``."""
    m = int(round((upper - lower) / h))
    grid = lower + h * np.arange(m + 1)
    edges = np.concatenate([grid[:-1] + h / 2])
    c = np.concatenate([[0.0], cdf(edges), [1.0]])
    pmf = np.clip(np.diff(c), 0.0, None)
    size = 1 << int(math.ceil(math.log2(n * m + 1)))
    sum_pmf = np.clip(np.fft.irfft(np.fft.rfft(pmf, size) ** n, size)[: n * m + 1], 0.0, None)
    totals = n * lower + h * np.arange(n * m + 1)
    return float(special.logsumexp(log_noise(totals), b=sum_pmf))


def _theta_grid_moments(grid, logprior, loglik_of):
    return _grid_moments(grid, logprior + np.array([loglik_of(t) for t in grid]))


@case("additive", "Laplace", "continuous (LogNormal, clamped)")
def lognormal_clamped_sum_laplace():
    """x_i ~ LogNormal(mu, 0.5) (hospital stays), mu ~ N(0.5, 1), n = 20, Σ clip(x, 0, 6) +
    Laplace(ε = 1): clipped-sum quadrature."""
    rng = np.random.default_rng(601)
    n, stat, mech = 20, pdp.Sum(lower=0, upper=6), pdp.Laplace(epsilon=1.0)
    _, s = _rel(rng.lognormal(0.8, 0.5, n), stat, mech, rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.5, 1.0)
        x = pm.LogNormal("x", mu, 0.5, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    b = 6.0
    grid = np.linspace(-3.5, 4.5, 321)
    exact = _theta_grid_moments(
        grid,
        stats.norm.logpdf(grid, 0.5, 1.0),
        lambda m: _clipped_sum_loglik(
            lambda t: stats.lognorm.cdf(t, 0.5, scale=math.exp(m)),
            0.0,
            6.0,
            n,
            lambda k: -np.abs(float(s) - k) / b,
        ),
    )
    return model, {"mu": exact}, lognormal_clamped_sum_laplace.__doc__


@case("additive", "Gaussian", "continuous (StudentT)")
def studentt_mean_gaussian():
    """x_i ~ StudentT(ν = 4, mu, 1), mu ~ N(0, 2), n = 25, Mean(−5, 5) + Gaussian(σ = 0.2):
    clipped-sum quadrature."""
    rng = np.random.default_rng(602)
    n, stat, mech = 25, pdp.Mean(lower=-5, upper=5), pdp.Gaussian(sigma=0.2)
    _, s = _rel(1.0 + rng.standard_t(4, n), stat, mech, rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        x = pm.StudentT("x", nu=4, mu=mu, sigma=1.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    grid = np.linspace(-2.0, 4.0, 241)
    exact = _theta_grid_moments(
        grid,
        stats.norm.logpdf(grid, 0.0, 2.0),
        lambda m: _clipped_sum_loglik(
            lambda t: stats.t.cdf(t, 4, loc=m),
            -5.0,
            5.0,
            n,
            lambda k: -0.5 * ((float(s) - k / n) / 0.2) ** 2,
            h=0.01,
        ),
    )
    return model, {"mu": exact}, studentt_mean_gaussian.__doc__


@case("additive", "Laplace", "continuous (Beta)")
def beta_records_mean_laplace():
    """Proportions x_i ~ Beta(a, 2), a ~ Gamma(2, 1), n = 15, Mean(0, 1) + Laplace(ε = 2):
    quadrature over a (the mean's law by FFT)."""
    rng = np.random.default_rng(603)
    n, stat, mech = 15, pdp.Mean(lower=0, upper=1), pdp.Laplace(epsilon=2.0)
    _, s = _rel(rng.beta(3.0, 2.0, n), stat, mech, rng)
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 1.0)
        x = pm.Beta("x", alpha=a, beta=2.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    b = 1.0 / (n * 2.0)
    grid = np.linspace(0.02, 14.0, 360)
    exact = _theta_grid_moments(
        grid,
        stats.gamma.logpdf(grid, 2.0),
        lambda a_: _clipped_sum_loglik(
            lambda t: stats.beta.cdf(t, a_, 2.0),
            0.0,
            1.0,
            n,
            lambda k: -np.abs(float(s) - k / n) / b,
            h=0.001,
        ),
    )
    return model, {"a": exact}, beta_records_mean_laplace.__doc__


@case("additive", "Laplace", "continuous (censored Normal)")
def censored_normal_sum_laplace():
    """Censored records: x_i = min(y_i, 3), y_i ~ N(mu, 1) (pm.Censored), mu ~ N(1, 2), n = 20,
    Σ clip(x, −2, 4) + Laplace(ε = 1): the atom at 3 in the clipped-sum quadrature."""
    rng = np.random.default_rng(604)
    n, stat, mech = 20, pdp.Sum(lower=-2, upper=4), pdp.Laplace(epsilon=1.0)
    _, s = _rel(np.minimum(rng.normal(2.0, 1.0, n), 3.0), stat, mech, rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 1.0, 2.0)
        x = pm.Censored("x", pm.Normal.dist(mu, 1.0), lower=None, upper=3.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    b = 6.0
    grid = np.linspace(-3.0, 6.0, 301)
    exact = _theta_grid_moments(
        grid,
        stats.norm.logpdf(grid, 1.0, 2.0),
        lambda m: _clipped_sum_loglik(
            lambda t: np.where(t < 3.0, stats.norm.cdf(t - m), 1.0),
            -2.0,
            4.0,
            n,
            lambda k: -np.abs(float(s) - k) / b,
        ),
    )
    return model, {"mu": exact}, censored_normal_sum_laplace.__doc__


@case("additive", "Gaussian", "continuous (TruncatedNormal)")
def truncated_normal_sum_gaussian():
    """Non-negative records x_i ~ TruncatedNormal(mu, 1, lower = 0), mu ~ N(1, 2), n = 20,
    Σ clip(x, 0, 5) + Gaussian(σ = 2): clipped-sum quadrature."""
    rng = np.random.default_rng(605)
    n, stat, mech = 20, pdp.Sum(lower=0, upper=5), pdp.Gaussian(sigma=2.0)
    _, s = _rel(
        stats.truncnorm.rvs(-1.5, np.inf, loc=1.5, random_state=rng, size=n), stat, mech, rng
    )
    with pm.Model() as model:
        mu = pm.Normal("mu", 1.0, 2.0)
        x = pm.TruncatedNormal("x", mu=mu, sigma=1.0, lower=0.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    grid = np.linspace(-4.0, 5.0, 301)
    exact = _theta_grid_moments(
        grid,
        stats.norm.logpdf(grid, 1.0, 2.0),
        lambda m: _clipped_sum_loglik(
            lambda t: stats.truncnorm.cdf(t, -m, np.inf, loc=m),
            0.0,
            5.0,
            n,
            lambda k: -0.5 * ((float(s) - k) / 2.0) ** 2,
        ),
    )
    return model, {"mu": exact}, truncated_normal_sum_gaussian.__doc__


@case("additive", "DiscreteLaplace", "unbounded (Poisson, log link through a Deterministic)")
def poisson_log_link_deterministic():
    """eta ~ N(1, 1), lam = pm.Deterministic(exp(eta)), x_i ~ Poisson(lam), n = 30, Σx +
    DiscreteLaplace(scale 3): Poisson-sum enumeration over an eta grid."""
    rng = np.random.default_rng(606)
    n, mech = 30, pdp.DiscreteLaplace(scale=3.0)
    _, s = _rel(rng.poisson(2.5, n), pdp.Sum(), mech, rng)
    with pm.Model() as model:
        eta = pm.Normal("eta", 1.0, 1.0)
        lam = pm.Deterministic("lam", pm.math.exp(eta))
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    grid = np.linspace(-3.0, 4.0, 1401)
    k = np.arange(1000)
    lp = stats.poisson.logpmf(k[None, :], n * np.exp(grid)[:, None])
    loglik = _count_loglik(lp, k, _laplace(float(s), 3.0))
    return (
        model,
        {"eta": _grid_moments(grid, stats.norm.logpdf(grid, 1.0, 1.0) + loglik)},
        poisson_log_link_deterministic.__doc__,
    )


@case("additive", "DiscreteLaplace", "unbounded (ZeroInflatedPoisson)")
def zero_inflated_poisson_sum():
    """x_i ~ ZeroInflatedPoisson(ψ = 0.6, mu), mu ~ Gamma(2, 0.5), n = 25, Sum(0, 10) +
    DiscreteLaplace(ε = 1) (scale 10): the clipped record's pmf convolved n times."""
    rng = np.random.default_rng(607)
    n, stat, mech = 25, pdp.Sum(lower=0, upper=10), pdp.DiscreteLaplace(epsilon=1.0)
    xs = np.where(rng.random(n) < 0.6, rng.poisson(4.0, n), 0)
    _, s = _rel(xs, stat, mech, rng)
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2.0, 0.5)
        x = pm.ZeroInflatedPoisson("x", psi=0.6, mu=mu, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    grid = np.linspace(0.01, 16.0, 800)
    vals = np.arange(11)
    k = np.arange(10 * n + 1)

    def loglik(m):
        pmf = 0.6 * stats.poisson.pmf(vals, m)
        pmf[0] += 0.4
        pmf[-1] = 0.6 * stats.poisson.sf(9, m)  # clipped at 10
        total = np.array([1.0])
        for _ in range(n):
            total = np.convolve(total, pmf)
        return float(special.logsumexp(-np.abs(float(s) - k) / 10.0, b=np.clip(total, 0, None)))

    exact = _theta_grid_moments(grid, stats.gamma.logpdf(grid, 2.0, scale=2.0), loglik)
    return model, {"mu": exact}, zero_inflated_poisson_sum.__doc__


@case("additive", "Gaussian", "continuous (two record variables, two releases)")
def two_groups_shift_gaussian():
    """Two record variables: x ~ N(mu, 1) (n = 15) and y ~ N(mu + delta, 1) (n = 10), each summed
    with Gaussian(σ = 2); mu ~ N(0, 3), delta ~ N(0, 1): bivariate normal, exact."""
    rng = np.random.default_rng(608)
    nx, ny, sig = 15, 10, 2.0
    _, sx = _rel(rng.normal(1.0, 1.0, nx), pdp.Sum(), pdp.Gaussian(sigma=sig), rng)
    _, sy = _rel(rng.normal(1.8, 1.0, ny), pdp.Sum(), pdp.Gaussian(sigma=sig), rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        delta = pm.Normal("delta", 0.0, 1.0)
        x = pm.Normal("x", mu, 1.0, shape=nx)
        y = pm.Normal("y", mu + delta, 1.0, shape=ny)
        pdp.DPObserved("sx", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sig), observed=sx)
        pdp.DPObserved("sy", y, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sig), observed=sy)
    # (sx, sy) = A (mu, delta) + noise, noise var diag(nx + σ², ny + σ²)
    A = np.array([[nx, 0.0], [ny, ny]])
    noise = np.diag([nx + sig**2, ny + sig**2])
    prior = np.diag([9.0, 1.0])
    prec = np.linalg.inv(prior) + A.T @ np.linalg.inv(noise) @ A
    cov = np.linalg.inv(prec)
    mean = cov @ A.T @ np.linalg.inv(noise) @ np.array([float(sx), float(sy)])
    sd = np.sqrt(np.diag(cov))
    return (
        model,
        {"mu": (mean[0], sd[0]), "delta": (mean[1], sd[1])},
        two_groups_shift_gaussian.__doc__,
    )


@case("additive", "Laplace", "finite (Bernoulli, probit link, pm.Data covariate, 2-d θ)")
def bernoulli_probit_pm_data():
    """x_i ~ Bernoulli(Φ(a + b z_i)) with z in pm.Data and dims, a, b ~ N(0, 1), n = 30,
    Sum(0, 1) + Laplace(ε = 1): Poisson-binomial enumeration on a 2-d grid."""
    rng = np.random.default_rng(609)
    n = 30
    z = np.linspace(-1.5, 1.5, n)
    stat, mech = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=1.0)
    _, s = _rel((rng.random(n) < stats.norm.cdf(0.2 + 0.8 * z)).astype(int), stat, mech, rng)
    with pm.Model(coords={"person": np.arange(n)}) as model:
        zd = pm.Data("z", z, dims="person")
        a = pm.Normal("a", 0.0, 1.0)
        b = pm.Normal("b", 0.0, 1.0)
        x = pm.Bernoulli("x", p=pm.math.invprobit(a + b * zd), dims="person")
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    ga = np.linspace(-4, 4, 121)
    gb = np.linspace(-4, 4, 121)
    k = np.arange(n + 1)
    lik_k = np.exp(-np.abs(float(s) - k))
    logw = np.empty((ga.size, gb.size))
    for i, av in enumerate(ga):
        for j, bv in enumerate(gb):
            logw[i, j] = np.log(_poisson_binomial(stats.norm.cdf(av + bv * z)) @ lik_k)
    logw += stats.norm.logpdf(ga)[:, None] + stats.norm.logpdf(gb)[None, :]
    w = np.exp(logw - logw.max())
    w /= w.sum()
    out = {}
    for name, g, wm in (("a", ga, w.sum(1)), ("b", gb, w.sum(0))):
        m1 = float(wm @ g)
        out[name] = (m1, math.sqrt(float(wm @ g**2) - m1**2))
    return model, out, bernoulli_probit_pm_data.__doc__


@case("order", "Laplace", "continuous (a Sum and a Median of the same records)")
def normal_sum_and_median():
    """Two statistics of the same records: Σ clip(x, −2, 4) + Laplace(ε = 1) and Median(−2, 4) +
    Laplace(ε = 1), x ~ N(mu, 1), n = 15: no exact answer here."""
    rng = np.random.default_rng(610)
    n = 15
    conf = rng.normal(1.0, 1.0, n)
    s1, _ = _rel(conf, pdp.Sum(lower=-2, upper=4), pdp.Laplace(epsilon=1.0), rng)
    s2, _ = _rel(conf, pdp.Median(-2, 4), pdp.Laplace(epsilon=1.0), rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved(
            "s1",
            x,
            statistic=pdp.Sum(lower=-2, upper=4),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=s1,
        )
        pdp.DPObserved(
            "s2", x, statistic=pdp.Median(-2, 4), mechanism=pdp.Laplace(epsilon=1.0), observed=s2
        )
    return model, None, normal_sum_and_median.__doc__


def by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


# ---------------------------------------------------------------------------------------------
# one run: pm.sample() without step=, the route it picked, its mixing and exactness
# ---------------------------------------------------------------------------------------------
def _select(post, key):
    """``post[key]`` as (chain, draw, ...); ``key`` may index a vector entry: ``"pi[0]"``."""
    name, _, idx = key.partition("[")
    d = np.asarray(post[name], dtype=float)
    if idx:
        d = d[..., int(idx.rstrip("]"))]
    return d


def run_case(c: Case, *, draws=1000, tune=500, chains=2, seed=1):
    """Build and sample ``c`` with ``pm.sample()`` (no ``step=``): route, ESS/draw, R-hat, ESS/s, z."""
    import time
    import warnings

    import arviz as az
    import xarray as xr

    from pymc_dp.samplers.convergence import theta_value_names
    from tests.support.mc import _as_chains, mcse
    from tests.support.sampling import assigned, sample

    model, exact, description = c.build()
    route = assigned(model)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = sample(model, draws=draws, tune=tune, chains=chains, seed=seed)
    wall = time.perf_counter() - t0
    post = idata.posterior
    seconds = float(post.attrs.get("sampling_time", wall))
    guard = [str(w.message) for w in caught if issubclass(w.category, pdp.ConvergenceWarning)]
    others = [
        str(w.message).splitlines()[0]
        for w in caught
        if not issubclass(w.category, pdp.ConvergenceWarning)
        and issubclass(w.category, UserWarning)
    ]
    rows = {}
    keys = list(exact) if exact else list(theta_value_names(model).values())
    for key in keys:
        d = _as_chains(_select(post, key))
        dims = ("chain", "draw", *[f"e{i}" for i in range(d.ndim - 2)])
        ds = xr.Dataset({"q": (dims, d)})
        ess = np.atleast_1d(np.asarray(az.ess(ds, method="bulk")["q"], dtype=float))
        rhat = np.atleast_1d(np.asarray(az.rhat(ds)["q"], dtype=float))
        row = {
            "ess_per_draw": float(ess.min()) / (d.shape[0] * d.shape[1]),
            "r_hat": float(rhat.max()),
            "ess_per_s": float(ess.min()) / seconds,
            "mean": d.mean(axis=(0, 1)),
            "sd": d.std(axis=(0, 1), ddof=1),
        }
        if exact and key in exact:
            m, s = (np.asarray(v, dtype=float) for v in exact[key])
            row["z_mean"] = float(np.max(np.abs((row["mean"] - m) / mcse(d, "mean"))))
            row["z_sd"] = float(np.max(np.abs((row["sd"] - s) / mcse(d, "sd"))))
            row["exact"] = (m, s)
        rows[key] = row
    return {
        "case": c,
        "description": description,
        "route": route,
        "idata": idata,
        "rows": rows,
        "seconds": seconds,
        "wall": wall,
        "guard": guard,
        "warnings": others,
        "exact": exact,
    }
