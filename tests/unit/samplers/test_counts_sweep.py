"""Categorical records on the compiled path (issue 18, item 1): the categorical draw of
``pymc_dp.samplers.fast_draws`` and the count-vector sweep of ``pymc_dp.samplers.counts_sweep``.

The guide-table draw is the inverse-CDF draw (same category as a binary search for every uniform);
its draws have the categorical distribution (χ², fixed seeds); the sweep's log ratio equals the
difference of the mechanisms' log densities of the two count vectors; ``DataAugmentation`` takes
the count route exactly when the records feed only ``Counts``. Exactness against enumeration is in
``tests/statistical/samplers/test_counts_sweep.py``.
"""

import re

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.samplers.counts_sweep import _cell, _one, counts_sweep
from pymc_dp.samplers.fast_draws import (
    _search,
    categorical_table,
    draw_categorical,
    guided_draw,
)

PROBS = [
    np.array([0.2, 0.5, 0.3]),
    np.array([0.0, 0.25, 0.0, 0.0, 0.75, 0.0]),  # zero mass at both ends and inside
    np.random.default_rng(1).dirichlet(np.full(2016, 0.3)),
    np.array([1e-300, 1.0, 1e-300]),
]


@pytest.mark.parametrize("p", PROBS, ids=["k3", "zeros", "k2016", "tiny"])
def test_guide_table_gives_the_inverse_cdf_category(p):
    cum, guide = np.empty(p.size), np.empty(p.size, dtype=np.int64)
    assert categorical_table(p, cum, guide)
    us = np.concatenate(
        [
            np.random.default_rng(2).random(20_000),
            [0.0, 1 - 2**-53, 0.5, 1 / 3],
            np.cumsum(p)[:-1] / cum[-1],
        ]
    )  # the cell edges themselves
    us = us[us < 1.0]
    for u in us:
        k = guided_draw(cum, guide, u)
        assert k == _search(cum, u * cum[-1]), u
        assert p[k] > 0


@pytest.mark.parametrize("p", PROBS[:3], ids=["k3", "zeros", "k2016"])
def test_shared_categorical_draws_have_the_distribution(p):
    out = np.empty(200_000, dtype=np.int64)
    assert draw_categorical(np.random.default_rng(3), p[None, :], out)
    counts = np.bincount(out, minlength=p.size)
    assert counts[p == 0].sum() == 0
    keep = p > 0
    chi2 = stats.chisquare(counts[keep], out.size * p[keep] / p[keep].sum())
    assert chi2.pvalue > 1e-3


def test_per_record_categorical_draws_follow_their_row():
    rows = np.array([[0.9, 0.1, 0.0], [0.0, 0.2, 0.8]])
    p = np.repeat(rows, 50_000, axis=0)
    out = np.empty(p.shape[0], dtype=np.int64)
    assert draw_categorical(np.random.default_rng(4), p, out)
    for r, row in enumerate(rows):
        got = np.bincount(out[r * 50_000 : (r + 1) * 50_000], minlength=3)
        assert got[row == 0].sum() == 0
        assert stats.chisquare(got[row > 0], 50_000 * row[row > 0]).pvalue > 1e-3


def test_invalid_probabilities_are_refused():
    out = np.empty(3, dtype=np.int64)
    assert not draw_categorical(np.random.default_rng(0), np.array([[0.5, -0.1, 0.6]]), out)
    assert not draw_categorical(np.random.default_rng(0), np.zeros((1, 3)), out)
    assert not draw_categorical(np.random.default_rng(0), np.array([[0.5, np.nan, 0.5]]), out)
    with pm.Model() as model:
        w = pm.Normal("w", mu=1.0, shape=3)
        x = pm.Categorical("x", w, shape=4)
        pdp.DPObserved(
            "c", x, statistic=pdp.Counts(3), mechanism=pdp.Laplace(scale=1.0), observed=np.ones(3)
        )
        step = pdp.DataAugmentation([x])
    point = model.initial_point(random_seed=0)
    point["w"] = np.array([0.5, -0.1, 0.6])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "The conditional prior of the records 'x' has invalid parameters at this point (needs "
            "p >= 0, finite, with a positive sum); cannot propose records."
        ),
    ):
        step.step(point)


MECHS = [pdp.DiscreteGaussian(sigma=1.7), pdp.Laplace(scale=2.0), pdp.DiscreteLaplace(scale=1.3)]


@pytest.mark.parametrize("mech", MECHS, ids=["dgauss", "laplace", "dlaplace"])
def test_log_ratio_is_the_change_of_the_noise_densities(mech):
    rng = np.random.default_rng(5)
    k_cells = 7
    counts = rng.integers(1, 9, size=k_cells + 2)  # two categories the node does not count
    r = counts[:k_cells] + rng.normal(0, 2, k_cells).round()
    a, b = mech.kernel_params()
    for j, k in [(0, 3), (6, 2), (7, 1), (2, 8), (7, 8)]:
        moved = counts.copy()
        moved[j] -= 1
        moved[k] += 1
        want = (mech.logpdf(r, moved[:k_cells]) - mech.logpdf(r, counts[:k_cells])).sum()
        got = _one(mech.kernel_code, a, b, k_cells, r, j, k, float(counts[j]), float(counts[k]))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        # several nodes: the sum over nodes of the same change
        codes = np.array([mech.kernel_code, MECHS[0].kernel_code])
        aa = np.array([a, MECHS[0].kernel_params()[0]])
        bb = np.array([b, MECHS[0].kernel_params()[1]])
        kcat = np.array([k_cells, 3])
        rr = np.zeros((2, k_cells))
        rr[0], rr[1, :3] = r, r[:3] + 1
        both = _cell(codes, aa, bb, kcat, rr, j, counts[j], -1.0) + _cell(
            codes, aa, bb, kcat, rr, k, counts[k], 1.0
        )
        want2 = (
            want
            + (MECHS[0].logpdf(rr[1, :3], moved[:3]) - MECHS[0].logpdf(rr[1, :3], counts[:3])).sum()
        )
        np.testing.assert_allclose(both, want2, rtol=1e-12, atol=1e-12)


def test_sweep_keeps_the_counts_of_the_records_and_flags_nan():
    rng = np.random.default_rng(6)
    x = rng.integers(-1, 5, 500)
    prop = rng.integers(-1, 5, 500)
    counts = np.bincount(x + 1, minlength=6)
    r = np.array([[3.0, 50.0, 0.0, 100.0]])
    n_acc, _ = counts_sweep(
        rng, x, prop, counts, -1, np.array([1]), np.array([0.1]), np.array([0.0]), np.array([4]), r
    )
    np.testing.assert_array_equal(counts, np.bincount(x + 1, minlength=6))
    assert 0 < n_acc < 500
    nan_r = np.full((1, 4), np.nan)
    x2 = x.copy()
    n_acc, min_lr = counts_sweep(
        rng,
        x2,
        prop,
        counts.copy(),
        -1,
        np.array([1]),
        np.array([0.1]),
        np.array([0.0]),
        np.array([4]),
        nan_r,
    )
    moved = x2 != x  # only moves between uncounted categories (-1 and 4) can be accepted
    assert np.all(np.isin(x[moved], [-1, 4]) & np.isin(prop[moved], [-1, 4]))
    assert min_lr == -np.inf


def _model(records, stat):
    with pm.Model() as model:
        x = records()
        pdp.DPObserved(
            "c",
            x,
            statistic=stat,
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.ones(stat.n_categories) if isinstance(stat, pdp.Counts) else 1.0,
        )
        step = pdp.DataAugmentation([x])
    return step, model.initial_point()


def test_data_augmentation_takes_the_count_route_only_for_counts():
    shared, point = _model(
        lambda: pm.Categorical("x", pm.Dirichlet("pi", np.ones(4)), shape=30), pdp.Counts(4)
    )
    assert shared.groups[0].counts.draws_in_sweep(point)
    assert shared.fast_proposals == [True]
    rows, point = _model(
        lambda: pm.Categorical("x", np.full((30, 4), 0.25), shape=30), pdp.Counts(4)
    )
    assert rows.groups[0].counts is not None and not rows.groups[0].counts.draws_in_sweep(point)
    summed, _ = _model(
        lambda: pm.Categorical("x", np.full(4, 0.25), shape=30), pdp.Sum(lower=0, upper=3)
    )
    assert summed.groups[0].counts is None
