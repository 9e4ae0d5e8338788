"""Step methods for ``pm.sample``: the analyst's samplers and the data holder's penalty MH.

Importing this package registers `DataAugmentation` with PyMC's step assignment, so
``pm.sample()`` gives latent records that feed ``DPObserved`` nodes to it by itself
(`pymc_dp.samplers.assign`).
"""

from pymc_dp.samplers.assign import register as _register
from pymc_dp.samplers.augmentation import DataAugmentation
from pymc_dp.samplers.cells import TableCells
from pymc_dp.samplers.conjugate import ConjugateTheta
from pymc_dp.samplers.interweave import Interweave, interweave_kernel
from pymc_dp.samplers.mhaar import MHAAR
from pymc_dp.samplers.penalty import PenaltyMH
from pymc_dp.samplers.pmmh import PMMH
from pymc_dp.samplers.records import RecordBlock
from pymc_dp.samplers.sufficient import SufficientTheta
from pymc_dp.samplers.trace_memory import LatentTraceWarning, keep_latent
from pymc_dp.samplers.trace_memory import install as _install_trace_rule

_register(DataAugmentation, ConjugateTheta, SufficientTheta)  # DataAugmentation first
_install_trace_rule()  # pm.sample() leaves large latent variables out of its default trace

__all__ = [
    "DataAugmentation",
    "Interweave",
    "interweave_kernel",
    "ConjugateTheta",
    "SufficientTheta",
    "PMMH",
    "MHAAR",
    "PenaltyMH",
    "RecordBlock",
    "TableCells",
    "LatentTraceWarning",
    "keep_latent",
]
