"""Statistics of the confidential records: per-record contributions and sensitivities."""

from pymc_dp.statistics.additive import Counts, Local, Mean, RecordSum, Statistic, Sum
from pymc_dp.statistics.cells import Cells, Marginals
from pymc_dp.statistics.order import Max, Median

__all__ = [
    "Statistic",
    "Sum",
    "Mean",
    "Counts",
    "RecordSum",
    "Local",
    "Median",
    "Max",
    "Cells",
    "Marginals",
]
