"""pymc_dp.regression (seed 000 §5.2, §7.1): release calibration, exact posteriors, baselines, errors."""

import math
import re

import arviz as az
import numpy as np
import pytest
from dp_accounting import pld

from pymc_dp import regression as R
from pymc_dp.mechanisms import analytic_gaussian_delta, analytic_gaussian_sigma
from tests.support.mc import assert_within_se
from tests.support.models import fixed_s_release, regression_data, simulate_regression

EPS, DELTA = 1.0, 1e-5


@pytest.fixture(scope="module")
def data():
    return regression_data()


@pytest.fixture(scope="module")
def fixed_s_case(data):
    return fixed_s_release(data, DELTA)


# ---------------------------------------------------------------- release and its calibration
def test_sensitivity_bounds_every_record_and_is_attained():
    rng = np.random.default_rng(0)
    xb, yb, d = 2.0, 3.0, 4
    delta2 = R.suff_stat_sensitivity(xb, yb, neighbouring="add-remove")  # one record's own move
    iu = np.triu_indices(d)
    x = rng.normal(size=(5000, d))
    x *= (xb * rng.uniform(size=(5000, 1)) ** (1 / d)) / np.linalg.norm(x, axis=1, keepdims=True)
    y = rng.uniform(-yb, yb, size=5000)
    moves = np.concatenate([(x[:, :, None] * x[:, None, :])[:, iu[0], iu[1]], x * y[:, None]], 1)
    assert np.linalg.norm(moves, axis=1).max() <= delta2 * (1 + 1e-12)
    e1 = np.zeros(d)
    e1[0] = xb
    worst = np.concatenate([np.outer(e1, e1)[iu], e1 * yb])
    assert np.linalg.norm(worst) == pytest.approx(delta2, rel=1e-12)
    assert R.suff_stat_sensitivity(
        xb, yb, include_yty=True, neighbouring="add-remove"
    ) == pytest.approx(math.sqrt(xb**4 + xb**2 * yb**2 + yb**4))


@pytest.mark.parametrize("scheme", ["sz", "szu", "adassp"])
def test_release_sigma_is_the_analytic_gaussian_and_matches_dp_accounting(data, scheme):
    X, y, _ = data
    st = R.release_suff_stats(
        X,
        y,
        x_bound=3.0,
        y_bound=6.0,
        epsilon=EPS,
        delta=DELTA,
        n_nodes=4,
        scheme=scheme,
        rng=np.random.default_rng(1),
    )
    acct = pld.PLDAccountant(value_discretization_interval=1e-4).compose(st.dp_event())
    pld_delta = acct.get_delta(EPS)
    if scheme == "adassp":
        sens = [
            9.0 * math.sqrt(2.0),
            36.0,
            9.0,
        ]  # replace-one (tests/unit/regression/test_regression_release.py)
        sig = [st.sigma_s, st.sigma_z, st.sigma_lam]
        for s, dl in zip(sig, sens):
            # the analytic σ, raised by at most ~1e-7 so the accountant never reports more than ε
            analytic = analytic_gaussian_sigma(EPS / 3, DELTA / 3, dl)
            assert analytic <= s == pytest.approx(analytic, rel=1e-6)
            assert analytic_gaussian_delta(s, EPS / 3, dl) == pytest.approx(DELTA / 3, rel=1e-5)
            assert analytic_gaussian_delta(s, EPS / 3, dl) <= DELTA / 3
        assert pld_delta <= DELTA * 1.02  # (ε/3, δ/3) three times is (ε, δ) by basic composition
    else:
        sens = R.suff_stat_sensitivity(3.0, 6.0, include_yty=scheme == "szu")
        assert st.sigma_s == st.sigma_z == pytest.approx(analytic_gaussian_sigma(EPS, DELTA, sens))
        assert analytic_gaussian_delta(st.sigma_s, EPS, sens) == pytest.approx(DELTA, rel=1e-5)
        assert analytic_gaussian_delta(st.sigma_s, EPS, sens) <= DELTA
        assert pld_delta == pytest.approx(DELTA, rel=0.02)  # PLD is tight for one Gaussian


def test_release_noise_sd_matches_the_calibrated_sigma():
    rng = np.random.default_rng(2)
    n, d = 4000, 3
    X = rng.uniform(-0.5, 0.5, size=(n, d))
    y = rng.uniform(-1, 1, size=n)
    st = R.release_suff_stats(
        X, y, x_bound=1.0, y_bound=1.0, epsilon=0.5, delta=1e-6, n_nodes=n, rng=rng
    )  # one record per node: n independent noise vectors
    iu = np.triu_indices(d)
    noise_s = (st.S_hat - X[:, :, None] * X[:, None, :])[:, iu[0], iu[1]].ravel()
    noise_z = (st.z_hat - X * y[:, None]).ravel()
    np.testing.assert_allclose(st.S_hat, np.swapaxes(st.S_hat, 1, 2))
    for noise in (noise_s, noise_z):
        m = len(noise)
        assert abs(noise.mean()) < 4 * st.sigma_s / math.sqrt(m)
        assert abs(noise.std() / st.sigma_s - 1) < 4 / math.sqrt(2 * m)
    off = st.S_hat - X[:, :, None] * X[:, None, :]
    assert abs(np.corrcoef(off[:, 0, 1], off[:, 0, 0])[0, 1]) < 4 / math.sqrt(n)
    np.testing.assert_array_equal(st.n, np.ones(n))


def docs_example_release(seed):
    """The release of the example at the top of docs/regression.md."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(20_000, 2)) / np.sqrt(2)
    y = X @ np.array([1.0, -0.5]) + rng.normal(size=20_000)
    keep = (np.linalg.norm(X, axis=1) <= 3) & (np.abs(y) <= 6)
    return R.release_suff_stats(
        X[keep], y[keep], x_bound=3.0, y_bound=6.0, epsilon=1.0, delta=1e-5, n_nodes=5, rng=rng
    ), rng


@pytest.mark.parametrize("method", ["mcmc_fixedS", "bayes_fixedS_fast", "mcmc_normalX"])
def test_methods_return_multichain_inference_data(method):
    st, rng = docs_example_release(1)
    short = {} if method == "bayes_fixedS_fast" else {"tune": 50}  # shapes only: short chains
    fit = R.fit(st, method, rng=rng, draws=50, **short)
    assert fit.draws["theta"].shape[0] == 2  # default chains=2
    diag = az.summary(fit.idata, var_names=["theta"], kind="diagnostics")
    assert np.all(np.isfinite(np.asarray(diag["r_hat"], dtype=float)))
    fit3 = R.fit(
        st,
        method,
        rng=rng,
        chains=3,
        draws=50,
        **short,
    )
    assert fit3.draws["theta"].shape[0] == 3


def test_default_fit_has_ess_400_for_every_parameter():
    """The default method and settings on the docs example: bulk and tail ESS >= 400."""
    for seed in (1, 2):
        st, rng = docs_example_release(seed)
        fit = R.fit(st, rng=rng)
        assert fit.method == "mcmc_fixedS"
        diag = az.summary(fit.idata, var_names=["theta", "sigma2_y"], kind="diagnostics")
        for col in ("ess_bulk", "ess_tail"):
            assert np.asarray(diag[col], dtype=float).min() >= 400, (seed, diag)


# ---------------------------------------------------------------- baselines
def test_ss_moments_agree_with_monte_carlo():
    rng = np.random.default_rng(9)
    Sigma = np.array([[1.0, 0.4], [0.4, 0.5]])
    theta, s2 = np.array([0.7, -1.2]), 0.3
    mu, cov = R.ss_moments(Sigma, theta, s2)
    x = rng.multivariate_normal(np.zeros(2), Sigma, size=400_000)
    w = np.column_stack([x, x @ theta + rng.normal(0, math.sqrt(s2), size=len(x))])
    a, b = np.triu_indices(3)
    t = w[:, a] * w[:, b]
    se = np.sqrt(np.diag(cov) / len(x))
    # six entries: 4.4 SE each is Bonferroni for a family-wise false failure of 6.3e-5, the
    # house single-comparison rate (4 SE); 5 SE would be 3.4e-6
    assert_within_se(t.mean(0), mu, se, z=4.4, label="suff-stat moments")
    # the 21 distinct covariances of the products, each with its plug-in standard error
    # sd(c_i c_j)/√N, c the centred products (Var(c_i c_j) = E c_i²c_j² - (E c_i c_j)²); 4.7 SE is
    # Bonferroni for a family-wise false failure of 6.3e-5 (was rtol=0.05, atol=0.02: 7 to 13 SE)
    i, j = np.triu_indices(6)
    c = t - t.mean(0)
    c2 = c * c
    cov_se = np.sqrt((c2.T @ c2 / len(x) - (c.T @ c / len(x)) ** 2) / len(x))[i, j]
    assert_within_se(np.cov(t.T)[i, j], cov[i, j], cov_se, z=4.7, label="suff-stat covariance")


def test_adassp_at_huge_epsilon_is_least_squares(data):
    X, y, _ = data
    st = R.release_suff_stats(
        X,
        y,
        x_bound=3.0,
        y_bound=6.0,
        epsilon=1e5,
        delta=1e-3,
        n_nodes=2,
        scheme="adassp",
        rng=np.random.default_rng(11),
    )
    fit = R.fit(st, "adassp")
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    np.testing.assert_allclose(fit.theta_hat, ols, atol=2e-3)
    assert fit.draws is None and np.all(np.isnan(fit.interval()))


def test_every_method_recovers_theta_from_a_private_release():
    rng = np.random.default_rng(12)
    X, y, theta = simulate_regression(20_000, 2, rng)
    kw = dict(x_bound=3.0, y_bound=6.0, epsilon=1.0, delta=DELTA, n_nodes=4)
    st = R.release_suff_stats(X, y, rng=rng, **kw)
    fits = {m: R.fit(st, m, draws=400, tune=300, rng=rng) for m in ("mcmc_normalX", "mcmc_fixedS")}
    fits["bayes_fixedS_fast"] = R.fit(st, "bayes_fixedS_fast", rng=rng)
    fits["mcmc_bs"] = R.fit(
        R.release_suff_stats(X, y, scheme="szu", rng=rng, **kw),
        "mcmc_bs",
        draws=400,
        tune=300,
        rng=rng,
    )
    fits["adassp"] = R.fit(R.release_suff_stats(X, y, scheme="adassp", rng=rng, **kw), "adassp")
    for name, f in fits.items():
        assert np.linalg.norm(f.theta_hat - theta) < 0.3, (name, f.theta_hat, theta)


# ---------------------------------------------------------------- API, ArviZ, reproducibility
def test_fit_returns_arviz_data_and_is_reproducible(fixed_s_case):
    st = fixed_s_case[0]
    a = R.fit(st, "mcmc_fixedS", draws=300, tune=100, rng=np.random.default_rng(13))
    b = R.fit(st, "mcmc_fixedS", draws=300, tune=100, rng=np.random.default_rng(13))
    np.testing.assert_array_equal(a.draws["theta"], b.draws["theta"])
    assert a.posterior["theta"].shape == (2, 300, 2)
    ess = az.ess(a.idata, var_names=["theta"])
    assert np.all(np.asarray(ess["theta"]) > 50)
    summary = az.summary(a.idata, kind="diagnostics")
    assert "ess_bulk" in summary.columns
    lo, hi = a.interval(0.9)  # equal-tailed, over both chains' draws
    theta = np.asarray(a.posterior["theta"]).reshape(-1, 2)
    np.testing.assert_allclose(lo, np.quantile(theta, 0.05, axis=0))
    np.testing.assert_allclose(hi, np.quantile(theta, 0.95, axis=0))
    np.testing.assert_allclose(a.theta_hat, theta.mean(axis=0))
    np.testing.assert_allclose(a.predict(np.eye(2)), a.theta_hat)
    nx = R.fit(st, "mcmc_normalX", draws=50, tune=20, rng=np.random.default_rng(14))
    assert nx.posterior["Sigma_x"].shape == (2, 50, 2, 2)


# ---------------------------------------------------------------- bad input
def _release(**kw):
    rng = np.random.default_rng(0)
    args = dict(
        X=rng.uniform(-1, 1, size=(20, 2)),
        y=rng.uniform(-1, 1, size=20),
        x_bound=2.0,
        y_bound=1.0,
        epsilon=1.0,
        delta=1e-5,
        n_nodes=2,
        rng=0,
    )
    args.update(kw)
    X, y = args.pop("X"), args.pop("y")
    return R.release_suff_stats(X, y, **args)


@pytest.mark.parametrize(
    "kw, exc, msg",
    [
        (dict(epsilon=0.0), ValueError, "epsilon must be finite and > 0, got epsilon=0.0"),
        (dict(epsilon=-1), ValueError, "epsilon must be finite and > 0, got epsilon=-1"),
        (dict(delta=0.0), ValueError, "delta must lie in the open interval (0, 1), got delta=0.0"),
        (dict(delta=1.0), ValueError, "delta must lie in the open interval (0, 1), got delta=1.0"),
        (dict(n_nodes=0), ValueError, "n_nodes must satisfy 1 <= n_nodes <= n = 20, got n_nodes=0"),
        (
            dict(n_nodes=21),
            ValueError,
            "n_nodes must satisfy 1 <= n_nodes <= n = 20, got n_nodes=21",
        ),
        (dict(n_nodes=2.0), TypeError, "n_nodes must be an int, got n_nodes=2.0"),
        (dict(x_bound=0.5), ValueError, "every row of X must have Euclidean norm <= x_bound=0.5"),
        (dict(y_bound=0.5), ValueError, "every |y| must be <= y_bound=0.5"),
        (dict(x_bound=-1.0), ValueError, "x_bound must be finite and > 0, got x_bound=-1.0"),
        (dict(y=np.zeros(19)), ValueError, "y must be 1-D with one entry per row of X"),
        (
            dict(X=np.zeros((20, 2, 1))),
            ValueError,
            "X must be a 2-D array (n records × d features)",
        ),
        (
            dict(X=np.full((20, 2), np.nan)),
            ValueError,
            "X must be finite, but it holds NaN or inf entries",
        ),
        (
            dict(scheme="szz"),
            ValueError,
            "scheme must be one of ('sz', 'szu', 'adassp'), got scheme='szz'",
        ),
    ],
)
def test_release_rejects_bad_input(kw, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        _release(**kw)


def test_clip_projects_instead_of_raising():
    st = _release(x_bound=0.5, y_bound=0.5, clip=True)
    assert st.x_bound == 0.5 and st.n.sum() == 20


def _stats(**kw):
    args = dict(
        S_hat=np.stack([np.eye(2)] * 2),
        z_hat=np.zeros((2, 2)),
        n=[5, 5],
        sigma_s=1.0,
        sigma_z=1.0,
        x_bound=1.0,
        y_bound=1.0,
        epsilon=1.0,
        delta=1e-5,
    )
    args.update(kw)
    return R.SuffStatsRelease(**args)


@pytest.mark.parametrize(
    "kw, msg",
    [
        (
            dict(S_hat=np.array([[[1.0, np.nan], [np.nan, 1.0]]] * 2)),
            "S_hat must be finite, got a non-finite",
        ),
        (
            dict(z_hat=np.array([[0.0, np.inf], [0.0, 0.0]])),
            "z_hat must be finite, got a non-finite entry inf",
        ),
        (dict(z_hat=np.zeros((3, 2))), "z_hat must have shape (2, 2), got z_hat.shape=(3, 2)"),
        (
            dict(S_hat=np.zeros((2, 2, 3))),
            "S_hat must have shape (J, d, d), got S_hat.shape=(2, 2, 3)",
        ),
        (dict(n=[5, 0]), "n must hold J=2 positive integer node sizes, got n=[5, 0]"),
        (dict(sigma_s=0.0), "sigma_s must be finite and > 0, got sigma_s=0.0"),
        (dict(scheme="szu"), "scheme='szu' needs u_hat (noisy yᵀy per node) and sigma_u, got None"),
    ],
)
def test_release_object_rejects_bad_values(kw, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        _stats(**kw)


def test_a_release_with_less_noise_on_z_reports_the_privacy_of_its_blocks():
    """dp_event read sigma_s alone: with sigma_z = sigma_s / 10 it reported ε 50 where about
    2,514 was spent. With different noise per block, each block is a Gaussian mechanism with its
    own sensitivity, and the events compose."""
    from dp_accounting import dp_event

    import pymc_dp as pdp

    equal = _stats(sigma_s=1.0, sigma_z=1.0)
    less = _stats(sigma_s=1.0, sigma_z=0.1)
    ev = less.dp_event()
    assert isinstance(ev, dp_event.ComposedDpEvent)
    from pymc_dp.regression.release import adassp_sensitivities

    ss, sz, _ = adassp_sensitivities(1.0, 1.0)
    assert [e.noise_multiplier for e in ev.events] == pytest.approx([1.0 / ss, 0.1 / sz])
    spent = pdp.privacy_spent(ev, delta=1e-5)
    assert spent > 5 * pdp.privacy_spent(equal.dp_event(), delta=1e-5)
    u = _stats(scheme="szu", u_hat=np.zeros(2), sigma_u=0.5, sigma_z=1.0)
    assert [e.noise_multiplier for e in u.dp_event().events][-1] == pytest.approx(0.5)


def test_methods_reject_bad_requests():
    st = _stats()
    with pytest.raises(ValueError, match=re.escape("method must be one of")):
        R.fit(st, "ols")
    with pytest.raises(
        ValueError, match=re.escape("method='mcmc_bs' needs the noisy yᵀy of each node")
    ):
        R.fit(st, "mcmc_bs")
    with pytest.raises(ValueError, match=re.escape("method='adassp' needs the noisy λ_min(S_j)")):
        R.fit(st, "adassp")
    with pytest.raises(
        ValueError, match=re.escape("mcmc_normalX needs n_j >= d = 2 records on every node")
    ):
        R.fit(_stats(n=[1, 5]), "mcmc_normalX")
    with pytest.raises(TypeError, match=re.escape("rng must be a numpy.random.Generator")):
        R.fit(st, "mcmc_fixedS", rng="seed")
    with pytest.raises(ValueError, match=re.escape("draws must be an integer >= 1, got draws=0")):
        R.fit(st, "mcmc_fixedS", draws=0)
    with pytest.raises(ValueError, match=re.escape("prior shapes must match d=2 features")):
        R.fit(st, "mcmc_fixedS", prior=R.RegressionPrior(m=[0.0, 0.0, 0.0]))
    with pytest.raises(TypeError, match=re.escape("stats must be a SuffStatsRelease, got dict")):
        R.fit({}, "mcmc_fixedS")
    with pytest.raises(ValueError, match=re.escape("backend must be 'numpy' or 'pymc'")):
        R.mcmc_fixed_s(st, backend="jax")
    with pytest.raises(
        ValueError,
        match=re.escape("sigma2_substeps must be an integer >= 1, got sigma2_substeps=0"),
    ):
        R.mcmc_fixed_s(st, sigma2_substeps=0)
    # σ_y² froze at its start (log of the step), silently
    for bad in (0, -1.0):
        with pytest.raises(ValueError, match=re.escape("sigma2_step must be finite and > 0")):
            R.mcmc_fixed_s(st, sigma2_step=bad)
    for bad in (5, -1, 1.0):
        with pytest.raises(ValueError, match=re.escape("accept_target_s must be an acceptance")):
            R.mcmc_normal_x(_stats(n=[5, 5]), accept_target_s=bad)
    with pytest.raises(ValueError, match=re.escape("rho must lie in (0, 1), got rho='0.05'")):
        R.adassp(
            _stats(scheme="adassp", lam_hat=np.ones(2), sigma_lam=1.0, sigma_z=0.5), rho="0.05"
        )
