"""pymc-dp: Bayesian inference from differentially private releases with PyMC.

Write the confidential-data model in PyMC, add a :func:`DPObserved` node per release and sample with
the step methods of :mod:`pymc_dp.samplers`. The data holder's side (private posterior samples from
confidential data) is :class:`PenaltyMH` with :func:`privacy_spent`; choosing what to release is
:func:`fisher_information` and :func:`select_statistic`; private linear regression from distributed
noisy sufficient statistics is :mod:`pymc_dp.regression`.
"""

from pymc_dp import accounting, diagnostics, fisher, regression
from pymc_dp.accounting import privacy_spent
from pymc_dp.distributions import (
    CLTRelease,
    CLTStatistic,
    DPObserved,
    LatentValue,
    dp_nodes,
    normal_mean_moments,
    normal_variance_moments,
    uniform_width_moments,
)
from pymc_dp.fisher import fisher_information, select_statistic
from pymc_dp.mechanisms import (
    DiscreteLaplace,
    Gaussian,
    Laplace,
    RandomizedResponse,
    SmoothLaplace,
)
from pymc_dp.release import release
from pymc_dp.samplers import MHAAR, PMMH, DataAugmentation, PenaltyMH
from pymc_dp.samplers import ConjugateTheta, Interweave
from pymc_dp.statistics import Counts, Local, Max, Mean, Median, RecordSum, Sum

__version__ = "0.1.0"

__all__ = [
    # releases and their density
    "DPObserved",
    "dp_nodes",
    "release",
    # mechanisms
    "Laplace",
    "Gaussian",
    "DiscreteLaplace",
    "RandomizedResponse",
    "SmoothLaplace",
    # statistics
    "Sum",
    "Mean",
    "Counts",
    "RecordSum",
    "Local",
    "Median",
    "Max",
    # normal approximation of an additive statistic (seed 001 eq. 8-9)
    "CLTStatistic",
    "CLTRelease",
    "LatentValue",
    "normal_mean_moments",
    "normal_variance_moments",
    "uniform_width_moments",
    # samplers
    "DataAugmentation",
    "PMMH",
    "MHAAR",
    "PenaltyMH",
    "Interweave",
    "ConjugateTheta",
    # accounting, planning, diagnostics
    "privacy_spent",
    "fisher_information",
    "select_statistic",
    "accounting",
    "diagnostics",
    "fisher",
    "regression",
]
