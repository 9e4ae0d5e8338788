"""pymc-dp: Bayesian inference from differentially private releases with PyMC.

Write the confidential-data model in PyMC, add a `DPObserved` node per release and sample with
the step methods of `pymc_dp.samplers`. The data holder's side (private posterior samples from
confidential data) is `PenaltyMH` with `privacy_spent`; choosing what to release is
`fisher_information` and `select_statistic`; private linear regression from distributed
noisy sufficient statistics is `pymc_dp.regression`.
"""

from pymc_dp import accounting, diagnostics, fisher, regression
from pymc_dp.accounting import PrivacySpent, privacy_spent
from pymc_dp.distributions import (
    CLTRelease,
    CLTStatistic,
    DPObserved,
    LatentValue,
    ReleaseData,
    dp_nodes,
    normal_mean_moments,
    normal_variance_moments,
    set_release,
    uniform_width_moments,
)
from pymc_dp.diagnostics import ConvergenceWarning, check_convergence
from pymc_dp.fisher import fisher_information, select_statistic
from pymc_dp.intervals import intervals
from pymc_dp.marginal import Collapsed, EnumeratedParents, marginalize, recover_records
from pymc_dp.mechanisms import (
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    RandomizedResponse,
    SmoothLaplace,
    Staircase,
    TruncatedDiscreteLaplace,
    from_opendp,
)
from pymc_dp.release import Release, release
from pymc_dp.runner import ManyResult, sample_many
from pymc_dp.samplers import (
    MHAAR,
    PMMH,
    ConjugateTheta,
    DataAugmentation,
    DirichletCells,
    GammaCells,
    Interweave,
    LatentTraceWarning,
    NonAdditiveRoute,
    PenaltyMH,
    SufficientTheta,
    keep_latent,
)
from pymc_dp.samplers.assign import register as _register
from pymc_dp.samplers.route_report import install as _install_route_report
from pymc_dp.samplers.trace_memory import install as _install_trace_rule
from pymc_dp.samplers.cells import TableCells
from pymc_dp.samplers.dirichlet_hyper import DirichletHyper
from pymc_dp.samplers.penalty.publish import publishable
from pymc_dp.statistics import Counts, Local, Max, Mean, Median, RecordSum, Sum
from pymc_dp.statistics.cells import Cells, Marginals

# Registration with PyMC, in this one place (docs/architecture.md): pm.sample() without step= asks
# every class of pm.STEP_METHODS for its competence and keeps the first of the most competent, so
# pymc-dp's steps go first, in this order: Collapsed (discrete records summed out when cheap),
# EnumeratedParents (discrete records with discrete parents of a finite support: enumerated),
# DirichletHyper (α, base and, with the table's π summed out, π and the Multinomial table of rows
# π_g ~ Dirichlet(α·base) released by pdp.Cells only; before TableCells, which would take that
# table, and ConjugateTheta, which would take π), DirichletCells (a Multinomial table released by
# pdp.Cells only and its π ~ Dirichlet(a), a fixed: the cells move with π summed out; before
# TableCells and ConjugateTheta for the same reason), GammaCells (the same for a Poisson table
# under λ ~ Gamma(α, β), α and β fixed), TableCells (other count tables released by
# pdp.Cells / pdp.Marginals), DataAugmentation (other latent records; before PyMC's IDEAL
# Bernoulli/Categorical Gibbs), ConjugateTheta, then SufficientTheta (θ given records),
# NonAdditiveRoute (θ and the records of a release that is not record-additive: NUTS, MHAAR or
# both, measured at warm-up).
# The same place wraps PyMC's trace set-up: pm.sample() without var_names leaves latent records and
# cells above 10^7 numbers out of its default trace (samplers/trace_memory.py, pdp.keep_latent),
# and PyMC's result: idata.sample_stats.attrs say which pymc-dp step moved what, and why
# (samplers/route_report.py).
_register(
    Collapsed,
    EnumeratedParents,
    DirichletHyper,
    DirichletCells,
    GammaCells,
    TableCells,
    DataAugmentation,
    ConjugateTheta,
    SufficientTheta,
    NonAdditiveRoute,
)
_install_trace_rule()
_install_route_report()

__version__ = "0.1.0"

__all__ = [
    # releases and their density
    "DPObserved",
    "dp_nodes",
    "ReleaseData",
    "set_release",
    "release",
    "Release",
    "intervals",
    # mechanisms
    "Laplace",
    "Gaussian",
    "DiscreteLaplace",
    "DiscreteGaussian",
    "RandomizedResponse",
    "SmoothLaplace",
    "Staircase",
    "TruncatedDiscreteLaplace",
    "from_opendp",
    # statistics
    "Sum",
    "Mean",
    "Counts",
    "Cells",
    "Marginals",
    "RecordSum",
    "Local",
    "Median",
    "Max",
    # normal approximation of an additive statistic (seed 001 eq. 8-9)
    "CLTStatistic",
    "CLTRelease",
    "LatentValue",
    "normal_mean_moments",
    "normal_variance_moments",
    "uniform_width_moments",
    # samplers
    "DataAugmentation",
    "TableCells",
    "DirichletHyper",
    "DirichletCells",
    "GammaCells",
    "Interweave",
    "ConjugateTheta",
    "SufficientTheta",
    "PMMH",
    "MHAAR",
    "NonAdditiveRoute",
    "PenaltyMH",
    "publishable",
    "keep_latent",
    "LatentTraceWarning",
    # exact collapsed likelihoods for discrete records
    "Collapsed",
    "EnumeratedParents",
    "marginalize",
    "recover_records",
    # accounting, planning, diagnostics
    "privacy_spent",
    "PrivacySpent",
    "fisher_information",
    "select_statistic",
    "check_convergence",
    "ConvergenceWarning",
    # many posteriors at once (Dask)
    "sample_many",
    "ManyResult",
    "accounting",
    "diagnostics",
    "fisher",
    "regression",
]
