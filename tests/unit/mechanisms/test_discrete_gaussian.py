"""DiscreteGaussian: exact pmf and normaliser, sampler vs pmf, calibration, accounting, predictive
draws, and (slow) an exact posterior by enumeration of the latent counts."""

import math
import re

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from dp_accounting import dp_event, rdp
from scipy import special, stats

import pymc_dp as pdp
from pymc_dp.mechanisms import kernel_logpdf
from pymc_dp.mechanisms.discrete_gaussian import (
    discrete_gaussian_delta_exact,
    discrete_gaussian_sigma,
    log_normaliser,
    zcdp_delta,
)
from tests.support import exact
from tests.support.exact import dirichlet_counts_posterior
from tests.support.mc import assert_within_se


def brute_log_z(sigma):
    m = np.arange(-4000, 4001, dtype=float)
    return special.logsumexp(-m * m / (2 * sigma * sigma))


@pytest.mark.parametrize("sigma", [0.2, 0.7, 1.3, 1.999, 2.0, 6.25, 40.0])
def test_normaliser_matches_a_long_sum_and_states_its_error(sigma):
    log_z, bound = log_normaliser(sigma)
    assert bound < 1e-300
    assert log_z == pytest.approx(brute_log_z(sigma), abs=1e-13)


@pytest.mark.parametrize("sigma", [0.6, 6.25])
def test_pmf_normalises_and_three_routes_agree(sigma):
    mech = pdp.DiscreteGaussian(sigma=sigma)
    y = np.arange(-400, 401)
    p = np.exp(mech.logpdf(y, 3))
    assert p.sum() == pytest.approx(1.0, rel=1e-13)
    ref = -((y - 3.0) ** 2) / (2 * sigma**2) - brute_log_z(sigma)
    np.testing.assert_allclose(mech.logpdf(y, 3), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        mech.logp(pt.as_tensor(y), pt.as_tensor(3)).eval(), ref, rtol=1e-12, atol=1e-12
    )
    a, b = mech.kernel_params()
    kern = [kernel_logpdf(mech.kernel_code, a, b, float(v - 3)) for v in y[::40]]
    np.testing.assert_allclose(kern, ref[::40], rtol=1e-12)
    assert mech.integer and mech.norm == 2


@pytest.mark.parametrize("sigma, seed", [(0.8, 0), (6.25, 1)])
def test_seeded_sampler_matches_the_pmf(sigma, seed):
    """Chi-square goodness of fit; false-alarm rate 1e-3 per case (fixed seeds, not tuned)."""
    mech = pdp.DiscreteGaussian(sigma=sigma)
    n = 20_000
    draws = mech.sample(np.zeros(n, dtype=np.int64), np.random.default_rng(seed))
    assert draws.dtype == np.int64
    edge = math.ceil(2.5 * sigma)
    k = np.arange(-edge, edge + 1)
    pk = np.exp(mech.logpdf(k, 0))
    observed = [(draws == v).sum() for v in k] + [(np.abs(draws) > edge).sum()]
    expected = n * np.append(pk, 1 - pk.sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_sampler_check_can_fail():
    """The same chi-square rejects draws of a slightly wrong σ (the test has power)."""
    mech, wrong = pdp.DiscreteGaussian(sigma=6.25), pdp.DiscreteGaussian(sigma=5.9)
    draws = wrong.sample(np.zeros(20_000, dtype=np.int64), np.random.default_rng(1))
    k = np.arange(-16, 17)
    pk = np.exp(mech.logpdf(k, 0))
    observed = [(draws == v).sum() for v in k] + [(np.abs(draws) > 16).sum()]
    assert stats.chisquare(observed, 20_000 * np.append(pk, 1 - pk.sum())).pvalue < 1e-3


def test_rho_calibration_and_event():
    mech = pdp.DiscreteGaussian(rho=0.5).bind(pdp.Counts(4), n=100, dim=4)
    assert mech.sensitivity == pytest.approx(math.sqrt(2))
    assert mech.noise_sd == pytest.approx(math.sqrt(2) / math.sqrt(1.0))
    assert mech.rho_spent == pytest.approx(0.5)
    assert mech.dp_event() == dp_event.ZCDpEvent(rho=0.5)
    fixed = pdp.DiscreteGaussian(sigma=6.25).bind(pdp.Counts(4), n=400, dim=4)
    assert fixed.rho_spent == pytest.approx(2 / (2 * 6.25**2))
    acc = rdp.RdpAccountant()
    acc.compose(fixed.dp_event())
    rho = 2 / (2 * 6.25**2)  # zCDP -> (ε, δ): at most ρ + 2√(ρ log 1/δ) (Bun–Steinke), above ρ
    assert rho < acc.get_epsilon(1e-6) <= rho + 2 * math.sqrt(rho * math.log(1e6))


@pytest.mark.parametrize("eps, delta, sens", [(1.0, 1e-6, 1.0), (0.5, 1e-5, 2.0), (3.0, 1e-8, 1.0)])
def test_epsilon_delta_calibration_attains_delta(eps, delta, sens):
    """sigma starts from CKS Corollary 13 and is raised only as far as the accountant needs."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    mech = pdp.DiscreteGaussian(epsilon=eps, delta=delta, sensitivity=sens)
    sigma = mech.noise_sd
    cks = discrete_gaussian_sigma(eps, delta, sens)
    assert cks <= sigma <= 1.1 * cks
    # the zCDP conversion is met; the accountant reports at most eps, and a 1e-6 smaller sigma
    # (or the CKS one, when it differs) would be reported above eps
    assert zcdp_delta(mech.rho_spent, eps) <= delta
    assert pdp.privacy_spent(mech.dp_event(), delta=delta) <= eps
    smaller = pdp.DiscreteGaussian(sigma=sigma * (1 - 1e-6), sensitivity=sens)
    assert pdp.privacy_spent(smaller.dp_event(), delta=delta) > eps or sigma == cks
    # the exact one-coordinate privacy profile (CKS Theorem 7) is below the target
    assert discrete_gaussian_delta_exact(sigma, eps, int(sens)) <= delta
    # OpenDP's own profile of its discrete Gaussian at this sigma is below the target too
    meas = dp.m.make_gaussian(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), scale=sigma)
    profile = dp.c.make_zCDP_to_approxDP(meas).map(int(sens))
    assert profile.delta(eps) <= delta * (1 + 1e-9)


def test_exact_profile_matches_continuous_for_large_sigma():
    """CKS Thm 7 computed by summation approaches Balle & Wang's continuous δ as σ grows."""
    from pymc_dp.mechanisms import analytic_gaussian_delta

    assert discrete_gaussian_delta_exact(30.0, 0.05, 1) == pytest.approx(
        analytic_gaussian_delta(30.0, 0.05), rel=1e-3
    )


def test_predictive_draws_are_integers_and_logp_is_the_pmf():
    n = 30
    obs = np.array([8, 7, 9, 6])
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(4))
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved(
            "c", x, statistic=pdp.Counts(4), mechanism=pdp.DiscreteGaussian(sigma=2.5), observed=obs
        )
        pp = pm.sample_prior_predictive(200, random_seed=3)
    c = np.asarray(pp.prior_predictive["c"]).reshape(-1, 4)
    assert c.dtype == np.int64
    # draws minus the latent counts are i.i.d. discrete Gaussian noise, one per cell and draw
    counts = np.stack(
        [np.bincount(r, minlength=4) for r in np.asarray(pp.prior["x"]).reshape(-1, n)]
    )
    noise = (c - counts).ravel()
    # 800 i.i.d. discrete Gaussian(σ=2.5) draws: mean 0, Var = Σ k² p(k) = 6.25 to 1e-15 and
    # kurtosis 3 (enumerated over |k| <= 100), so SE(mean) = 2.5/√800 = 0.088 and
    # SE(var) = 6.25·√(2/800) = 0.31; 4 SE each (family-wise false failure ≈ 1.3e-4)
    se_var = 6.25 * math.sqrt(2.0 / noise.size)
    assert_within_se(noise.mean(), 0.0, 2.5 / math.sqrt(noise.size), label="DG noise mean")
    assert_within_se(noise.var(), 6.25, se_var, label="DG noise variance")
    # the node's logp is the pmf
    point = model.initial_point()
    rv_logp = model.compile_logp(vars=[model["c"]])(point)
    counts0 = np.bincount(point["x"], minlength=4)
    ref = pdp.DiscreteGaussian(sigma=2.5).logpdf(obs, counts0).sum()
    assert rv_logp == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize(
    "make, err, message",
    [
        (
            lambda: pdp.DiscreteGaussian(),
            ValueError,
            "DiscreteGaussian takes exactly one of sigma, epsilon (with delta) and rho",
        ),
        (
            lambda: pdp.DiscreteGaussian(2.0, rho=0.5),
            ValueError,
            "got sigma=2.0, epsilon=None, rho=0.5",
        ),
        (
            lambda: pdp.DiscreteGaussian(epsilon=1.0),
            ValueError,
            "DiscreteGaussian(epsilon=...) needs delta, got delta=None.",
        ),
        (
            lambda: pdp.DiscreteGaussian(rho=-1.0),
            ValueError,
            "rho must be finite and > 0, got rho=-1.0.",
        ),
        (
            lambda: pdp.DiscreteGaussian(sigma=True),
            TypeError,
            "sigma must be a number, got sigma=True (a bool).",
        ),
        (
            lambda: pdp.DiscreteGaussian(sigma=-2.0),
            ValueError,
            "sigma must be finite and > 0, got sigma=-2.0.",
        ),
        (
            lambda: pdp.DiscreteGaussian(sigma=1.0).sample(np.array([1.0, 2.5]), 0),
            ValueError,
            "DiscreteGaussian adds integer noise to an integer statistic, but some statistic values are not integers.",
        ),
        (
            lambda: pdp.DiscreteGaussian(sigma=1.0).sample(3, rng=1.5),
            TypeError,
            "DiscreteGaussian.sample: rng must be None (secure noise from OpenDP",
        ),
        (lambda: pdp.DiscreteGaussian(rho=1.0).noise_sd, AttributeError, "is not calibrated yet"),
    ],
)
def test_bad_input_messages(make, err, message):
    with pytest.raises(err, match=re.escape(message)):
        make()


def test_secure_path_returns_integers():
    out = pdp.DiscreteGaussian(sigma=3.0).sample(np.array([5, 10**12]))
    assert out.dtype == np.int64 and out.shape == (2,)
    assert abs(out[1] - 10**12) < 100


def test_convolution_posterior_matches_brute_enumeration():
    s, alpha = np.array([3.2, 2.5, 1.0]), [1.0, 2.0, 3.0]
    for k in range(3):
        got = dirichlet_counts_posterior(s, 8, alpha, lambda z: -np.abs(z) / 2.0, k)
        np.testing.assert_allclose(
            got, exact.dirichlet_counts_laplace(s, 8, alpha, 2.0, index=k), rtol=1e-12
        )
