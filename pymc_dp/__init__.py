"""pymc-dp: Bayesian inference from differentially private releases with PyMC.

Write the confidential-data model in PyMC, add a :func:`DPObserved` node per release and sample with
the step methods of :mod:`pymc_dp.samplers`.
"""

from pymc_dp.distributions import DPObserved, dp_nodes
from pymc_dp.mechanisms import DiscreteLaplace, Gaussian, Laplace, RandomizedResponse
from pymc_dp.release import release
from pymc_dp.samplers import DataAugmentation
from pymc_dp.statistics import Counts, Local, Mean, RecordSum, Sum

__version__ = "0.1.0"

__all__ = [
    "DPObserved",
    "dp_nodes",
    "Laplace",
    "Gaussian",
    "DiscreteLaplace",
    "RandomizedResponse",
    "Sum",
    "Mean",
    "Counts",
    "RecordSum",
    "Local",
    "release",
    "DataAugmentation",
]
from pymc_dp.samplers import PenaltyMH  # noqa: E402
from pymc_dp.accounting import privacy_spent  # noqa: E402
from pymc_dp import accounting, diagnostics  # noqa: E402

__all__ += ["PenaltyMH", "privacy_spent", "accounting", "diagnostics"]
