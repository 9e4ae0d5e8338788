"""pymc_dp.fisher closed forms: seed 001 §3.1 and Examples 1–4 against independent routes, errors."""

import math
import re

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import integrate, stats

import pymc_dp as pdp
from pymc_dp.fisher import (
    Candidate,
    FisherEstimate,
    Moments,
    Population,
    QuadratureMoments,
    bernoulli_example,
    clt_gaussian_fisher,
    fisher_information,
    fisher_noisy_mean,
    fisher_noisy_values,
    fisher_randomized_response,
    normal_mean_example,
    normal_variance_example,
    select_statistic,
    uniform_width_example,
)

NORMAL_VAR = Population(
    pm.Normal, lambda t: {"mu": 0.0, "sigma": pt.sqrt(t)}, theta_bounds=(0, None)
)
NORMAL_MEAN = Population(pm.Normal, lambda t: {"mu": t, "sigma": 1.0})


def _quad_moments(pdf, s, lo, hi):
    m1 = integrate.quad(lambda x: s(x) * pdf(x), lo, hi, epsabs=1e-12)[0]
    m2 = integrate.quad(lambda x: s(x) ** 2 * pdf(x), lo, hi, epsabs=1e-12)[0]
    return m1, m2 - m1**2


@pytest.mark.parametrize(
    "moments, pdf, s, lo, hi",
    [
        (normal_mean_example(1), lambda t: stats.norm(t, 1).pdf, lambda x: x, -np.inf, np.inf),
        (normal_mean_example(3), lambda t: stats.norm(t, 1).pdf, lambda x: x**3, -np.inf, np.inf),
        (normal_mean_example(5), lambda t: stats.norm(t, 1).pdf, lambda x: x**5, -np.inf, np.inf),
        (
            normal_variance_example(0.5),
            lambda t: stats.norm(0, math.sqrt(t)).pdf,
            lambda x: abs(x) ** 0.5,
            -np.inf,
            np.inf,
        ),
        (
            normal_variance_example(2),
            lambda t: stats.norm(0, math.sqrt(t)).pdf,
            lambda x: x**2,
            -np.inf,
            np.inf,
        ),
        (
            uniform_width_example(0.5),
            lambda t: stats.uniform(-t, 2 * t).pdf,
            lambda x: abs(x) ** 0.5,
            None,
            None,
        ),
        (
            uniform_width_example(2),
            lambda t: stats.uniform(-t, 2 * t).pdf,
            lambda x: x**2,
            None,
            None,
        ),
    ],
)
def test_example_moments_and_autodiff_derivatives_match_quadrature(moments, pdf, s, lo, hi):
    theta, h = 1.3, 1e-4

    def quad(t):
        a, b = (lo, hi) if lo is not None else (-t, t)
        return _quad_moments(pdf(t), s, a, b)

    mu, cov, dmu, dcov = moments.evaluate(theta)
    m, v = quad(theta)
    np.testing.assert_allclose([mu[0], cov[0, 0]], [m, v], rtol=1e-7)
    (mp, vp), (mm, vm) = quad(theta + h), quad(theta - h)
    np.testing.assert_allclose(
        [dmu[0, 0], dcov[0, 0, 0]], [(mp - mm) / (2 * h), (vp - vm) / (2 * h)], rtol=1e-5, atol=1e-6
    )


def test_quadrature_moments_from_population_match_the_closed_forms():
    for a in (0.5, 2.0):
        q = QuadratureMoments(NORMAL_VAR, lambda x, a=a: np.abs(x) ** a).evaluate(2.0)
        for got, want in zip(q, normal_variance_example(a).evaluate(2.0)):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    q = QuadratureMoments(NORMAL_MEAN, lambda x: x**3).evaluate(-0.7)
    for got, want in zip(q, normal_mean_example(3).evaluate(-0.7)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_moments_from_pair_accepts_a_function_returning_mean_and_cov():
    m = Moments.from_pair(lambda t: (t**2, 2 * t), theta_bounds=(0, None))
    mu, cov, dmu, dcov = m.evaluate(1.5)
    np.testing.assert_allclose([mu[0], cov[0, 0], dmu[0, 0], dcov[0, 0, 0]], [2.25, 3.0, 3.0, 2.0])


def _gauss_kl(m0, H0, m1, H1):
    k = len(m0)
    iH1 = np.linalg.inv(H1)
    d = m1 - m0
    return 0.5 * (
        np.trace(iH1 @ H0) + d @ iH1 @ d - k + np.log(np.linalg.det(H1) / np.linalg.det(H0))
    )


def test_clt_formula_matches_the_hessian_of_the_kl_divergence_for_vector_theta():
    """F(θ) = ∂²/∂θ'² KL(N(μ(θ),H(θ)) ‖ N(μ(θ'),H(θ'))) at θ' = θ: an independent route."""

    # θ = (mean, variance) of N(m, v); s(x) = (x, x²); its mean and covariance in closed form
    def mean(t):
        return pt.stack([t[0], t[0] ** 2 + t[1]])

    def cov(t):
        m, v = t[0], t[1]
        return pt.stack([pt.stack([v, 2 * m * v]), pt.stack([2 * m * v, 4 * m**2 * v + 2 * v**2])])

    mom = Moments(mean, cov, n_params=2, theta_bounds=([None, 0.0], [None, None]))
    n, tau = 50, 0.3
    theta = np.array([0.4, 1.7])
    F = clt_gaussian_fisher(mom, theta, n=n, mechanism=pdp.Gaussian(sigma=tau))
    assert F.shape == (2, 2)

    def law(t):
        m, v = t
        mu = np.array([m, m**2 + v])
        S = np.array([[v, 2 * m * v], [2 * m * v, 4 * m**2 * v + 2 * v**2]])
        return mu, S / n + tau**2 * np.eye(2)

    m0, H0 = law(theta)
    h = 1e-3
    hess = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * h, np.eye(2)[j] * h
            f = [
                _gauss_kl(m0, H0, *law(theta + si * ei + sj * ej))
                for si, sj in [(1, 1), (1, -1), (-1, 1), (-1, -1)]
            ]
            hess[i, j] = (f[0] - f[1] - f[2] + f[3]) / (4 * h * h)
    np.testing.assert_allclose(F, hess, rtol=1e-4)


@pytest.mark.parametrize("theta", [0.1, 0.3, 0.5, 0.8])
@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_example4_noisy_mean_and_values_are_the_clt_formula(theta, eps):
    n = 100
    m = bernoulli_example()
    f3 = clt_gaussian_fisher(m, theta, n=n, mechanism=pdp.Gaussian(sigma=1 / (n * eps)))
    f2 = clt_gaussian_fisher(m, theta, n=n, mechanism=pdp.Gaussian(sigma=1 / (math.sqrt(n) * eps)))
    assert f3 == pytest.approx(fisher_noisy_mean(theta, n, eps), rel=1e-12)
    assert f2 == pytest.approx(fisher_noisy_values(theta, n, eps), rel=1e-12)
    # the seed's printed form lacks the 1/2 of the variance term: the gap is exactly that term
    v = theta * (1 - theta) + 1 / eps**2
    gap = fisher_noisy_values(theta, n, eps, printed=True) - fisher_noisy_values(theta, n, eps)
    assert gap == pytest.approx((1 - 2 * theta) ** 2 / (2 * v**2), rel=1e-10, abs=1e-14)


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_example4_randomized_response_matches_the_mechanisms_own_probabilities(eps):
    n, theta, h = 100, 0.35, 1e-6
    keep = pdp.RandomizedResponse(epsilon=eps).p_keep

    def p1(t):
        return t * keep + (1 - t) * (1 - keep)

    dp = (p1(theta + h) - p1(theta - h)) / (2 * h)
    per_record = dp**2 / p1(theta) + dp**2 / (1 - p1(theta))
    assert fisher_randomized_response(theta, n, eps) == pytest.approx(n * per_record, rel=1e-7)


def test_example4_orderings_of_seed_figure_4():
    th = np.linspace(0.05, 0.95, 19)
    # small epsilon: randomized response beats averaging Gaussian-noised values; noisy mean beats both
    assert np.all(fisher_randomized_response(th, 100, 0.5) > fisher_noisy_values(th, 100, 0.5))
    assert np.all(fisher_noisy_mean(th, 100, 0.5) > fisher_randomized_response(th, 100, 0.5))


def _cands(example, bounds_power, A, n, eps, powers):
    out = []
    for a in powers:
        sigma = None if eps is None else A ** (a * bounds_power) / (n * eps)
        mech = None if sigma is None else pdp.Gaussian(sigma=sigma)
        out.append(Candidate(f"a={a}", mechanism=mech, moments=example(a), n=n))
    return out


def test_example2_abs_beats_square_with_privacy_and_loses_without():
    """Seed 001 Example 2 / Figure 2 (n = 100, A = 100)."""
    grid = np.linspace(0.5, 10, 12)
    private = select_statistic(
        _cands(normal_variance_example, 1, 100.0, 100, 1.0, [1, 2]), theta=grid
    )
    public = select_statistic(
        _cands(normal_variance_example, 1, 100.0, 100, None, [1, 2]), theta=grid
    )
    assert private.best == "a=1" and public.best == "a=2"
    # CLT approximation of the sufficient x²: n/(2θ²) plus the 2/θ² its variance term adds
    assert public.fisher["a=2"] == pytest.approx(100 / (2 * grid**2) + 2 / grid**2)


def test_example1_cube_wins_only_for_large_theta_under_privacy():
    """Seed 001 Example 1 / Figure 1 (n = 100, A = 10): no uniform winner at ε = 1."""
    grid = np.array([0.5, 1.0, 6.0, 8.0])
    private = select_statistic(_cands(normal_mean_example, 1, 10.0, 100, 1.0, [1, 3]), theta=grid)
    public = select_statistic(_cands(normal_mean_example, 1, 10.0, 100, None, [1, 3]), theta=grid)
    assert private.best is None and private.best_at == ["a=1", "a=1", "a=3", "a=3"]
    assert public.best == "a=1"


def test_prior_averaged_score_is_gauss_legendre_of_the_inverse_information():
    cands = _cands(uniform_width_example, 1, 10.0, 100, 1.0, [0.5, 1, 2])
    prior = stats.uniform(0.2, 1.8)
    sel = select_statistic(cands, prior=prior, n_nodes=40)
    for c in cands:
        want = integrate.quad(lambda t: prior.pdf(t) / float(c.fisher(t).value), 0.2, 2.0)[0]
        assert sel.scores[c.name] == pytest.approx(want, rel=1e-6)
    assert sel.best == min(sel.scores, key=sel.scores.get)
    samples = select_statistic(cands, theta_samples=prior.rvs(size=5000, random_state=1))
    assert samples.best == sel.best


def test_fisher_information_dispatch_and_result_type():
    fi = fisher_information(
        2.0, n=100, moments=normal_variance_example(1), mechanism=pdp.Gaussian(sigma=1.0)
    )
    assert isinstance(fi, FisherEstimate) and fi.method == "clt" and fi.stderr == 0.0
    assert float(fi) == pytest.approx(
        clt_gaussian_fisher(
            normal_variance_example(1), 2.0, n=100, mechanism=pdp.Gaussian(sigma=1.0)
        )
    )
    # calibration from the statistic's bounds: Gaussian(ε, δ) on Mean(0, A)
    stat = pdp.Mean(lower=0, upper=10, fn=pt.abs)
    mech = pdp.Gaussian(epsilon=1.0, delta=1e-5)
    fi2 = fisher_information(
        2.0, n=100, moments=normal_variance_example(1), mechanism=mech, statistic=stat
    )
    sigma = mech.bind(stat, n=100, dim=1).noise_sd
    assert float(fi2) == pytest.approx(
        clt_gaussian_fisher(
            normal_variance_example(1), 2.0, n=100, mechanism=pdp.Gaussian(sigma=sigma)
        )
    )
    # a Sum releases n times the mean: same information when the noise scales with it
    fsum = fisher_information(
        2.0,
        n=100,
        moments=normal_variance_example(1),
        mechanism=pdp.Gaussian(sigma=100 * 0.05),
        statistic=pdp.Sum(),
    )
    fmean = fisher_information(
        2.0,
        n=100,
        moments=normal_variance_example(1),
        mechanism=pdp.Gaussian(sigma=0.05),
        statistic=pdp.Mean(),
    )
    assert float(fsum) == pytest.approx(float(fmean))


# -- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, -3, 2.5])
def test_non_positive_n_is_refused(n):
    msg = f"n must be a positive integer, got n={n!r}."
    with pytest.raises(ValueError, match=re.escape(msg)):
        fisher_information(1.0, n=n, moments=normal_mean_example(1))
    with pytest.raises(ValueError, match=re.escape(msg)):
        fisher_randomized_response(0.3, n, 1.0)


def test_theta_outside_the_support_is_refused():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "theta=-1.0 is outside the parameter support of N(0, theta), s(x)=|x|^1, which is the open interval (0, inf)"
        ),
    ):
        fisher_information(-1.0, n=10, moments=normal_variance_example(1))
    with pytest.raises(
        ValueError,
        match=re.escape(
            "theta=1.5 is outside the support of Bern(theta), the open interval (0, 1)."
        ),
    ):
        fisher_noisy_mean(1.5, 10, 1.0)
    # a population without declared bounds: detected from its density
    pop = Population(pm.Normal, lambda t: {"mu": 0.0, "sigma": t})
    with pytest.raises(
        ValueError, match=re.escape("theta=-2.0 is outside the support of Population(Normal)")
    ):
        fisher_information(
            -2.0, n=10, population=pop, statistic=pdp.Mean(), mechanism=pdp.Laplace(scale=1.0)
        )
    with pytest.raises(ValueError, match=re.escape("theta=-2.0 is outside the support of")):
        QuadratureMoments(pop, np.abs).evaluate(-2.0)


def test_mechanism_without_a_density_is_refused():
    class NoDensity(pdp.Laplace):
        def logpdf(self, release, statistic):
            raise NotImplementedError

    msg = "has no density p(release | statistic) (its logpdf is not implemented)"
    with pytest.raises(ValueError, match=re.escape(msg)):
        fisher_information(
            2.0, n=10, moments=normal_variance_example(1), mechanism=NoDensity(scale=1.0)
        )
    with pytest.raises(ValueError, match=re.escape(msg)):
        fisher_information(
            2.0, n=10, population=NORMAL_VAR, statistic=pdp.Mean(), mechanism=NoDensity(scale=1.0)
        )


@pytest.mark.parametrize("name", ["n_outer", "n_inner"])
@pytest.mark.parametrize("value", [0, -1])
def test_monte_carlo_sizes_below_one_are_refused(name, value):
    msg = f"{name} must be an integer >= 1, got {name}={value!r}."
    with pytest.raises(ValueError, match=re.escape(msg)):
        fisher_information(
            2.0,
            n=10,
            moments=normal_variance_example(1),
            mechanism=pdp.Laplace(scale=1.0),
            **{name: value},
        )
    with pytest.raises(ValueError, match=re.escape(msg)):
        fisher_information(
            0.3,
            n=10,
            population=Population(pm.Bernoulli, lambda t: {"p": t}),
            statistic=pdp.Local(),
            mechanism=pdp.RandomizedResponse(1.0),
            **{name: value},
        )


def test_select_statistic_needs_exactly_one_criterion():
    cands = _cands(normal_variance_example, 1, 10.0, 100, 1.0, [1, 2])
    msg = "select_statistic needs exactly one of theta=grid, prior=..., theta_samples=..., got 0."
    with pytest.raises(ValueError, match=re.escape(msg)):
        select_statistic(cands)
    with pytest.raises(ValueError, match=re.escape("got 2.")):
        select_statistic(cands, theta=[1.0], theta_samples=[1.0])
    with pytest.raises(
        TypeError, match=re.escape("candidates must be pymc_dp.fisher.Candidate objects")
    ):
        select_statistic([object()], theta=[1.0])


def test_uncalibrated_mechanism_without_statistic_is_refused():
    with pytest.raises(ValueError, match=re.escape("is not calibrated and no statistic was given")):
        fisher_information(
            2.0,
            n=10,
            moments=normal_variance_example(1),
            mechanism=pdp.Gaussian(epsilon=1.0, delta=1e-5),
        )


def test_vector_theta_selection_uses_the_trace_of_the_inverse_information():
    """θ = (m, v) of N(m, v): releasing the mean and the mean square beats the mean alone."""

    def both_mean(t):
        return pt.stack([t[0], t[0] ** 2 + t[1]])

    def both_cov(t):
        m, v = t[0], t[1]
        return pt.stack([pt.stack([v, 2 * m * v]), pt.stack([2 * m * v, 4 * m**2 * v + 2 * v**2])])

    two = Candidate(
        "x and x^2",
        moments=Moments(both_mean, both_cov, n_params=2),
        mechanism=pdp.Gaussian(sigma=0.1),
        n=100,
    )
    one = Candidate(
        "x only",
        moments=Moments(lambda t: t[0], lambda t: t[1], n_params=2),
        mechanism=pdp.Gaussian(sigma=0.1),
        n=100,
    )
    draws = np.column_stack([np.linspace(-1, 1, 7), np.linspace(0.5, 2, 7)])
    sel = select_statistic([one, two], theta_samples=draws)
    assert sel.fisher["x and x^2"].shape == (7, 2, 2)
    # x alone learns v only through the CLT variance of its mean: far less informative
    assert sel.best == "x and x^2" and sel.scores["x only"] > 5 * sel.scores["x and x^2"]
    F = sel.fisher["x and x^2"][3]
    assert sel.scores["x and x^2"] == pytest.approx(
        np.mean([np.trace(np.linalg.inv(f)) for f in sel.fisher["x and x^2"]])
    )
    assert np.all(np.linalg.eigvalsh(F) > 0)


def test_support_probe_verdict_does_not_depend_on_its_draws():
    """`Population.check_theta` draws 8 records from a child of rng to probe the support: inside it
    every seed accepts θ, outside it every seed refuses."""
    pop = Population(pm.Normal, lambda t: {"mu": 0.0, "sigma": t})  # no declared bounds
    for seed in (1, 2):
        np.testing.assert_array_equal(pop.check_theta(1.5, rng=seed), np.asarray(1.5))
        with pytest.raises(ValueError, match=re.escape("theta=-1.0 is outside the support")):
            pop.check_theta(-1.0, rng=seed)
