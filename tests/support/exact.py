"""Exact posteriors of small privatized-data problems, by enumeration or quadrature.

Each function returns the first two posterior moments of a scalar parameter. Shared by the
statistical test tier of every sampler.
"""

from __future__ import annotations

import itertools
import math

import arviz as az
import numpy as np
import xarray as xr
from scipy import special, stats


def _normalise(logw):
    w = np.exp(logw - logw.max())
    return w / w.sum()


def beta_bernoulli_laplace(s, n, a, b, scale):
    """p ~ Beta(a, b), x_i ~ Bern(p), s = Σ x + Laplace(scale): enumerate k = Σ x.

    ``s`` and ``scale`` may be sequences: independent releases of the same sum.
    """
    k = np.arange(n + 1)
    noise = sum(-np.abs(si - k) / sc for si, sc in zip(np.atleast_1d(s), np.broadcast_to(scale, np.shape(np.atleast_1d(s)))))
    logw = (special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
            + special.betaln(a + k, b + n - k) + noise)
    w = _normalise(logw)
    m1 = np.sum(w * (a + k) / (a + b + n))
    m2 = np.sum(w * (a + k) * (a + k + 1) / ((a + b + n) * (a + b + n + 1)))
    return m1, m2


def normal_sum_gaussian(s, n, prior_sd, sigma):
    """mu ~ N(0, prior_sd²), x_i ~ N(mu, 1), s = Σ x + N(0, sigma²): conjugate."""
    prec = 1 / prior_sd**2 + n**2 / (n + sigma**2)
    mean = n * s / (n + sigma**2) / prec
    return mean, mean**2 + 1 / prec


def randomized_response(r, epsilon, a=1.0, b=1.0):
    """p ~ Beta(a, b), x_i ~ Bern(p), r_i = RR(x_i): 1-d quadrature on a fine grid."""
    q = math.exp(epsilon) / (math.exp(epsilon) + 1)
    p = np.linspace(1e-9, 1 - 1e-9, 200_001)
    ones, zeros = int(np.sum(r)), int(len(r) - np.sum(r))
    prob1 = p * q + (1 - p) * (1 - q)
    logpost = stats.beta.logpdf(p, a, b) + ones * np.log(prob1) + zeros * np.log1p(-prob1)
    w = _normalise(logpost)
    return np.sum(w * p), np.sum(w * p**2)


def poisson_discrete_laplace(s, n, a, b, scale, kmax=600):
    """λ ~ Gamma(a, rate b), x_i ~ Poisson(λ), s = Σx + DiscreteLaplace(scale): enumerate Σx."""
    k = np.arange(kmax + 1)
    lognb = (special.gammaln(a + k) - special.gammaln(a) - special.gammaln(k + 1)
             + a * np.log(b / (b + n)) + k * np.log(n / (b + n)))
    w = _normalise(lognb - np.abs(s - k) / scale)
    m1 = np.sum(w * (a + k) / (b + n))
    m2 = np.sum(w * (a + k) * (a + k + 1) / (b + n) ** 2)
    return m1, m2


def dirichlet_counts_laplace(s, n, alpha, scale, index=0):
    """π ~ Dir(alpha), x_i ~ Cat(π), s = counts + Laplace(scale): enumerate the compositions."""
    alpha = np.asarray(alpha, dtype=float)
    K, A = len(alpha), alpha.sum()
    comps = [c for c in itertools.product(range(n + 1), repeat=K) if sum(c) == n]
    c = np.array(comps, dtype=float)
    logw = (special.gammaln(n + 1) - special.gammaln(c + 1).sum(axis=1)
            + special.gammaln(alpha + c).sum(axis=1) - np.abs(s - c).sum(axis=1) / scale)
    w = _normalise(logw)
    ak = alpha[index] + c[:, index]
    return np.sum(w * ak / (A + n)), np.sum(w * ak * (ak + 1) / ((A + n) * (A + n + 1)))


def exponential_sum_gaussian(s, n, a, b, sigma):
    """λ ~ Gamma(a, rate b), x_i ~ Exp(λ), s = Σ x + N(0, sigma²): 2-d quadrature."""
    lam = np.linspace(1e-4, 15, 3000)
    t = np.linspace(1e-6, max(60.0, s + 10 * sigma), 6000)
    logf = stats.gamma.logpdf(t[None, :], n, scale=1 / lam[:, None]) + stats.norm.logpdf(s - t[None, :], 0, sigma)
    like = np.trapezoid(np.exp(logf), t, axis=1)
    post = stats.gamma.pdf(lam, a, scale=1 / b) * like
    post /= np.trapezoid(post, lam)
    return np.trapezoid(post * lam, lam), np.trapezoid(post * lam**2, lam)


def assert_moments(draws, m1, m2, k=4.0, label=""):
    """Posterior mean and second moment within k Monte Carlo standard errors (ESS-based)."""
    draws = np.asarray(draws, dtype=float)
    report = []
    for power, exact in ((1, m1), (2, m2)):
        q = draws**power
        ds = xr.Dataset({"q": (("chain", "draw"), q)})
        ess = float(az.ess(ds, method="mean")["q"])
        mcse = q.std() / math.sqrt(ess)
        z = (q.mean() - exact) / mcse
        report.append((power, q.mean(), exact, z, ess))
        print(f"[exact] {label}: E[θ^{power}] sampled {q.mean():.5f} exact {exact:.5f} "
              f"z={z:+.2f} MCSE (ESS {ess:.0f})")
        assert abs(z) < k, f"{label}: E[θ^{power}] = {q.mean():.5f} vs exact {exact:.5f} ({z:+.2f} MCSE, ESS {ess:.0f})"
    return report
