"""Statistics: contributions, clamping, sensitivities, release(), and bad input."""

import math
import re

import numpy as np
import pytensor.tensor as pt
import pytest

import pymc_dp as pdp


def test_sum_and_mean_clamp_and_combine():
    x = np.array([-3.0, 0.5, 1.0, 9.0])
    assert pdp.Sum(lower=0, upper=2).evaluate(x) == pytest.approx(0 + 0.5 + 1 + 2)
    assert pdp.Mean(lower=0, upper=2).evaluate(x) == pytest.approx(3.5 / 4)
    assert pdp.Sum().evaluate(x) == pytest.approx(7.5)
    sq = pdp.Sum(lower=0, upper=4, fn=lambda v: v**2)
    assert sq.evaluate(x) == pytest.approx(4 + 0.25 + 1 + 4)


def test_sensitivities_from_bounds():
    assert pdp.Sum(lower=-1, upper=3).sensitivity(1, n=10, dim=1) == 4
    assert pdp.Sum(lower=-1, upper=3).sensitivity(2, n=10, dim=4) == pytest.approx(8.0)
    assert pdp.Sum(lower=-1, upper=3).sensitivity(1, n=10, dim=4) == 16
    assert pdp.Mean(lower=-1, upper=3).sensitivity(1, n=10, dim=1) == pytest.approx(0.4)
    assert pdp.Sum().sensitivity(1, n=10, dim=1) is None
    assert pdp.Counts(4).sensitivity(1, n=10, dim=4) == 2
    assert pdp.Counts(4).sensitivity(2, n=10, dim=4) == pytest.approx(math.sqrt(2))
    rs = pdp.RecordSum(lambda x: x, sensitivity={1: 3.0, 2: 2.0})
    assert rs.sensitivity(1, n=5, dim=2) == 3.0 and rs.sensitivity(2, n=5, dim=2) == 2.0
    assert pdp.Local(lower=0, upper=1).sensitivity(1, n=10, dim=1) == 1


def test_sensitivity_is_attained_by_a_neighbour():
    """Replace-one neighbours move the clamped sum by exactly the declared L1 sensitivity."""
    stat = pdp.Sum(lower=0, upper=2, fn=lambda x: pt.stack([x, 2 - x], axis=1))
    x = np.array([0.0, 1.0, 2.0])
    y = x.copy()
    y[0] = 2.0
    moved = np.abs(stat.evaluate(y) - stat.evaluate(x)).sum()
    assert moved == stat.sensitivity(1, n=3, dim=2)


def test_counts_histogram_and_record_sum():
    x = np.array([0, 2, 2, 1, 2])
    np.testing.assert_array_equal(pdp.Counts(3).evaluate(x), [1, 1, 3])
    rs = pdp.RecordSum(lambda a, b: pt.stack([a * b, b], axis=1), sensitivity=2.0)
    np.testing.assert_allclose(rs.evaluate(np.array([1.0, 2.0]), np.array([3.0, 4.0])), [11.0, 7.0])
    np.testing.assert_array_equal(pdp.Local().evaluate(x), x)


@pytest.mark.parametrize(
    "make, exc, message",
    [
        (
            lambda: pdp.Sum(lower=2, upper=1),
            ValueError,
            "Sum needs lower < upper, got lower=2, upper=1.",
        ),
        (
            lambda: pdp.Mean(lower=1, upper=1),
            ValueError,
            "Mean needs lower < upper, got lower=1, upper=1.",
        ),
        (lambda: pdp.Sum(lower=0), ValueError, "Sum needs both lower and upper or neither"),
        (lambda: pdp.Sum(lower=0, upper=float("inf")), ValueError, "Sum bounds must be finite"),
        (
            lambda: pdp.Counts(1),
            ValueError,
            "n_categories must be an integer >= 2, got n_categories=1.",
        ),
        (
            lambda: pdp.RecordSum(lambda x: x, sensitivity=0),
            ValueError,
            "sensitivity must be finite and > 0, got sensitivity=0.",
        ),
        (
            lambda: pdp.Counts(3).evaluate(np.array([0.0, 1.0])),
            TypeError,
            "Counts needs integer category codes 0..2, got records of dtype float64.",
        ),
        (
            lambda: pdp.Sum().evaluate(np.zeros(3), np.zeros(3)),
            TypeError,
            "Sum got 2 record arrays and no fn",
        ),
    ],
)
def test_bad_statistics(make, exc, message):
    with pytest.raises(exc, match=re.escape(message)):
        make()


def test_release_calibrates_and_is_reproducible():
    x = np.random.default_rng(0).normal(size=100)
    stat, mech = pdp.Mean(lower=-2, upper=2), pdp.Laplace(epsilon=1.0)
    r1 = pdp.release(x, stat, mech, rng=np.random.default_rng(5))
    r2 = pdp.release(x, stat, mech, rng=np.random.default_rng(5))
    assert r1 == r2
    want = pdp.Laplace(scale=0.04).sample(
        stat.evaluate(x), np.random.default_rng(5)
    )  # exact lattice sampler
    assert r1 == pytest.approx(want)


def test_release_integer_and_local_mechanisms():
    x = np.array([0, 1, 1, 0, 1])
    counts = pdp.release(x, pdp.Counts(2), pdp.DiscreteLaplace(epsilon=1.0), rng=1)
    assert counts.dtype == np.int64 and counts.shape == (2,)
    rr = pdp.release(x, pdp.Local(), pdp.RandomizedResponse(epsilon=2.0), rng=1)
    assert rr.shape == (5,) and set(np.unique(rr)) <= {0, 1}
    with pytest.raises(
        ValueError, match=re.escape("RandomizedResponse randomizes one record at a time")
    ):
        pdp.release(x, pdp.Sum(lower=0, upper=1), pdp.RandomizedResponse(epsilon=2.0))
    with pytest.raises(
        ValueError,
        match=re.escape("RandomizedResponse(n_categories=2) needs every record's category in 0..1"),
    ):
        pdp.release(np.array([0, 3]), pdp.Local(), pdp.RandomizedResponse(epsilon=2.0))
    with pytest.raises(
        ValueError, match=re.escape("DiscreteLaplace needs an integer-valued statistic")
    ):
        pdp.release(x, pdp.Mean(lower=0, upper=1), pdp.DiscreteLaplace(epsilon=1.0))
