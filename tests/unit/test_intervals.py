"""``pdp.intervals`` (issue 18 item 7): exact lattice sums against brute force, shapes, refusals."""

import re

import numpy as np
import pytest

import pymc_dp as pdp


def brute(s, mech, prob):
    c = np.arange(0, int(s) + 400)
    w = np.exp(mech.logpdf(s, c) - mech.logpdf(s, c).max())
    p = w / w.sum()
    keep, mass = [], 0.0
    for i in np.argsort(-p, kind="stable"):  # highest density first
        keep.append(c[i])
        mass += p[i]
        if mass >= prob - 1e-12:
            break
    return min(keep), max(keep)


@pytest.mark.parametrize("mech", [pdp.DiscreteGaussian(sigma=3.18), pdp.DiscreteLaplace(scale=2.0),
                                  pdp.Laplace(scale=1.5), pdp.Gaussian(sigma=4.0)],
                         ids=["dgauss", "dlaplace", "laplace", "gauss"])
def test_matches_brute_force_and_keeps_the_shape(mech):
    s = np.array([[-7, 0, 2], [15, 300, 1000]], dtype=float)
    if not mech.integer:
        s = s + 0.37
    got = pdp.intervals(s, 0.9, mechanism=mech)
    assert got.shape == (2, 3, 2) and got.dtype == np.int64
    for idx in np.ndindex(s.shape):
        assert tuple(got[idx]) == brute(s[idx], mech, 0.9), (idx, s[idx])
    assert np.all(got[..., 0] >= 0) and np.all(got[..., 0] <= got[..., 1])


def test_release_objects_and_refusals():
    table = np.array([0, 4, 120])
    rel = pdp.release(table, pdp.Cells(), pdp.DiscreteGaussian(sigma=2.0), rng=0)
    np.testing.assert_array_equal(pdp.intervals(rel), pdp.intervals(np.asarray(rel), mechanism=rel.mechanism))
    counts = pdp.release(np.array([0, 1, 1, 2]), pdp.Counts(3), pdp.DiscreteLaplace(epsilon=1.0), rng=0)
    assert pdp.intervals(counts).shape == (3, 2)
    with pytest.raises(ValueError, match=re.escape("prob must be in (0, 1), got prob=95. Pass e.g. prob=0.95.")):
        pdp.intervals(rel, 95)
    with pytest.raises(ValueError, match=re.escape("intervals covers releases of counts (pdp.Cells, pdp.Counts), "
                                                   "got a release of Sum(")):
        pdp.intervals(pdp.release(np.ones(5), pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=1.0), rng=0))
    with pytest.raises(ValueError, match=re.escape("intervals needs the noise: pass a pdp.Release")):
        pdp.intervals(np.array([1.0, 2.0]))
