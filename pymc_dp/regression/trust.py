r"""When a private regression cannot be trusted: warnings before fitting.

* **Noisy XᵀX** (analyst side, from released values only). The fixed-S methods
  (``mcmc_fixedS``, ``bayes_fixedS_fast``) treat the released ``Ŝ_j`` as the exact ``X_jᵀX_j``.
  The noise ``σ_s M_j`` (symmetric, N(0, σ_s²) entries) has spectral norm about
  `2\sigma_s\sqrt d`; when that is not small against `\lambda_{\min}(\hat S_j)`, the
  fixed-S posterior is too narrow and off-centre. `check_noisy_s` warns (`NoisyStatsWarning`) when
  `\lambda_{\min}(\hat S_j) < ` ``TRUST_FACTOR`` `\cdot 2\sigma_s\sqrt d` for some node,
  or, after the fit, when the error the S noise adds to some coefficient exceeds ``MAX_S_ERROR``
  posterior standard deviations (`s_noise_error`).
* **Non-random node split** (curator side). The methods assume y | X is the same in every node. Rows
  split by the outcome (``release_suff_stats`` splits contiguously; sorted rows) break it.
  `check_node_split` compares the nodes' OLS residual means with a one-way F test and warns
  (`NodeSplitWarning`) at p < ``SPLIT_P``; the message states no value computed from the data.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = [
    "MAX_S_ERROR",
    "SPLIT_P",
    "TRUST_FACTOR",
    "NodeSplitWarning",
    "NoisyStatsWarning",
    "check_node_split",
    "check_noisy_s",
    "noise_report",
    "s_noise_error",
]

#: ``check_noisy_s`` warns when λ_min(Ŝ_j) is below this many noise spectral norms 2σ_s√d.
TRUST_FACTOR = 2.0
#: ``check_noisy_s`` warns when the S-noise error of some coefficient exceeds this many posterior sd.
MAX_S_ERROR = 0.5
#: ``check_node_split`` warns when the F test of equal residual means has a p-value below this.
SPLIT_P = 1e-4


class NoisyStatsWarning(UserWarning):
    """A released XᵀX is too noisy for a method that treats it as exact."""


class NodeSplitWarning(UserWarning):
    """The node split depends on the outcome given the features."""


def noise_report(stats) -> dict:
    """Per node: ``lam_min`` (λ_min of the released Ŝ_j), ``noise_norm`` (≈ 2σ_s√d, the spectral
    norm of the noise) and ``ratio`` = lam_min / noise_norm. Released values only (public)."""
    lam = np.linalg.eigvalsh(stats.S_hat)[:, 0]
    noise = 2.0 * stats.sigma_s * np.sqrt(stats.d)
    return {"lam_min": lam, "noise_norm": float(noise), "ratio": lam / noise}


def s_noise_error(stats, theta_mean, theta_cov) -> np.ndarray:
    r"""Per coefficient: the sd of the error that treating Ŝ_j as exact adds to θ, over the
    posterior sd of θ. From released values and the fit only.

    Fixed-S methods solve with `S = \sum_j \tilde S_j` while the truth uses
    `S - \sum_j \sigma_s M_j`; to first order the estimate moves by
    `S^{-1}(\sum_j \sigma_s M_j)\theta`, whose covariance (symmetric Gaussian ``M_j``) is
    `J\sigma_s^2 S^{-1}(\|\theta\|^2 I + \theta\theta^T - \mathrm{diag}(\theta^2))S^{-1}`. A ratio k leaves a nominal
    90 % interval covering `2\Phi(1.645/\sqrt{1+k^2}) - 1` (k = 0.5: 86 %, k = 1: 75 %).
    """
    from pymc_dp.regression.linalg import nearest_psd

    S_tilde, _, _ = nearest_psd(stats.S_hat)
    S = S_tilde.sum(axis=0)
    th = np.asarray(theta_mean, dtype=float).reshape(-1)
    try:
        Sinv = np.linalg.inv(S)
    except np.linalg.LinAlgError:
        return np.full(stats.d, np.inf)
    inner = (
        stats.n_nodes
        * stats.sigma_s**2
        * (th @ th * np.eye(stats.d) + np.outer(th, th) - np.diag(th**2))
    )
    err = np.sqrt(np.clip(np.diag(Sinv @ inner @ Sinv), 0.0, None))
    sd = np.sqrt(
        np.clip(np.diag(np.asarray(theta_cov, dtype=float).reshape(stats.d, stats.d)), 0.0, None)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, err / sd, np.inf)


def check_noisy_s(stats, method: str, theta_mean=None, theta_cov=None) -> bool:
    """Warn when some node's released XᵀX is dominated by its noise; True if it warned."""
    rep = noise_report(stats)
    bad = np.flatnonzero(rep["ratio"] < TRUST_FACTOR)
    if bad.size:
        j = int(bad[np.argmin(rep["lam_min"][bad])])
        what = (
            f"{bad.size} of {stats.n_nodes} nodes have λ_min(Ŝ_j) below {TRUST_FACTOR:g}× the "
            f"noise level 2σ_s√d = {rep['noise_norm']:.3g} (node {j}: λ_min = "
            f"{rep['lam_min'][j]:.3g}; σ_s = {stats.sigma_s:.3g})"
        )
    elif theta_mean is not None:
        k = s_noise_error(stats, theta_mean, theta_cov)
        if not np.max(k) > MAX_S_ERROR:
            return False
        i = int(np.argmax(k))
        what = (
            f"the noise in Ŝ (σ_s = {stats.sigma_s:.3g}) moves θ[{i}] by {k[i]:.2g} posterior "
            f"sd (rule: at most {MAX_S_ERROR:g}; see trust.s_noise_error)"
        )
    else:
        return False
    warnings.warn(
        f"method={method!r} treats the released XᵀX of every node as exact, but {what}, so its "
        "intervals will be too narrow or off-centre. Use fewer nodes (pool the records), a larger "
        "epsilon, or method='mcmc_normalX', which models the noise in S (check its convergence: "
        "at small epsilon it mixes slowly).",
        NoisyStatsWarning,
        stacklevel=4,
    )
    return True


def check_node_split(X, y, parts) -> bool:
    """Curator side: warn if the nodes' OLS residual means differ beyond chance; True if it warned.

    The warning names the rule and the fix only (no statistic of the data).
    """
    from scipy import stats as st

    if len(parts) < 2:
        return False
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    r = y - X @ beta
    groups = [r[p] for p in parts]
    if min(len(g) for g in groups) < 2 or np.all(r == r[0]):
        return False
    p = float(st.f_oneway(*groups).pvalue)
    if not (np.isfinite(p) and p < SPLIT_P):
        return False
    warnings.warn(
        f"the {len(parts)} nodes differ in y given X (their least-squares residual means differ "
        f"beyond chance, F test p < {SPLIT_P:g}): release_suff_stats splits rows contiguously, so "
        "rows ordered by the outcome (or by anything related to it) bias σ_y² and every interval. "
        "Shuffle the rows with a data-independent permutation first "
        "(pymc_dp.regression.random_split), or release each real node separately and combine with "
        "pymc_dp.regression.merge_releases.",
        NodeSplitWarning,
        stacklevel=4,
    )
    return True
