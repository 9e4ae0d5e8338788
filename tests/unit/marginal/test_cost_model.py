"""The collapsed cost model is configuration: documented defaults, overridable per call."""

import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.marginal import MAX_SECONDS, SECONDS_PER_TERM, CostModel


def _slow_model():
    with pm.Model() as m:
        x = pm.Binomial("x", 30, pm.Beta("p", 1, 1), shape=400)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=29),
            mechanism=pdp.Laplace(epsilon=1),
            observed=10,
        )
    return m


def _small_model():
    with pm.Model() as m:
        x = pm.Bernoulli("x", pm.Beta("p", 1, 1), shape=5)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=1),
            mechanism=pdp.Laplace(epsilon=1),
            observed=2,
        )
    return m


def test_defaults_and_override():
    assert CostModel().seconds_per_term == SECONDS_PER_TERM
    assert CostModel().max_seconds == MAX_SECONDS
    m = _slow_model()
    with pytest.raises(ValueError, match=re.escape("above the 30 ms where data augmentation")):
        pdp.marginal.collapsed_plans(m)
    (plan,) = pdp.marginal.collapsed_plans(m, cost=CostModel(max_seconds=100.0)).values()
    seconds = CostModel().seconds(plan)
    assert seconds > MAX_SECONDS
    assert seconds == plan.cost * SECONDS_PER_TERM["convolution"]
    # a machine 1000 times faster per term accepts the same plan under the default limit
    fast = CostModel(seconds_per_term={"convolution": SECONDS_PER_TERM["convolution"] / 1000})
    assert fast.seconds(plan) == pytest.approx(seconds / 1000) and fast.seconds(plan) < MAX_SECONDS
    assert list(pdp.marginal.collapsed_plans(m, cost=fast)) == ["x"]
    # and a tighter limit refuses a plan the default accepts, in marginalize too
    small = _small_model()
    assert "x" not in pdp.marginalize(small).named_vars
    with pytest.raises(ValueError, match=re.escape("above the 0 ms where data augmentation")):
        pdp.marginalize(small, cost=CostModel(max_seconds=1e-12))


def test_cost_model_is_checked():
    with pytest.raises(ValueError, match=r"unknown routes \['gpu'\]"):
        CostModel(seconds_per_term={"gpu": 1e-9})
    with pytest.raises(ValueError, match="must be a positive number"):
        CostModel(seconds_per_term={"local": 0.0})
    with pytest.raises(ValueError, match="max_seconds must be a positive number"):
        CostModel(max_seconds=-1)
    with pytest.raises(TypeError, match="cost must be a pymc_dp.marginal.CostModel"):
        pdp.marginalize(_slow_model(), cost=0.1)
    assert np.isfinite(CostModel(max_seconds=1).max_seconds)


def test_units_of_work_are_configuration_too():
    """The warm-up decisions (DataAugmentation's θ-move, Collapsed's tries) price counted work with
    `seconds_per_unit`; the records draw of a plan with `draw_seconds_per_term`."""
    from pymc_dp.samplers.cost import DRAW_SECONDS, SECONDS_PER_UNIT

    assert CostModel().seconds_per_unit == SECONDS_PER_UNIT
    slow = CostModel(seconds_per_unit={"interweave_eval": 1.0})
    assert slow.unit("interweave_eval") == 1.0 and slow.unit("sweep") == SECONDS_PER_UNIT["sweep"]
    with pytest.raises(ValueError, match=r"unknown units \['clock'\]"):
        CostModel(seconds_per_unit={"clock": 1.0})
    with pytest.raises(ValueError, match=r"seconds_per_unit\['sweep'\] must be a positive"):
        CostModel(seconds_per_unit={"sweep": -1.0})
    (plan,) = pdp.marginal.collapsed_plans(_small_model()).values()
    assert CostModel().draw_seconds(plan) == pytest.approx(
        DRAW_SECONDS["convolution"] * plan.law.n * plan.length * plan.n_cells
    )
    with _small_model():
        fast = pdp.DataAugmentation(cost=slow)
    assert fast.cost is slow
    with pytest.raises(TypeError, match="cost must be a pymc_dp.marginal.CostModel"):
        with _small_model():
            pdp.DataAugmentation(cost=1e-3)
