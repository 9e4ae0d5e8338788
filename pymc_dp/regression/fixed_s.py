r"""Methods that fix ``S_j`` at a point estimate: Bayes-fixedS-fast and MCMC-fixedS (seed 000 §5.2.3.2).

``S_j`` is replaced by ``S̃_j``, the nearest PSD matrix to ``Ŝ_j`` in Frobenius norm (Higham 1988:
eigenvalues clipped at 0), which is the maximum-likelihood estimate under ``p(Ŝ_j | S_j)``. Then

* **Bayes-fixedS-fast** (Algorithm 18): σ_y² is fixed at ``σ̃_y²`` and θ | ẑ is Gaussian in closed form
  (Proposition 3). The seed returns its mean; we return the whole Gaussian (and i.i.d. draws).
* **MCMC-fixedS** (Algorithm 17): Gibbs for θ (Proposition 3) and random-walk MH for σ_y²
  (Algorithm 15). Invariant target: ``p(θ, σ_y² | ẑ_{1:J}, S_{1:J} = S̃_{1:J})``. With
  ``backend="pymc"`` the same target is sampled by NUTS through ``pm.sample``.
"""

from __future__ import annotations

import time

import numpy as np

from pymc_dp._checks import check_positive
from pymc_dp.regression._common import (
    as_rng,
    check_count,
    check_mcmc_run,
    check_release,
    resolve_prior,
    sigma2_init,
)
from pymc_dp.regression._kwargs import explain_kwargs
from pymc_dp.regression.linalg import nearest_psd
from pymc_dp.regression.model import (
    NodeEig,
    draw_theta,
    node_eig,
    sigma2_rw_step,
    theta_conditional,
    z_loglik,
)
from pymc_dp.regression.result import RegressionFit
from pymc_dp.regression.trust import check_noisy_s
from pymc_dp.samplers.adapt import robbins_monro

__all__ = ["bayes_fixed_s_fast", "mcmc_fixed_s", "fixed_s_eig", "theta_posterior_fixed"]


def fixed_s_eig(stats) -> NodeEig:
    """``S̃_j = nearest_psd(Ŝ_j)`` as a `NodeEig` together with ``ẑ_j``."""
    S_tilde, _, _ = nearest_psd(stats.S_hat)
    return node_eig(S_tilde, stats.z_hat)


def theta_posterior_fixed(stats, sigma2_y: float, prior=None):
    """Mean and covariance of θ | ẑ, S = S̃, σ_y² (Proposition 3 / Algorithm 18)."""
    prior = resolve_prior(prior, stats.d)
    P, h = theta_conditional(fixed_s_eig(stats), float(sigma2_y), stats.sigma_z, prior)
    cov = np.linalg.inv(P)
    return cov @ h, 0.5 * (cov + cov.T)


@explain_kwargs
def bayes_fixed_s_fast(
    stats, *, prior=None, sigma2_y=None, draws: int = 1000, chains: int = 2, rng=None
) -> RegressionFit:
    r"""Bayes-fixedS-fast (seed 000, Algorithm 18): θ | ẑ with ``S = S̃`` and ``σ_y² = σ̃_y²`` fixed.

    Parameters
    ----------
    stats : SuffStatsRelease
    prior : RegressionPrior, optional
        Only ``m`` and ``C`` are used.
    sigma2_y : float, optional
        ``σ̃_y²``. Default: the seed's crude ``‖Y‖/3`` (``stats.y_bound / 3``, taken literally).
    draws, chains : int
        I.i.d. draws from the Gaussian posterior, arranged as ``chains`` independent chains of
        ``draws`` so ``fit.idata`` is the usual multi-chain InferenceData (R-hat defined);
        ``draws=0``: mean and covariance only.
    rng : numpy.random.Generator
    """
    t0 = time.perf_counter()
    stats = check_release(stats, method="bayes_fixedS_fast")
    rng = as_rng(rng)
    draws = check_count(draws, name="draws", minimum=0)
    chains = check_count(chains, name="chains")
    if sigma2_y is None:
        sigma2_y = stats.y_bound / 3.0
    sigma2_y = check_positive(
        sigma2_y,
        name="sigma2_y",
        fix="Pass the noise variance of y as a number, e.g. sigma2_y=0.25.",
    )
    mean, cov = theta_posterior_fixed(stats, sigma2_y, prior)
    check_noisy_s(stats, "bayes_fixedS_fast", mean, cov)
    out = None
    if draws:
        th = rng.multivariate_normal(mean, cov, size=(chains, draws), method="cholesky")
        out = {"theta": th}
    return RegressionFit(
        "bayes_fixedS_fast",
        mean,
        out,
        {"mean": mean, "cov": cov, "sigma2_y": float(sigma2_y)},
        time.perf_counter() - t0,
    )


def _fixed_s_chain(rng, eig, sigma_z, prior, draws, tune, step0, substeps):
    d = eig.w.shape[1]
    s2 = sigma2_init(prior)
    log_step = np.log(step0 if step0 is not None else 0.5 * s2)
    P, h = theta_conditional(eig, s2, sigma_z, prior)
    theta = np.linalg.solve(P, h)
    out_th = np.empty((draws, d))
    out_s2 = np.empty(draws)
    acc = np.empty(draws)
    for t in range(tune + draws):
        P, h = theta_conditional(eig, s2, sigma_z, prior)
        theta = draw_theta(rng, P, h)

        def log_target(v, theta=theta):
            return float(prior.log_sigma2(v)) + float(z_loglik(eig, theta, v, sigma_z).sum())

        # ``substeps`` random-walk MH updates of σ_y² | θ: each leaves the conditional invariant,
        # so repeating them is exact and cuts the autocorrelation of σ_y² at little cost (O(J d)).
        n_ok = 0
        for _ in range(substeps):
            s2, ok = sigma2_rw_step(rng, s2, log_target, np.exp(log_step))
            n_ok += ok
            if t < tune:
                log_step = robbins_monro(log_step, ok, 0.44, t + 1)
        if t >= tune:
            out_th[t - tune], out_s2[t - tune], acc[t - tune] = theta, s2, n_ok / substeps
    return out_th, out_s2, acc, float(np.exp(log_step))


@explain_kwargs
def mcmc_fixed_s(
    stats,
    *,
    prior=None,
    draws: int = 1000,
    tune: int = 500,
    chains: int = 2,
    rng=None,
    backend: str = "numpy",
    sigma2_step=None,
    sigma2_substeps: int = 10,
) -> RegressionFit:
    r"""MCMC-fixedS (seed 000, Algorithm 17): θ, σ_y² | ẑ_{1:J} with ``S_j = S̃_j`` fixed.

    Parameters
    ----------
    stats : SuffStatsRelease
    prior : RegressionPrior, optional
    draws, tune, chains : int
        Kept draws, adaptation iterations (discarded) and independent chains.
    rng : numpy.random.Generator
        Chains use ``rng.spawn(chains)``; the PyMC backend seeds ``pm.sample`` from ``rng``.
    backend : {"numpy", "pymc"}
        ``"numpy"``: the seed's Gibbs (Proposition 3) + random-walk MH on σ_y² (Algorithm 15), the
        proposal sd adapted toward 0.44 acceptance during ``tune`` only. ``"pymc"``: NUTS on the same
        target, as a PyMC model on the rotated releases ``E_jᵀẑ_j``.
    sigma2_step : float, optional
        Initial proposal sd for σ_y² (default half the starting value).
    sigma2_substeps : int
        Random-walk updates of σ_y² per θ draw (NumPy backend). Each leaves p(σ_y² | θ, ẑ) invariant,
        so repeating them is exact; they cost O(J d) each. With the default 10, the bulk ESS of every
        parameter was ≥ 1000 of 2000 draws on ``examples/regression_seed000.py`` and on the example
        of ``docs/regression.md`` (one update: 250–430 for σ_y²). The stat ``accept_sigma2`` is the
        fraction accepted per iteration.

    Returns
    -------
    RegressionFit
        ``chains`` chains of ``draws`` draws of ``theta`` and ``sigma2_y``; ``fit.idata`` is the usual
        multi-chain InferenceData (DataTree on ArviZ 1.x).
    """
    t0 = time.perf_counter()
    stats, rng, draws, tune, chains, prior = check_mcmc_run(
        stats, method="mcmc_fixedS", rng=rng, draws=draws, tune=tune, chains=chains, prior=prior
    )
    sigma2_substeps = check_count(sigma2_substeps, name="sigma2_substeps")
    if sigma2_step is not None:  # its log is adapted: 0 or less froze σ_y² at its start
        sigma2_step = check_positive(
            sigma2_step, name="sigma2_step", fix="Pass a positive proposal sd, or None."
        )
    eig = fixed_s_eig(stats)
    if backend == "pymc":
        fit = _fixed_s_pymc(eig, stats.sigma_z, prior, draws, tune, chains, rng)
        fit.seconds = time.perf_counter() - t0
        check_noisy_s(stats, "mcmc_fixedS", *_draw_moments(fit.theta_draws()))
        return fit
    if backend != "numpy":
        raise ValueError(f"backend must be 'numpy' or 'pymc', got backend={backend!r}.")
    res = [
        _fixed_s_chain(r, eig, stats.sigma_z, prior, draws, tune, sigma2_step, sigma2_substeps)
        for r in rng.spawn(chains)
    ]
    th = np.stack([r[0] for r in res])
    post = {"theta": th, "sigma2_y": np.stack([r[1] for r in res])}
    st = {"accept_sigma2": np.stack([r[2] for r in res]), "sigma2_step": [r[3] for r in res]}
    check_noisy_s(stats, "mcmc_fixedS", *_draw_moments(th.reshape(-1, stats.d)))
    return RegressionFit(
        "mcmc_fixedS", th.reshape(-1, stats.d).mean(0), post, st, time.perf_counter() - t0
    )


def _draw_moments(th):
    """Mean and covariance of θ draws ``(S, d)``."""
    return th.mean(axis=0), np.atleast_2d(np.cov(th, rowvar=False))


def _fixed_s_pymc(eig, sigma_z, prior, draws, tune, chains, rng):
    import pymc as pm
    import pytensor.tensor as pt

    Et = np.swapaxes(eig.E, 1, 2)  # (J, d, d): rows are eigenvectors
    with pm.Model():
        theta = pm.MvNormal("theta", mu=prior.m, cov=prior.C)
        s2 = pm.InverseGamma("sigma2_y", alpha=prior.a, beta=prior.b)
        mu = eig.w * pt.tensordot(pt.as_tensor(Et), theta, axes=[[2], [0]])
        pm.Normal("zr", mu=mu, sigma=pt.sqrt(s2 * eig.w + sigma_z**2), observed=eig.zr)
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            random_seed=int(rng.integers(2**31 - 1)),
            progressbar=False,
            compute_convergence_checks=False,
        )
    post = idata["posterior"]
    th = np.asarray(post["theta"].values)
    out = {"theta": th, "sigma2_y": np.asarray(post["sigma2_y"].values)}
    return RegressionFit(
        "mcmc_fixedS", th.reshape(-1, th.shape[-1]).mean(0), out, {"backend": "pymc"}, _idata=idata
    )
