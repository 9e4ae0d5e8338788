"""``pm.sample()`` without ``step=`` picks DataAugmentation for latent records, ConjugateTheta for their
conjugate parents and interweaving for weak releases (issue 10 item 5, issue 11 items 2-3)."""

import logging
import math
import re

import arviz as az
import numpy as np
import pymc as pm
import pytest
from pymc.sampling.mcmc import assign_step_methods
from scipy import stats

import pymc_dp as pdp
from tests.support import exact


def _normal_model(n=40, b=2.0, seed=40):
    """Quickstart-style: normal records, their sum released with Laplace noise (no clamping)."""
    rng = np.random.default_rng(seed)
    s = float(pdp.release(rng.normal(1.0, 1.0, n), pdp.Sum(), pdp.Laplace(scale=b), rng=rng))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s_dp", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=b), observed=s)
    return model, s


def _exact_normal(s, n, b, prior_sd=3.0):
    """mu ~ N(0, prior_sd), Σx ~ N(n mu, n), s ~ Laplace(Σx, b): moments by 2-d quadrature."""
    t = np.linspace(s - 40 * b - 10 * math.sqrt(n), s + 40 * b + 10 * math.sqrt(n), 8001)
    mu = np.linspace(-4 * prior_sd, 4 * prior_sd, 4001)
    lik = np.trapezoid(stats.norm.pdf(t[None, :], n * mu[:, None], math.sqrt(n))
                       * stats.laplace.pdf(s, t, b)[None, :], t, axis=1)
    post = lik * stats.norm.pdf(mu, 0, prior_sd)
    post /= np.trapezoid(post, mu)
    return np.trapezoid(mu * post, mu), np.trapezoid(mu**2 * post, mu)


def _poisson_model(n=60, seed=41):
    rng = np.random.default_rng(seed)
    mech = pdp.DiscreteLaplace(scale=2.0)
    s = int(pdp.release(rng.poisson(2.0, n), pdp.Sum(), mech, rng=rng))
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=3.0, beta=1.0)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    return model, s


def _assigned(model):
    _, selected = assign_step_methods(model, None, methods=pm.STEP_METHODS)
    return {cls.__name__: sorted(v.name for v in vars_) for cls, vars_ in selected.items()}


def test_registered_and_assigned_to_the_records():
    assert pdp.DataAugmentation in pm.STEP_METHODS
    model, _ = _normal_model()
    assert pm.STEP_METHODS.index(pdp.ConjugateTheta) == 1
    model, _ = _normal_model()
    assert _assigned(model) == {"ConjugateTheta": ["mu"], "DataAugmentation": ["x"]}
    model, _ = _poisson_model()
    assert _assigned(model) == {"ConjugateTheta": ["lam_log__"], "DataAugmentation": ["x"]}


def test_not_assigned_to_records_other_terms_depend_on():
    with pm.Model() as model:
        mu = pm.Normal("mu")
        x = pm.Normal("x", mu, 1.0, shape=5)
        pm.Normal("z", x.sum(), 1.0, observed=1.0)  # a non-DP term on the records
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=2.0)
    with pytest.warns(UserWarning, match=re.escape("'z' depends on 'x'")):
        assert "DataAugmentation" not in _assigned(model)


def test_not_assigned_to_records_that_are_not_iid():
    """Records drawn one from another (a random walk): refused at construction, so never assigned."""
    with pm.Model() as model:
        mu = pm.Normal("mu")
        x = pm.GaussianRandomWalk("x", mu=mu, sigma=1.0, init_dist=pm.Normal.dist(0, 1), shape=5)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=2.0)
    with pytest.warns(UserWarning, match="cannot take them"):
        assigned = _assigned(model)
    assert "DataAugmentation" not in assigned
    with model, pytest.warns(UserWarning, match="cannot take them"):  # pm.sample() runs with PyMC's
        pm.sample(draws=5, tune=5, chains=1, progressbar=False, random_seed=0,
                  compute_convergence_checks=False)


def test_non_additive_statistic_warns_and_names_mhaar():
    with pm.Model() as model:
        p = pm.Beta("p", 2, 2)
        x = pm.Geometric("x", p, shape=3)
        pdp.DPObserved("s", x, statistic=pdp.Median(1, 4),
                       mechanism=pdp.SmoothLaplace(epsilon=2.0, delta=0.1), observed=1.2)
    with pytest.warns(UserWarning, match=re.escape("pass step=[pdp.MHAAR([theta])]")):
        assigned = _assigned(model)
    assert "DataAugmentation" not in assigned


def test_groups_of_different_sizes_get_one_block_each_and_print_like_pymc(caplog):
    with pm.Model():
        p = pm.Beta("p", 2, 2)
        x = pm.Bernoulli("x", p, shape=7)
        w = pm.Bernoulli("w", p, shape=4)
        pdp.DPObserved("s1", x, statistic=pdp.Sum(lower=0, upper=1), mechanism=pdp.Laplace(scale=1.0),
                       observed=3.0)
        pdp.DPObserved("s2", w, statistic=pdp.Sum(lower=0, upper=1), mechanism=pdp.Laplace(scale=1.0),
                       observed=2.0)
        step = pdp.DataAugmentation()
        assert [g.block.n for g in step.groups] == [7, 4]
        logger = logging.getLogger("pymc")
        logger.addHandler(caplog.handler)
        try:
            with caplog.at_level(logging.INFO, logger="pymc"):
                pm.sample(draws=5, tune=5, chains=1, progressbar=False, random_seed=1,
                          compute_convergence_checks=False)
        finally:
            logger.removeHandler(caplog.handler)
    assert "DataAugmentation: [x, w]" in caplog.text
    assert "ConjugateTheta: [p]" in caplog.text


def test_model_without_latent_records_says_why():
    with pm.Model():
        mu = pm.Normal("mu")
        x = pm.Normal("x", mu, 1.0, observed=np.ones(3))  # the records are known: nothing latent
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=2.0)
        with pytest.raises(ValueError, match=re.escape("there are no free record variables to sample")):
            pdp.DataAugmentation()


def test_sample_outside_a_with_block_uses_data_augmentation():
    model, _ = _poisson_model(n=10)
    idata = pm.sample(model=model, draws=20, tune=20, chains=1, progressbar=False, random_seed=2,
                      compute_convergence_checks=False)
    assert "dp_accept_rate" in idata.sample_stats


@pytest.mark.slow
@pytest.mark.parametrize("case", ["normal", "poisson"])
def test_pm_sample_default_assignment_exact(case):
    if case == "normal":
        model, s = _normal_model()
        var, moments = "mu", _exact_normal(s, 40, 2.0)
    else:
        model, s = _poisson_model()
        var, moments = "lam", exact.poisson_discrete_laplace(s, 60, 3.0, 1.0, 2.0, kmax=1500)
    with model:
        idata = pm.sample(draws=2000, tune=500, chains=2, cores=1, random_seed=42, progressbar=False,
                          compute_convergence_checks=False)
    assert "dp_accept_rate" in idata.sample_stats
    exact.assert_moments(np.asarray(idata.posterior[var]), *moments, label=f"pm.sample() {case}")
    assert float(np.asarray(az.rhat(idata, var_names=[var])[var])) < 1.05


# ---------------------------------------------------------------------------------------------
# ConjugateTheta and interweaving chosen by pm.sample() (issue 11 items 2-3)
# ---------------------------------------------------------------------------------------------
L, U = -2.0, 4.0


def _clamped_model(n, eps, seed=21):
    """Clamped normal mean: mu ~ N(0, 3²), x_i ~ N(mu, 1), Σ clip(x_i, -2, 4) + Laplace(6/ε)."""
    rng = np.random.default_rng(seed)
    stat, mech = pdp.Sum(lower=L, upper=U), pdp.Laplace(epsilon=eps)
    s = float(pdp.release(rng.normal(1.0, 1.0, n), stat, mech, rng=rng))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    return model, s, (U - L) / eps


def _quickstart_model(n=300, seed=2026):
    """examples/quickstart.py: a Beta–Bernoulli count and Gamma stays (clamped mean)."""
    rng = np.random.default_rng(seed)
    condition, stay = rng.binomial(1, 0.12, size=n), rng.gamma(2.0, 2.5, size=n)
    count_stat, count_mech = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=0.5)
    stay_stat, stay_mech = pdp.Mean(lower=0, upper=20), pdp.Laplace(epsilon=1.0)
    s_count = float(pdp.release(condition, count_stat, count_mech, rng=rng))
    s_stay = float(pdp.release(stay, stay_stat, stay_mech, rng=rng))
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        mean_stay = pm.Gamma("mean_stay", alpha=2.0, beta=0.4)
        has = pm.Bernoulli("has_condition", p, shape=n)
        los = pm.Gamma("length_of_stay", alpha=2.0, beta=2.0 / mean_stay, shape=n)
        pdp.DPObserved("count", has, statistic=count_stat, mechanism=count_mech, observed=s_count)
        pdp.DPObserved("stay", los, statistic=stay_stat, mechanism=stay_mech, observed=s_stay)
    return model, s_count, 1.0 / 0.5


def test_quickstart_and_weak_release_assignments():
    model, *_ = _quickstart_model()
    assert _assigned(model) == {"ConjugateTheta": ["p_logodds__"], "NUTS": ["mean_stay_log__"],
                                "DataAugmentation": ["has_condition", "length_of_stay_log__"]}
    model, *_ = _clamped_model(50, 0.1)
    assert _assigned(model) == {"ConjugateTheta": ["mu"], "DataAugmentation": ["x"]}


def test_model_without_dp_nodes_keeps_pymc_defaults():
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("k", p, shape=3)  # latent, conjugate, but no DPObserved node
        mu = pm.Normal("mu", 0, 3)
        pm.Normal("y", mu, 1.0, observed=np.ones(4))  # conjugate, observed
    ours = _assigned(model)
    methods = [m for m in pm.STEP_METHODS if m not in (pdp.DataAugmentation, pdp.ConjugateTheta)]
    _, selected = assign_step_methods(model, None, methods=methods)
    assert ours == {cls.__name__: sorted(v.name for v in vs) for cls, vs in selected.items()}
    assert "ConjugateTheta" not in ours and "DataAugmentation" not in ours


def test_interweave_auto_decision_from_the_weakness_ratio():
    model, *_ = _clamped_model(50, 0.1)
    with model:
        weak = pdp.DataAugmentation()
        off = pdp.DataAugmentation(interweave=False)
    (d,) = weak.interweave_decisions
    assert weak.interweaving and d["enabled"] and d["parents"] == ["mu"]
    # noise sd √2·60 = 85 against sd(Σ clip x) ≈ √50·0.98 ≈ 7: r ≈ 12
    assert 9.0 < d["ratio"] < 16.0
    assert not off.interweaving and off.interweave_decisions[0]["reason"] == "interweave=False"
    model, *_ = _clamped_model(1000, 1.0)
    with model:
        informative = pdp.DataAugmentation()
    (d,) = informative.interweave_decisions
    assert not informative.interweaving and 0.2 < d["ratio"] < 0.4  # √2·6 = 8.5 vs √1000 ≈ 31
    assert d["reason"].startswith("release informative: r = ")
    model, _ = _poisson_model(n=10)
    with model:
        discrete = pdp.DataAugmentation()
    assert not discrete.interweaving
    assert discrete.interweave_decisions[0]["reason"] == "discrete records have no θ-free representation"


def test_interweave_argument_checked():
    model, _ = _poisson_model(n=10)
    with model:
        with pytest.raises(ValueError, match=re.escape("interweave must be 'auto', True or False, got "
                                                       "interweave='yes'.")):
            pdp.DataAugmentation(interweave="yes")
        with pytest.raises(ValueError, match=re.escape("DataAugmentation(interweave=True): Interweave "
                                                       "needs records with a θ-free representation")):
            pdp.DataAugmentation(interweave=True)


def test_default_sampling_interweaves_and_reports_stats():
    """CompoundStep with the θ-move inside DataAugmentation: θ moved by two steps, stats per draw."""
    model, *_ = _clamped_model(50, 0.1)
    with model:
        idata = pm.sample(draws=30, tune=30, chains=2, cores=1, progressbar=False, random_seed=4,
                          compute_convergence_checks=False)
    evals = np.asarray(idata.sample_stats["dp_iw_evals"])
    assert evals.shape == (2, 30) and (evals > 0).all()
    assert np.asarray(idata.sample_stats["dp_iw_move"]).mean() > 0
    mu = np.asarray(idata.posterior["mu"])
    assert np.all(np.diff(mu, axis=1) != 0)  # ConjugateTheta and the θ-move both redraw mu
    x = np.asarray(idata.posterior["x"])
    assert np.isfinite(x).all() and x.shape == (2, 30, 50)


def _weak_exact(n, eps, seed, h):
    """Quadrature of tests.test_interweave (grid step h for the clipped record: binning adds
    n·h²/12 to the sum's variance, 0.2 at n = 1000, h = 0.05, against the noise variance 2·120²)."""
    model, s, b = _clamped_model(n, eps, seed)
    from tests.unit.samplers.test_interweave import clamped_normal_sum_laplace

    return model, "mu", clamped_normal_sum_laplace(s, n, 3.0, b, h=h)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["quickstart", "weak-n50", "weak-n1000"])
def test_pm_sample_default_assignment_exact_new_routes(case):
    """Default assignment (ConjugateTheta, DataAugmentation, interweaving) against exact posteriors."""
    if case == "quickstart":  # p: ConjugateTheta + DA on Bernoulli records; enumeration of the count
        model, s, scale = _quickstart_model()
        var, moments = "p", exact.beta_bernoulli_laplace(s, 300, 1.0, 1.0, scale)
    elif case == "weak-n50":
        model, var, moments = _weak_exact(50, 0.1, 21, 0.01)
    else:
        model, var, moments = _weak_exact(1000, 0.05, 22, 0.05)
    with model:
        idata = pm.sample(draws=1000, tune=300, chains=2, cores=1, random_seed=42, progressbar=False,
                          compute_convergence_checks=False)
    draws = np.asarray(idata.posterior[var])
    exact.assert_moments(draws, *moments, label=f"pm.sample() {case}")
    ess = float(np.asarray(az.ess(idata, var_names=[var])[var]))
    assert ess / draws.size > 0.2, f"{case}: θ ESS/draw {ess / draws.size:.3f} (target >= 0.2)"
