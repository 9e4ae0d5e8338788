"""DataAugmentation: the compiled sweep vs a plain reference, step contract, refusals."""

import math
import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.mechanisms.base import kernel_logpdf
from pymc_dp.samplers.augmentation import augmentation_sweep
from tests.support.sampling import sample


def reference_sweep(t_cur, t_prop, codes, a, b, c, r, l_cur, l_prop, lcodes, la, lb, lr, u):
    """Algorithm 1 written plainly: recompute the statistic from scratch for every record."""
    t_cur, l_cur = t_cur.copy(), l_cur.copy()
    accepted = np.zeros(len(t_cur), dtype=bool)

    def loglik(t, lc, i):
        s = t.sum(axis=0)
        out = sum(kernel_logpdf(codes[j], a[j], b[j], r[j] - c[j] * s[j]) for j in range(len(r)))
        return out + sum(
            kernel_logpdf(lcodes[j], la[j], lb[j], lr[i, j] - lc[i, j]) for j in range(lc.shape[1])
        )

    for i in range(len(t_cur)):
        new_t, new_l = t_cur.copy(), l_cur.copy()
        new_t[i], new_l[i] = t_prop[i], l_prop[i]
        ratio = loglik(new_t, new_l, i) - loglik(t_cur, l_cur, i)
        if u[i] < math.exp(min(ratio, 0.0)):
            t_cur, l_cur, accepted[i] = new_t, new_l, True
    return t_cur, l_cur, accepted


def test_compiled_sweep_equals_reference():
    rng = np.random.default_rng(0)
    n, D, L = 50, 3, 2
    t_cur, t_prop = rng.normal(size=(n, D)), rng.normal(size=(n, D))
    l_cur, l_prop = (
        rng.integers(0, 3, (n, L)).astype(float),
        rng.integers(0, 3, (n, L)).astype(float),
    )
    codes = np.array([0, 1, 0])
    a, b = np.array([0.7, 0.3, 1.1]), np.array([-0.2, -0.5, 0.1])
    c, r = np.array([1.0, 0.1, 1.0]), rng.normal(size=D) * 3
    lcodes, la, lb = np.array([2, 2]), np.array([-0.2, -0.4]), np.array([-1.8, -1.3])
    lr = rng.integers(0, 3, (n, L)).astype(float)
    u = np.random.default_rng(9).random(n)
    ref_t, ref_l, ref_acc = reference_sweep(
        t_cur, t_prop, codes, a, b, c, r, l_cur, l_prop, lcodes, la, lb, lr, u
    )
    acc = np.zeros(n, dtype=bool)
    t, lc = t_cur.copy(), l_cur.copy()
    n_acc, min_p = augmentation_sweep(
        t, t_prop, codes, a, b, c, r, lc, l_prop, lcodes, la, lb, lr, np.random.default_rng(9), acc
    )
    np.testing.assert_array_equal(acc, ref_acc)
    np.testing.assert_allclose(t, ref_t)
    np.testing.assert_allclose(lc, ref_l)
    assert n_acc == ref_acc.sum() and 0 < n_acc < n and 0 < min_p < 1


def test_nan_ratio_rejects():
    t_cur, t_prop = np.zeros((3, 1)), np.array([[np.nan], [1.0], [np.nan]])
    acc = np.zeros(3, dtype=bool)
    empty = np.zeros((3, 0))
    augmentation_sweep(
        t_cur,
        t_prop,
        np.array([0]),
        np.array([1.0]),
        np.array([0.0]),
        np.array([1.0]),
        np.array([1.0]),
        empty,
        empty.copy(),
        np.zeros(0, np.int64),
        np.zeros(0),
        np.zeros(0),
        empty,
        np.random.default_rng(0),
        acc,
    )
    np.testing.assert_array_equal(acc, [False, True, False])


def normal_model(n=30, eps=1.0):
    rng = np.random.default_rng(2)
    stat, mech = pdp.Mean(lower=-2, upper=4), pdp.Laplace(epsilon=eps)
    release = pdp.release(rng.normal(1.0, 1.0, n), stat, mech, rng=rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=release)
    return model


def sample_da(model, *, sweeps=1, chains=1, seed=4, **kw):
    """DataAugmentation alone on the records ``x``: 60 draws after 20 tuning steps."""
    return sample(
        model,
        lambda: [pdp.DataAugmentation([model["x"]], sweeps=sweeps)],
        draws=60,
        tune=20,
        chains=chains,
        seed=seed,
        **kw,
    )


def posterior(idata, name):
    return np.asarray(idata.posterior[name])


def stat(idata, name):
    return np.asarray(idata.sample_stats[name])


def test_default_vars_are_the_records_of_the_releases():
    model = normal_model()
    with model:
        step = pdp.DataAugmentation()
    assert [v.name for v in step.vars] == ["x"]


def test_stats_reach_arviz_and_respect_the_acceptance_bound():
    idata = sample_da(normal_model(eps=0.5))
    acc, min_acc = stat(idata, "dp_accept_rate"), stat(idata, "dp_min_accept")
    assert np.all((acc > 0) & (acc <= 1))
    # Proposition 3.1: every record's acceptance probability is at least e^-eps
    assert np.all(min_acc >= math.exp(-0.5) - 1e-12)


def test_reproducible_by_seed_and_multichain_multiprocess():
    model = normal_model()
    a = sample_da(model, chains=2)
    b = sample_da(model, chains=2)
    np.testing.assert_array_equal(posterior(a, "x"), posterior(b, "x"))
    c = sample_da(model, chains=2, seed=5)
    assert not np.array_equal(posterior(a, "x"), posterior(c, "x"))
    d = sample_da(model, chains=2, cores=2)
    assert posterior(d, "x").shape == (2, 60, 30)
    e = sample_da(model, chains=2, cores=2)
    np.testing.assert_array_equal(posterior(d, "x"), posterior(e, "x"))


def test_records_move_and_stay_valid_with_sweeps_and_metropolis():
    model = normal_model()
    idata = sample(
        model,
        lambda: [pdp.DataAugmentation([model["x"]], sweeps=3), pm.Metropolis([model["mu"]])],
        draws=40,
        tune=10,
        chains=1,
        seed=1,
    )
    x = posterior(idata, "x")[0]
    assert np.all(np.isfinite(x)) and np.mean(x[1:] != x[:-1]) > 0.3


def test_transformed_and_discrete_records_in_one_block():
    """Naive-Bayes-like records: class y and a positive feature z drawn jointly given y."""
    n = 20
    with pm.Model():
        p = pm.Beta("p", 2, 2)
        y = pm.Bernoulli("y", p, shape=n)
        z = pm.Gamma("z", alpha=2.0 + 3.0 * y, beta=1.0, shape=n)
        pdp.DPObserved(
            "cy",
            y,
            statistic=pdp.Counts(2),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=np.array([9.0, 11.5]),
        )
        pdp.DPObserved(
            "sz",
            (y, z),
            statistic=pdp.RecordSum(lambda y, z: pm.math.clip(z, 0, 10) * y, 10.0),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=40.0,
        )
        step = pdp.DataAugmentation([y, z])
        idata = pm.sample(
            step=[step],
            draws=50,
            tune=10,
            chains=1,
            random_seed=3,
            progressbar=False,
            compute_convergence_checks=False,
        )
    z_draws = posterior(idata, "z")
    assert np.all(z_draws > 0)
    assert np.all(stat(idata, "dp_min_accept") >= math.exp(-2.0) - 1e-12)
    assert set(np.unique(posterior(idata, "y"))) == {0, 1}


def test_refusals():
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        x = pm.Normal("x", mu, 1, shape=5)
        with pytest.raises(
            ValueError, match=re.escape("DataAugmentation found no pdp.DPObserved node")
        ):
            pdp.DataAugmentation([x])
        w = pm.Normal("w", mu, 1, shape=5)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=0.0)
        with pytest.raises(ValueError, match=re.escape("but 'w' feed(s) none")):
            pdp.DataAugmentation([x, w])
        pdp.DPObserved(
            "s2",
            (x, w),
            statistic=pdp.RecordSum(lambda a, b: a + b, 2.0),
            mechanism=pdp.Laplace(scale=1.0),
            observed=0.0,
        )
        with pytest.raises(
            ValueError, match=re.escape("Pass all of them: pdp.DataAugmentation([x, w])")
        ):
            pdp.DataAugmentation([x])

    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        x = pm.Normal("x", mu, 1, shape=5)
        pm.Normal("y", x, 1, observed=np.zeros(5))
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=0.0)
        with pytest.raises(ValueError, match=re.escape("'y' depends on 'x'")):
            pdp.DataAugmentation([x])

    with pm.Model():
        x = pm.GaussianRandomWalk("x", sigma=1.0, init_dist=pm.Normal.dist(0, 1), shape=6)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=0.0)
        with pytest.raises(
            ValueError, match=re.escape("The log density of 'x' does not factor over records")
        ):
            pdp.DataAugmentation([x])

    with pm.Model():
        a = pm.Normal("a", 0, 1, shape=6)
        b = pm.Normal(
            "b", pm.math.concatenate([a[-1:], a[:-1]]), 1, shape=6
        )  # b_i depends on a_(i-1)
        pdp.DPObserved(
            "s",
            (a, b),
            statistic=pdp.RecordSum(lambda a, b: a + b, 2.0),
            mechanism=pdp.Laplace(scale=1.0),
            observed=0.0,
        )
        with pytest.raises(
            ValueError,
            match=re.escape("are not conditionally independent given the non-record variables"),
        ):
            pdp.DataAugmentation([a, b])

    with pm.Model():
        x = pm.MvNormal("x", mu=np.zeros(4), cov=np.eye(4) + 0.5)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=0.0)
        with pytest.raises(
            ValueError, match=re.escape("The log density of 'x' does not factor over records")
        ):
            pdp.DataAugmentation([x])

    class NotAdditive(pdp.Sum):
        record_additive = False

    with pm.Model():
        x = pm.Normal("x", 0, 1, shape=5)
        pdp.DPObserved(
            "s", x, statistic=NotAdditive(), mechanism=pdp.Laplace(scale=1.0), observed=0.0
        )
        with pytest.raises(
            ValueError, match=re.escape("DataAugmentation needs record-additive statistics")
        ):
            pdp.DataAugmentation([x])
    with pytest.raises(
        ValueError, match=re.escape("sweeps must be an integer >= 1, got sweeps=0.")
    ):
        with normal_model():
            pdp.DataAugmentation(sweeps=0)


def test_auto_interweave_skips_a_theta_move_priced_above_the_limit():
    """A θ-move over a 599-coordinate Dirichlet and 2,000 categorical records is priced at more
    than MAX_MOVE_ITERATIONS iterations: interweave="auto" does not try it (it took minutes per
    move at K = 2,016), and says so; at K = 3 it is tried."""
    from pymc_dp.samplers.augmentation import MAX_MOVE_ITERATIONS

    decisions = {}
    for k in (600, 3):
        with pm.Model():
            pi = pm.Dirichlet("pi", np.ones(k))
            x = pm.Categorical("x", pi, shape=2000)
            pdp.DPObserved(
                "c",
                x,
                statistic=pdp.Counts(k),
                mechanism=pdp.DiscreteGaussian(sigma=3.0),
                observed=np.full(k, 2000 // k),
            )
            decisions[k] = pdp.DataAugmentation([x]).interweave_decisions[0]
    assert not decisions[600]["enabled"]
    assert f"(limit {MAX_MOVE_ITERATIONS}): not tried" in decisions[600]["reason"]
    assert decisions[3]["enabled"]
    assert decisions[600]["ratio"] is None  # not tried: its weakness ratio is not drawn either


def test_auto_interweave_prices_a_hierarchy_over_the_records_of_every_group(monkeypatch):
    """Two groups of categorical records share π: one θ-move writes both, so its price counts
    the records of both groups. With the limit between the prices over one group's records and
    over both, the move is not tried (priced over the lead group's records alone, it was)."""
    from pymc_dp.samplers import augmentation as aug

    def two_groups():
        with pm.Model():
            pi = pm.Dirichlet("pi", np.ones(100))
            xs = []
            for i in range(2):
                xs.append(pm.Categorical(f"x{i}", pi, shape=1000))
                pdp.DPObserved(
                    f"c{i}",
                    xs[-1],
                    statistic=pdp.Counts(100),
                    mechanism=pdp.DiscreteGaussian(sigma=3.0),
                    observed=np.full(100, 10),
                )
            return pdp.DataAugmentation(xs)

    step = two_groups()
    assert step.interweave_decisions[0]["enabled"]
    evals = aug.MOVE_EVALS_PER_COORDINATE * 99
    one, both = (step._move_seconds(n, evals) / step._sweep_seconds() for n in (1000, 2000))
    assert one < both
    monkeypatch.setattr(aug, "MAX_MOVE_ITERATIONS", (one + both) / 2)
    decision = two_groups().interweave_decisions[0]
    assert not decision["enabled"]
    assert "2000 records" in decision["reason"]
