"""``pm.sample()`` without ``step=`` picks DataAugmentation for latent records (issue 10 item 5)."""

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
from tests import exact


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
    assert _assigned(model) == {"NUTS": ["mu"], "DataAugmentation": ["x"]}
    model, _ = _poisson_model()
    assert _assigned(model) == {"NUTS": ["lam_log__"], "DataAugmentation": ["x"]}


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
