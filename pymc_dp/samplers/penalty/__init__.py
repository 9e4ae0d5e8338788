"""The data holder's sampler: DP penalty Metropolis–Hastings on confidential data (seeds 002/004).

Modules (dependencies point one way, checked by the import-linter contract in ``pyproject.toml``):

- `pymc_dp.samplers.penalty.kernel`: the one kernel
  ``penalty_kernel(rng, state, target, params) -> (state, info)`` with the symmetric proposals
  ("rw", "coordinate", "guided") and the penalty test; it imports no other penalty module;
- `pymc_dp.samplers.penalty.mala` (privatised Langevin proposal),
  `pymc_dp.samplers.penalty.subsampled` (batch test with the variance correction) and
  `pymc_dp.samplers.penalty.barker` (corrected Barker test) plug into the kernel;
- `pymc_dp.samplers.penalty.target`: a PyMC model's per-record log-likelihood;
- `pymc_dp.samplers.penalty.options`: argument checks;
- `pymc_dp.samplers.penalty.step`: `PenaltyMH`, the PyMC step;
- `pymc_dp.samplers.penalty.publish`: `publishable`, which strips what must not be published.
"""

from pymc_dp.samplers.penalty.kernel import (
    PenaltyInfo,
    PenaltyParams,
    PenaltyState,
    penalty_init,
    penalty_kernel,
)
from pymc_dp.samplers.penalty.publish import PUBLIC_STATS, publishable
from pymc_dp.samplers.penalty.step import BudgetExhaustedWarning, ClippingWarning, PenaltyMH

__all__ = [
    "BudgetExhaustedWarning",
    "ClippingWarning",
    "PUBLIC_STATS",
    "PenaltyInfo",
    "PenaltyMH",
    "PenaltyParams",
    "PenaltyState",
    "penalty_init",
    "penalty_kernel",
    "publishable",
]
