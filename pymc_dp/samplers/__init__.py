"""Step methods for ``pm.sample``: the analyst's samplers and the data holder's penalty MH."""

from pymc_dp.samplers.augmentation import DataAugmentation
from pymc_dp.samplers.mhaar import MHAAR
from pymc_dp.samplers.penalty import PenaltyMH
from pymc_dp.samplers.pmmh import PMMH
from pymc_dp.samplers.records import RecordBlock

__all__ = ["DataAugmentation", "PMMH", "MHAAR", "PenaltyMH", "RecordBlock"]
from pymc_dp.samplers.interweave import Interweave, interweave_kernel

__all__ += ["Interweave", "interweave_kernel"]
from pymc_dp.samplers.conjugate import ConjugateTheta

__all__ += ["ConjugateTheta"]
