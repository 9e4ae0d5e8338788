"""Privacy accounting of data-holder MCMC: ``dp_accounting`` composition and the seeds' closed forms."""

from pymc_dp.accounting.penalty_bounds import (
    mala_iterations,
    mala_rho,
    mala_sensitivity,
    penalty_delta_tight,
    penalty_epsilon_tight,
    penalty_iterations,
    penalty_iterations_zcdp,
    penalty_noise_multiplier,
    penalty_tau,
    rdp_epsilon,
    subsampled_rdp,
    subsampled_sensitivity,
    zcdp_epsilon,
    zcdp_rho,
)
from pymc_dp.accounting.spent import (
    PrivacyBudgetExceeded,
    epsilon_of_event,
    iteration_event,
    max_iterations,
    privacy_spent,
    run_event,
)

__all__ = [
    "privacy_spent",
    "PrivacyBudgetExceeded",
    "iteration_event",
    "run_event",
    "epsilon_of_event",
    "max_iterations",
    "zcdp_epsilon",
    "zcdp_rho",
    "penalty_noise_multiplier",
    "penalty_iterations_zcdp",
    "penalty_delta_tight",
    "penalty_epsilon_tight",
    "penalty_iterations",
    "penalty_tau",
    "subsampled_sensitivity",
    "subsampled_rdp",
    "rdp_epsilon",
    "mala_sensitivity",
    "mala_rho",
    "mala_iterations",
]
