"""Exact collapsed likelihoods for discrete records: integrate the records out, sample θ with NUTS.

``marginalize(model)`` returns the model with the discrete latent records of its ``DPObserved``
releases summed out exactly (local releases, additive statistics, counts);
``recover_records(idata, model)`` draws the records back from their exact conditional.
"""

from pymc_dp.marginal.collapsed import (
    collapsed_plans,
    follow_releases,
    marginal_plans,
    marginalize,
)
from pymc_dp.marginal.enumerate import EnumeratedParents
from pymc_dp.marginal.plan import (
    MAX_SECONDS,
    SECONDS_PER_TERM,
    TRUNCATION,
    CollapsedPlan,
    CostModel,
)
from pymc_dp.marginal.recover import recover_records
from pymc_dp.marginal.step import Collapsed

__all__ = [
    "Collapsed",
    "EnumeratedParents",
    "MAX_SECONDS",
    "SECONDS_PER_TERM",
    "TRUNCATION",
    "CollapsedPlan",
    "CostModel",
    "collapsed_plans",
    "follow_releases",
    "marginal_plans",
    "marginalize",
    "recover_records",
]
