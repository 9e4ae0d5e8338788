"""One entry point for every method: ``fit(stats, method=..., rng=...)``."""

from __future__ import annotations

from pymc_dp.regression.baselines import adassp, mcmc_bs
from pymc_dp.regression.fixed_s import bayes_fixed_s_fast, mcmc_fixed_s
from pymc_dp.regression.normal_x import mcmc_normal_x

__all__ = ["fit", "METHODS"]

METHODS = {
    "mcmc_normalX": mcmc_normal_x,
    "mcmc_fixedS": mcmc_fixed_s,
    "bayes_fixedS_fast": bayes_fixed_s_fast,
    "mcmc_bs": mcmc_bs,
    "adassp": adassp,
}


def fit(stats, method: str = "mcmc_fixedS", *, rng=None, **kwargs):
    """Fit ``method`` to a `SuffStatsRelease`; keyword arguments go to the method.

    ``method`` is one of ``"mcmc_normalX"`` (Algorithm 16), ``"mcmc_fixedS"`` (Algorithm 17),
    ``"bayes_fixedS_fast"`` (Algorithm 18), ``"mcmc_bs"`` (§7.1.2, needs ``scheme="szu"``) and
    ``"adassp"`` (§7.1.1, needs ``scheme="adassp"``; deterministic, takes no ``rng``).
    Returns a `RegressionFit`.
    """
    if method not in METHODS:
        raise ValueError(
            f"method must be one of {sorted(METHODS)}, got method={method!r}. "
            "See pymc_dp.regression.METHODS."
        )
    if method == "adassp":
        return adassp(stats, **kwargs)
    return METHODS[method](stats, rng=rng, **kwargs)
