"""Every self-computed conditional update agrees with PyMC's own joint log density (STYLE 15).

For a step that draws θ (or records) from a conditional q it computes itself, on random model
variants (``tests/support/variants.py``) and random states: log q(θ′ | rest) − log q(θ | rest) must
equal logp(θ′, rest) − logp(θ, rest) of ``model.compile_logp()`` — Geweke (2004)'s "getting it
right" applied to one update. The accessors used (``ConjugateTheta.conditional``,
``SufficientTheta.conditional_logp``, ``InterweaveTarget.logp``, ``Collapsed.record_logq``) are the
code paths the steps draw with. Graphs compile in FAST_COMPILE mode (the same dtypes and arithmetic,
far faster to build) to keep the file fast.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytest
from pymc.logprob.utils import replace_rvs_by_values

import pymc_dp as pdp
from tests.support import variants as V

TOL = 1e-8
N_VARIANTS = 40


@pytest.fixture(autouse=True)
def _fast_compile():
    with pytensor.config.change_flags(mode="FAST_COMPILE"):
        yield


def _natural_fn(model, names):
    rvs = [model[n] for n in names]
    outs = replace_rvs_by_values(rvs, rvs_to_values=model.rvs_to_values, rvs_to_transforms=model.rvs_to_transforms)
    fn = pm.compile(model.value_vars, outs, on_unused_input="ignore")
    order = [v.name for v in model.value_vars]
    return lambda point: dict(zip(names, fn(*[point[n] for n in order])))


def _close(lhs, rhs, label):
    assert np.isfinite(lhs) and np.isfinite(rhs), f"{label}: {lhs} vs {rhs}"
    assert abs(lhs - rhs) <= TOL * max(1.0, abs(rhs)), f"{label}: conditional {lhs!r} vs model {rhs!r}"


# ------------------------------------------------------------------------------- ConjugateTheta
def _check_conjugate(variant, rng, k=2):
    model = variant.model
    with model:
        step = pdp.ConjugateTheta([model[n] for n in variant.vars])
    logp = model.compile_logp(jacobian=False)  # θ in natural space: no Jacobian on either side
    natural = _natural_fn(model, variant.vars)
    for point in V.points(model, rng, k):
        cond = step.conditional(point)
        new, _ = step.step(point)
        before, after = natural(point), natural(new)
        for name in variant.vars:
            lhs = cond[name].logpdf(after[name]) - cond[name].logpdf(before[name])
            moved = {**point, model.rvs_to_values[model[name]].name: new[model.rvs_to_values[model[name]].name]}
            _close(lhs, float(logp(moved) - logp(point)), f"{variant.label} [{name}]")


@pytest.mark.parametrize("sd", [100, 16, 20])
def test_conjugate_int8_prior_sd(sd):
    """Issue 17: int8 constants of pm.Normal("mu", 0, sd); 100² and 16² overflowed in int8."""
    rng = np.random.default_rng(sd)
    variant = V.int8_normal(sd)
    assert variant.model["mu"].owner.inputs[-1].dtype == "int8"
    _check_conjugate(variant, rng, k=3)
    with variant.model:
        step = pdp.ConjugateTheta([variant.model["mu"]])
    point = {**variant.model.initial_point(0), "x": np.ones(20)}
    mean, sd_post = step.conditional(point)["mu"].params
    prec = 20 + 1 / sd**2
    np.testing.assert_allclose([mean, sd_post], [20 / prec, prec**-0.5], rtol=1e-12)


def test_conjugate_random_variants():
    rng = np.random.default_rng(1701)
    kinds = set()
    for _ in range(N_VARIANTS):
        variant = V.conjugate_variant(rng)
        kinds.add(variant.label.split()[0])
        _check_conjugate(variant, rng)
    assert kinds == {"normal", "linear", "beta", "gamma", "inverse_gamma", "dirichlet"}
