"""Densities of releases given latent data: ``DPObserved`` and the normal-approximation blocks."""

from pymc_dp.distributions.clt import (
    CLTRelease,
    CLTStatistic,
    LatentValue,
    normal_mean_moments,
    normal_variance_moments,
    uniform_width_moments,
)
from pymc_dp.distributions.dp_observed import DPNode, DPObserved, dp_nodes
from pymc_dp.distributions.release_data import ReleaseData

__all__ = [
    "DPObserved",
    "DPNode",
    "dp_nodes",
    "ReleaseData",
    "CLTStatistic",
    "CLTRelease",
    "LatentValue",
    "normal_mean_moments",
    "normal_variance_moments",
    "uniform_width_moments",
]
