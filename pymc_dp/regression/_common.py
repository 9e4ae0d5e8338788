"""Input checks shared by the analyst-side methods."""

from __future__ import annotations

import numpy as np

from pymc_dp._checks import check_count, check_rng
from pymc_dp.regression.model import RegressionPrior
from pymc_dp.regression.release import SuffStatsRelease

__all__ = [
    "check_release",
    "check_count",
    "check_mcmc_run",
    "as_rng",
    "resolve_prior",
    "sigma2_init",
]


def check_release(stats, *, method: str, needs: tuple = ()) -> SuffStatsRelease:
    if not isinstance(stats, SuffStatsRelease):
        raise TypeError(
            f"stats must be a SuffStatsRelease, got {type(stats).__name__}. Build it with "
            "pdp.regression.release_suff_stats(...) or SuffStatsRelease(S_hat=..., z_hat=..., ...)."
        )
    if "u_hat" in needs and stats.u_hat is None:
        raise ValueError(
            f"method={method!r} needs the noisy yᵀy of each node, but stats.scheme={stats.scheme!r} "
            "released none. Release with scheme='szu'."
        )
    if "lam_hat" in needs and stats.lam_hat is None:
        raise ValueError(
            f"method={method!r} needs the noisy λ_min(S_j) of each node, but stats.scheme="
            f"{stats.scheme!r} released none. Release with scheme='adassp'."
        )
    return stats


def check_mcmc_run(stats, *, method: str, rng, draws, tune, chains, prior, needs: tuple = ()):
    """Validate the arguments every MCMC method shares; returns ``(stats, rng, draws, tune, chains, prior)``."""
    stats = check_release(stats, method=method, needs=needs)
    return (
        stats,
        as_rng(rng),
        check_count(draws, name="draws"),
        check_count(tune, name="tune", minimum=0),
        check_count(chains, name="chains"),
        resolve_prior(prior, stats.d),
    )


def as_rng(rng) -> np.random.Generator:
    """The package's rng rule (`pymc_dp._checks.check_rng`)."""
    return check_rng(rng)


def resolve_prior(prior, d: int) -> RegressionPrior:
    if prior is None:
        prior = RegressionPrior()
    if not isinstance(prior, RegressionPrior):
        raise TypeError(f"prior must be a RegressionPrior, got {type(prior).__name__}.")
    return prior.resolve(d)


def sigma2_init(prior: RegressionPrior) -> float:
    """Start σ_y² at the prior mean (mode when the mean is infinite)."""
    return prior.b / (prior.a - 1.0) if prior.a > 1.0 else prior.b / (prior.a + 1.0)
