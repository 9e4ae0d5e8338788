"""pdp.ReleaseData keeps the Release check through a pm.Data container, pdp.set_release and
pm.set_data (issue 20 item 6); a plain pm.Data stays a bare array (existing workflows)."""

import re

import numpy as np
import pymc as pm
import pytest
from pymc.model.fgraph import clone_model

import pymc_dp as pdp

STAT, MECH = pdp.Sum(-3, 3), pdp.Laplace(epsilon=1.0)


def _release(seed, n=6, stat=STAT, mech=MECH, partition=None):
    rng = np.random.default_rng(seed)
    return pdp.release(rng.normal(size=n), stat, mech, rng=rng, partition=partition)


def _model(r):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        x = pm.Normal("x", mu, 1.0, shape=6)
        obs = pdp.ReleaseData("obs", r)
        pdp.DPObserved("s", x, statistic=STAT, mechanism=MECH, observed=obs)
    return model


def test_release_data_is_checked_at_dpobserved():
    r = _release(0, n=7)  # 7 records, the model has 6
    with (
        pm.Model(),
        pytest.raises(
            ValueError, match=re.escape("observed for 's' is a Release computed from n=7 records")
        ),
    ):
        x = pm.Normal("x", 0, 1, shape=6)
        pdp.DPObserved("s", x, statistic=STAT, mechanism=MECH, observed=pdp.ReleaseData("obs", r))


def test_set_release_rechecks_and_updates():
    model = _model(_release(0))
    f = model.compile_logp()
    point = {"mu": 0.0, "x": np.zeros(6)}
    before = f(point)
    new = _release(1)
    pdp.set_release({"obs": new}, model=model)
    assert model["obs"].get_value() == pytest.approx(float(new))
    assert f(point) != before
    assert pdp.dp_nodes(model)["s"].release_id == new.release_id


def test_mismatched_release_refused_by_set_release_and_set_data():
    """Old code (pm.Data): any value was taken, its metadata never looked at."""
    model = _model(_release(0))
    old = model["obs"].get_value()
    wrong = _release(1, mech=pdp.Laplace(epsilon=2.0))
    with pytest.raises(
        ValueError, match=re.escape("observed for 's' is a Release made with mechanism=")
    ):
        pdp.set_release({"obs": wrong}, model=model)
    # pm.set_data hands the container a Release (checked: ValueError) or its numbers (TypeError)
    with pytest.raises((ValueError, TypeError), match="mechanism=|must be a Release"):
        pm.set_data({"obs": wrong}, model=model)
    assert model["obs"].get_value() == old  # unchanged


def test_set_data_with_a_plain_array_refused():
    model = _model(_release(0))
    with pytest.raises(
        TypeError,
        match=re.escape(
            "the new value of the release container 'obs' must be a Release, got ndarray. It "
            "feeds DPObserved ['s']"
        ),
    ) as err:
        pm.set_data({"obs": np.asarray(_release(1))}, model=model)
    assert "pdp.set_release({'obs': release}, model=model)" in str(err.value)


def test_set_release_needs_a_release_container():
    with pm.Model() as model:
        x = pm.Normal("x", 0, 1, shape=6)
        obs = pm.Data("obs", 0.5)
        pdp.DPObserved("s", x, statistic=STAT, mechanism=MECH, observed=obs)
    with pytest.raises(TypeError, match=re.escape("'obs' is not a pdp.ReleaseData container")):
        pdp.set_release({"obs": _release(1)}, model=model)


def test_release_data_needs_a_release():
    with (
        pm.Model(),
        pytest.raises(
            TypeError,
            match=re.escape("release must be a Release returned by pdp.release, got float"),
        ),
    ):
        pdp.ReleaseData("obs", 1.5)


def test_release_data_partition_and_copies():
    r = _release(0, partition=("band", "a"))
    model = _model(r)
    copy = clone_model(model)
    node = pdp.dp_nodes(copy)["s"]
    assert node.partition == ("band", "a") and node.release_id == r.release_id
    with pytest.raises(TypeError, match="must be a Release"):
        pm.set_data({"obs": 0.3}, model=copy)  # the copy keeps the container's check
    pdp.set_release({"obs": _release(2)}, model=copy)


def test_same_release_data_container_in_two_nodes_refused():
    r = _release(0)
    with pm.Model(), pytest.raises(ValueError, match=re.escape("observes the same Release")):
        x = pm.Normal("x", 0, 1, shape=6)
        obs = pdp.ReleaseData("obs", r)
        pdp.DPObserved("s", x, statistic=STAT, mechanism=MECH, observed=obs)
        pdp.DPObserved("s2", x, statistic=STAT, mechanism=MECH, observed=r)


def test_plain_pm_data_still_takes_numbers():
    """The simulation workflow (tests/support/sbc.py): a plain pm.Data container, plain numbers."""
    with pm.Model() as model:
        x = pm.Normal("x", 0, 1, shape=6)
        obs = pm.Data("obs", 0.5)
        pdp.DPObserved("s", x, statistic=STAT, mechanism=MECH, observed=obs)
    pm.set_data({"obs": 2.0}, model=model)
    assert float(model["obs"].get_value()) == 2.0


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            4.5,
            "DiscreteLaplace releases integers, but observed for 's' has non-integer values [4.5]",
        ),
        (np.nan, "observed for 's' must be finite, got [nan]"),
        (np.inf, "observed for 's' must be finite, got [inf]"),
    ],
)
def test_plain_pm_data_gets_the_release_checks_at_set_data(bad, message):
    """Old code: PyMC cast the container to the release's int64 inside the graph, so 4.5 was read
    as 4 and NaN as -2^63 and sampled silently."""
    with pm.Model() as model:
        obs = pm.Data("obs", 4.0)
        p = pm.Beta("p", 2, 3)
        x = pm.Bernoulli("x", p, shape=12)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(0, 1),
            mechanism=pdp.DiscreteLaplace(epsilon=1.0),
            observed=obs,
        )
    with pytest.raises(ValueError, match=re.escape(message)):
        pm.set_data({"obs": bad}, model=model)
    assert float(model["obs"].get_value()) == 4.0  # the old value kept
    pm.set_data({"obs": 7.0}, model=model)  # an integer release is taken
    assert float(model["obs"].get_value()) == 7.0
    # the container survives PyMC's model copies with its checks
    copy = clone_model(model)
    with pytest.raises(ValueError, match=re.escape(message)):
        pm.set_data({"obs": bad}, model=copy)
