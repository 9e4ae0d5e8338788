"""PyMC distributions for privatized releases."""

from pymc_dp.distributions.dp_observed import DPNode, DPObserved, dp_nodes

__all__ = ["DPObserved", "DPNode", "dp_nodes"]
