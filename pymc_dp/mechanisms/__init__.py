"""Privacy mechanisms: noise densities, sampling, calibration and accounting events."""

from pymc_dp.mechanisms.base import Mechanism, kernel_logpdf
from pymc_dp.mechanisms.discrete_laplace import DiscreteLaplace
from pymc_dp.mechanisms.gaussian import (
    Gaussian,
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
)
from pymc_dp.mechanisms.laplace import Laplace
from pymc_dp.mechanisms.randomized_response import RandomizedResponse
from pymc_dp.mechanisms.smooth import SmoothLaplace
from pymc_dp.mechanisms.staircase import Staircase
from pymc_dp.mechanisms.truncated_laplace import TruncatedDiscreteLaplace

__all__ = [
    "Mechanism",
    "Laplace",
    "Gaussian",
    "DiscreteLaplace",
    "RandomizedResponse",
    "SmoothLaplace",
    "Staircase",
    "TruncatedDiscreteLaplace",
    "analytic_gaussian_sigma",
    "analytic_gaussian_delta",
    "kernel_logpdf",
]
from pymc_dp.mechanisms.discrete_gaussian import DiscreteGaussian
from pymc_dp.mechanisms.opendp import from_opendp

__all__ += ["DiscreteGaussian", "from_opendp"]
