"""Route rules of the default assignment (issue 17): the warm-up measurement that keeps or drops
the non-centred θ-move (``InterweaveTrial``, frozen when tuning ends, reported in ``dp_route`` and
``interweave_decisions``), coupled hierarchical parameters left to NUTS, and the θ-move on a
regression whose covariates do not read θ."""

from __future__ import annotations

import numpy as np
import pymc as pm

import pymc_dp as pdp
from pymc_dp.samplers.assign import coupled_parameters
from pymc_dp.samplers.interweave import InterweaveTarget, InterweaveTrial
from tests.support.sampling import assigned
from tests.support.user_models import hierarchical_groups, normal_scale, regression_user


def _feed(trial, rng, iters, centred_sd, move_sd, seconds, move_seconds):
    theta = np.zeros(2)
    for _ in range(iters):
        theta_in = theta + rng.normal(0, centred_sd, 2)
        theta = theta_in + rng.normal(0, move_sd, 2)
        trial.record(theta_in, theta, seconds, move_seconds)


def test_trial_keeps_a_move_that_carries_theta():
    trial = InterweaveTrial(False, "release informative: r = 0.3 <= 1.0")
    _feed(
        trial,
        np.random.default_rng(0),
        201,
        centred_sd=0.01,
        move_sd=1.0,
        seconds=2e-3,
        move_seconds=1e-3,
    )
    assert trial.full
    enabled, reason = trial.decide()
    assert enabled and reason.startswith("measured at warm-up over 100 iterations")
    _feed(
        trial,
        np.random.default_rng(1),
        50,
        centred_sd=1.0,
        move_sd=0.0,
        seconds=1.0,
        move_seconds=0.9,
    )
    assert trial.decide() == (enabled, reason)  # frozen
    trial.reset()
    assert trial.decision is None and not trial.rows


def test_trial_drops_a_move_that_only_costs_time():
    trial = InterweaveTrial(True, "release weak: r = 2 > 1.0")
    _feed(
        trial,
        np.random.default_rng(2),
        200,
        centred_sd=1.0,
        move_sd=0.05,
        seconds=2e-3,
        move_seconds=1e-3,
    )
    enabled, reason = trial.decide()
    assert not enabled and "with the move" in reason


def test_short_tuning_keeps_the_ratio_rule():
    trial = InterweaveTrial(True, "release weak: r = 2 > 1.0")
    _feed(
        trial,
        np.random.default_rng(3),
        30,
        centred_sd=1.0,
        move_sd=0.0,
        seconds=1e-3,
        move_seconds=1e-4,
    )
    assert trial.decide() == (
        True,
        ("release weak: r = 2 > 1.0 (tuning too short to measure: 15 < 40 iterations)"),
    )


def test_coupled_hierarchical_parameters_keep_nuts():
    model, _ = hierarchical_groups(n=5, groups=2)
    assert [v.name for v in coupled_parameters(model, model["z"])] == ["mu0", "tau"]
    # before: ConjugateTheta[mu0, z] + SufficientTheta[tau]
    assert assigned(model) == {"NUTS": ["mu0", "tau_log__", "z"], "DataAugmentation": ["x0", "x1"]}
    model, _ = normal_scale(n=5)  # location and scale: different parameters, not coupled
    assert (
        coupled_parameters(model, model["mu"]) == []
        and coupled_parameters(model, model["sigma"]) == []
    )
    model, _ = regression_user(n=5)  # the covariates are records, not parameters
    assert coupled_parameters(model, model["beta"]) == []


def test_regression_covariates_held_fixed_and_the_response_through_z():
    model, _ = regression_user(n=8)
    # before: ValueError "the records 'x' do not depend on vars=['beta']"
    target = InterweaveTarget(model, [model["beta"]], records=[model["x"], model["y"]])
    assert target.kinds == {"x": "fixed", "y": "location-scale"}


def test_default_sampling_measures_freezes_and_reports_the_route():
    model, _ = normal_scale(n=30)
    with model:
        step = pdp.DataAugmentation()
        idata = pm.sample(
            draws=30,
            tune=120,
            chains=2,
            cores=1,
            random_seed=5,
            progressbar=False,
            compute_convergence_checks=False,
            step=[step, pdp.ConjugateTheta([model["mu"]]), pdp.SufficientTheta([model["sigma"]])],
            discard_tuned_samples=False,
        )
    d = step.interweave_decisions[0]
    assert [m["reason"].split(" over")[0] for m in d["measured"]] == ["measured at warm-up"] * 2
    assert (np.asarray(idata.warmup_sample_stats["dp_route"]) == 1).all()  # measured all warm-up
    after = np.asarray(idata.sample_stats["dp_route"])
    for chain, m in enumerate(d["measured"]):
        assert (after[chain] == int(m["enabled"])).all()  # frozen: one route for all draws


def test_hierarchy_groups_share_one_theta_move():
    """Groups whose records share parents get one θ-move writing all of them (issue 17 (c)),
    always on (not measured by the warm-up trial; the weakness ratio is reported only)."""
    model, _ = hierarchical_groups(n=5, groups=3)
    with model:
        step = pdp.DataAugmentation()
    first, *others = step.interweave_decisions
    assert first["records"] == ["x0", "x1", "x2"]
    assert first["parents"] == ["mu0", "tau", "z"]
    assert first["enabled"] and first["ratio"] > 0
    assert "3 groups sharing parents" in first["reason"] and "measured" not in first
    assert step._movers[0].trial is None
    assert [d["records"] for d in others] == [["x1"], ["x2"]]
    assert all("moved by the θ-move of group 0" in d["reason"] for d in others)
    assert step._movers[1:] == [None, None]


def test_a_hierarchy_in_one_record_variable_keeps_its_theta_move_unmeasured():
    """x_i ~ N(mu0 + tau * z[g_i], 1) in one record variable, one vector release of per-group
    clamped sums: the warm-up trial dropped the θ-move in both chains (τ's ESS/draw 0.08-0.10;
    with the move 0.21-0.31). As for groups in separate variables it now always runs; a
    regression's coefficients (a + X @ b, b a vector) are still measured."""
    g = np.repeat(np.arange(4), 5)
    onehot = np.eye(4)[g]
    stat = pdp.RecordSum(lambda x: onehot * pm.math.clip(x, -3, 5)[:, None], sensitivity=8.0)
    with pm.Model():
        mu0 = pm.Normal("mu0", 0, 3)
        tau = pm.HalfNormal("tau", 1.5)
        z = pm.Normal("z", 0, 1, shape=4)
        x = pm.Normal("x", (mu0 + tau * z)[g], 1.0, shape=20)
        pdp.DPObserved(
            "s", x, statistic=stat, mechanism=pdp.Laplace(epsilon=1.0), observed=np.ones(4)
        )
        step = pdp.DataAugmentation([x])
    (d,) = step.interweave_decisions
    assert d["enabled"] and "a hierarchy in one record variable" in d["reason"]
    assert step._movers[0].trial is None
    cov = np.random.default_rng(0).normal(size=(20, 3))
    with pm.Model():  # a regression with a vector of coefficients: not indexed by group
        a = pm.Normal("a", 0, 3)
        b = pm.Normal("b", 0, 3, shape=3)
        x = pm.Normal("x", a + pm.math.dot(cov, b), 1.0, shape=20)
        pdp.DPObserved(
            "s", x, statistic=pdp.Mean(-3, 3), mechanism=pdp.Laplace(epsilon=1.0), observed=0.2
        )
        step = pdp.DataAugmentation([x])
    assert step._movers[0].trial is not None


def test_shared_parent_leaders_transitive():
    from pymc_dp.samplers.augmentation import _shared_parent_leaders

    a, b, c, d = "a", "b", "c", "d"
    assert _shared_parent_leaders([[a], [b], [b, c], [a, c], [d]]) == [0, 0, 0, 0, 4]
    assert _shared_parent_leaders([[], []]) == [0, 1]


def _route_run(model):
    with model:
        step = pdp.DataAugmentation()
        idata = pm.sample(
            draws=20,
            tune=200,
            chains=2,
            cores=1,
            random_seed=7,
            progressbar=False,
            compute_convergence_checks=False,
            step=[step, pdp.ConjugateTheta([model["mu"]]), pdp.SufficientTheta([model["sigma"]])],
        )
    draws = {k: idata.posterior[k].values for k in ("mu", "sigma", "x")}
    return draws, [m["enabled"] for m in step.interweave_decisions[0]["measured"]]


def test_same_seed_same_draws_however_slow_the_steps(monkeypatch):
    """No clock decides anything: the warm-up choice of the θ-move prices the work counted, so a
    θ-move or a sweep made 3–6 ms slower (tens of times their own cost) gives bit-identical draws. With wall-clock seconds
    (before), the slow move was dropped where it was kept and the slow sweep kept it where it was
    dropped (seed 7 gives a jump ratio near 1.5 in one chain and near 9 in the other)."""
    import time

    from pymc_dp.samplers import augmentation, interweave

    model, _ = normal_scale(n=30, eps=20.0)
    fast, routes = _route_run(model)
    move, kernel = interweave.Interweave.step, augmentation.augmentation_kernel

    def slow_move(self, point):
        time.sleep(0.006)
        return move(self, point)

    def slow_sweep(*args, **kwargs):
        time.sleep(0.003)
        return kernel(*args, **kwargs)

    for obj, name, slow in (
        (interweave.Interweave, "step", slow_move),
        (augmentation, "augmentation_kernel", slow_sweep),
    ):
        with monkeypatch.context() as patch:
            patch.setattr(obj, name, slow)
            draws, slow_routes = _route_run(model)
        assert slow_routes == routes, name
        for k, v in fast.items():
            assert np.array_equal(draws[k], v), (name, k)
