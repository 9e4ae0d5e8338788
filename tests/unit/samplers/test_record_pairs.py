"""DataAugmentation's pair moves (`pymc_dp.samplers.record_pairs`): their terms against PyMC's own
log density on random model variants, the accept rule against the joint logp, the ``pairs=``
decisions and refusals, warm-up-only tuning."""

import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.replace import graph_replace

import pymc_dp as pdp
from pymc_dp.samplers.record_pairs import pair_sweep_core

# (name, the records given θ, their statistic)
_FAMILIES = [
    ("normal", lambda th, n: pm.Normal("x", th, 1.5, shape=n), pdp.Sum(-3, 4)),
    ("exponential", lambda th, n: pm.Exponential("x", pm.math.exp(th), shape=n), pdp.Sum(0, 2)),
    ("gamma", lambda th, n: pm.Gamma("x", 2.0, pm.math.exp(th), shape=n), pdp.Mean(0, 3)),
    ("beta", lambda th, n: pm.Beta("x", pm.math.exp(th), 2.0, shape=n), pdp.Sum(0, 1)),
    (
        "lognormal",
        lambda th, n: pm.LogNormal("x", th, 0.7, shape=n),
        pdp.Sum(0, 5, fn=lambda x: 2 * x),
    ),
    ("poisson", lambda th, n: pm.Poisson("x", pm.math.exp(th), shape=n), pdp.Sum(0, 6)),
    ("binomial", lambda th, n: pm.Binomial("x", 7, pm.math.sigmoid(th), shape=n), pdp.Mean(0, 7)),
    # an integer law PyMC builds symbolically: a CustomDist whose logp graph PyMC derives from a
    # clone of θ (read through the model's values, never drawn afresh)
    (
        "customdist",
        lambda th, n: pm.CustomDist(
            "x",
            th,
            dist=lambda t, size: pm.Poisson.dist(pm.math.exp(t) + 1, size=size) + 1,
            shape=n,
        ),
        pdp.Sum(0, 8),
    ),
]


def _model(family, n, rng, epsilon=30.0):
    _, dist, stat = family
    with pm.Model() as model:
        th = pm.Normal("th", 0.3, 0.5)
        x = dist(th, n)
        draw = pm.draw(x, random_seed=rng)
        s = float(stat.value(draw)) if hasattr(stat, "value") else float(np.sum(draw))
        pdp.DPObserved("s", x, statistic=stat, mechanism=pdp.Laplace(epsilon=epsilon), observed=s)
    return model


def _value_of(model, point):
    """Natural records -> the records' value (PyMC's forward transform at θ of ``point``),
    compiled once."""
    rv = model["x"]
    tr = model.rvs_to_transforms.get(rv)
    if tr is None:
        return lambda x: x
    xin = pt.vector("xin", dtype=rv.dtype)
    th = pt.constant(np.asarray(point["th"], dtype="float64"))
    value = graph_replace(tr.forward(xin, *rv.owner.inputs), {model["th"]: th}, strict=False)
    return pytensor.function([xin], value, on_unused_input="ignore")


def _point_with(model, point, x, value_of):
    """``point`` with the records at natural values ``x``."""
    name = model.rvs_to_values[model["x"]].name
    return {**point, name: np.asarray(value_of(x)).astype(point[name].dtype)}


@pytest.mark.parametrize("k", range(len(_FAMILIES)))
def test_pair_moves_match_pymc_logp(k):
    """What a pair move reads, against PyMC on random θ, records and ε: the records' log
    densities at natural records (``pm.logp`` per record, no Jacobian), their contributions (the
    block's own) and values (the forward transform); and for pairs (x_i + δ, x_j − δ) the accept
    rule: accepted exactly when the log ratio reaches PyMC's joint log density difference (records
    and release, no Jacobian), to 1e-8 (exponentials set just below and just above it)."""
    rng = np.random.default_rng(40 + k)
    n = int(rng.integers(3, 7))
    model = _model(_FAMILIES[k], n, rng, epsilon=float(rng.uniform(1.0, 40.0)))
    with model:
        step = pdp.DataAugmentation([model["x"]], pairs=True, rng=1)
    pairs, group = step._pairs[0], step.groups[0]
    block = group.block
    point = model.initial_point(0)
    point["th"] = np.asarray(rng.normal(0.3, 0.5))

    def records():
        return np.asarray(pm.draw(model["x"], givens={model["th"]: point["th"]}, random_seed=rng))

    value_of = _value_of(model, point)
    x = records()
    lp, add, value = pairs.terms(point, x)
    with_x = _point_with(model, point, x, value_of)
    np.testing.assert_allclose(value, with_x[block.value_names[0]], rtol=1e-12)
    per_record = model.compile_fn(
        model.logp(vars=[model["x"]], jacobian=False, sum=False)[0], point_fn=True
    )
    np.testing.assert_allclose(lp, per_record(with_x), rtol=1e-10)
    np.testing.assert_allclose(add, block.contributions(with_x)[0], rtol=1e-12)

    joint = model.compile_fn(model.logp(jacobian=False), point_fn=True)
    add_r, tab = block.releases()[0], group.add_table
    checked = 0
    for _ in range(40):
        x = records()
        i, j = (int(v) for v in rng.choice(n, 2, replace=False))
        shift_x = int(rng.integers(1, 3)) if pairs.integer else float(rng.normal(0, 0.3))
        prop = x.copy()
        prop[i] += shift_x
        prop[j] -= shift_x
        want = joint(_point_with(model, point, prop, value_of)) - joint(
            _point_with(model, point, x, value_of)
        )
        if not np.isfinite(want):  # out of the records' support: the move rejects (NaN or −inf)
            continue
        lp_cur, t_cur, _ = pairs.terms(point, x)
        lp_prop, t_prop, _ = pairs.terms(point, prop)
        for shift, accept in ((-1e-8, True), (1e-8, False)):
            got = pair_sweep_core(
                np.array([i, j], dtype=np.int64),
                lp_cur,
                lp_prop,
                t_cur.copy(),
                t_prop,
                tab.codes,
                tab.a,
                tab.b,
                tab.c,
                add_r,
                np.array([-(want + shift)]),
                np.zeros(n, dtype=np.bool_),
            )
            assert got == int(accept), (want, shift)
        checked += 1
    assert checked >= 10


def _strong(n=8, epsilon=60.0):
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2, 1)
        x = pm.Exponential("x", lam, shape=n)
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(0, 2), mechanism=pdp.Laplace(epsilon=epsilon), observed=4.0
        )
    return model


def test_auto_runs_pairs_under_a_strong_release_only():
    """``pairs="auto"``: on when the release's noise sd is below one record's contribution sd
    (n = 8, Sum(0, 2), ε = 60: ratio about 0.1), off at ε = 1 (ratio about 6), with the ratio and
    the reason in ``pair_decisions`` and ``route()``."""
    with _strong():
        on = pdp.DataAugmentation(rng=1)
    with _strong(epsilon=1.0):
        off = pdp.DataAugmentation(rng=1)
    (d_on,), (d_off,) = on.pair_decisions, off.pair_decisions
    assert d_on["enabled"] and d_on["ratio"] < 0.3 and "crawl" in d_on["reason"]
    assert not d_off["enabled"] and d_off["ratio"] > 2 and "suffice" in d_off["reason"]
    assert on.route()["pairs"][0]["enabled"] and off._pairs == [None]


def test_pairs_refused_where_they_cannot_run():
    """Records that cannot take pair moves: ``pairs=True`` names why; ``"auto"`` leaves them off
    with the reason; a bad value is refused."""
    with pm.Model():
        p = pm.Dirichlet("p", np.ones(3))
        z = pm.Categorical("z", p, shape=20)
        pdp.DPObserved(
            "c", z, statistic=pdp.Counts(3), mechanism=pdp.Laplace(epsilon=30.0), observed=[7, 7, 6]
        )
        with pytest.raises(ValueError, match=r"pairs=True.*Counts"):
            pdp.DataAugmentation([z], pairs=True)
        step = pdp.DataAugmentation([z], rng=1)
        assert not step.pair_decisions[0]["enabled"]
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        x = pm.Normal("x", mu, 1, shape=(10, 2))
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(-2, 2),
            mechanism=pdp.Laplace(epsilon=30.0),
            observed=[1.0, 2.0],
        )
        with pytest.raises(ValueError, match=r"not one scalar per record"):
            pdp.DataAugmentation([x], pairs=True)
    for records in (
        lambda: pm.Censored("x", pm.Normal.dist(mu, 1), lower=None, upper=0.5, shape=10),
        lambda: pm.HurdleGamma("x", psi=0.7, alpha=2.0, beta=1.0, shape=10),
    ):
        with pm.Model():
            mu = pm.Normal("mu", 0, 1)
            x = records()
            pdp.DPObserved(
                "s", x, statistic=pdp.Sum(-3, 3), mechanism=pdp.Laplace(epsilon=30.0), observed=1.0
            )
            with pytest.raises(ValueError, match=r"pairs=True.*point masses"):
                pdp.DataAugmentation([x], pairs=True)
            step = pdp.DataAugmentation([x], rng=1)
            assert not step.pair_decisions[0]["enabled"]
            assert "point masses" in step.pair_decisions[0]["reason"]
    with _strong():
        with pytest.raises(ValueError, match=r"pairs must be 'auto', True or False.*'yes'"):
            pdp.DataAugmentation(pairs="yes")


def test_step_tuned_in_warm_up_only():
    """Each chain's first sweep sets h to the records' prior spread; warm-up moves it towards the
    target acceptance (from 50 times too wide it shrinks), and it stays put after warm-up."""
    model = _strong()
    with model:
        step = pdp.DataAugmentation(rng=1)
    pairs = step._pairs[0]
    point = model.initial_point(0)
    step.start_chain()
    assert pairs.h is None
    step.tune = True
    point, _ = step.step(point)
    h0 = pairs.h0
    assert math.isfinite(h0) and 0.1 < h0 < 2.0  # Exponential(λ ≈ 2) records: sd about 0.5
    pairs.h = 50 * h0
    for _ in range(60):
        point, _ = step.step(point)
    tuned = pairs.h
    assert tuned < 10 * h0
    step.tune = False
    for _ in range(10):
        point, (stats,) = step.step(point)
        assert 0.0 <= stats["dp_pair_accept"] <= 1.0
    assert pairs.h == tuned
    step.start_chain()
    assert pairs.h is None


def test_decision_and_chain_reproducible_by_seed():
    """``pm.sample()`` builds the step without a generator: the pair decision's probe is then
    seeded by the initial point (one model, one decision, one chain per ``random_seed``); a step
    built with another generator decides the same here and gives the same chain for one sampling
    seed (the pairs' scale comes from the chain's own generator, not from construction)."""
    model = _strong()
    with model:
        point = model.initial_point(0)
        a = pdp.DataAugmentation(initial_point=point).pair_decisions[0]
        b = pdp.DataAugmentation(initial_point=point).pair_decisions[0]
        runs = [
            pm.sample(
                draws=30,
                tune=30,
                chains=1,
                random_seed=3,
                progressbar=False,
                compute_convergence_checks=False,
                step=step,
            )
            for step in (
                None,
                None,
                [pdp.DataAugmentation([model["x"]], rng=1)],
                [pdp.DataAugmentation([model["x"]], rng=2)],
            )
        ]
    assert a == b and a["enabled"]
    np.testing.assert_array_equal(runs[0].posterior["x"], runs[1].posterior["x"])
    np.testing.assert_array_equal(runs[2].posterior["x"], runs[3].posterior["x"])
    assert np.isfinite(runs[0].sample_stats["dp_pair_accept"]).all()
    assert np.unique(runs[2].posterior["x"].values[..., 0]).size > 5  # the records moved
