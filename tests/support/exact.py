"""Exact posteriors of small privatized-data problems, by enumeration or quadrature.

Each function returns the exact posterior mean and sd of a scalar parameter, for
:func:`tests.support.mc.assert_mc_close`. Shared by the statistical test tier of every sampler.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from scipy import linalg, special, stats

from tests.support.models import L, U


def _mean_sd(m1, m2):
    return float(m1), math.sqrt(max(float(m2) - float(m1) ** 2, 0.0))


def _normalise(logw):
    w = np.exp(logw - logw.max())
    return w / w.sum()


def beta_bernoulli_laplace(s, n, a, b, scale):
    """p ~ Beta(a, b), x_i ~ Bern(p), s = Σ x + Laplace(scale): enumerate k = Σ x.

    ``s`` and ``scale`` may be sequences: independent releases of the same sum.
    """
    k = np.arange(n + 1)
    noise = sum(
        -np.abs(si - k) / sc
        for si, sc in zip(np.atleast_1d(s), np.broadcast_to(scale, np.shape(np.atleast_1d(s))))
    )
    logw = (
        special.gammaln(n + 1)
        - special.gammaln(k + 1)
        - special.gammaln(n - k + 1)
        + special.betaln(a + k, b + n - k)
        + noise
    )
    w = _normalise(logw)
    m1 = np.sum(w * (a + k) / (a + b + n))
    m2 = np.sum(w * (a + k) * (a + k + 1) / ((a + b + n) * (a + b + n + 1)))
    return _mean_sd(m1, m2)


def normal_sum_gaussian(s, n, prior_sd, sigma):
    """mu ~ N(0, prior_sd²), x_i ~ N(mu, 1), s = Σ x + N(0, sigma²): conjugate."""
    prec = 1 / prior_sd**2 + n**2 / (n + sigma**2)
    mean = n * s / (n + sigma**2) / prec
    return _mean_sd(mean, mean**2 + 1 / prec)


def randomized_response(r, epsilon, a=1.0, b=1.0):
    """p ~ Beta(a, b), x_i ~ Bern(p), r_i = RR(x_i): 1-d quadrature on a fine grid."""
    q = math.exp(epsilon) / (math.exp(epsilon) + 1)
    p = np.linspace(1e-9, 1 - 1e-9, 200_001)
    ones, zeros = int(np.sum(r)), int(len(r) - np.sum(r))
    prob1 = p * q + (1 - p) * (1 - q)
    logpost = stats.beta.logpdf(p, a, b) + ones * np.log(prob1) + zeros * np.log1p(-prob1)
    w = _normalise(logpost)
    return _mean_sd(np.sum(w * p), np.sum(w * p**2))


def poisson_discrete_laplace(s, n, a, b, scale, kmax=600):
    """λ ~ Gamma(a, rate b), x_i ~ Poisson(λ), s = Σx + DiscreteLaplace(scale): enumerate Σx."""
    k = np.arange(kmax + 1)
    lognb = (
        special.gammaln(a + k)
        - special.gammaln(a)
        - special.gammaln(k + 1)
        + a * np.log(b / (b + n))
        + k * np.log(n / (b + n))
    )
    w = _normalise(lognb - np.abs(s - k) / scale)
    m1 = np.sum(w * (a + k) / (b + n))
    m2 = np.sum(w * (a + k) * (a + k + 1) / (b + n) ** 2)
    return _mean_sd(m1, m2)


def dirichlet_counts_laplace(s, n, alpha, scale, index=0):
    """π ~ Dir(alpha), x_i ~ Cat(π), s = counts + Laplace(scale): enumerate the compositions."""
    alpha = np.asarray(alpha, dtype=float)
    K, A = len(alpha), alpha.sum()
    comps = [c for c in itertools.product(range(n + 1), repeat=K) if sum(c) == n]
    c = np.array(comps, dtype=float)
    logw = (
        special.gammaln(n + 1)
        - special.gammaln(c + 1).sum(axis=1)
        + special.gammaln(alpha + c).sum(axis=1)
        - np.abs(s - c).sum(axis=1) / scale
    )
    w = _normalise(logw)
    ak = alpha[index] + c[:, index]
    return _mean_sd(np.sum(w * ak / (A + n)), np.sum(w * ak * (ak + 1) / ((A + n) * (A + n + 1))))


def exponential_sum_gaussian(s, n, a, b, sigma):
    """λ ~ Gamma(a, rate b), x_i ~ Exp(λ), s = Σ x + N(0, sigma²): 2-d quadrature."""
    lam = np.linspace(1e-4, 15, 3000)
    t = np.linspace(1e-6, max(60.0, s + 10 * sigma), 6000)
    # log Gamma(t; n, rate λ) written out (scipy's gamma.logpdf on the 3000 × 6000 grid took 8 s)
    log_gamma = (
        n * np.log(lam)[:, None]
        + ((n - 1) * np.log(t) - special.gammaln(n))[None, :]
        - lam[:, None] * t[None, :]
    )
    logf = log_gamma + stats.norm.logpdf(s - t[None, :], 0, sigma)
    like = np.trapezoid(np.exp(logf), t, axis=1)
    post = stats.gamma.pdf(lam, a, scale=1 / b) * like
    post /= np.trapezoid(post, lam)
    return _mean_sd(np.trapezoid(post * lam, lam), np.trapezoid(post * lam**2, lam))


def linear_posterior(X, y, sigma, prior_sd, offset=0.0):
    prec = np.eye(X.shape[1]) / prior_sd**2 + X.T @ X / sigma**2
    cov = np.linalg.inv(prec)
    return cov @ (X.T @ (y - offset) / sigma**2), cov


# ---------------------------------------------------------------- closed forms
def dense_theta_posterior(S_list, z_list, s2, sigma_z, m, C):
    """θ | ẑ for the stacked Gaussian linear model, with explicit dense matrices (second route)."""
    A = np.vstack(S_list)
    V = linalg.block_diag(*[s2 * S + sigma_z**2 * np.eye(len(S)) for S in S_list])
    z = np.concatenate(z_list)
    cov = np.linalg.inv(A.T @ np.linalg.solve(V, A) + np.linalg.inv(C))
    mean = cov @ (A.T @ np.linalg.solve(V, z) + np.linalg.solve(C, m))
    return mean, cov, A, V, z


# -- exactness: counts table with the discrete Gaussian ----------------------------------------
def dirichlet_counts_posterior(s, n, alpha, log_noise, index):
    """π ~ Dir(α), counts ~ Mult(n, π), s_k = c_k + noise: exact posterior mean and sd of π_index.

    The latent counts' posterior weight factorises over cells under the constraint Σc = n:
    ``w(c) ∝ Π_k Γ(α_k + c_k)/c_k! · η(s_k − c_k)``, so sums over all compositions of n are
    convolutions of per-cell factors evaluated at n (exact; equal to enumerating the C(n+K−1, K−1)
    compositions).
    """
    alpha = np.asarray(alpha, dtype=float)
    c = np.arange(n + 1, dtype=float)
    logf = [
        special.gammaln(a + c) - special.gammaln(c + 1) + log_noise(sk - c)
        for a, sk in zip(alpha, s)
    ]
    f = [np.exp(lf - lf.max()) for lf in logf]

    def total(factors):
        out = factors[0]
        for g in factors[1:]:
            out = np.convolve(out, g)[: n + 1]
        return out[n]

    z = total(f)
    ak = alpha[index] + c
    A = alpha.sum()
    m1 = total([f[index] * ak / (A + n)] + [g for j, g in enumerate(f) if j != index]) / z
    m2 = (
        total(
            [f[index] * ak * (ak + 1) / ((A + n) * (A + n + 1))]
            + [g for j, g in enumerate(f) if j != index]
        )
        / z
    )
    return m1, math.sqrt(m2 - m1**2)


# ------------------------------------------------------------------------------------------------
# exactness (slow tier)
# ------------------------------------------------------------------------------------------------
@functools.cache  # scalar arguments; several tests and chains ask for the same posterior
def exact_records_sum(y=3.0, n=6, prior_sd=2.0, b=1.0):
    """θ ~ N(0, prior_sd), Σx ~ N(nθ, n), s_dp ~ Laplace(Σx, b): posterior mean/sd by quadrature."""
    s = np.linspace(-60, 60, 6001)
    th = np.linspace(-8, 8, 1601)
    lik = (
        stats.norm.pdf(s[None, :], n * th[:, None], math.sqrt(n))
        * stats.laplace.pdf(y, s, b)[None, :]
    )
    post = np.trapezoid(lik, s, axis=1) * stats.norm.pdf(th, 0, prior_sd)
    post /= np.trapezoid(post, th)
    mean = np.trapezoid(th * post, th)
    return mean, math.sqrt(np.trapezoid((th - mean) ** 2 * post, th))


@functools.cache  # scalar arguments; several tests and chains ask for the same posterior
def exact_records_total(y=3.0, n=6, prior_sd=2.0, b=1.0):
    """Same model: posterior mean/sd of the records' total Σx (marginally N(0, n²·prior_sd² + n))."""
    s = np.linspace(-60, 60, 24001)
    post = stats.norm.pdf(s, 0.0, math.sqrt(n * n * prior_sd**2 + n)) * stats.laplace.pdf(y, s, b)
    post /= np.trapezoid(post, s)
    mean = np.trapezoid(s * post, s)
    return mean, math.sqrt(np.trapezoid((s - mean) ** 2 * post, s))


@functools.cache  # scalar arguments; several tests and chains ask for the same posterior
def exact_clt_laplace(y, n, b):
    th = np.linspace(1e-4, 12, 2401)
    u = np.linspace(-5, 10, 3001)
    g1 = math.gamma(1.0) / math.sqrt(math.pi)
    g2 = math.gamma(1.5) / math.sqrt(math.pi)
    mu = np.sqrt(2 * th) * g1
    var = 2 * th * (g2 - g1**2)
    f = stats.norm.pdf(u[None, :], mu[:, None], np.sqrt(var / n)[:, None])
    lik = np.trapezoid(f * stats.laplace.pdf(y, u, b)[None, :], u, axis=1)
    post = lik * stats.halfnorm.pdf(th, scale=5.0)
    post /= np.trapezoid(post, th)
    mean = np.trapezoid(th * post, th)
    return mean, math.sqrt(np.trapezoid((th - mean) ** 2 * post, th))


# ---------------------------------------------------------------------------------------------
# statistical tier: DataAugmentation + NUTS + Interweave against exact posteriors
# ---------------------------------------------------------------------------------------------
def clamped_normal_sum_laplace(s, n, prior_sd, b, h=0.01, mus=None):
    """mu ~ N(0, prior_sd²), x_i ~ N(mu, 1), s = Σ clip(x_i, L, U) + Laplace(b): quadrature.

    The clipped record is put on a grid of step h (atoms at L and U exact, each interior cell's
    mass at its centre); the n-fold sum by FFT; the Laplace convolution summed on the grid.
    ``mus``: the quadrature grid of mu (default 1201 points on ±6 prior sd; one FFT per point).
    """
    m = int(round((U - L) / h))
    grid = L + h * np.arange(m + 1)
    size = 1 << int(math.ceil(math.log2(n * m + 1)))
    totals = n * L + h * np.arange(n * m + 1)
    noise = -np.abs(s - totals) / b
    if mus is None:
        mus = np.linspace(-6 * prior_sd, 6 * prior_sd, 1201)
    mus = np.asarray(mus, dtype=float)
    loglik = np.empty_like(mus)
    for j, mu in enumerate(mus):
        cdf = stats.norm.cdf(np.concatenate([[-np.inf], grid[:-1] + h / 2, [np.inf]]) - mu)
        pmf = np.diff(cdf)
        sum_pmf = np.fft.irfft(np.fft.rfft(pmf, size) ** n, size)[: n * m + 1]
        sum_pmf = np.clip(sum_pmf, 0.0, None)
        loglik[j] = special.logsumexp(noise, b=sum_pmf)
    logpost = stats.norm.logpdf(mus, 0, prior_sd) + loglik
    w = np.exp(logpost - logpost.max())
    w /= np.trapezoid(w, mus)
    return _mean_sd(np.trapezoid(w * mus, mus), np.trapezoid(w * mus**2, mus))


def dirichlet_local_posterior(eta_rows, weights, alpha, index):
    """π ~ Dir(α), records x_i ~ Cat(π), each record released locally (any number of answers):
    ``p(s_i | x) = exp(eta_rows[u_i, x])`` for its distinct release row ``u_i`` (``weights[u]``
    records each). Exact posterior mean and sd of π_index by expanding
    ``Π_u (Σ_x π_x e^{eta[u,x]})^{w_u}`` over the category counts and integrating the Dirichlet."""
    alpha = np.asarray(alpha, dtype=float)
    k = len(alpha)
    total = {(0,) * k: 0.0}  # count vector -> log weight
    for row, w in zip(np.asarray(eta_rows, dtype=float), np.asarray(weights, dtype=int)):
        for _ in range(w):  # one record at a time: multiply by Σ_x π_x e^{row[x]}
            new = {}
            for c, lw in total.items():
                for x in range(k):
                    c2 = c[:x] + (c[x] + 1,) + c[x + 1 :]
                    new[c2] = np.logaddexp(new.get(c2, -np.inf), lw + row[x])
            total = new
    counts = np.array(list(total.keys()), dtype=float)
    lw = np.array(list(total.values()))
    lw = lw + special.gammaln(alpha + counts).sum(axis=1)  # Dirichlet integral (common factors out)
    w = _normalise(lw)
    a_k, big = alpha[index] + counts[:, index], alpha.sum() + counts.sum(axis=1)
    m1 = np.sum(w * a_k / big)
    m2 = np.sum(w * a_k * (a_k + 1) / (big * (big + 1)))
    return _mean_sd(m1, m2)


def grid_posterior_2d(logpost, a, b):
    """Posterior means and sds of two scalars by quadrature on the grid ``a × b`` (evenly spaced,
    wide enough that the density vanishes at the edges): ``logpost(A, B)`` broadcasts over the
    meshgrid. Returns ``((mean_a, sd_a), (mean_b, sd_b))``."""
    aa, bb = np.meshgrid(a, b, indexing="ij")
    w = _normalise(logpost(aa, bb))
    return (
        _mean_sd(np.sum(w * aa), np.sum(w * aa**2)),
        _mean_sd(np.sum(w * bb), np.sum(w * bb**2)),
    )
