r"""Baselines of seed 000 §7.1: distributed adaSSP (Wang 2018) and MCMC-B&S (Bernstein & Sheldon 2019).

**Distributed adaSSP** (§7.1.1, eq. 7.2): each node releases ``Ŝ_j``, ``ẑ_j`` and ``λ_min(S_j)`` at
(ε/3, δ/3) each (scheme ``"adassp"``); the analyst computes

```text
\hat\theta = \Big(\sum_j \hat S_j + I\sum_j\lambda_j\Big)^{-1}\sum_j \hat z_j,\qquad
\lambda_j = \max\{0,\ \sigma_{S}\sqrt{d\log(2d^2/\rho)} - \tilde\lambda_{\min,j}\},
```

``λ̃_min,j = max(λ̂_min,j − σ_λ √log(6/δ), 0)``. These are Wang's (2018, Algorithm 2) choices with his
classic Gaussian-mechanism scale replaced by the analytic σ actually used in the release.

**MCMC-B&S** (§7.1.2): the release adds ``û_j = y_jᵀy_j + noise`` (scheme ``"szu"``); the per-node
vector ``ss_j = vech([X_j y_j]ᵀ[X_j y_j])`` is modelled by the CLT, ``ss_j ~ N(n_j μ, n_j Σ_ss)``,
with ``μ, Σ_ss`` the first two moments of ``vech(w wᵀ)`` for ``w = (x, y)`` Gaussian with covariance
``K = [[Σ_x, Σ_xθ], [θᵀΣ_x, θᵀΣ_xθ + σ_y²]]`` — Isserlis' theorem gives
``Cov(w_a w_b, w_c w_e) = K_ac K_be + K_ae K_bc``. Prior: ``(θ, σ_y²) ~ NIG`` (``θ | σ_y² ~ N(m, σ_y² C)``,
``σ_y² ~ IG(a, b)``), ``Σ_x ~ IW(Λ, κ)``. One Gibbs iteration: ``ss_{1:J}`` from its Gaussian full
conditional, ``Σ_x ~ IW(Λ + Σ S_j, κ + n)``, then ``σ_y² ~ IG(a_n, b_n)`` and
``θ ~ N(m_n, σ_y² Λ_n⁻¹)``. A Gaussian ``ss`` can make ``Λ_n`` or ``b_n`` invalid; we restrict the
CLT model to valid ``ss`` and sample the truncated conditional by rejection.
"""

from __future__ import annotations

import numbers
import time

import numpy as np

from pymc_dp.regression._common import (
    check_count,
    check_mcmc_run,
    check_release,
    sigma2_init,
)
from pymc_dp.regression._kwargs import explain_kwargs
from pymc_dp.regression.linalg import invwishart_rvs, nearest_psd
from pymc_dp.regression.result import RegressionFit

__all__ = ["adassp", "mcmc_bs", "ss_moments"]


@explain_kwargs
def adassp(stats, *, rho: float = 0.05) -> RegressionFit:
    """Distributed adaSSP (seed 000 eq. 7.2) from a release with ``scheme="adassp"``."""
    t0 = time.perf_counter()
    stats = check_release(stats, method="adassp", needs=("lam_hat",))
    if isinstance(rho, bool) or not isinstance(rho, numbers.Real) or not 0 < rho < 1:
        raise ValueError(f"rho must lie in (0, 1), got rho={rho!r}. Wang (2018) uses 0.05.")
    d = stats.d
    shift = stats.sigma_lam * np.sqrt(np.log(6.0 / stats.delta))
    lam_min = np.maximum(stats.lam_hat - shift, 0.0)
    lam = np.maximum(0.0, stats.sigma_s * np.sqrt(d * np.log(2.0 * d * d / rho)) - lam_min)
    A = stats.S_hat.sum(0) + lam.sum() * np.eye(d)
    theta = np.linalg.solve(A, stats.z_hat.sum(0))
    return RegressionFit("adassp", theta, None, {"lambda": lam}, time.perf_counter() - t0)


def ss_moments(Sigma_x, theta, sigma2):
    r"""Mean ``μ`` and covariance ``Σ_ss`` of ``vech(w wᵀ)``, ``w = (x, y)``, for one record.

    ``x ~ N(0, Σ_x)``, ``y = xᵀθ + e``, ``e ~ N(0, σ_y²)``; order: ``numpy.triu_indices(d + 1)``.
    """
    d = len(theta)
    K = np.empty((d + 1, d + 1))
    K[:d, :d] = Sigma_x
    K[:d, d] = K[d, :d] = Sigma_x @ theta
    K[d, d] = theta @ Sigma_x @ theta + sigma2
    a, b = np.triu_indices(d + 1)
    mu = K[a, b]
    cov = (
        K[a[:, None], a[None, :]] * K[b[:, None], b[None, :]]
        + K[a[:, None], b[None, :]] * K[b[:, None], a[None, :]]
    )
    return mu, cov


def _augmented(stats):
    """Noisy ``vech`` of ``[X y]ᵀ[X y]`` per node and the per-entry noise variances."""
    d, J = stats.d, stats.n_nodes
    G = np.empty((J, d + 1, d + 1))
    G[:, :d, :d] = stats.S_hat
    G[:, :d, d] = G[:, d, :d] = stats.z_hat
    G[:, d, d] = stats.u_hat
    a, b = np.triu_indices(d + 1)
    tau2 = np.where(b < d, stats.sigma_s**2, np.where(a < d, stats.sigma_z**2, stats.sigma_u**2))
    return G[:, a, b], tau2


def _to_matrix(ss, d):
    a, b = np.triu_indices(d + 1)
    G = np.zeros(ss.shape[:-1] + (d + 1, d + 1))
    G[..., a, b] = ss
    G[..., b, a] = ss
    return G


def _nig_params(G_sum, prior, n):
    d = len(prior.m)
    Lam0 = np.linalg.inv(prior.C)
    Lam_n = Lam0 + G_sum[:d, :d]
    m_n = np.linalg.solve(Lam_n, G_sum[:d, d] + Lam0 @ prior.m)
    b_n = prior.b + 0.5 * (G_sum[d, d] + prior.m @ Lam0 @ prior.m - m_n @ Lam_n @ m_n)
    return Lam_n, m_n, prior.a + 0.5 * n, b_n


def _valid(G_sum, prior, n):
    d = len(prior.m)
    if np.linalg.eigvalsh(prior.Lam + G_sum[:d, :d])[0] <= 0:
        return False
    Lam_n, _, _, b_n = _nig_params(G_sum, prior, n)
    return bool(np.linalg.eigvalsh(Lam_n)[0] > 0 and b_n > 0)


def _bs_chain(rng, stats, prior, draws, tune, max_tries):
    d, n = stats.d, stats.n_total
    ss_hat, tau2 = _augmented(stats)
    G0, _, _ = nearest_psd(_to_matrix(ss_hat, d))
    G0 = G0 + 1e-6 * stats.x_bound**2 * np.eye(d + 1)
    a, b = np.triu_indices(d + 1)
    ss = G0[:, a, b]
    Sigma = (prior.Lam + G0[:, :d, :d].sum(0)) / (prior.kappa + n + d + 1)
    theta, s2 = prior.m.copy(), sigma2_init(prior)
    out = {
        "theta": np.empty((draws, d)),
        "sigma2_y": np.empty(draws),
        "Sigma_x": np.empty((draws, d, d)),
    }
    tries = np.empty(draws)
    for t in range(tune + draws):
        # ss_j | θ, σ², Σ_x: N(n_j μ, n_j Σ_ss) prior × N(ŝs_j; ss_j, diag τ²), truncated to validity
        mu, cov = ss_moments(Sigma, theta, s2)
        cov_inv = np.linalg.inv(cov)
        Q = cov_inv[None] / stats.n[:, None, None] + np.diag(1.0 / tau2)[None]
        L = np.linalg.cholesky(Q)
        rhs = (cov_inv @ mu)[None] + ss_hat / tau2
        mean = np.linalg.solve(np.swapaxes(L, 1, 2), np.linalg.solve(L, rhs[..., None]))[..., 0]
        for k in range(1, max_tries + 1):  # noqa: B007 - k (tries used) is read after the loop
            xi = rng.standard_normal(ss_hat.shape)
            prop = mean + np.linalg.solve(np.swapaxes(L, 1, 2), xi[..., None])[..., 0]
            if _valid(_to_matrix(prop, d).sum(0), prior, n):
                ss = prop
                break
        G_sum = _to_matrix(ss, d).sum(0)
        # Σ_x | S ; (θ, σ²) | ss  (normal-inverse-gamma)
        Sigma = invwishart_rvs(rng, prior.Lam + G_sum[:d, :d], prior.kappa + n)
        Lam_n, m_n, a_n, b_n = _nig_params(G_sum, prior, n)
        s2 = b_n / rng.gamma(a_n)
        Lc = np.linalg.cholesky(Lam_n)
        theta = m_n + np.sqrt(s2) * np.linalg.solve(Lc.T, rng.standard_normal(d))
        if t >= tune:
            j = t - tune
            out["theta"][j], out["sigma2_y"][j], out["Sigma_x"][j] = theta, s2, Sigma
            tries[j] = k
    return out, tries


@explain_kwargs
def mcmc_bs(
    stats,
    *,
    prior=None,
    draws: int = 1000,
    tune: int = 500,
    chains: int = 2,
    rng=None,
    max_tries: int = 100,
) -> RegressionFit:
    r"""MCMC-B&S, distributed and multidimensional (seed 000 §7.1.2), from a ``scheme="szu"`` release.

    Parameters
    ----------
    stats : SuffStatsRelease
        Must hold ``u_hat`` (release with ``scheme="szu"``).
    prior : RegressionPrior, optional
        Read as the NIG prior ``θ | σ_y² ~ N(m, σ_y² C)``, ``σ_y² ~ IG(a, b)``, ``Σ_x ~ IW(Λ, κ)``.
    draws, tune, chains : int
    rng : numpy.random.Generator
    max_tries : int
        Redraws of ``ss`` allowed per iteration before keeping the current value (stat ``ss_tries``).
    """
    t0 = time.perf_counter()
    stats, rng, draws, tune, chains, prior = check_mcmc_run(
        stats,
        method="mcmc_bs",
        rng=rng,
        draws=draws,
        tune=tune,
        chains=chains,
        prior=prior,
        needs=("u_hat",),
    )
    max_tries = check_count(max_tries, name="max_tries")
    res = [_bs_chain(r, stats, prior, draws, tune, max_tries) for r in rng.spawn(chains)]
    post = {k: np.stack([r[0][k] for r in res]) for k in res[0][0]}
    return RegressionFit(
        "mcmc_bs",
        post["theta"].reshape(-1, stats.d).mean(0),
        post,
        {"ss_tries": np.stack([r[1] for r in res])},
        time.perf_counter() - t0,
    )
