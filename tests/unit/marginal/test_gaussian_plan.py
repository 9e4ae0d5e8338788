"""The ``"gaussian"`` collapsed plan: which models get it, the refusals (reason in the message), the
route ``pm.sample()`` picks and reports, and a release in ``pm.Data`` followed without recompiling.
(Exactness: ``tests/unit/samplers/test_conditionals_vs_logp.py`` (the likelihood and the records'
conditional against PyMC's joint logp) and ``tests/statistical/marginal/test_collapsed_gaussian.py``.)
"""

from __future__ import annotations

import json

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from tests.support.mc import assert_within_se
from tests.support.sampling import assigned, sample
from tests.support.zoo import by_name


def _model(stat=None, mech=None, *, dist="normal", extra=None, n=5, obs=None):
    stat = pdp.Sum() if stat is None else stat
    mech = pdp.Gaussian(sigma=1.5) if mech is None else mech
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        if dist == "normal":
            x = pm.Normal("x", mu, 1.0, shape=n)
        elif dist == "studentt":
            x = pm.StudentT("x", nu=4, mu=mu, sigma=1.0, shape=n)
        else:
            x = pm.Exponential("x", pm.math.exp(mu), shape=n)
        value = obs if obs is not None else (np.ones(n) if stat.local else 2.0)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=value)
        if extra == "second_release":
            pdp.DPObserved(
                "r",
                x,
                statistic=pdp.Local(),
                mechanism=pdp.Gaussian(sigma=1.0),
                observed=np.ones(n),
            )
        if extra == "other_reader":
            pm.Normal("y", x.sum(), 1.0, observed=1.0)
    return model


@pytest.fixture(scope="module")
def zoo_model():
    """``name -> model`` of the zoo, each built once per module: the route test samples the
    hierarchical model whose competences the default-route test already computed (PyMC's
    assignment asks them again; pymc-dp caches them per model state, `cached_verdict`)."""
    built = {}

    def get(name):
        if name not in built:
            built[name] = by_name(name).build()[0]
        return built[name]

    return get


def _collapsed_logp(marginal):
    """The potential alone: the marginalized model's logp minus PyMC's own prior term of mu."""
    total, prior = marginal.compile_logp(), marginal.compile_logp(vars=[marginal["mu"]])
    return lambda point: float(total(point) - prior(point))


@pytest.mark.parametrize(
    ("name", "route"),
    [
        ("normal_sum_gaussian", {"Collapsed": ["mu", "x"]}),
        ("normal_sum_gaussian_int_prior", {"Collapsed": ["mu", "x"]}),
        ("normal_vector_theta", {"Collapsed": ["mu", "x"]}),
        (
            "hierarchical_group_sums",
            {"Collapsed": ["mu0", "tau_log__", "x0", "x1", "x2", "x3", "z"]},
        ),
        ("normal_record_random_effects", {"Collapsed": ["b", "mu", "x"]}),
    ],
)
def test_default_route_on_gaussian_zoo_models(name, route, zoo_model):
    assert assigned(zoo_model(name)) == route


@pytest.mark.parametrize(
    "name",
    [
        "normal_clamped_sum_laplace",  # clamped, Laplace
        "normal_mean_gaussian_pm_data",  # Mean(-10, 10): clamped
        "normal_local_gaussian",  # Local(-20, 20): clamped
        "normal_local_laplace",
        "exponential_sum_gaussian",  # not Normal records
        "gamma_sum_gaussian",
    ],
)
def test_not_on_clamped_laplace_or_non_normal(name):
    model, _, _ = by_name(name).build()
    assert "Collapsed" not in assigned(model)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"stat": pdp.Sum(lower=-5, upper=5)}, "linear unclamped statistic"),
        ({"stat": pdp.Local(lower=-5, upper=5)}, "linear unclamped statistic"),
        ({"stat": pdp.Sum(fn=lambda x: 2 * x)}, "linear unclamped statistic"),
        ({"mech": pdp.Laplace(scale=1.0)}, "not Gaussian"),
        ({"extra": "second_release"}, "feeds 2 releases"),
        ({"extra": "other_reader"}, "also used by 'y'"),
        ({"dist": "studentt"}, "continuous"),
        ({"dist": "exponential"}, "continuous"),
    ],
)
def test_refusals_name_the_reason(kwargs, match):
    model = _model(**kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        pdp.marginal.collapsed_plans(model)
    assert "Collapsed" not in assigned(model)


def test_plan_facts_from_the_mechanism():
    model = _model(pdp.Mean(), pdp.Gaussian(sigma=1.5), n=4)
    (plan,) = pdp.marginal.collapsed_plans(model).values()
    assert plan.case == "gaussian" and plan.kind == "sum"
    assert plan.factor == 0.25 and plan.noise_sd == 1.5 and plan.shape == (4,)
    # log p(s | mu) is the Gaussian N(s; mu, 1/n + σ²) (Mean of n unit-variance records)
    marginal = pdp.marginalize(model)
    logp = _collapsed_logp(marginal)
    for mu in (-1.0, 0.3, 2.0):
        want = stats.norm.logpdf(2.0, mu, np.sqrt(0.25 + 1.5**2))
        assert logp({"mu": np.asarray(mu)}) == pytest.approx(want, abs=1e-12)


def test_route_attrs_and_theta_kernel(zoo_model):
    model = zoo_model("hierarchical_group_sums")
    idata = sample(model, draws=30, tune=30, chains=1, seed=2)
    (route,) = json.loads(idata.sample_stats.attrs["pymc_dp_route"])
    assert route["step"] == "Collapsed" and route["theta_kernel"] == "nuts"
    assert "NUTS on the marginalized model" in route["reason"]
    assert {p["case"] for p in route["plans"].values()} == {"gaussian"}
    assert "diverging" in idata.sample_stats  # NUTS's own stats come through
    model = _model()
    idata = sample(model, draws=30, tune=30, chains=1, seed=2)
    (route,) = json.loads(idata.sample_stats.attrs["pymc_dp_route"])
    assert route["theta_kernel"] == "mh"  # one θ entry


def test_theta_kernel_argument_checked():
    with _model(), pytest.raises(ValueError, match="theta_kernel must be"):
        pdp.Collapsed(theta_kernel="hmc")


def test_release_in_pm_data_followed():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        x = pm.Normal("x", mu, 1.0, shape=3)
        obs = pm.Data("obs", 1.0)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=1.0), observed=obs)
    marginal = pdp.marginalize(model)
    logp = _collapsed_logp(marginal)
    before = logp({"mu": np.asarray(0.5)})
    with model:
        pm.set_data({"obs": 4.0})
    assert pdp.marginal.follow_releases(marginal)
    after = logp({"mu": np.asarray(0.5)})
    assert after == pytest.approx(stats.norm.logpdf(4.0, 1.5, 2.0), abs=1e-12)
    assert before == pytest.approx(stats.norm.logpdf(1.0, 1.5, 2.0), abs=1e-12)


@pytest.mark.parametrize("how", ["sum", "mean", "local"])
def test_records_draw_moments_match_the_conditional_gaussian(how):
    """Many draws of the records' exact conditional (with per-record means and sds) against the
    dense Gaussian conditioning: means, variances and the covariance of two records within 4.5
    standard errors (catches a draw whose law differs from `logq`'s)."""
    from pymc_dp.marginal.gaussian import gaussian_draw

    n, k = 5, 10_000  # se below from k: the check is 4.5 standard errors at any k
    stat = {"sum": pdp.Sum(), "mean": pdp.Mean(), "local": pdp.Local()}[how]
    obs = np.linspace(-1, 2, n) if how == "local" else 3.0
    (plan,) = pdp.marginal.collapsed_plans(_model(stat, pdp.Gaussian(sigma=0.7), obs=obs)).values()
    mu, sd = np.linspace(-1.0, 1.0, n), np.linspace(0.5, 1.5, n)
    rng = np.random.default_rng(8)
    draws = np.stack([gaussian_draw(plan, (mu, sd), rng) for _ in range(k)])
    a = np.eye(n) if how == "local" else np.full((1, n), plan.factor)
    prior = np.diag(sd**2)
    gain = prior @ a.T @ np.linalg.inv(a @ prior @ a.T + 0.49 * np.eye(len(a)))
    mean = mu + gain @ (np.atleast_1d(obs) - a @ mu)
    cov = prior - gain @ a @ prior
    # 11 comparisons per case (5 means, 5 variances, 1 covariance) of exactly Gaussian i.i.d.
    # draws: 4.5 SE each is Bonferroni for a family-wise false failure of 6.3e-5 per case (the
    # house single-comparison rate, 4 SE), 1.9e-4 over the three cases
    z = 4.5
    se = np.sqrt(np.diag(cov) / k)
    assert_within_se(draws.mean(0), mean, se, z=z, label=f"{how} record means")
    var_se = np.diag(cov) * np.sqrt(2.0 / k)
    assert_within_se(draws.var(0), np.diag(cov), var_se, z=z, label=f"{how} record variances")
    c01 = np.mean((draws[:, 0] - mean[0]) * (draws[:, 1] - mean[1]))
    # Var[(x0 - m0)(x1 - m1)] = c00 c11 + c01² for a Gaussian pair
    c01_se = np.sqrt((cov[0, 0] * cov[1, 1] + cov[0, 1] ** 2) / k)
    assert_within_se(c01, cov[0, 1], c01_se, z=z, label=f"{how} cov(record 0, record 1)")
