"""The one ``pm.sample`` call of the test suite: one process per chain set, quiet, seeded."""

from __future__ import annotations

import pymc as pm
from pymc.step_methods import STEP_METHODS

__all__ = ["assigned", "sample"]


def sample(
    model, step=None, *, draws: int, tune: int, chains: int = 2, seed, cores: int = 1, **kwargs
):
    """``pm.sample`` on ``model`` without progress bar or convergence checks → InferenceData.

    ``step=None`` lets PyMC (and pymc_dp's registered steps) assign the samplers; ``step`` may also be
    a zero-argument callable that builds the step(s) inside the model context. Extra keyword
    arguments (``discard_tuned_samples=False``, ...) go to ``pm.sample``.
    """
    with model:
        if callable(step):
            step = step()
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            step=step,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **kwargs,
        )


def assigned(model) -> dict:
    """The step methods ``pm.sample()`` would assign by itself: ``{class name: sorted value-var names}``."""
    from pymc.sampling.mcmc import assign_step_methods

    _, selected = assign_step_methods(model, None, methods=STEP_METHODS)
    return {cls.__name__: sorted(v.name for v in vars_) for cls, vars_ in selected.items()}
