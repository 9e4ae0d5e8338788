"""Statistics of the confidential records: per-record contributions and sensitivities."""

from pymc_dp.statistics.additive import Counts, Local, Mean, RecordSum, Statistic, Sum

__all__ = ["Statistic", "Sum", "Mean", "Counts", "RecordSum", "Local"]
from pymc_dp.statistics.order import Max, Median  # noqa: E402

__all__ += ["Median", "Max"]
