r"""When a private regression cannot be trusted: warnings before fitting (issue 22.6).

* **Noisy XᵀX** (analyst side, from released values only). The fixed-S methods
  (``mcmc_fixedS``, ``bayes_fixedS_fast``) treat the released ``Ŝ_j`` as the exact ``X_jᵀX_j``.
  The noise ``σ_s M_j`` (symmetric, N(0, σ_s²) entries) has spectral norm about
  :math:`2\sigma_s\sqrt d`; when that is not small against :math:`\lambda_{\min}(\hat S_j)`, the
  fixed-S posterior is too narrow and off-centre. `check_noisy_s` warns (`NoisyStatsWarning`) when
  :math:`\lambda_{\min}(\hat S_j) < ` ``TRUST_FACTOR`` :math:`\cdot 2\sigma_s\sqrt d` for some node.
* **Non-random node split** (curator side). The methods assume y | X is the same in every node. Rows
  split by the outcome (``release_suff_stats`` splits contiguously; sorted rows) break it.
  `check_node_split` compares the nodes' OLS residual means with a one-way F test and warns
  (`NodeSplitWarning`) at p < ``SPLIT_P``; the message states no value computed from the data.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["SPLIT_P", "TRUST_FACTOR", "NodeSplitWarning", "NoisyStatsWarning", "check_node_split",
           "check_noisy_s", "noise_report"]

#: ``check_noisy_s`` warns when λ_min(Ŝ_j) is below this many noise spectral norms 2σ_s√d.
TRUST_FACTOR = 2.0
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


def check_noisy_s(stats, method: str) -> bool:
    """Warn when some node's released XᵀX is dominated by its noise; True if it warned."""
    rep = noise_report(stats)
    bad = np.flatnonzero(rep["ratio"] < TRUST_FACTOR)
    if bad.size == 0:
        return False
    j = int(bad[np.argmin(rep["lam_min"][bad])])
    warnings.warn(
        f"method={method!r} treats the released XᵀX of every node as exact, but {bad.size} of "
        f"{stats.n_nodes} nodes have λ_min(Ŝ_j) below {TRUST_FACTOR:g}× the noise level "
        f"2σ_s√d = {rep['noise_norm']:.3g} (node {j}: λ_min = {rep['lam_min'][j]:.3g}; σ_s = "
        f"{stats.sigma_s:.3g}), so its intervals will be too narrow or off-centre. Use fewer nodes "
        "(pool the records), a larger epsilon, or method='mcmc_normalX', which models the noise in S.",
        NoisyStatsWarning, stacklevel=4,
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
        NodeSplitWarning, stacklevel=4,
    )
    return True
