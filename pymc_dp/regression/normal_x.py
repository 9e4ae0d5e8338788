r"""MCMC-normalX (seed 000, Algorithm 16): normally distributed features, ``S_j`` updated.

Model (eq. 5.17, ``z_j`` integrated out): ``x_i ~ N(0, Σ_x)`` so ``S_j | Σ_x ~ W(Σ_x, n_j)``,
``Ŝ_j | S_j`` Gaussian on the upper triangle with sd ``σ_s``, ``ẑ_j | S_j, θ, σ_y² ~
N(S_jθ, σ_y² S_j + σ_z² I)``, priors of eq. 5.13. One iteration, leaving
``p(θ, σ_y², Σ_x, S_{1:J} | Ŝ_{1:J}, ẑ_{1:J})`` invariant:

1. ``Σ_x ~ IW(Λ + Σ_j S_j, κ + n)`` (Proposition 2);
2. each ``S_j`` by MH with the Wishart proposal ``S'_j ~ W(S_j/α_j, α_j)`` (Algorithm 14), the
   nodes vectorised (they are conditionally independent);
3. ``θ ~ N(m_p, Σ_p)`` (Proposition 3);
4. σ_y² by random-walk MH (Algorithm 15).

``α_j`` and the σ_y² step are adapted (Andrieu & Thoms 2008) during ``tune`` only, then frozen.
"""

from __future__ import annotations

import numbers
import time

import numpy as np

from pymc_dp.regression._common import (
    check_mcmc_run,
    sigma2_init,
)
from pymc_dp.regression._kwargs import explain_kwargs
from pymc_dp.regression.linalg import invwishart_rvs, nearest_psd, wishart_rvs
from pymc_dp.regression.model import (
    draw_theta,
    node_eig,
    sigma2_rw_step,
    theta_conditional,
    z_loglik,
)
from pymc_dp.regression.result import RegressionFit
from pymc_dp.samplers.adapt import robbins_monro

__all__ = ["mcmc_normal_x", "s_log_target", "wishart_log_q_ratio"]


def s_log_target(S, Sigma_x, theta, sigma2, stats):
    r"""``log p(ẑ_j | S_j, θ, σ_y²) + log W(S_j; Σ_x, n_j) + log p(Ŝ_j | S_j)`` per node, shape (J,).

    Terms that do not depend on ``S_j`` are dropped.
    """
    iu = np.triu_indices(stats.d)
    diff = (stats.S_hat - S)[:, iu[0], iu[1]]
    l_hat = -0.5 * np.sum(diff * diff, axis=-1) / stats.sigma_s**2
    # Wishart W(Σ_x, n_j) up to terms constant in S_j (they cancel in the MH ratio)
    sign, logdet = np.linalg.slogdet(S)
    l_w = 0.5 * (stats.n - stats.d - 1) * logdet - 0.5 * np.einsum(
        "ab,jba->j", np.linalg.inv(Sigma_x), S
    )
    l_w = np.where(sign > 0, l_w, -np.inf)
    l_z = z_loglik(node_eig(S, stats.z_hat), theta, sigma2, stats.sigma_z)
    return l_z + l_w + l_hat


def wishart_log_q_ratio(S, S_new, alpha):
    r"""``log q(S | S') − log q(S' | S)`` for ``q(·|S) = W(S/α, α)`` (seed 000 after Algorithm 14).

    ``= (α − (d+1)/2)(log|S| − log|S'|) + α/2 (tr(S⁻¹S') − tr(S'⁻¹S))``.
    """
    d = S.shape[-1]
    _, ld = np.linalg.slogdet(S)
    _, ld_new = np.linalg.slogdet(S_new)
    t1 = np.trace(np.linalg.solve(S, S_new), axis1=-2, axis2=-1)
    t2 = np.trace(np.linalg.solve(S_new, S), axis1=-2, axis2=-1)
    return (alpha - 0.5 * (d + 1)) * (ld - ld_new) + 0.5 * alpha * (t1 - t2)


def _initial_state(stats, prior):
    d = stats.d
    _, w, E = nearest_psd(stats.S_hat)
    floor = np.maximum(1e-3 * w.mean(axis=-1, keepdims=True), 1e-8 * stats.x_bound**2)
    w = np.maximum(w, floor)
    S = (E * w[:, None, :]) @ np.swapaxes(E, 1, 2)
    Sigma = (prior.Lam + S.sum(0)) / (prior.kappa + stats.n_total + d + 1)
    diag = np.einsum("jkk->jk", S).max(axis=1)
    dim = d * (d + 1) / 2
    alpha = np.maximum((stats.n + 2 * diag**2 / stats.sigma_s**2) * dim / 2.38**2, d + 1.0)
    return S, Sigma, np.log(alpha)


def _normal_x_chain(rng, stats, prior, draws, tune, s_target, s2_target):
    d, J = stats.d, stats.n_nodes
    S, Sigma, log_alpha = _initial_state(stats, prior)
    s2 = sigma2_init(prior)
    log_step = np.log(0.5 * s2)
    P, h = theta_conditional(node_eig(S, stats.z_hat), s2, stats.sigma_z, prior)
    theta = np.linalg.solve(P, h)
    out = {
        "theta": np.empty((draws, d)),
        "sigma2_y": np.empty(draws),
        "Sigma_x": np.empty((draws, d, d)),
        "S": np.empty((draws, J, d, d)),
    }
    acc_s = np.empty(draws)
    acc_s2 = np.empty(draws, dtype=bool)
    min_log_alpha = np.log(d + 1.0)
    for t in range(tune + draws):
        # 1. Σ_x | S (Proposition 2)
        Sigma = invwishart_rvs(rng, prior.Lam + S.sum(0), prior.kappa + stats.n_total)
        # 2. S_j | rest, Wishart-proposal MH (Algorithm 14), all nodes at once
        alpha = np.exp(log_alpha)
        S_new = wishart_rvs(rng, S / alpha[:, None, None], alpha)
        S_new = 0.5 * (S_new + np.swapaxes(S_new, 1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            log_a = (
                s_log_target(S_new, Sigma, theta, s2, stats)
                - s_log_target(S, Sigma, theta, s2, stats)
                + wishart_log_q_ratio(S, S_new, alpha)
            )
        log_a = np.where(np.isnan(log_a), -np.inf, log_a)
        ok = np.log(rng.uniform(size=J)) < log_a
        S = np.where(ok[:, None, None], S_new, S)
        # 3. θ | S, σ_y² (Proposition 3)
        eig = node_eig(S, stats.z_hat)
        P, h = theta_conditional(eig, s2, stats.sigma_z, prior)
        theta = draw_theta(rng, P, h)

        # 4. σ_y² | S, θ (Algorithm 15)
        def log_target(v, theta=theta, eig=eig):
            return float(prior.log_sigma2(v)) + float(z_loglik(eig, theta, v, stats.sigma_z).sum())

        s2, ok2 = sigma2_rw_step(rng, s2, log_target, np.exp(log_step))
        if t < tune:
            log_alpha = np.maximum(
                robbins_monro(log_alpha, ok, s_target, t + 1, sign=-1.0), min_log_alpha
            )
            log_step = robbins_monro(log_step, ok2, s2_target, t + 1)
        else:
            k = t - tune
            out["theta"][k], out["sigma2_y"][k], out["Sigma_x"][k] = theta, s2, Sigma
            out["S"][k] = S
            acc_s[k], acc_s2[k] = ok.mean(), ok2
    return out, acc_s, acc_s2, np.exp(log_alpha)


@explain_kwargs
def mcmc_normal_x(
    stats,
    *,
    prior=None,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    rng=None,
    accept_target_s: float = 0.25,
    accept_target_sigma2: float = 0.44,
) -> RegressionFit:
    r"""MCMC-normalX (seed 000, Algorithm 16): Gibbs/MH over ``Σ_x, S_{1:J}, θ, σ_y²``.

    Parameters
    ----------
    stats : SuffStatsRelease
        Every node needs ``n_j ≥ d`` (the Wishart ``W(Σ_x, n_j)`` needs ``n_j > d − 1``).
    prior : RegressionPrior, optional
    draws, tune, chains : int
    rng : numpy.random.Generator
    accept_target_s, accept_target_sigma2 : float
        Acceptance rates the Wishart-proposal ``α_j`` and the σ_y² step adapt toward during ``tune``.

    Returns
    -------
    RegressionFit
        Draws of ``theta``, ``sigma2_y``, ``Sigma_x`` and ``S`` (chain, draw, J, d, d); stats ``accept_S`` (fraction of nodes
        accepting per iteration), ``accept_sigma2`` and the adapted ``alpha``.
    """
    t0 = time.perf_counter()
    stats, rng, draws, tune, chains, prior = check_mcmc_run(
        stats, method="mcmc_normalX", rng=rng, draws=draws, tune=tune, chains=chains, prior=prior
    )
    for name, value in (
        ("accept_target_s", accept_target_s),
        ("accept_target_sigma2", accept_target_sigma2),
    ):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 1:
            raise ValueError(
                f"{name} must be an acceptance rate in (0, 1), got {name}={value!r}. The "
                "defaults are 0.25 (S_j) and 0.44 (σ_y²)."
            )
    if np.any(stats.n < stats.d):
        raise ValueError(
            f"mcmc_normalX needs n_j >= d = {stats.d} records on every node (S_j ~ Wishart(Σ_x, n_j)), "
            f"got n = {stats.n.tolist()}. Use fewer nodes or method='mcmc_fixedS'."
        )
    res = [
        _normal_x_chain(r, stats, prior, draws, tune, accept_target_s, accept_target_sigma2)
        for r in rng.spawn(chains)
    ]
    post = {k: np.stack([r[0][k] for r in res]) for k in res[0][0]}
    st = {
        "accept_S": np.stack([r[1] for r in res]),
        "accept_sigma2": np.stack([r[2] for r in res]),
        "alpha": np.stack([r[3] for r in res]),
    }
    return RegressionFit(
        "mcmc_normalX",
        post["theta"].reshape(-1, stats.d).mean(0),
        post,
        st,
        time.perf_counter() - t0,
    )
