"""The mechanism protocol: every mechanism states its own facts, unknown kernel codes are refused
everywhere, and the accountant uses the facts the mechanisms state."""

import dataclasses
import math

import dp_accounting
import numpy as np
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.accounting.spent import _pure_epsilon, rho_of_event
from pymc_dp.mechanisms.base import (
    KERNEL_CODES,
    Mechanism,
    check_kernel_codes,
    kernel_logpdf,
    kernel_quadratic,
)

CALIBRATED = [
    pdp.Laplace(scale=2.0, sensitivity=1.0),
    pdp.DiscreteLaplace(scale=2.0, sensitivity=1.0),
    pdp.Gaussian(sigma=1.5, sensitivity=1.0),
    pdp.DiscreteGaussian(sigma=1.5, sensitivity=1.0),
    pdp.RandomizedResponse(epsilon=1.0, n_categories=3),
]


def test_unknown_kernel_code_is_refused_when_the_class_is_defined():
    with pytest.raises(TypeError, match=r"kernel_code=7 is not a compiled kernel"):

        @dataclasses.dataclass(frozen=True, eq=False)
        class Odd(Mechanism):
            kernel_code = 7

    with pytest.raises(TypeError, match="is not a compiled kernel"):

        @dataclasses.dataclass(frozen=True, eq=False)
        class Flag(Mechanism):
            kernel_code = True


def test_unknown_kernel_code_is_refused_by_the_samplers_and_the_kernel():
    assert check_kernel_codes([0, 1, 2]).dtype == np.int64
    with pytest.raises(ValueError, match=r"unknown compiled kernel code\(s\) \[3\]"):
        check_kernel_codes([0, 3])
    for code in KERNEL_CODES:
        assert np.isfinite(kernel_logpdf(code, 0.5, -1.0, 0.25))
    with pytest.raises(ValueError, match="unknown kernel code"):
        kernel_logpdf(3, 0.5, -1.0, 0.25)
    with pytest.raises(ValueError, match="SmoothLaplace"):
        pdp.SmoothLaplace(epsilon=1.0, delta=1e-6).compiled_kernel()


@pytest.mark.parametrize("mech", CALIBRATED, ids=lambda m: type(m).__name__)
def test_compiled_kernel_is_the_density(mech):
    code, a, b = mech.compiled_kernel()
    z = np.array([-2.0, 0.0, 1.0, 3.0])
    want = [kernel_logpdf(code, a, b, v) for v in z]
    np.testing.assert_allclose(mech.logpdf(z + 1.0, 1.0), want, rtol=1e-15)
    # kernel_quadratic: A of ℓ(z) = −A z² + B when the density is quadratic in z, else NaN
    ell = [kernel_logpdf(code, a, b, v) for v in (-1.0, 0.0, 1.0, 2.0)]
    quadratic = np.allclose(np.subtract(ell, ell[1]), [-a, 0.0, -a, -4.0 * a])
    if quadratic:
        assert kernel_quadratic(code, a) == a
    else:
        assert math.isnan(kernel_quadratic(code, a))
    with pytest.raises(ValueError, match="unknown kernel code"):
        kernel_quadratic(3, 0.5)


@pytest.mark.parametrize("mech", CALIBRATED[:4], ids=lambda m: type(m).__name__)
def test_noise_sd_and_tail_radius(mech):
    z = np.arange(-400, 401, dtype=float) if mech.integer else None
    if mech.integer:
        p = np.exp(mech.logpdf(z, 0.0))
        sd = math.sqrt(np.sum(p * z**2))
        assert sd <= mech.noise_sd and sd == pytest.approx(mech.noise_sd, rel=0.05)
    else:
        assert mech.noise_sd == pytest.approx(mech.noise_distribution().std(), rel=1e-14)
    for log_ratio in (1.0, 4.0, math.log(1e12)):
        w = mech.tail_radius(log_ratio)
        top = mech.logpdf(0.0, 0.0)
        assert mech.logpdf(w, 0.0) - top <= -log_ratio * (1 - 1e-12)
        if mech.integer:  # P(|Z| > w) from the pmf
            assert p[np.abs(z) > w].sum() <= math.exp(-log_ratio)
        else:
            assert 2 * mech.noise_distribution().sf(w) <= math.exp(-log_ratio) * (1 + 1e-12)


def test_capability_facts():
    lap, dlap, gau, dgau, rr = CALIBRATED
    assert gau.gaussian_sd == 1.5 and dgau.gaussian_sd == 1.5
    assert lap.gaussian_sd is None and dlap.gaussian_sd is None and rr.gaussian_sd is None
    assert isinstance(gau.noise_distribution(loc=1.0).dist, type(stats.norm))
    assert dlap.noise_distribution() is None and dgau.noise_distribution() is None
    assert rr.noise_sd == math.inf and rr.tail_radius(1.0) is None
    smooth = pdp.SmoothLaplace(epsilon=1.0, delta=1e-6)
    assert smooth.tail_radius(1.0) is None and smooth.noise_distribution() is None


@pytest.mark.parametrize("mech", CALIBRATED, ids=lambda m: type(m).__name__)
def test_guarantee_facts_agree_with_the_event(mech):
    """``epsilon_spent`` / ``rho_spent`` are exactly what the accountant reads from the event."""
    ev = mech.dp_event()
    assert mech.epsilon_delta is None
    assert mech.epsilon_spent == _pure_epsilon(ev)
    assert mech.rho_spent == rho_of_event(ev)


def test_accountant_composes_a_mechanism_by_its_stated_guarantee():
    """A mechanism without a dp_accounting event states (ε, δ); pure ε-DP needs no δ field."""

    @dataclasses.dataclass(frozen=True, eq=False)
    class PureOnly(pdp.Laplace):
        def dp_event(self):
            return dp_accounting.UnsupportedDpEvent()

        @property
        def epsilon_delta(self):
            return (0.4, 0.0)

    x = np.array([0.2, 0.9, 0.4])
    r = pdp.release(x, pdp.Sum(lower=0, upper=1), PureOnly(scale=2.5), rng=1)
    assert float(pdp.privacy_spent(r, delta=1e-6)) == 0.4
    g = pdp.release(x, pdp.Sum(lower=0, upper=1), pdp.Gaussian(sigma=3.0), rng=2)
    rho = pdp.privacy_spent(g, delta=1e-6).rho
    assert rho == pytest.approx(1.0 / (2.0 * 3.0**2), rel=1e-15)
    assert pdp.privacy_spent([r, g], delta=1e-6).rho is None
