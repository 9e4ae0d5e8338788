"""Diagnostics for DP MCMC output: maximum mean discrepancy against exact posterior draws."""

from pymc_dp.diagnostics.mmd import median_bandwidth, mmd, mmd2

__all__ = ["median_bandwidth", "mmd", "mmd2"]
