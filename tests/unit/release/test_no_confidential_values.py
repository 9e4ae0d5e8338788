"""No confidential value in any message or warning of the curator's side (issue 20, item 8).

Every error path of ``pdp.release`` (records, statistics' data checks, mechanisms) and of
``pymc_dp.regression.release_suff_stats`` (row norms, |y|) is run with a sentinel in the data;
the sentinel (and values computed from it) must not appear in the exception or in any warning.
On the old code the bad category code, the record min/max, the non-integer statistic and
contributions, and the row norm were echoed.
"""

import re
import warnings

import numpy as np
import pytensor.tensor as pt
import pytest

import pymc_dp as pdp
from pymc_dp.mechanisms._noise import require_integer
from pymc_dp.regression import release_suff_stats

SENTINEL = 123456.789
CODE = 987654  # a distinctive category code
FORBIDDEN = ("123456", "987654", "1.23456", "9.87654", "246913", "12345678", "123457")


def _data(*extra):
    return np.concatenate([np.linspace(0.0, 1.0, 20), np.asarray(extra, dtype=float)])


def _codes(*extra):
    return np.concatenate([np.array([0, 1, 2, 1, 0]), np.asarray(extra, dtype=int)])


CASES = {
    "non-finite record": lambda: pdp.release(
        _data(SENTINEL, np.nan), pdp.Sum(0, 1), pdp.Laplace(epsilon=1.0), rng=1
    ),
    "non-finite record in a tuple": lambda: pdp.release(
        (_data(SENTINEL), np.append(np.ones(20), np.inf)),
        pdp.RecordSum(lambda a, b: a + b, 1.0),
        pdp.Laplace(epsilon=1.0),
        rng=1,
    ),
    "Counts code outside 0..K-1": lambda: pdp.release(
        _codes(CODE), pdp.Counts(3), pdp.Laplace(epsilon=1.0), rng=1
    ),
    "Counts negative code": lambda: pdp.release(
        _codes(-CODE), pdp.Counts(3), pdp.Laplace(epsilon=1.0), rng=1
    ),
    "randomized response code": lambda: pdp.release(
        _codes(CODE), pdp.Local(), pdp.RandomizedResponse(epsilon=1.0), rng=1
    ),
    "randomized response sample": lambda: pdp.RandomizedResponse(
        epsilon=1.0, n_categories=3
    ).sample(_codes(CODE), 1),
    "integer statistic not an integer": lambda: pdp.release(
        np.array([SENTINEL, 0.5]), pdp.Sum(0, 10**6), pdp.DiscreteLaplace(epsilon=1.0), rng=1
    ),
    "integer contributions": lambda: pdp.release(
        np.array([SENTINEL, 0.211]), pdp.Sum(0, 10**6), pdp.DiscreteGaussian(sigma=2.0), rng=1
    ),
    "integer mechanism sample": lambda: pdp.DiscreteLaplace(scale=1.0).sample(np.array([SENTINEL])),
    "require_integer": lambda: require_integer(np.array([SENTINEL]), "DiscreteGaussian"),
    "statistic not finite": lambda: pdp.release(
        _data(SENTINEL),
        pdp.RecordSum(lambda x: pt.exp(x * 1e4), 1.0),
        pdp.Laplace(epsilon=1.0),
        rng=1,
    ),
    "continuous mechanism, non-finite statistic": lambda: pdp.Laplace(scale=1.0).sample(
        np.array([SENTINEL, np.inf])
    ),
    "no sensitivity": lambda: pdp.release(
        _data(SENTINEL), pdp.Sum(), pdp.Laplace(scale=1.0), rng=1
    ),
    "statistic of the wrong rank": lambda: pdp.release(
        np.full((3, 2), SENTINEL), pdp.Median(0, 1), pdp.SmoothLaplace(1.0, 1e-6), rng=1
    ),
    "Counts float records": lambda: pdp.release(
        _data(SENTINEL), pdp.Counts(3), pdp.Laplace(epsilon=1.0), rng=1
    ),
    "records of unequal length": lambda: pdp.release(
        (_data(SENTINEL), np.ones(3)),
        pdp.RecordSum(lambda a, b: a, 1.0),
        pdp.Laplace(epsilon=1.0),
        rng=1,
    ),
    "explicit sensitivity too small": lambda: pdp.release(
        _data(SENTINEL), pdp.Sum(0, 2), pdp.Laplace(epsilon=1.0, sensitivity=1.0), rng=1
    ),
    "uint64 beyond int64": lambda: pdp.release(
        np.array([2**63 + CODE, 1], dtype=np.uint64), pdp.Sum(0, 1), pdp.Laplace(epsilon=1.0), rng=1
    ),
    "predictive draws of a non-integer statistic": lambda: (
        pdp.mechanisms.discrete_gaussian.DiscreteGaussianRV.rng_fn(
            np.random.default_rng(0), np.array([SENTINEL]), np.array(1.0), None
        )
    ),
}

X = np.random.default_rng(0).normal(size=(30, 2)) * 0.1
Y = np.random.default_rng(1).normal(size=30) * 0.1
REGRESSION = {
    "row norm above x_bound": lambda: release_suff_stats(
        np.vstack([X, [[SENTINEL, 0.0]]]),
        np.append(Y, 0.0),
        x_bound=1.0,
        y_bound=1.0,
        epsilon=1.0,
        delta=1e-5,
        rng=1,
    ),
    "|y| above y_bound": lambda: release_suff_stats(
        np.vstack([X, [[0.0, 0.0]]]),
        np.append(Y, SENTINEL),
        x_bound=1.0,
        y_bound=1.0,
        epsilon=1.0,
        delta=1e-5,
        rng=1,
    ),
    "non-finite X": lambda: release_suff_stats(
        np.vstack([X, [[SENTINEL, np.nan]]]),
        np.append(Y, 0.0),
        x_bound=1.0,
        y_bound=1.0,
        epsilon=1.0,
        delta=1e-5,
        rng=1,
    ),
}


def _check_clean(text: str, what: str):
    for bad in FORBIDDEN:
        assert bad not in text, f"{what} echoes a confidential value ({bad!r}): {text}"


@pytest.mark.parametrize("case", [*CASES, *REGRESSION])
def test_error_paths_never_echo_the_data(case):
    make = CASES.get(case) or REGRESSION[case]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises((ValueError, TypeError)) as info:
            make()
    _check_clean(str(info.value), "the message")
    # the message still names the rule (not a bare exception)
    assert len(str(info.value)) > 40 and re.search(r"\b(must|needs?|has|is|are)\b", str(info.value))
    for w in caught:
        _check_clean(str(w.message), "a warning")
