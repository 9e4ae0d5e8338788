"""Diagnostics for DP MCMC output: MMD against exact draws, PMMH's likelihood-estimate noise, IAC,
and the convergence guard (`check_convergence`, `ConvergenceWarning`)."""

from pymc_dp.samplers.convergence import ConvergenceWarning, check_convergence
from pymc_dp.diagnostics.mmd import median_bandwidth, mmd, mmd2
from pymc_dp.diagnostics.particles import iac, loglik_estimate_sd, particles_for_sd

__all__ = [
    "ConvergenceWarning",
    "check_convergence",
    "iac",
    "loglik_estimate_sd",
    "median_bandwidth",
    "mmd",
    "mmd2",
    "particles_for_sd",
]
