"""Mechanisms: densities vs scipy, three routes that must agree, sampling, calibration, errors."""

import math
import re

import numpy as np
import pytensor.tensor as pt
import pytest
from dp_accounting import gaussian_mechanism, pld
from scipy import stats

import pymc_dp as pdp
from pymc_dp.mechanisms import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    kernel_logpdf,
)

SUM = pdp.Sum(lower=0, upper=2)


def bound(mech, n=10, dim=1):
    return mech.bind(SUM, n=n, dim=dim)


@pytest.mark.parametrize(
    "mech, ref",
    [
        (pdp.Laplace(scale=1.5), lambda r, s: stats.laplace.logpdf(r, loc=s, scale=1.5)),
        (pdp.Gaussian(sigma=0.7), lambda r, s: stats.norm.logpdf(r, loc=s, scale=0.7)),
        (bound(pdp.Laplace(epsilon=0.5)), lambda r, s: stats.laplace.logpdf(r, loc=s, scale=4.0)),
    ],
)
def test_continuous_logpdf_matches_scipy_and_the_other_routes(mech, ref):
    r = np.array([-3.0, 0.1, 2.5, 7.0])
    s = np.array([0.0, 0.3, 2.5, -1.0])
    np.testing.assert_allclose(mech.logpdf(r, s), ref(r, s), rtol=1e-12)
    np.testing.assert_allclose(
        mech.logp(pt.as_tensor(r), pt.as_tensor(s)).eval(), ref(r, s), rtol=1e-12
    )
    a, b = mech.kernel_params()
    kern = [kernel_logpdf(mech.kernel_code, a, b, ri - si) for ri, si in zip(r, s)]
    np.testing.assert_allclose(kern, ref(r, s), rtol=1e-12)


def test_discrete_laplace_pmf_normalises_and_matches_geometric_difference():
    mech = pdp.DiscreteLaplace(scale=1.7)
    k = np.arange(-200, 201)
    p = np.exp(mech.logpdf(k, 0))
    assert p.sum() == pytest.approx(1.0, rel=1e-12)
    # closed form: P(k) = (1 - q)/(1 + q) q^|k|, q = e^{-1/b}
    q = math.exp(-1 / 1.7)
    np.testing.assert_allclose(p, (1 - q) / (1 + q) * q ** np.abs(k), rtol=1e-12)
    draws = mech.sample(np.zeros(40_000), np.random.default_rng(0))
    assert draws.dtype == np.int64
    kk = np.arange(-6, 7)
    observed = np.array([(draws == v).sum() for v in kk] + [(np.abs(draws) > 6).sum()])
    expected = 40_000 * np.append(np.exp(mech.logpdf(kk, 0)), 1 - np.exp(mech.logpdf(kk, 0)).sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-3


@pytest.mark.parametrize("k", [2, 4])
def test_randomized_response_probabilities_and_draws(k):
    mech = pdp.RandomizedResponse(epsilon=1.2, n_categories=k)
    keep = math.exp(1.2) / (math.exp(1.2) + k - 1)
    assert mech.p_keep == pytest.approx(keep)
    lp = mech.logpdf(np.arange(k), 1)
    np.testing.assert_allclose(np.exp(lp).sum(), 1.0)
    assert np.exp(lp[1]) == pytest.approx(keep)
    x = np.full(30_000, 1)
    r = mech.sample(x, np.random.default_rng(3))
    counts = np.bincount(r, minlength=k)
    assert stats.chisquare(counts, 30_000 * np.exp(lp)).pvalue > 1e-3
    # e^eps ratio: the defining property
    assert lp[1] - lp[0] == pytest.approx(1.2)


@pytest.mark.parametrize("mech", [pdp.Laplace(scale=0.8), pdp.Gaussian(sigma=1.3)])
def test_continuous_draws_follow_the_density(mech):
    draws = mech.sample(np.full(20_000, 2.0), np.random.default_rng(11)) - 2.0
    cdf = (
        stats.laplace(scale=0.8).cdf if isinstance(mech, pdp.Laplace) else stats.norm(scale=1.3).cdf
    )
    assert stats.kstest(draws, cdf).pvalue > 1e-3


def test_laplace_calibration_and_event_match_dp_accounting():
    mech = pdp.Laplace(epsilon=0.5).bind(pdp.Mean(lower=-1, upper=3), n=100, dim=1)
    assert mech.noise_scale == pytest.approx(0.04 / 0.5)
    acc = pld.PLDAccountant(value_discretization_interval=1e-5)
    acc.compose(mech.dp_event())
    assert acc.get_epsilon(1e-12) == pytest.approx(0.5, rel=1e-3)


@pytest.mark.parametrize("eps, delta, sens", [(0.5, 1e-5, 1.0), (1.0, 1e-6, 2.0), (4.0, 1e-3, 0.3)])
def test_analytic_gaussian_matches_dp_accounting(eps, delta, sens):
    sigma = analytic_gaussian_sigma(eps, delta, sens)
    assert sigma / sens == pytest.approx(
        gaussian_mechanism.get_sigma_gaussian(eps, delta), rel=1e-6
    )
    assert analytic_gaussian_delta(sigma, eps, sens) <= delta
    mech = pdp.Gaussian(epsilon=eps, delta=delta).bind(SUM, n=5, dim=1)
    mech = pdp.Gaussian(epsilon=eps, delta=delta, sensitivity=sens)
    acc = pld.PLDAccountant(value_discretization_interval=1e-5)
    acc.compose(mech.dp_event())
    # PLD is a (slightly pessimistic) upper bound of the exact epsilon
    assert acc.get_epsilon(delta) == pytest.approx(eps, rel=2e-3)


def test_classic_gaussian_is_looser_than_analytic():
    classic = pdp.Gaussian(epsilon=0.5, delta=1e-5, sensitivity=1.0, calibration="classic")
    analytic = pdp.Gaussian(epsilon=0.5, delta=1e-5, sensitivity=1.0)
    assert classic.noise_sd == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5)
    assert classic.noise_sd > analytic.noise_sd
    assert analytic_gaussian_delta(classic.noise_sd, 0.5) <= 1e-5


def test_gaussian_binds_l2_sensitivity():
    mech = pdp.Gaussian(epsilon=1.0, delta=1e-5).bind(pdp.Sum(lower=0, upper=1), n=10, dim=4)
    assert mech.sensitivity == pytest.approx(2.0)  # sqrt(4) * 1
    mech = pdp.Laplace(epsilon=1.0).bind(pdp.Sum(lower=0, upper=1), n=10, dim=4)
    assert mech.sensitivity == pytest.approx(4.0)


def test_discrete_laplace_event_and_rr_event():
    dl = pdp.DiscreteLaplace(epsilon=0.7).bind(pdp.Counts(3), n=10, dim=3)
    assert dl.sensitivity == 2.0 and dl.noise_scale == pytest.approx(2 / 0.7)
    acc = pld.PLDAccountant(value_discretization_interval=1e-5)
    acc.compose(dl.dp_event())
    assert acc.get_epsilon(1e-12) == pytest.approx(0.7, rel=1e-3)
    rr = pdp.RandomizedResponse(epsilon=0.9, n_categories=3)
    event = rr.dp_event()  # PLDAccountant does not compose RR events; use its PLD directly
    loss = pld.privacy_loss_distribution.from_randomized_response(
        noise_parameter=event.noise_parameter,
        num_buckets=event.num_buckets,
        value_discretization_interval=1e-5,
    )
    assert loss.get_epsilon_for_delta(1e-12) == pytest.approx(0.9, rel=1e-3)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: pdp.Laplace(epsilon=0), "epsilon must be finite and > 0, got epsilon=0."),
        (lambda: pdp.Laplace(epsilon=-1.0), "epsilon must be finite and > 0, got epsilon=-1.0."),
        (
            lambda: pdp.Laplace(epsilon=float("inf")),
            "epsilon must be finite and > 0, got epsilon=inf.",
        ),
        (
            lambda: pdp.Laplace(epsilon=float("nan")),
            "epsilon must be finite and > 0, got epsilon=nan.",
        ),
        (lambda: pdp.Laplace(scale=0), "scale must be finite and > 0, got scale=0."),
        (lambda: pdp.Laplace(scale=-2.0), "scale must be finite and > 0, got scale=-2.0."),
        (lambda: pdp.Laplace(scale=1, epsilon=1), "Laplace takes either scale or epsilon"),
        (lambda: pdp.Laplace(), "Laplace needs scale=... or epsilon=..., got neither."),
        (lambda: pdp.Gaussian(sigma=-1.0), "sigma must be finite and > 0, got sigma=-1.0."),
        (
            lambda: pdp.Gaussian(epsilon=1.0, delta=0.0),
            "delta must lie in the open interval (0, 1), got delta=0.0.",
        ),
        (
            lambda: pdp.Gaussian(epsilon=1.0, delta=1.5),
            "delta must lie in the open interval (0, 1), got delta=1.5.",
        ),
        (lambda: pdp.Gaussian(epsilon=1.0), "Gaussian(epsilon=...) needs delta, got delta=None."),
        (
            # below what the accountant's privacy loss distribution can report (about 1e-23)
            lambda: pdp.Gaussian(epsilon=1.0, delta=1e-25),
            "Gaussian(epsilon=..., delta=...) needs delta >= 1e-20, got delta=1e-25",
        ),
        (
            lambda: pdp.Gaussian(epsilon=2.0, delta=1e-5, calibration="classic"),
            "calibration='classic' holds only for epsilon < 1, got epsilon=2.0.",
        ),
        (lambda: pdp.Gaussian(sigma=1.0, calibration="exact"), "calibration must be one of"),
        (
            lambda: pdp.DiscreteLaplace(epsilon=1.0, sensitivity=0.5),
            "DiscreteLaplace needs a positive integer sensitivity",
        ),
        (
            lambda: pdp.RandomizedResponse(epsilon=0.0),
            "epsilon must be finite and > 0, got epsilon=0.0.",
        ),
        (
            lambda: pdp.RandomizedResponse(epsilon=1.0, n_categories=1),
            "n_categories must be an integer >= 2, got n_categories=1.",
        ),
    ],
)
def test_bad_mechanism_arguments(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_unbounded_statistic_is_refused_with_the_fix():
    with pytest.raises(
        ValueError,
        match=re.escape("declares no bounds. Declare bounds, e.g. pdp.Sum(lower=..., upper=...)"),
    ):
        pdp.Laplace(epsilon=1.0).bind(pdp.Sum(), n=10, dim=1)
    # a noise scale given directly needs no bounds
    assert pdp.Laplace(scale=2.0).bind(pdp.Sum(), n=10, dim=1).noise_scale == 2.0


def test_uncalibrated_mechanism_refuses_to_sample():
    with pytest.raises(ValueError, match="is not calibrated yet"):
        pdp.Laplace(epsilon=1.0).sample(0.0, np.random.default_rng(0))


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: pdp.Laplace(epsilon=True), "epsilon"),
        (lambda: pdp.Laplace(scale=True), "scale"),
        (lambda: pdp.Laplace(epsilon=1.0, sensitivity=True), "sensitivity"),
        (lambda: pdp.Gaussian(sigma=True), "sigma"),
        (lambda: pdp.Gaussian(epsilon=1.0, delta=True), "delta"),
        (lambda: pdp.DiscreteLaplace(epsilon=1.0, sensitivity=True), "sensitivity"),
        (lambda: pdp.SmoothLaplace(epsilon=True, delta=1e-3), "epsilon"),
        (lambda: pdp.SmoothLaplace(epsilon=1.0, delta=np.bool_(True)), "delta"),
        (lambda: pdp.RandomizedResponse(epsilon=True), "epsilon"),
        (lambda: pdp.DiscreteGaussian(rho=True), "rho"),
    ],
)
def test_bools_are_refused_where_a_number_is_expected(make, name):
    with pytest.raises(
        TypeError, match=re.escape(f"{name} must be a number, got {name}=True (a bool).")
    ):
        make()


@pytest.mark.parametrize(
    "mech, value",
    [
        (pdp.Laplace(scale=1.0), "3"),
        (pdp.Gaussian(sigma=1.0), "3"),
        (pdp.DiscreteLaplace(scale=1.0), True),
        (pdp.DiscreteGaussian(sigma=1.0), np.array([True, False])),
    ],
)
def test_sample_refuses_text_and_bools(mech, value):
    # "3" would be read as 3 and True as 1: a statistic is numbers
    with pytest.raises(TypeError, match=re.escape(".sample needs a numeric statistic")):
        mech.sample(value, rng=1)


def test_randomized_response_refuses_bool_categories():
    with pytest.raises(
        ValueError, match=re.escape("n_categories must be an integer >= 2, got n_categories=True.")
    ):
        pdp.RandomizedResponse(epsilon=1.0, n_categories=True)


@pytest.mark.parametrize(
    "mech, attr",
    [
        (pdp.Laplace(epsilon=1.0), "noise_scale"),
        (pdp.Gaussian(epsilon=1.0, delta=1e-5), "noise_sd"),
        (pdp.DiscreteLaplace(epsilon=1.0), "noise_scale"),
        (pdp.DiscreteGaussian(rho=0.5), "noise_sd"),
    ],
)
def test_uncalibrated_scale_is_an_attribute_error_with_the_fix(mech, attr):
    assert not hasattr(mech, attr)
    with pytest.raises(
        AttributeError,
        match=re.escape(
            "is not calibrated yet: it knows its privacy budget but not the statistic's sensitivity. Pass sensitivity=..."
        ),
    ):
        getattr(mech, attr)
    with pytest.raises(ValueError):  # still a ValueError for callers that caught that
        getattr(mech, attr)


def test_one_letter_names_are_deprecated_aliases():
    lap, gau = pdp.Laplace(scale=1.5), pdp.Gaussian(sigma=0.7)
    with pytest.warns(
        DeprecationWarning, match=re.escape("Laplace.b is deprecated; use Laplace.noise_scale.")
    ):
        assert lap.b == lap.noise_scale == 1.5
    with pytest.warns(
        DeprecationWarning, match=re.escape("Gaussian.s is deprecated; use Gaussian.noise_sd.")
    ):
        assert gau.s == gau.noise_sd == 0.7


def test_discrete_laplace_never_rounds_a_non_integer_statistic():
    """Issue 9 item 2: Sum(0, 1) on [0.5, 0] vs [0.5, 1] must not become rint(0.5) vs rint(1.5)."""
    mech = pdp.DiscreteLaplace(epsilon=1.0).bind(pdp.Sum(lower=0, upper=1), n=2, dim=1)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "DiscreteLaplace adds integer noise to an integer statistic, but some statistic values are not "
            "integers. Use an integer statistic (e.g. pdp.Sum of integer records with integer bounds, or "
            "pdp.Counts), or the continuous mechanism (Laplace)."
        ),
    ):
        mech.sample(0.5, np.random.default_rng(0))
    assert mech.sample(np.array([1.0, 2.0]), np.random.default_rng(0)).dtype == np.int64


def test_integer_mechanisms_release_integers_and_float_ones_lattice_points():
    rng = np.random.default_rng(1)
    assert pdp.DiscreteLaplace(scale=2.0).sample(np.array([3, 4]), rng).dtype == np.int64
    lap = pdp.Laplace(scale=2.0)
    out = lap.sample(np.array([0.1, 7.3]), rng)
    assert np.all(np.ldexp(out, -lap.lattice_k) == np.round(np.ldexp(out, -lap.lattice_k)))


def test_symbolic_noise_parameter_is_refused_with_the_reason():
    """A user who makes the noise scale a random variable (or pm.Data) was told 'not a string'."""
    import pymc as pm

    with pm.Model():
        b = pm.HalfNormal("b", 1.0)
        with pytest.raises(TypeError, match=r"scale=b is a PyTensor variable.*published number"):
            pdp.Laplace(scale=b)
        with pytest.raises(TypeError, match=r"epsilon=e is a PyTensor variable"):
            pdp.Gaussian(epsilon=pm.Data("e", 1.0), delta=1e-5)


@pytest.mark.parametrize(
    "mech",
    [
        pdp.DiscreteLaplace(scale=1.0),
        pdp.DiscreteGaussian(sigma=1.0),
        pdp.Staircase(epsilon=1.0, sensitivity=1),
        pdp.TruncatedDiscreteLaplace(epsilon=1.0, delta=1e-6, sensitivity=1),
    ],
    ids=lambda m: type(m).__name__,
)
@pytest.mark.parametrize(
    "value",
    [np.uint64(2**64 - 1), np.int64(2**63 - 1), np.int64(-(2**63)), np.array([3, 2**62])],
    ids=["uint64_max", "int64_max", "int64_min", "array_2^62"],
)
def test_integer_sample_refuses_statistics_that_would_wrap(mech, value):
    """Integer statistics were cast to int64 unchecked: uint64 2^64 − 1 came out as −2, and
    int64 max plus noise wrapped to −2^63 in about a quarter of draws."""
    with pytest.raises(ValueError, match=re.escape("must be below 2^62 in magnitude")):
        mech.sample(value, rng=1)
