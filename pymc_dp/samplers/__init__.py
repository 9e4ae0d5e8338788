"""Step methods for ``pm.sample``: the analyst's samplers and the data holder's penalty MH."""

from pymc_dp.samplers.augmentation import DataAugmentation
from pymc_dp.samplers.mhaar import MHAAR
from pymc_dp.samplers.penalty import PenaltyMH
from pymc_dp.samplers.pmmh import PMMH
from pymc_dp.samplers.records import RecordBlock
from pymc_dp.samplers.assign import register as _register

_register()

__all__ = ["DataAugmentation", "PMMH", "MHAAR", "PenaltyMH", "RecordBlock"]
