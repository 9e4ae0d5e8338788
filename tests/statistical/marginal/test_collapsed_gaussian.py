"""Normal records summed out of a linear Gaussian release (the ``"gaussian"`` plan), through
``pm.sample()`` without ``step=`` and through ``marginalize`` + ``recover_records``, against the exact
posterior (the joint of θ, the records and the release is Gaussian, or a 1-d quadrature over τ for
the hierarchy; 4 MCSE of the mean and the sd, ArviZ ESS). The records are checked too: their
posterior moments come from the same Gaussian conditioning.
"""

from __future__ import annotations

import json

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.mc import assert_mc_close
from tests.support.sampling import assigned, sample
from tests.support.zoo import by_name, run_case


def _gaussian_posterior(prior_mean, prior_cov, a, s, noise_var):
    """Mean and sd of z | s for z ~ N(m, C) and s = A z + N(0, noise_var I)."""
    a = np.atleast_2d(a)
    prec = np.linalg.inv(prior_cov) + a.T @ a / noise_var
    cov = np.linalg.inv(prec)
    mean = cov @ (np.linalg.solve(prior_cov, prior_mean) + a.T @ np.atleast_1d(s) / noise_var)
    return mean, np.sqrt(np.diag(cov))


def _joint(n, mu_sd, rec_sd):
    """z = (mu, x_1..x_n) with mu ~ N(0, mu_sd²), x_i = mu + N(0, rec_sd²): mean and covariance."""
    m = np.zeros(n + 1)
    cov = np.full((n + 1, n + 1), mu_sd**2)
    cov[1:, 1:] += rec_sd**2 * np.eye(n)
    return m, cov


@pytest.mark.parametrize(
    "name",
    [
        "normal_sum_gaussian",
        pytest.param("normal_vector_theta", marks=[pytest.mark.slow, pytest.mark.heavy]),
        pytest.param("hierarchical_group_sums", marks=[pytest.mark.slow, pytest.mark.heavy]),
    ],
)
def test_zoo_gaussian_models_exact_on_the_collapsed_route(name):
    # the heavy-tier cases keep 1500/700: the hierarchy's sd(μ₀) sits 3 MCSE low at 800/400 (a funnel)
    short = name == "normal_sum_gaussian"  # ESS/draw ≈ 1: 800 draws give ESS ≈ 1600
    res = run_case(by_name(name), draws=800 if short else 1500, tune=400 if short else 700, seed=5)
    assert list(res["route"]) == ["Collapsed"], res["route"]
    (route,) = json.loads(res["idata"].sample_stats.attrs["pymc_dp_route"])
    assert {p["case"] for p in route["plans"].values()} == {"gaussian"}
    assert route["theta_kernel"] == ("mh" if name == "normal_sum_gaussian" else "nuts")
    post = res["idata"].posterior
    for key, (mean, sd) in res["exact"].items():
        assert_mc_close(np.asarray(post[key]), mean, sd, label=f"{name} {key}")


@pytest.mark.parametrize("how", ["sum", "mean", "local"])
def test_marginalize_recover_records_exact(how):
    """NUTS on θ of the marginalized model, then the records recovered: θ and two records against
    the Gaussian conditioning of (mu, x) on the release."""
    rng = np.random.default_rng(31)
    n, mu_sd, rec_sd, sig = 8, 2.0, 1.5, 1.2
    stat = {"sum": pdp.Sum(), "mean": pdp.Mean(), "local": pdp.Local()}[how]
    shape = (n,) if how == "local" else ()
    obs = rng.normal(2.0 * (n if how == "sum" else 1), 2.0, size=shape)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, mu_sd)
        x = pm.Normal("x", mu, rec_sd, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=pdp.Gaussian(sigma=sig), observed=obs)
    m, cov = _joint(n, mu_sd, rec_sd)
    if how == "local":
        a = np.hstack([np.zeros((n, 1)), np.eye(n)])
    else:
        a = np.hstack([[0.0], np.full(n, 1.0 if how == "sum" else 1.0 / n)])
    mean, sd = _gaussian_posterior(m, cov, a, obs, sig**2)
    marginal = pdp.marginalize(model)
    idata = sample(marginal, draws=800, tune=400, seed=9)
    pdp.recover_records(idata, marginal, random_seed=np.random.default_rng(4))
    post = idata.posterior
    assert_mc_close(post["mu"].values, mean[0], sd[0], label=f"{how} mu")
    assert_mc_close(post["x"].values[..., :2], mean[1:3], sd[1:3], label=f"{how} x[:2]")


def test_default_route_records_exact():
    """pm.sample() without step=: Collapsed on (mu, x); the records it draws match the Gaussian
    conditioning (the step's own records draw, not recover_records)."""
    rng = np.random.default_rng(33)
    n, mu_sd, rec_sd, sig = 6, 2.0, 1.0, 0.8
    obs = rng.normal(1.0, 1.0, size=n)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, mu_sd)
        x = pm.Normal("x", mu, rec_sd, shape=n)
        pdp.DPObserved(
            "r", x, statistic=pdp.Local(), mechanism=pdp.Gaussian(sigma=sig), observed=obs
        )
    assert assigned(model) == {"Collapsed": ["mu", "x"]}
    m, cov = _joint(n, mu_sd, rec_sd)
    mean, sd = _gaussian_posterior(m, cov, np.hstack([np.zeros((n, 1)), np.eye(n)]), obs, sig**2)
    idata = sample(model, draws=800, tune=400, seed=12)
    post = idata.posterior
    assert_mc_close(post["mu"].values, mean[0], sd[0], label="local mu")
    assert_mc_close(post["x"].values, mean[1:], sd[1:], label="local x")


def test_nuts_theta_kernel_on_discrete_records_exact():
    """``Collapsed(theta_kernel="nuts")`` asked for on discrete records (a Beta–Bernoulli sum +
    Laplace): NUTS on the collapsed density, then the exact records draw."""
    from tests.support import exact
    from tests.support.models import beta_bernoulli_sum_model

    n, s, a, b, scale = 30, 19.3, 2.0, 2.0, 2.0
    model = beta_bernoulli_sum_model(n, s, a, b, scale)
    # 800/400 draws/tune (was 1500/700): at seed 6 the ESS of p is 732 for the mean and 467 for
    # the sd (ArviZ "mean" ESS of p and of its squared deviations, as `mcse` uses them; 1140 and
    # 1339 at 1500/700), so both stay >= 400
    idata = sample(
        model,
        lambda: [pdp.Collapsed(theta_kernel="nuts")],
        draws=800,
        tune=400,
        seed=6,
    )
    (route,) = json.loads(idata.sample_stats.attrs["pymc_dp_route"])
    assert route["theta_kernel"] == "nuts"
    assert_mc_close(
        idata.posterior["p"].values, *exact.beta_bernoulli_laplace(s, n, a, b, scale), label="p"
    )


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.xfail(
    strict=True,
    reason="the independence + random-walk MH kernel under-covers the hierarchy's funnel in some "
    "runs: sd of mu0 0.470 against 0.506 (-4.1 MCSE, an MCSE of 0.009 where the runs that explore "
    "the funnel have 0.02-0.03) at 2000 draws, seed 6; seeds 1-5 pass (-1.5 to +0.8 MCSE), seed 7 "
    "failed before the measured DRAW_SECONDS of 2026-11-28 changed the number of independence "
    "tries and passes since. theta_kernel='auto' uses NUTS here (2+ θ entries), which passes "
    "test_zoo_gaussian_models_exact_on_the_collapsed_route",
)
def test_mh_theta_kernel_on_the_hierarchy_exact():
    """``Collapsed(theta_kernel="mh")`` asked for on the Gaussian hierarchy (6 θ entries): a
    known mixing defect of the MH kernel there, kept visible (the auto rule avoids it)."""
    model, exact_post, _ = by_name("hierarchical_group_sums").build()
    idata = sample(model, lambda: [pdp.Collapsed(theta_kernel="mh")], draws=2000, tune=1000, seed=6)
    for key, (mean, sd) in exact_post.items():
        assert_mc_close(np.asarray(idata.posterior[key]), mean, sd, label=f"mh {key}")
