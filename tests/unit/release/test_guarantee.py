"""No release without a guarantee (issue 20, items 5 and 9): a sensitivity, exact arithmetic,
no overflow, real numbers where numbers are expected, a positive smooth-sensitivity scale, and
a node may restate the release's noise by its scale.

Each test failed on the old code (see the docstrings).
"""

import math
import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.mechanisms import _exact
from pymc_dp.statistics.order import order_smooth_sensitivity

X = np.random.default_rng(0).normal(1.0, 1.0, size=50)


def test_a_mechanism_without_sensitivity_is_refused_at_release():
    """Old: ``release(x, Sum(), Laplace(scale=1.0))`` returned a value (failing only later, at
    accounting)."""
    msg = (
        "Laplace(scale=1.0, epsilon=None, sensitivity=None) on Sum(lower=None, upper=None) has no "
        "sensitivity, so the release would have no privacy guarantee. Declare bounds, e.g. "
        "pdp.Sum(lower=..., upper=...)"
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        pdp.release(X, pdp.Sum(), pdp.Laplace(scale=1.0), rng=1)
    with pytest.raises(
        ValueError, match=re.escape("has no sensitivity, so the release would have no")
    ):
        pdp.release(X, pdp.Mean(), pdp.Gaussian(sigma=1.0), rng=1)
    # a declared sensitivity, or bounds, give the guarantee
    r = pdp.release(X, pdp.Sum(), pdp.Laplace(scale=1.0, sensitivity=2.0), rng=1)
    assert r.dp_event() is not None and r.mechanism.epsilon_spent == 2.0


def test_float32_records_are_summed_in_float64():
    """Old: float32 records at n = 2^24 + 2 were summed in float32, and replacing one record
    (1 → 0) moved the sum by 2.0, twice the declared sensitivity 1.0."""
    n = 2**24 + 2
    x = np.ones(n, dtype=np.float32)
    neighbour = x.copy()
    neighbour[0] = 0.0
    stat = pdp.Sum(lower=0, upper=1)
    s, s_nb = float(stat.evaluate(x)), float(stat.evaluate(neighbour))
    assert s == n and s_nb == n - 1
    assert abs(s - s_nb) <= stat.sensitivity(1, n=n, dim=1)
    # the release itself: noise of scale 1e-6 around the exact float64 sum
    r = pdp.release(x, stat, pdp.Laplace(scale=1e-6), rng=1)
    assert abs(float(r) - n) < 1e-3
    mean = pdp.release(x, pdp.Mean(lower=0, upper=1), pdp.Laplace(scale=1e-12), rng=1)
    assert abs(float(mean) - 1.0) < 1e-9


@pytest.mark.parametrize("rng", [1, None], ids=["exact sampler", "OpenDP"])
def test_extreme_bounds_are_refused_before_any_noise(rng):
    """Old: a bare ``OverflowError`` (exact sampler) or an ``inf`` release (OpenDP)."""
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Sum(lower=0.0, upper=1e+300) of n=50 records with Laplace(scale=None, epsilon=0.001, "
            "sensitivity=1e+300) can reach 1e+306 in magnitude"
        ),
    ):
        pdp.release(X, pdp.Sum(lower=0, upper=1e300), pdp.Laplace(epsilon=1e-3), rng=rng)
    with pytest.raises(
        ValueError,
        match=re.escape("Mean bounds are too far apart: upper - lower overflows float64"),
    ):
        pdp.Mean(lower=-1e308, upper=1e308)
    # just inside the limit: a finite release on both routes
    r = pdp.release(np.abs(X), pdp.Sum(lower=0, upper=1e290), pdp.Laplace(epsilon=1.0), rng=rng)
    assert np.isfinite(float(r))


def test_lattice_values_beyond_float64_are_clamped_not_raised():
    big = np.finfo(np.float64).max
    out = _exact.lattice_value(np.array([2**2000, -(2**2000), 3], dtype=object), 0)
    assert out.tolist() == [big, -big, 3.0]


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: pdp.Laplace(epsilon="1"), "epsilon"),
        (lambda: pdp.Laplace(scale="1"), "scale"),
        (lambda: pdp.DiscreteLaplace(epsilon="1"), "epsilon"),
        (lambda: pdp.Gaussian(epsilon="1", delta=1e-5), "epsilon"),
        (lambda: pdp.Gaussian(epsilon=1.0, delta="1e-5"), "delta"),
        (lambda: pdp.DiscreteGaussian(rho="0.5"), "rho"),
        (lambda: pdp.RandomizedResponse(epsilon="1"), "epsilon"),
        (lambda: pdp.SmoothLaplace(epsilon="1", delta=1e-6), "epsilon"),
        (lambda: pdp.Laplace(epsilon=1.0, sensitivity="2"), "sensitivity"),
    ],
)
def test_strings_are_not_numbers(make, name):
    """Old: ``epsilon='1'`` was accepted (``float('1')``)."""
    with pytest.raises(TypeError, match=re.escape(f"{name} must be a real number, got {name}='")):
        make()


@pytest.mark.parametrize(
    "make, owner, arg",
    [
        (lambda: pdp.Sum(True, 2), "Sum", "lower=True"),
        (lambda: pdp.Mean(0, True), "Mean", "upper=True"),
        (lambda: pdp.Local("0", 1), "Local", "lower='0'"),
        (lambda: pdp.Median(False, 3), "Median", "lower=False"),
        (lambda: pdp.Max(0, "3"), "Max", "upper='3'"),
    ],
)
def test_bounds_must_be_real_numbers(make, owner, arg):
    """Old: ``Sum(True, 2)`` became ``Sum(lower=1.0, upper=2.0)``."""
    with pytest.raises(
        TypeError,
        match=re.escape(
            f"{owner} bound {arg.split('=')[0]} must be a real number or None, got {arg}"
        ),
    ):
        make()
    with pytest.raises(
        ValueError, match=re.escape("n_categories must be an integer >= 2, got n_categories=True")
    ):
        pdp.Counts(True)
    assert pdp.Sum(np.float32(0), np.int64(2)).upper == 2.0  # NumPy scalars are numbers


def test_smooth_laplace_never_releases_with_zero_scale(monkeypatch):
    """Old: for 10^5 equal records the smooth sensitivity underflowed to 0.0 and the OpenDP route
    added no noise at all. The β-smooth bound of bounded data is never 0; it is floored."""
    x = np.full(10**5, 1.0)
    stat, mech = pdp.Median(lower=0, upper=3), pdp.SmoothLaplace(epsilon=1.0, delta=1e-6)
    sens = stat.smooth_sensitivity_np(x, mech.beta)
    assert sens >= 3.0 * 2.0**-1022 > 0
    assert order_smooth_sensitivity(x, 50_000, 3.0, mech.beta) > 0
    scales = []
    real = pdp.mechanisms.smooth.laplace_release

    def spy(statistic, scale, rng, **kw):
        scales.append(scale)
        return real(statistic, scale, rng, **kw)

    monkeypatch.setattr(pdp.mechanisms.smooth, "laplace_release", spy)
    pdp.release(x, stat, mech)  # OpenDP route
    assert scales and scales[0] > 0
    with pytest.raises(
        ValueError, match=re.escape("SmoothLaplace needs a positive, finite noise scale")
    ):
        mech.sample(1.0, 1, scale=0.0)


def test_a_node_may_restate_the_release_noise_by_its_scale():
    """Old: ``Laplace(scale=b)`` with b the release's calibrated scale was refused by DPObserved
    (dataclass equality compared ``epsilon`` and ``scale`` fields, not the noise)."""
    r = pdp.release(X, pdp.Mean(lower=-2, upper=4), pdp.Laplace(epsilon=1.0), rng=3)
    g = pdp.release(X, pdp.Mean(lower=-2, upper=4), pdp.Gaussian(epsilon=1.0, delta=1e-6), rng=3)
    for rel, mech in (
        (r, pdp.Laplace(scale=r.mechanism.noise_scale)),
        (g, pdp.Gaussian(sigma=g.mechanism.noise_sd)),
    ):
        assert rel.mechanism == mech.bind(rel.statistic, n=50, dim=1)
        assert hash(rel.mechanism) == hash(mech.bind(rel.statistic, n=50, dim=1))
        with pm.Model():
            x = pm.Normal("x", 0, 1, shape=50)
            pdp.DPObserved(
                "s", x, statistic=pdp.Mean(lower=-2, upper=4), mechanism=mech, observed=rel
            )
    # a different noise is still refused
    with (
        pytest.raises(ValueError, match=re.escape("is a Release made with mechanism=")),
        pm.Model(),
    ):
        x = pm.Normal("x", 0, 1, shape=50)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Mean(lower=-2, upper=4),
            mechanism=pdp.Laplace(scale=1.01 * r.mechanism.noise_scale),
            observed=r,
        )
    assert pdp.Laplace(epsilon=1.0) != pdp.Laplace(scale=1.0)  # uncalibrated: compared by fields
    assert math.isclose(r.mechanism.noise_scale, 6.0 / 50)
