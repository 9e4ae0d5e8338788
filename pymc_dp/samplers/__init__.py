"""Step methods for ``pm.sample`` that handle the privatized part of a model."""

from pymc_dp.samplers.augmentation import DataAugmentation
from pymc_dp.samplers.records import RecordBlock

__all__ = ["DataAugmentation", "RecordBlock"]
