"""SufficientTheta: θ | records from sufficient statistics by slice sampling (exact; assignment)."""

from __future__ import annotations

import re

import numpy as np
import pymc as pm
import pytest
from pymc.sampling.mcmc import assign_step_methods
from scipy import stats

import pymc_dp as pdp
from pymc_dp.samplers.sufficient import sufficient_competence
from tests import exact


def _assigned(model):
    _, selected = assign_step_methods(model, None, methods=pm.STEP_METHODS)
    return {cls.__name__: sorted(v.name for v in vars_) for cls, vars_ in selected.items()}


def _sample(model, step, draws=2000, seed=1):
    with model:
        return pm.sample(step=step, draws=draws, tune=500, chains=2, cores=1, random_seed=seed,
                         progressbar=False, compute_convergence_checks=False)


def _moments(grid, logpost):
    w = np.exp(logpost - logpost.max())
    w /= np.trapezoid(w, grid)
    return np.trapezoid(w * grid, grid), np.trapezoid(w * grid**2, grid)


# -- every family: the reduced log density equals PyMC's up to a constant ------------------------
rng0 = np.random.default_rng(0)
FAMILY_MODELS = {
    "normal": lambda t: pm.Normal("y", t, 2.0, observed=rng0.normal(1, 2, 30)),
    "normal_sigma": lambda t: pm.Normal("y", 0.3, t, observed=rng0.normal(0, 2, 30)),
    "halfnormal": lambda t: pm.HalfNormal("y", t, observed=np.abs(rng0.normal(0, 2, 30))),
    "lognormal": lambda t: pm.LogNormal("y", t, 0.7, observed=rng0.lognormal(0, 1, 30)),
    "gamma_shape": lambda t: pm.Gamma("y", alpha=t, beta=1.5, observed=rng0.gamma(2, 1, 30)),
    "gamma_mean": lambda t: pm.Gamma("y", alpha=2.0, beta=2.0 / t, observed=rng0.gamma(2, 1, 30)),
    "exponential": lambda t: pm.Exponential("y", t, observed=rng0.exponential(1, 30)),
    "beta": lambda t: pm.Beta("y", t, 2.0, observed=rng0.beta(2, 2, 30)),
    "poisson": lambda t: pm.Poisson("y", t, observed=rng0.poisson(2, 30)),
    "bernoulli_logit": lambda t: pm.Bernoulli("y", logit_p=pm.math.log(t), observed=rng0.binomial(1, 0.4, 30)),
    "binomial": lambda t: pm.Binomial("y", 5, t / (1 + t), observed=rng0.binomial(5, 0.4, 30)),
    "geometric": lambda t: pm.Geometric("y", t / (1 + t), observed=rng0.geometric(0.4, 30)),
    "categorical": lambda t: pm.Categorical("y", pm.math.stack([t, 1.0, 2.0]) / (t + 3.0),
                                            observed=rng0.integers(0, 3, 30)),
}


@pytest.mark.parametrize("family", sorted(FAMILY_MODELS))
def test_reduced_logp_matches_pymc(family):
    with pm.Model() as model:
        theta = pm.LogNormal("theta", 0.0, 1.0)
        FAMILY_MODELS[family](theta)
        step = pdp.SufficientTheta([theta])
    logp = model.compile_logp()
    point = model.initial_point(0)
    args = [point[n] for n in step.input_names]
    fixed = [point[v.name] for v in step.others] + list(step._stats(*args))
    a, b = np.array([-0.4]), np.array([0.9])
    ours = step._logp(a, *fixed) - step._logp(b, *fixed)
    theirs = logp({**point, "theta_log__": a[0]}) - logp({**point, "theta_log__": b[0]})
    assert step.children and not step.small_terms
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)  # PyMC keeps some constants in float32


# -- (a) the step alone on fixed (observed) records against quadrature ---------------------------
def test_gamma_records_gig_posterior():
    """mean ~ Gamma(2, 0.4), x ~ Gamma(2, 2/mean): mean | x is GIG(2 − 2n, 0.8, 4Σx)."""
    x = np.random.default_rng(3).gamma(2.0, 2.5, 25)
    with pm.Model() as model:
        m = pm.Gamma("m", alpha=2.0, beta=0.4)
        pm.Gamma("x", alpha=2.0, beta=2.0 / m, observed=x)
        step = pdp.SufficientTheta([m])
    idata = _sample(model, [step], seed=4)
    b0, sx = 0.4, x.sum()
    scale = np.sqrt(2.0 * sx / b0)
    gig = stats.geninvgauss(2.0 - 2 * x.size, 2.0 * b0 * scale, scale=scale)
    exact.assert_moments(np.asarray(idata.posterior["m"]), gig.mean(), gig.var() + gig.mean() ** 2,
                         label="Gamma records, GIG")


def test_poisson_rate_lognormal_prior():
    y = np.random.default_rng(5).poisson(3.0, 20)
    with pm.Model() as model:
        lam = pm.LogNormal("lam", 0.0, 1.0)
        pm.Poisson("y", lam, observed=y)
    idata = _sample(model, [pdp.SufficientTheta([lam], model=model)], seed=6)
    grid = np.linspace(1e-4, 10, 20001)
    logpost = stats.lognorm.logpdf(grid, 1.0) + y.sum() * np.log(grid) - y.size * grid
    exact.assert_moments(np.asarray(idata.posterior["lam"]), *_moments(grid, logpost), label="Poisson, LogNormal prior")


def test_normal_records_unknown_mean_and_sd():
    y = np.random.default_rng(7).normal(1.0, 2.0, 15)
    with pm.Model() as model:
        mu = pm.Laplace("mu", 0.0, 2.0)
        sigma = pm.HalfCauchy("sigma", 2.0)
        pm.Normal("y", mu, sigma, observed=y)
    idata = _sample(model, [pdp.SufficientTheta([mu, sigma], model=model)], seed=8)
    mg, sg = np.linspace(-4, 6, 801), np.linspace(0.3, 8, 800)
    lp = (stats.laplace.logpdf(mg, 0, 2)[:, None] + stats.halfcauchy.logpdf(sg, 0, 2)[None, :]
          + stats.norm.logpdf(y[:, None, None], mg[None, :, None], sg[None, None, :]).sum(axis=0))
    w = np.exp(lp - lp.max())
    w /= w.sum()
    for name, grid, axis in (("mu", mg, 1), ("sigma", sg, 0)):
        marg = w.sum(axis=axis)
        exact.assert_moments(np.asarray(idata.posterior[name]), np.sum(marg * grid), np.sum(marg * grid**2),
                             label=f"normal records {name}")


# -- (b) default pm.sample() on a quickstart-like model with releases -----------------------------
def _quickstart_like(seed=11, n_count=40, n_stay=8, sigma=4.0):
    rng = np.random.default_rng(seed)
    cond, stay = rng.binomial(1, 0.2, n_count), rng.gamma(2.0, 2.5, n_stay)
    cs, cm = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=0.5)
    s_count = float(pdp.release(cond, cs, cm, rng=rng))
    s_stay = float(stay.sum() + rng.normal(0, sigma))  # the test's release: Gaussian noise on Σ stays
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        m = pm.Gamma("mean_stay", alpha=2.0, beta=0.4)
        has = pm.Bernoulli("has_condition", p, shape=n_count)
        los = pm.Gamma("length_of_stay", alpha=2.0, beta=2.0 / m, shape=n_stay)
        pdp.DPObserved("count", has, statistic=cs, mechanism=cm, observed=s_count)
        pdp.DPObserved("stay", los, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sigma), observed=s_stay)
    return model, s_count, 2.0, s_stay, n_stay, sigma


@pytest.mark.slow
def test_default_sample_quickstart_like_exact():
    model, s_count, scale, s_stay, n, sigma = _quickstart_like()
    assert _assigned(model) == {"Collapsed": ["has_condition", "p_logodds__"],
                                "SufficientTheta": ["mean_stay_log__"],
                                "DataAugmentation": ["length_of_stay_log__"]}
    with model:
        idata = pm.sample(draws=3000, tune=1000, chains=2, cores=1, random_seed=12, progressbar=False,
                          compute_convergence_checks=False)
    exact.assert_moments(np.asarray(idata.posterior["p"]), *exact.beta_bernoulli_laplace(s_count, 40, 1.0, 1.0, scale),
                         label="quickstart-like p")
    # Σ stays | m ~ Gamma(2n, rate 2/m); s = Σ + N(0, σ²): 2-d quadrature in (m, Σ)
    mg = np.linspace(1e-3, 40, 4000)
    t = np.linspace(1e-6, s_stay + 10 * sigma + 60, 6000)
    logf = stats.gamma.logpdf(t[None, :], 2 * n, scale=mg[:, None] / 2.0) + stats.norm.logpdf(s_stay - t, 0, sigma)
    like = np.trapezoid(np.exp(logf), t, axis=1)
    exact.assert_moments(np.asarray(idata.posterior["mean_stay"]),
                         *_moments(mg, stats.gamma.logpdf(mg, 2.0, scale=1 / 0.4) + np.log(like + 1e-300)),
                         label="quickstart-like mean_stay")


# -- (c) assignment and refusals --------------------------------------------------------------------
def test_refuses_terms_it_cannot_write():
    x = np.linspace(-1, 1, 30)
    with pm.Model() as model:
        b = pm.Laplace("b", 0, 1)
        pm.Normal("y", b * x, 1.0, observed=np.zeros(30))  # not iid: the mean differs per value
    with model, pytest.raises(ValueError, match=re.escape(
            "SufficientTheta writes every term that depends on 'b' from sufficient statistics")):
        pdp.SufficientTheta([b])
    with pm.Model() as model:
        lam = pm.LogNormal("lam", 0, 1)
        pm.Potential("pot", -lam)
    with model, pytest.raises(ValueError, match=re.escape("cannot write 'pot' (a Potential)")):
        pdp.SufficientTheta([lam])
    with model, pytest.raises(ValueError, match=re.escape("width must be a positive finite number")):
        pdp.SufficientTheta([lam], width=0.0)


def test_small_non_record_terms_enter_with_their_own_logp():
    with pm.Model():
        tau = pm.HalfNormal("tau", 1.0)
        mu = pm.StudentT("mu", nu=3, mu=0, sigma=tau, shape=3)  # small child: own logp
        pm.Normal("y", tau, 1.0, observed=np.ones(50))
        step = pdp.SufficientTheta([tau])
    assert step.small_terms == [mu] and [c.name for c in step.children] == ["y"]


def test_assignment_only_with_records_and_not_conjugate():
    model, *_ = _quickstart_like()
    assert pm.STEP_METHODS.index(pdp.SufficientTheta) == pm.STEP_METHODS.index(pdp.ConjugateTheta) + 1
    assert sufficient_competence(model["p"]) == pm.step_methods.compound.Competence.INCOMPATIBLE  # conjugate
    with pm.Model() as plain:  # no DPObserved node: PyMC's defaults
        lam = pm.LogNormal("lam", 0, 1)
        pm.Poisson("y", lam, observed=np.ones(5, dtype=int))
    assert _assigned(plain) == {"NUTS": ["lam_log__"]}
    rng = np.random.default_rng(1)
    with pm.Model() as other:  # a Potential on θ: not writable, NUTS keeps it, never a refusal
        lam = pm.LogNormal("lam", 0, 1)
        x = pm.Poisson("x", lam, shape=20)
        pm.Potential("pot", -lam)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.DiscreteLaplace(scale=2.0),
                       observed=pdp.release(rng.poisson(2, 20), pdp.Sum(), pdp.DiscreteLaplace(scale=2.0), rng=rng))
    assert sufficient_competence(other["lam"]) == pm.step_methods.compound.Competence.INCOMPATIBLE
    assert "SufficientTheta" not in _assigned(other)  # (pm.sample() collapses this Poisson sum)
