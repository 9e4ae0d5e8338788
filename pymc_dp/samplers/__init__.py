"""Step methods for ``pm.sample``: the analyst's samplers and the data holder's penalty MH.

Their competences (`pymc_dp.samplers.assign`) let ``pm.sample()`` pick them by itself; they are put
first in PyMC's step methods in one place, ``pymc_dp/__init__.py`` (see docs/architecture.md,
"Registration with PyMC").
"""

from pymc_dp.samplers.augmentation import DataAugmentation
from pymc_dp.samplers.cells import TableCells
from pymc_dp.samplers.conjugate import ConjugateTheta
from pymc_dp.samplers.dirichlet_cells import DirichletCells
from pymc_dp.samplers.dirichlet_hyper import DirichletHyper
from pymc_dp.samplers.gamma_cells import GammaCells
from pymc_dp.samplers.interweave import Interweave, interweave_kernel
from pymc_dp.samplers.mhaar import MHAAR
from pymc_dp.samplers.nonadditive import NonAdditiveRoute
from pymc_dp.samplers.penalty import PenaltyMH
from pymc_dp.samplers.pmmh import PMMH
from pymc_dp.samplers.records import RecordBlock
from pymc_dp.samplers.sufficient import SufficientTheta
from pymc_dp.samplers.trace_memory import LatentTraceWarning, keep_latent

__all__ = [
    "DataAugmentation",
    "Interweave",
    "interweave_kernel",
    "ConjugateTheta",
    "SufficientTheta",
    "DirichletHyper",
    "DirichletCells",
    "GammaCells",
    "PMMH",
    "MHAAR",
    "NonAdditiveRoute",
    "PenaltyMH",
    "RecordBlock",
    "TableCells",
    "LatentTraceWarning",
    "keep_latent",
]
