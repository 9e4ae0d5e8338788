"""Fast record proposals (``pymc_dp.samplers.fast_draws``) and the exponential-threshold sweep.

Each covered family's draws have the family's distribution (mean and variance within 4 standard
errors, Kolmogorov–Smirnov or χ² against SciPy, fixed seeds); the draws are reproducible by seed;
the sweep with pre-drawn exponentials takes exactly the reference decisions; blocks that are not
covered keep the graph and say why. DataAugmentation on the fast route against exact posteriors is
in ``tests/statistical/samplers/test_fast_proposals.py``.
"""

import math
import re

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.samplers.augmentation import augmentation_sweep, sweep_core
from pymc_dp.samplers.records import RecordBlock
from tests.support.sampling import sample

N = 20_000


def block_for(make_records, n=N, fast=True):
    """A one-release model around ``make_records()`` and its record block."""
    with pm.Model() as model:
        x = make_records(n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=1.0)
        block = RecordBlock(model, [x], fast_draws=fast)
    return model, block


def fast_draws(make_records, seed=0, n=N):
    model, block = block_for(make_records, n)
    assert block.fast, block.fast_reason
    block.reseed(np.random.default_rng(seed))
    point = model.initial_point(random_seed=0)
    (value,) = block.propose(point)
    return value, model, block


def assert_mean_var(x, mean, var, label):
    """Sample mean and variance within 4 standard errors of the family's (iid draws)."""
    n = x.size
    z_mean = (x.mean() - mean) / math.sqrt(var / n)
    m4 = np.mean((x - x.mean()) ** 4)
    z_var = (x.var(ddof=1) - var) / math.sqrt(max(m4 - var**2, 1e-300) / n)
    assert abs(z_mean) < 4 and abs(z_var) < 4, (
        f"{label}: z(mean) = {z_mean:+.2f}, z(var) = {z_var:+.2f}"
    )


CONTINUOUS = [
    ("normal", lambda n: pm.Normal("x", 1.5, 2.0, shape=n), stats.norm(1.5, 2.0), None),
    ("exponential", lambda n: pm.Exponential("x", 2.0, shape=n), stats.expon(scale=0.5), np.log),
    (
        "gamma",
        lambda n: pm.Gamma("x", alpha=0.7, beta=3.0, shape=n),
        stats.gamma(0.7, scale=1 / 3.0),
        np.log,
    ),
    (
        "gamma large shape",
        lambda n: pm.Gamma("x", alpha=5.0, beta=0.5, shape=n),
        stats.gamma(5.0, scale=2.0),
        np.log,
    ),
]
DISCRETE = [
    ("bernoulli", lambda n: pm.Bernoulli("x", 0.3, shape=n), stats.bernoulli(0.3)),
    ("poisson small", lambda n: pm.Poisson("x", 2.5, shape=n), stats.poisson(2.5)),
    ("poisson large", lambda n: pm.Poisson("x", 40.0, shape=n), stats.poisson(40.0)),
    ("binomial", lambda n: pm.Binomial("x", 7, 0.35, shape=n), stats.binom(7, 0.35)),
]


@pytest.mark.parametrize("name, make, ref, to_value", CONTINUOUS, ids=[c[0] for c in CONTINUOUS])
def test_continuous_family_draws_have_the_family_distribution(name, make, ref, to_value):
    value, model, _ = fast_draws(make)
    x = (
        np.exp(value) if to_value is not None else value
    )  # the value space is log for positive records
    assert value.shape == (N,) and value.dtype == np.float64
    assert_mean_var(x, ref.mean(), ref.var(), name)
    assert stats.kstest(x, ref.cdf).pvalue > 1e-3
    # the graph route draws the same distribution (two-sample KS, independent seeds)
    _, graph = block_for(make, fast=False)
    graph.reseed(np.random.default_rng(1))
    (g,) = graph.propose(model.initial_point(random_seed=0))
    g = np.exp(g) if to_value is not None else g
    assert stats.ks_2samp(x, g).pvalue > 1e-3


@pytest.mark.parametrize("name, make, ref", DISCRETE, ids=[c[0] for c in DISCRETE])
def test_discrete_family_draws_have_the_family_pmf(name, make, ref):
    value, _, _ = fast_draws(make)
    assert value.dtype == np.int64
    assert_mean_var(value.astype(float), ref.mean(), ref.var(), name)
    # chi-square over the values with expected count >= 5, the tails pooled
    ks = np.arange(value.max() + 1)
    expected = ref.pmf(ks) * N
    keep = expected >= 5
    obs = np.bincount(value, minlength=ks.size)
    o = np.append(obs[keep], N - obs[keep].sum())
    e = np.append(expected[keep], N - expected[keep].sum())
    assert stats.chisquare(o, e).pvalue > 1e-3


def test_per_record_parameters_broadcast_record_by_record():
    n = 6_000
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1, shape=3)
        idx = np.repeat(np.arange(3), n // 3)
        x = pm.Normal("x", mu[idx] * 10.0, 0.5, shape=n)
        lam = pm.Gamma("lam", 2.0, 1.0, shape=n)
        y = pm.Poisson("y", lam)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=1.0)
        pdp.DPObserved("t", y, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=1.0)
        bx, by = RecordBlock(model, [x], fast_draws=True), RecordBlock(model, [y], fast_draws=True)
    assert bx.fast and by.fast
    point = model.initial_point(random_seed=0)
    point["mu"] = np.array([-1.0, 0.0, 2.0])
    point["lam_log__"] = np.log(np.where(np.arange(n) % 2 == 0, 1.0, 30.0))
    bx.reseed(np.random.default_rng(3))
    by.reseed(np.random.default_rng(4))
    (vx,), (vy,) = bx.propose(point), by.propose(point)
    for k, m in enumerate([-10.0, 0.0, 20.0]):
        assert_mean_var(vx[idx == k], m, 0.25, f"normal group {k}")
    assert_mean_var(vy[0::2].astype(float), 1.0, 1.0, "poisson lam=1")
    assert_mean_var(vy[1::2].astype(float), 30.0, 30.0, "poisson lam=30")


def test_reproducible_by_seed_and_buffers_reused_only_on_request():
    a, model, block = fast_draws(lambda n: pm.Normal("x", 0, 1, shape=n), seed=5, n=100)
    b, _, _ = fast_draws(lambda n: pm.Normal("x", 0, 1, shape=n), seed=5, n=100)
    c, _, _ = fast_draws(lambda n: pm.Normal("x", 0, 1, shape=n), seed=6, n=100)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    point = model.initial_point(random_seed=0)
    (r1,), (r2,) = block.propose(point, reuse=True), block.propose(point, reuse=True)
    assert r1 is r2
    (f1,), (f2,) = block.propose(point), block.propose(point)
    assert f1 is not f2 and not np.array_equal(f1, f2)


def test_blocks_the_fast_route_does_not_cover_keep_the_graph():
    with pm.Model() as model:
        p = pm.Dirichlet("p", np.ones(2))
        cls = pm.Categorical("cls", p, shape=10)
        feat = pm.Normal("feat", pm.math.stack([0.0, 3.0])[cls], 1.0, shape=10)
        h = pm.HalfNormal("h", 1.0, shape=10)
        u = pm.Beta("u", 2.0, 2.0, shape=10)
        pdp.DPObserved(
            "s", feat, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=1.0
        )
        pdp.DPObserved(
            "c", cls, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=1.0
        )
        pdp.DPObserved("t", h, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=1.0)
        pdp.DPObserved("v", u, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=1.0)
        joint = RecordBlock(model, [cls, feat], fast_draws=True)
        half = RecordBlock(model, [h], fast_draws=True)
        beta = RecordBlock(model, [u], fast_draws=True)
        off = RecordBlock(model, [h], fast_draws=False)
    assert (
        not joint.fast and "the parameters of 'feat' depend on other records" in joint.fast_reason
    )
    assert not half.fast and "HalfNormalRV" in half.fast_reason
    assert not beta.fast and "BetaRV" in beta.fast_reason
    assert not off.fast and off.fast_reason == "fast_draws=False"
    with pm.Model() as model:
        c2 = pm.Bernoulli("c2", 0.5, shape=10)
        f2 = pm.Normal("f2", 3.0 * c2, 1.0, shape=10)
        pdp.DPObserved("a", c2, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=1.0)
        pdp.DPObserved("b", f2, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=1.0)
        dep = RecordBlock(model, [c2, f2], fast_draws=True)
    assert not dep.fast and "depend on other records" in dep.fast_reason
    # the graph route still proposes valid joint draws
    dep.reseed(np.random.default_rng(0))
    c_val, f_val = dep.propose(model.initial_point(random_seed=0))
    assert set(np.unique(c_val)) <= {0, 1} and f_val.shape == (10,)


def test_invalid_parameters_are_refused_with_the_rule():
    with pm.Model() as model:
        p = pm.Normal("p", 0.5, 0.1)
        x = pm.Bernoulli("x", p, shape=5)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=1.0)
        block = RecordBlock(model, [x], fast_draws=True)
    point = model.initial_point(random_seed=0)
    point["p"] = np.array(1.5)
    with pytest.raises(
        ValueError,
        match=re.escape("records 'x' has invalid parameters at this point (needs 0 <= p <= 1)"),
    ):
        block.propose(point)


def test_fast_proposals_argument_and_attribute():
    with pm.Model():
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=20)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=-2, upper=4),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=20.0,
        )
        assert pdp.DataAugmentation([x]).fast_proposals == [True]
        assert pdp.DataAugmentation([x], fast_proposals=False).fast_proposals == [False]
        with pytest.raises(
            ValueError,
            match=re.escape("fast_proposals must be True or False, got fast_proposals='yes'."),
        ):
            pdp.DataAugmentation([x], fast_proposals="yes")


def reference_decisions(t_cur, t_prop, a, r, log_u):
    """Algorithm 1 with the Laplace totals (n, D) recomputed from scratch: accept iff log u <= log α."""
    t = t_cur.copy()
    acc = np.zeros(len(t), dtype=bool)
    for i in range(len(t)):
        new = t.copy()
        new[i] = t_prop[i]
        log_alpha = np.sum(-a * np.abs(r - new.sum(axis=0)) + a * np.abs(r - t.sum(axis=0)))
        if log_u[i] <= log_alpha:
            t, acc[i] = new, True
    return t, acc


@pytest.mark.parametrize("D", [1, 2])
def test_exponential_threshold_sweep_takes_the_reference_decisions(D):
    """sweep_core (one-total fast loop for D = 1, generic loop for D = 2) vs a plain reference."""
    rng = np.random.default_rng(11)
    n = 400
    t_cur, t_prop = rng.normal(size=(n, D)), rng.normal(size=(n, D))
    e = rng.standard_exponential(n)
    codes, a, b = np.zeros(D, np.int64), np.full(D, 0.8), np.zeros(D)
    c, r = np.ones(D), np.full(D, 5.0)
    empty = np.zeros((n, 0))
    acc = np.zeros(n, dtype=bool)
    t = t_cur.copy()
    n_acc, min_lr = sweep_core(
        t,
        t_prop,
        codes,
        a,
        b,
        c,
        r,
        empty,
        empty.copy(),
        np.zeros(0, np.int64),
        np.zeros(0),
        np.zeros(0),
        empty,
        e,
        acc,
    )
    ref_t, ref_acc = reference_decisions(t_cur, t_prop, 0.8, 5.0, -e)
    np.testing.assert_array_equal(acc, ref_acc)
    np.testing.assert_allclose(t, ref_t)
    assert n_acc == acc.sum() and 0 < n_acc < n and min_lr < 0
    # the uniform wrapper: accept iff u <= min(1, exp(ratio)), same as the exponential threshold
    acc2, t2 = np.zeros(n, dtype=bool), t_cur.copy()
    _, min_p = augmentation_sweep(
        t2,
        t_prop,
        codes,
        a,
        b,
        c,
        r,
        empty,
        empty.copy(),
        np.zeros(0, np.int64),
        np.zeros(0),
        np.zeros(0),
        empty,
        np.random.default_rng(3),
        acc2,
    )
    u = np.random.default_rng(3).random(n)
    _, ref2 = reference_decisions(t_cur, t_prop, 0.8, 5.0, np.log(u))
    np.testing.assert_array_equal(acc2, ref2)
    assert 0 < min_p < 1


def test_data_augmentation_reproducible_by_seed_on_the_fast_route():
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 1.0)
        x = pm.Poisson("x", lam, shape=30)
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(), mechanism=pdp.DiscreteLaplace(scale=2.0), observed=60
        )

    def run(seed):
        with model:
            step = pdp.DataAugmentation([x])
        idata = sample(model, [step], draws=40, tune=10, seed=seed)
        assert step.fast_proposals == [True]
        return np.asarray(idata.posterior["x"])

    a, b, c = run(4), run(4), run(5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not np.array_equal(a[0], a[1])  # chains differ
