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
from pymc_dp.distributions.release_data import ReleaseData, set_release

__all__ = [
    "DPObserved",
    "DPNode",
    "dp_nodes",
    "ReleaseData",
    "set_release",
    "CLTStatistic",
    "CLTRelease",
    "LatentValue",
    "normal_mean_moments",
    "normal_variance_moments",
    "uniform_width_moments",
]
