"""Discrete θ with a finite support bounding discrete records (issue 17.2): `pdp.EnumeratedParents`."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.sampling import assigned

N, S = 20, 23.0


def _model(prior=lambda: pm.DiscreteUniform("up", 1, 5)):
    with pm.Model() as model:
        up = prior()
        x = pm.DiscreteUniform("x", 0, up, shape=N)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=5),
            mechanism=pdp.DiscreteLaplace(epsilon=1.0),
            observed=S,
        )
    return model


def exact_up(s=S, n=N):
    """P(up = v | s) for v = 1..5: Σx by convolution of uniforms on 0..v, DiscreteLaplace(scale 5)."""
    out = []
    for v in range(1, 6):
        pmf = np.array([1.0])
        for _ in range(n):
            pmf = np.convolve(pmf, np.ones(v + 1) / (v + 1))
        k = np.arange(len(pmf))
        out.append(np.log(np.sum(pmf * np.exp(-np.abs(s - k) / 5.0))))
    w = np.exp(np.array(out) - max(out))
    return w / w.sum()


def test_default_assignment_enumerates_the_discrete_bound():
    """Old code: Metropolis on up and DataAugmentation on x (stuck: R-hat 2.4)."""
    assert assigned(_model()) == {"EnumeratedParents": ["up", "x"]}


@pytest.mark.slow
def test_conditional_is_the_enumerated_posterior():
    model = _model()
    with model:
        step = pdp.EnumeratedParents([model["up"], model["x"]])
    values, lp = step.conditional(model.initial_point())
    assert [v[0] for v in values] == [1, 2, 3, 4, 5]
    np.testing.assert_allclose(np.exp(lp), exact_up(), rtol=1e-8)


def test_bound_reading_an_unbounded_parameter_is_refused_not_drawn():
    """Old code evaluated the bound's graph, i.e. drew `up` from its prior, and planned the records'
    support from that random draw; now the plan is refused with the reason."""
    model = _model(lambda: pm.Geometric("up", 0.3))
    with pytest.raises(ValueError, match=r"upper bound of record variable 'x' depends on \['up'\]"):
        pdp.marginal.collapsed_plans(model, records=["x"])
    assert "EnumeratedParents" not in assigned(model)


def test_refusals_name_the_parameter():
    model = _model(lambda: pm.Geometric("up", 0.3))
    with model, pytest.raises(ValueError, match="'up'.*finite support"):
        pdp.EnumeratedParents([model["up"], model["x"]])
    model = _model()
    with model, pytest.raises(ValueError, match="needs discrete records"):
        pdp.EnumeratedParents([model["up"]])


@pytest.mark.slow
def test_cores_2_draws_what_cores_1_draws():
    from tests.support.sampling import sample

    a = sample(_model(), draws=30, tune=30, seed=4, cores=2)
    b = sample(_model(), draws=30, tune=30, seed=4, cores=1)
    np.testing.assert_array_equal(a.posterior["up"].values, b.posterior["up"].values)
    np.testing.assert_array_equal(a.posterior["x"].values, b.posterior["x"].values)


def test_a_release_changed_after_the_step_was_built_is_refused():
    """The collapsed likelihood is planned for the release's value: a pm.set_data afterwards must not
    be sampled silently with the old plan."""
    with pm.Model() as model:
        obs = pm.Data("obs", S)
        up = pm.DiscreteUniform("up", 1, 5)
        x = pm.DiscreteUniform("x", 0, up, shape=N)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=5),
            mechanism=pdp.DiscreteLaplace(epsilon=1.0),
            observed=obs,
        )
        step = pdp.EnumeratedParents([up, x])
        point = model.initial_point()
        step.step(point)
        pm.set_data({"obs": 40.0})
        with pytest.raises(ValueError, match="changed after pdp.EnumeratedParents was built"):
            step.step(point)
