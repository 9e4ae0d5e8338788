"""Differentially private distributed Bayesian linear regression (seed 000 §5.2 and §7.1).

Curator: `release_suff_stats` releases per-node noisy ``(XᵀX, Xᵀy)`` with the analytic Gaussian
mechanism. Analyst: `fit` (or the functions below) turns a `SuffStatsRelease` into a
`RegressionFit` with posterior draws as ArviZ data.

========================  ==========================================  =====================
method                    what it samples                              seed 000
========================  ==========================================  =====================
``mcmc_normalX``          Σ_x, S_{1:J}, θ, σ_y² (normal features)     Algorithm 16
``mcmc_fixedS``           θ, σ_y² with S_j = nearest-PSD(Ŝ_j)         Algorithm 17
``bayes_fixedS_fast``     θ (Gaussian, closed form), σ_y² fixed       Algorithm 18
``mcmc_bs``               baseline, Bernstein & Sheldon (2019)        §7.1.2
``adassp``                baseline point estimate, Wang (2018)        §7.1.1
========================  ==========================================  =====================
"""

from pymc_dp.regression.api import METHODS, fit
from pymc_dp.regression.baselines import adassp, mcmc_bs, ss_moments
from pymc_dp.regression.fixed_s import (
    bayes_fixed_s_fast,
    mcmc_fixed_s,
    theta_posterior_fixed,
)
from pymc_dp.regression.linalg import nearest_psd
from pymc_dp.regression.model import RegressionPrior
from pymc_dp.regression.nodes import merge_releases, random_split
from pymc_dp.regression.normal_x import mcmc_normal_x
from pymc_dp.regression.release import (
    SuffStatsRelease,
    release_suff_stats,
    suff_stat_sensitivity,
)
from pymc_dp.regression.result import RegressionFit
from pymc_dp.regression.trust import (
    NodeSplitWarning,
    NoisyStatsWarning,
    check_node_split,
    check_noisy_s,
    noise_report,
)

__all__ = [
    "release_suff_stats",
    "SuffStatsRelease",
    "suff_stat_sensitivity",
    "RegressionPrior",
    "RegressionFit",
    "fit",
    "METHODS",
    "mcmc_normal_x",
    "mcmc_fixed_s",
    "bayes_fixed_s_fast",
    "theta_posterior_fixed",
    "mcmc_bs",
    "adassp",
    "ss_moments",
    "nearest_psd",
    "merge_releases",
    "random_split",
    "noise_report",
    "check_noisy_s",
    "check_node_split",
    "NoisyStatsWarning",
    "NodeSplitWarning",
]
