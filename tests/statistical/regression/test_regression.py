"""pymc_dp.regression (seed 000 §5.2, §7.1): the samplers against exact posteriors (quadrature, Proposition 3, NIG)."""

import math

import numpy as np
import pytest

from pymc_dp import regression as R
from tests.support.mc import assert_mc_close
from tests.support.models import fixed_s_release, regression_data

EPS, DELTA = 1.0, 1e-5
from tests.support.exact import dense_theta_posterior


def test_bayes_fixed_s_fast_is_proposition_3(data):
    X, y, _ = data
    st = R.release_suff_stats(
        X,
        y,
        x_bound=3.0,
        y_bound=6.0,
        epsilon=EPS,
        delta=DELTA,
        n_nodes=3,
        rng=np.random.default_rng(3),
    )
    prior = R.RegressionPrior(m=[0.5, -0.5], C=np.diag([2.0, 3.0]))
    fit = R.fit(
        st,
        "bayes_fixedS_fast",
        prior=prior,
        sigma2_y=0.8,
        draws=4000,
        chains=2,
        rng=np.random.default_rng(4),
    )
    S_t, _, _ = R.nearest_psd(st.S_hat)
    assert np.linalg.eigvalsh(S_t).min() >= -1e-9
    mean, cov, *_ = dense_theta_posterior(
        list(S_t), list(st.z_hat), 0.8, st.sigma_z, np.array([0.5, -0.5]), np.diag([2.0, 3.0])
    )
    np.testing.assert_allclose(fit.theta_hat, mean, rtol=1e-9)
    np.testing.assert_allclose(fit.stats["cov"], cov, rtol=1e-9)
    for k in range(2):
        assert_mc_close(
            fit.draws["theta"][..., k], mean[k], math.sqrt(cov[k, k]), label=f"fixedS-fast θ{k}"
        )
    default = R.bayes_fixed_s_fast(st, draws=0)
    assert default.stats["sigma2_y"] == pytest.approx(6.0 / 3)  # seed: σ̃² = ‖Y‖/3


def fixed_s_exact_moments(st, prior):
    """E[θ_k], E[θ_k²], E[σ²], E[σ⁴] under MCMC-fixedS's target, by quadrature over σ²."""
    S_t, _, _ = R.nearest_psd(st.S_hat)
    s2 = np.exp(np.linspace(-6, 4, 3000))
    logw, means, second = [], [], []
    for v in s2:
        mean, cov, A, V, z = dense_theta_posterior(
            list(S_t), list(st.z_hat), v, st.sigma_z, prior.m, prior.C
        )
        marg = A @ prior.C @ A.T + V
        r = z - A @ prior.m
        _, ld = np.linalg.slogdet(marg)
        logw.append(
            -0.5 * ld
            - 0.5 * r @ np.linalg.solve(marg, r)
            - (prior.a + 1) * np.log(v)
            - prior.b / v
            + np.log(v)
        )
        means.append(mean)
        second.append(np.diag(cov) + mean**2)
    w = np.exp(np.array(logw) - max(logw))
    w /= w.sum()
    return w @ np.array(means), w @ np.array(second), w @ s2, w @ s2**2


@pytest.fixture(scope="module")
def data():
    return regression_data()


@pytest.fixture(scope="module")
def fixed_s_case(data):
    st, prior = fixed_s_release(data, DELTA)
    return st, prior, fixed_s_exact_moments(st, prior)


def check_fixed_s(fit, exact, label):
    m1, m2, s1, s2 = exact
    for k in range(2):
        assert_mc_close(
            fit.draws["theta"][..., k], m1[k], math.sqrt(m2[k] - m1[k] ** 2), label=f"{label} θ{k}"
        )
    assert_mc_close(fit.draws["sigma2_y"], s1, math.sqrt(s2 - s1**2), label=f"{label} σ²")


# The default, 10 σ² updates per θ draw. One update (sigma2_substeps=1) runs the same MH kernel once
# (so this test covers it) but mixes the heavy σ² tail so slowly that the sd check is unreliable
# there: 2 x 40000 draws gave sd 0.471 against the exact 0.504 (-3.5 MCSE; 99 % quantile 2.66 vs
# 2.80) where 10 updates gave 0.507 (+0.26 MCSE); ArviZ's MCSE understates that chain's error.
def test_mcmc_fixed_s_numpy_matches_quadrature(fixed_s_case):
    st, prior, exact = fixed_s_case
    substeps = 10
    # 700 draws (was 2000): at seed 6 the ESS (ArviZ "mean" ESS of the draws / of their squared
    # deviations, as `mcse` uses them) is >= 1299 / 1246 for θ and 747 / 835 for σ² (3800 / 3977
    # and 2132 / 1959 at 2000 draws), so every asserted mean and sd keeps ESS >= 400
    fit = R.fit(
        st,
        "mcmc_fixedS",
        prior=prior,
        draws=700,
        tune=500,
        chains=2,
        rng=np.random.default_rng(6),
        sigma2_substeps=substeps,
    )
    check_fixed_s(fit, exact, f"fixedS numpy, {substeps} σ² updates")
    assert 0.2 < fit.stats["accept_sigma2"].mean() < 0.7


@pytest.mark.slow
def test_mcmc_fixed_s_pymc_nuts_matches_quadrature(fixed_s_case):
    st, prior, exact = fixed_s_case
    fit = R.mcmc_fixed_s(
        st,
        prior=prior,
        backend="pymc",
        draws=1000,
        tune=500,
        chains=2,
        rng=np.random.default_rng(7),
    )
    check_fixed_s(fit, exact, "fixedS NUTS")


def normal_x_exact_moments(S_hat, z_hat, n, sigma_s, sigma_z, prior):
    """d = 1, J = 1: Σ_x and θ integrate analytically; quadrature over (S, σ²)."""
    C, m, a, b = prior.C[0, 0], prior.m[0], prior.a, prior.b
    Lam, kap = prior.Lam[0, 0], prior.kappa
    S = np.linspace(max(1e-6, S_hat - 10 * sigma_s), S_hat + 10 * sigma_s, 1500)[:, None]
    s2 = np.exp(np.linspace(-6, 4, 1500))[None, :]
    v = S * S * C + s2 * S + sigma_z**2
    logp = (
        (n / 2 - 1) * np.log(S)
        - (n + kap) / 2 * np.log(Lam + S)  # W(Σ,n) ∘ IW(Λ,κ)
        - 0.5 * (S_hat - S) ** 2 / sigma_s**2
        - a * np.log(s2)
        - b / s2  # IG × Jacobian of log grid
        - 0.5 * np.log(v)
        - 0.5 * (z_hat - S * m) ** 2 / v
    )
    w = np.exp(logp - logp.max())
    w /= w.sum()
    q = s2 * S + sigma_z**2
    prec = S * S / q + 1 / C
    mean = (S * z_hat / q + m / C) / prec
    return [
        (w * mean).sum(),
        (w * (mean**2 + 1 / prec)).sum(),
        (w * s2).sum(),
        (w * s2**2).sum(),
        (w * S).sum(),
        (w * S * S).sum(),
    ]


def test_mcmc_normal_x_matches_quadrature():
    prior = R.RegressionPrior(m=[0.0], C=[[4.0]], a=6.0, b=5.0, Lam=[[1.0]], kappa=3.0).resolve(1)
    st = R.SuffStatsRelease(
        S_hat=[[[28.0]]],
        z_hat=[[31.0]],
        n=[30],
        sigma_s=5.0,
        sigma_z=3.0,
        x_bound=1.0,
        y_bound=1.0,
        epsilon=1.0,
        delta=1e-5,
    )
    exact = normal_x_exact_moments(28.0, 31.0, 30, 5.0, 3.0, prior)
    fit = R.fit(
        st,
        "mcmc_normalX",
        prior=prior,
        draws=5000,
        tune=1000,
        chains=2,
        rng=np.random.default_rng(8),
    )
    assert_mc_close(
        fit.draws["theta"][..., 0], exact[0], math.sqrt(exact[1] - exact[0] ** 2), label="normalX θ"
    )
    assert_mc_close(
        fit.draws["sigma2_y"], exact[2], math.sqrt(exact[3] - exact[2] ** 2), label="normalX σ²"
    )
    assert_mc_close(
        fit.draws["S"][..., 0, 0, 0],
        exact[4],
        math.sqrt(exact[5] - exact[4] ** 2),
        label="normalX S",
    )
    assert 0.15 < fit.stats["accept_S"].mean() < 0.4


def test_mcmc_bs_with_negligible_noise_is_the_nig_posterior(data):
    X, y, _ = data
    parts = np.array_split(np.arange(len(y)), 2)
    S = np.stack([X[p].T @ X[p] for p in parts])
    z = np.stack([X[p].T @ y[p] for p in parts])
    u = np.array([y[p] @ y[p] for p in parts])
    st = R.SuffStatsRelease(
        S_hat=S,
        z_hat=z,
        u_hat=u,
        n=[len(p) for p in parts],
        sigma_s=1e-7,
        sigma_z=1e-7,
        sigma_u=1e-7,
        x_bound=3.0,
        y_bound=6.0,
        epsilon=1.0,
        delta=1e-5,
        scheme="szu",
    )
    prior = R.RegressionPrior(C=2.0 * np.eye(2), a=3.0, b=2.0).resolve(2)
    # 500 draws (was 1500): at seed 10 the ESS (ArviZ "mean" ESS of the draws / of their squared
    # deviations, as `mcse` uses them) is >= 979 / 906 for θ and 903 / 1000 for σ² (>= 2821 / 2851
    # at 1500 draws), so every asserted mean and sd keeps ESS >= 400
    fit = R.fit(
        st, "mcmc_bs", prior=prior, draws=500, tune=200, chains=2, rng=np.random.default_rng(10)
    )
    Lam_n = np.linalg.inv(prior.C) + S.sum(0)
    m_n = np.linalg.solve(Lam_n, z.sum(0))
    a_n = prior.a + len(y) / 2
    b_n = prior.b + 0.5 * (u.sum() - m_n @ Lam_n @ m_n)
    var = b_n / (a_n - 1) * np.diag(np.linalg.inv(Lam_n))
    for k in range(2):
        assert_mc_close(fit.draws["theta"][..., k], m_n[k], math.sqrt(var[k]), label=f"B&S θ{k}")
    s2_mean, s2_var = b_n / (a_n - 1), b_n**2 / ((a_n - 1) ** 2 * (a_n - 2))
    assert_mc_close(fit.draws["sigma2_y"], s2_mean, math.sqrt(s2_var), label="B&S σ²")
