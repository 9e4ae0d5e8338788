"""pdp.Collapsed follows a new release in ``pm.Data`` without compiling again when only the noise
table of its plan changes, draws exactly what a step built for that release draws, and refuses a
release whose plan needs another support or other release rows."""

from __future__ import annotations

import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.sbc import bernoulli_local, bernoulli_sum


def _chain(step, model, seed, tune=100, draws=40):
    """Warm-up from the model's initial point, then draws: (p value, records) per iteration."""
    step.set_rng(np.random.default_rng(seed))  # a new chain: adaptation and caches reset
    point = model.initial_point(random_seed=0)
    out = []
    for i in range(tune + draws):
        if i == tune:
            step.stop_tuning()
        point, _ = step.step(point)
        out.append((float(point["p_logodds__"]), np.array(point["x"])))
    return out


def _assert_same(a, b):
    assert len(a) == len(b)
    for (pa, xa), (pb, xb) in zip(a, b, strict=True):
        assert pa == pb
        np.testing.assert_array_equal(xa, xb)


def test_a_reused_step_draws_what_a_fresh_step_draws_for_the_new_release():
    model, simulate, _ = bernoulli_sum()
    rng = np.random.default_rng(3)
    releases = [simulate(rng)[2] for _ in range(3)]
    pm.set_data({"obs": releases[0]}, model=model)
    with model:
        reused = pdp.Collapsed()
    fn = reused._logp
    _chain(reused, model, seed=1, tune=60, draws=5)
    for k, s in enumerate(releases[1:]):
        pm.set_data({"obs": s}, model=model)
        with model:
            fresh = pdp.Collapsed()
        _assert_same(_chain(reused, model, seed=10 + k), _chain(fresh, model, seed=10 + k))
        assert reused._logp is fn  # nothing compiled again
        np.testing.assert_array_equal(reused.plans["x"].eta, fresh.plans["x"].eta)
    # the likelihood is that of the last release, not of the one the step was built with
    theta = np.array([0.3])
    assert float(reused._logp(theta)) == float(fresh._logp(theta))


def test_a_changed_release_is_followed_inside_a_chain():
    """pm.set_data between two iterations: the next iteration uses the new release (no stale
    cached log density)."""
    model, simulate, _ = bernoulli_sum()
    rng = np.random.default_rng(5)
    s0, s1 = simulate(rng)[2], simulate(rng)[2] + 4.0
    pm.set_data({"obs": s0}, model=model)
    with model:
        step = pdp.Collapsed()
    point = model.initial_point(random_seed=0)
    point, _ = step.step(point)
    pm.set_data({"obs": s1}, model=model)
    point, _ = step.step(point)
    with model:
        fresh = pdp.Collapsed()
    assert step._cache[2] == pytest.approx(float(fresh._logp(step._cache[1])), abs=0, rel=0)


def test_refuses_a_release_whose_plan_changes_more_than_its_noise_table():
    """Local releases are planned per distinct release row: a new release with other rows needs
    another plan, so the step refuses it (it would sample the old release's posterior)."""
    model, simulate, _ = bernoulli_local()
    r = np.array([0, 1] * 6, dtype="int64")
    pm.set_data({"obs": r}, model=model)
    with model:
        step = pdp.Collapsed()
    point = model.initial_point(random_seed=0)
    point, _ = step.step(point)  # the release it was built with: fine
    pm.set_data({"obs": r[::-1].copy()}, model=model)  # same rows, other records: followed
    assert step.follow_releases()
    point, _ = step.step(point)
    pm.set_data({"obs": np.zeros(12, dtype="int64")}, model=model)  # one distinct row only
    assert not step.follow_releases()
    with pytest.raises(
        ValueError, match=re.escape("changed after pdp.Collapsed was built (pm.set_data)")
    ):
        step.step(point)


def test_a_marginalized_model_follows_the_release_of_its_original():
    """``follow_releases(marginalize(model))`` after pm.set_data on ``model``: the compiled log
    density is that of a model marginalized for the new release (nothing compiled again); a
    release that needs another plan is refused (False) and changes nothing."""
    from pymc_dp.marginal import follow_releases

    model, simulate, _ = bernoulli_sum()
    rng = np.random.default_rng(11)
    pm.set_data({"obs": simulate(rng)[2]}, model=model)
    new = pdp.marginalize(model)
    logp = new.compile_logp()
    s1 = simulate(rng)[2] + 2.0
    pm.set_data({"obs": s1}, model=model)
    assert follow_releases(new)
    fresh = pdp.marginalize(model).compile_logp()
    for t in (-2.0, 0.0, 0.7, 3.0):
        assert logp({"p_logodds__": t}) == fresh({"p_logodds__": t})

    local, _, _ = bernoulli_local()
    pm.set_data({"obs": np.array([0, 1] * 6, dtype="int64")}, model=local)
    new = pdp.marginalize(local)
    before = new.compile_logp()({"p_logodds__": 0.3})
    pm.set_data({"obs": np.zeros(12, dtype="int64")}, model=local)
    assert not follow_releases(new)
    assert new.compile_logp()({"p_logodds__": 0.3}) == before
