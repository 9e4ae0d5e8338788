"""MMD with the RBF kernel and the seed's median heuristic (seed 002 §7.1)."""

import re

import numpy as np
import pytest

from pymc_dp.diagnostics import median_bandwidth, mmd, mmd2


def _naive_mmd2_biased(x, y, bw):
    k = lambda a, b: np.exp(-np.sum((a - b) ** 2) / (2 * bw**2))  # noqa: E731
    kxx = np.mean([[k(a, b) for b in x] for a in x])
    kyy = np.mean([[k(a, b) for b in y] for a in y])
    kxy = np.mean([[k(a, b) for b in y] for a in x])
    return kxx + kyy - 2 * kxy


def test_mmd2_matches_naive_double_loop():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(30, 2)), rng.normal(0.5, 1, size=(25, 2))
    assert mmd2(x, y, bandwidth=1.3, unbiased=False) == pytest.approx(_naive_mmd2_biased(x, y, 1.3))
    assert mmd(x, y, bandwidth=1.3) == pytest.approx(np.sqrt(_naive_mmd2_biased(x, y, 1.3)))


def test_unbiased_mmd2_is_centred_for_equal_distributions():
    rng = np.random.default_rng(1)
    vals = [
        mmd2(rng.normal(size=(100, 2)), rng.normal(size=(100, 2)), bandwidth=1.0)
        for _ in range(200)
    ]
    assert abs(np.mean(vals)) < 4 * np.std(vals) / np.sqrt(len(vals))


def test_mmd_grows_with_shift_and_median_bandwidth():
    rng = np.random.default_rng(2)
    ref = rng.normal(size=(400, 2))
    vals = [
        mmd(ref, rng.normal(s, 1, size=(400, 2)), rng=np.random.default_rng(3))
        for s in (0.0, 0.3, 1.0)
    ]
    assert vals[0] < vals[1] < vals[2]
    bw = median_bandwidth(ref, ref, rng=np.random.default_rng(4))
    assert 1.0 < bw < 2.5  # median distance of 2-d standard normals is about sqrt(2)·1.18


def test_mmd_errors():
    x = np.zeros((5, 2))
    with pytest.raises(
        ValueError, match=re.escape("x and y must have the same dimension, got 2 and 3.")
    ):
        mmd2(x, np.zeros((5, 3)), bandwidth=1.0)
    with pytest.raises(ValueError, match=re.escape("bandwidth must be > 0, got bandwidth=0.")):
        mmd2(x, x, bandwidth=0.0)
    with pytest.raises(ValueError, match=re.escape("mmd needs rng=")):
        mmd(x, x)
    with pytest.raises(
        ValueError, match=re.escape("x must be a (draws, dims) array with at least 2 draws")
    ):
        mmd2(np.zeros((1, 2)), x, bandwidth=1.0)
