r"""Tuning diagnostics for the samplers: the pseudo-marginal noise of PMMH and integrated autocorrelation.

PMMH mixes well when the standard deviation of `\log\hat Z(\theta)` at typical θ is about 1
(Doucet, Pitt, Deligiannidis & Kohn 2015 recommend 1.0–1.7 with the optimum near 1.2); the variance
of `\log\hat Z` falls like 1/N in the number of particles, so one pilot estimate tells how many
particles to use.
"""

from __future__ import annotations

import math

import numpy as np

from pymc_dp._checks import check_positive

__all__ = ["iac", "loglik_estimate_sd", "particles_for_sd"]


def loglik_estimate_sd(step, point, *, repeats: int = 200, rng=None) -> float:
    r"""Standard deviation of PMMH's `\log\hat Z(\theta)` at the θ in ``point`` over ``repeats`` estimates.

    ``step`` is a `pymc_dp.PMMH` (or `pymc_dp.MHAAR`: the same conditional-prior
    estimate with its ``n_particles``, whose noise drives the noise of MHAAR's averaged ratio) built
    in the model; ``point`` a point of that model (e.g. ``model.initial_point()`` or a posterior
    draw as a dict of value-space arrays). With local releases the estimate is the factorised
    product over records (and exact, sd 0, for records with a small finite support).
    """
    from pymc_dp.samplers.mhaar import MHAAR
    from pymc_dp.samplers.pmmh import PMMH

    if not isinstance(step, PMMH | MHAAR):
        raise TypeError(
            f"step must be a pymc_dp.PMMH, got {type(step).__name__}. (or a pymc_dp.MHAAR): the "
            "diagnostic is the noise of their particle estimate of p(s_dp | θ)."
        )
    if isinstance(repeats, bool) or not isinstance(repeats, int | np.integer) or repeats < 2:
        raise ValueError(
            f"repeats must be an integer >= 2, got repeats={repeats!r}. Use e.g. repeats=200."
        )
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator, got {type(rng).__name__}. "
            "Pass rng=np.random.default_rng(seed) so the diagnostic is reproducible."
        )
    logs = np.array([step.loglik_estimate(point, rng) for _ in range(int(repeats))])
    if not np.all(np.isfinite(logs)):
        raise ValueError(
            "some likelihood estimates are zero at this θ (every particle has zero weight): the "
            "particles miss the release. Use more particles or an importance proposal (PMMH(proposal=...))."
        )
    return float(np.std(logs, ddof=1))


def particles_for_sd(sd: float, n_particles: int, *, target: float = 1.2) -> int:
    r"""Particles that bring ``sd`` (measured with ``n_particles``) to ``target``: N·(sd/target)², at least 1.

    Uses Var(log Ẑ) ∝ 1/N, which holds once N is large enough that log Ẑ is close to Gaussian.
    """
    sd = float(sd)
    if not (math.isfinite(sd) and sd >= 0):
        raise ValueError(
            f"sd must be finite and >= 0, got sd={sd!r}. Measure it with loglik_estimate_sd."
        )
    if (
        isinstance(n_particles, bool)
        or not isinstance(n_particles, int | np.integer)
        or n_particles < 1
    ):
        raise ValueError(f"n_particles must be an integer >= 1, got n_particles={n_particles!r}.")
    target = check_positive(
        target, name="target", fix="The recommended target is 1.0-1.7 (default 1.2)."
    )
    return max(1, math.ceil(n_particles * (sd / target) ** 2))


def iac(idata, var_names=None) -> dict:
    """Integrated autocorrelation time per variable: draws per chain × chains / ESS (ArviZ bulk ESS).

    Returns ``{name: array}`` (one entry per element of a vector variable). Works with ArviZ 0.2x
    ``InferenceData`` and ArviZ 1.x ``DataTree``.
    """
    import arviz as az

    post = idata["posterior"] if not hasattr(idata, "posterior") else idata.posterior
    names = list(post.data_vars) if var_names is None else list(var_names)
    ess = az.ess(idata, var_names=names)
    total = post.sizes["chain"] * post.sizes["draw"]
    return {name: total / np.asarray(ess[name]) for name in names}
