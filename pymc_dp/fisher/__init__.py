r"""Statistic selection by Fisher information (seed 001 §3; seed 000 §4.2 and §6.5).

Before releasing, choose *what* to release: the statistic whose privatized release carries the
most Fisher information about θ. Without privacy `x^2` is best for a normal variance; with
ε = 1 Gaussian noise `|x|` wins (seed 001 Example 2).

Public entry points: `fisher_information` (§3.1 closed form and Algorithms 1–3),
`select_statistic` (pointwise, prior-averaged, posterior-sample criteria),
`two_stage_release` (seed 000 §6.5). See ``docs/fisher.md`` for the mathematics.
"""

from pymc_dp.fisher.analytic import (
    clt_gaussian_fisher,
    fisher_noisy_mean,
    fisher_noisy_mean_exact,
    fisher_noisy_values,
    fisher_randomized_response,
)
from pymc_dp.fisher.api import METHODS, Candidate, fisher_information
from pymc_dp.fisher.models import (
    Moments,
    Population,
    QuadratureMoments,
    bernoulli_example,
    normal_mean_example,
    normal_variance_example,
    uniform_width_example,
)
from pymc_dp.fisher.monte_carlo import (
    FisherEstimate,
    marginal_mc,
    normal_approx_mc,
    sequential_mc,
)
from pymc_dp.fisher.selection import (
    PlanningCostWarning,
    Selection,
    inverse_trace,
    select_statistic,
)
from pymc_dp.fisher.two_stage import (
    TwoStageResult,
    two_release_model,
    two_stage_release,
)

__all__ = [
    "METHODS",
    "Candidate",
    "FisherEstimate",
    "Moments",
    "PlanningCostWarning",
    "Population",
    "QuadratureMoments",
    "Selection",
    "TwoStageResult",
    "bernoulli_example",
    "clt_gaussian_fisher",
    "fisher_information",
    "fisher_noisy_mean",
    "fisher_noisy_mean_exact",
    "fisher_noisy_values",
    "fisher_randomized_response",
    "inverse_trace",
    "marginal_mc",
    "normal_approx_mc",
    "normal_mean_example",
    "normal_variance_example",
    "select_statistic",
    "sequential_mc",
    "two_release_model",
    "two_stage_release",
    "uniform_width_example",
]
