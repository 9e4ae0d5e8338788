"""pdp.Collapsed: θ from the exact collapsed likelihood (independence + random-walk MH) and the
records drawn exactly given θ; chosen by pm.sample() by itself when cheap.

Exactness of θ and of the recovered records against enumeration / quadrature (4 MCSE, ArviZ ESS),
default assignment, a hierarchical model with NUTS on a hyperparameter, per-chain tuning, refusals.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pymc as pm
import pytest
from pymc.sampling.mcmc import assign_step_methods
from scipy import special

import pymc_dp as pdp
from tests import exact


def _assigned(model):
    _, selected = assign_step_methods(model, None, methods=pm.STEP_METHODS)
    return {cls.__name__: sorted(v.name for v in vars_) for cls, vars_ in selected.items()}


def _sample(model, seed, draws=2000, tune=1000, **kw):
    with model:
        return pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed, progressbar=False,
                         compute_convergence_checks=False, **kw)


def _moments(w, v):
    w = w / w.sum()
    return float(np.sum(w * v)), float(np.sum(w * v**2))


# ------------------------------------------------------------------------------------ models
def _beta_bernoulli(n=30, s=19.3, a=2.0, b=2.0, scale=2.0):
    with pm.Model() as model:
        p = pm.Beta("p", a, b)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(lower=0, upper=1), mechanism=pdp.Laplace(scale=scale),
                       observed=s)
    k = np.arange(n + 1)
    logw = (special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
            + special.betaln(a + k, b + n - k) - np.abs(s - k) / scale)
    return model, exact.beta_bernoulli_laplace(s, n, a, b, scale), _moments(np.exp(logw - logw.max()), k)


def test_beta_bernoulli_default_assignment_exact_theta_and_records():
    model, theta_m, sum_m = _beta_bernoulli()
    assert _assigned(model) == {"Collapsed": ["p_logodds__", "x"]}
    idata = _sample(model, 3)
    exact.assert_moments(idata.posterior["p"].values, *theta_m, label="Collapsed beta-bernoulli θ")
    exact.assert_moments(idata.posterior["x"].values.sum(-1), *sum_m, label="Collapsed beta-bernoulli Σx")
    acc = idata.sample_stats["dp_accept"].values
    assert np.all(np.isfinite(acc)) and acc.mean() > 0.6  # the frozen independence proposal fits


@pytest.mark.slow
def test_randomized_response_local_exact_theta_and_records():
    rng = np.random.default_rng(21)
    eps = 0.8
    mech = pdp.RandomizedResponse(eps)
    r = mech.sample(rng.random(60) < 0.3, rng)
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=len(r))
        pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=r)
    assert _assigned(model) == {"Collapsed": ["p_logodds__", "x"]}
    idata = _sample(model, 4)
    exact.assert_moments(idata.posterior["p"].values, *exact.randomized_response(r, eps),
                         label="Collapsed randomized response θ")
    # P(x_i = 1 | r) for a record that answered r_i, by quadrature over p
    grid = np.linspace(1e-9, 1 - 1e-9, 200_001)
    q = np.exp(eps) / (np.exp(eps) + 1)
    ones = int(np.sum(r))
    prob1 = grid * q + (1 - grid) * (1 - q)
    logpost = ones * np.log(prob1) + (len(r) - ones) * np.log1p(-prob1)
    w = np.exp(logpost - logpost.max())
    i = int(np.flatnonzero(np.asarray(r) == 1)[0])
    cond = grid * q / prob1  # P(x_i = 1 | p, r_i = 1)
    m1 = float(np.sum(w * cond) / w.sum())
    exact.assert_moments(idata.posterior["x"].values[..., i], m1, m1, label="Collapsed RR record")


@pytest.mark.slow
def test_poisson_discrete_laplace_exact_theta_and_records():
    n, s, a, b, scale = 40, 95, 3.0, 1.0, 3.0
    mech = pdp.DiscreteLaplace(scale=scale)
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=a, beta=b)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    assert _assigned(model) == {"Collapsed": ["lam_log__", "x"]}
    idata = _sample(model, 5)
    exact.assert_moments(idata.posterior["lam"].values, *exact.poisson_discrete_laplace(s, n, a, b, scale),
                         label="Collapsed poisson θ")
    k = np.arange(601)
    lognb = (special.gammaln(a + k) - special.gammaln(k + 1) + k * np.log(n / (b + n))
             + mech.logpdf(s, k))
    exact.assert_moments(idata.posterior["x"].values.sum(-1), *_moments(np.exp(lognb - lognb.max()), k),
                         label="Collapsed poisson Σx")


def _rr_table_exact(r, mech, alpha):
    """π ~ Dir(α), x_i ~ Cat(π), r_i = RR(x_i): the true counts c by a DP over the response values."""
    k = len(alpha)
    logm = np.array([[float(mech.logpdf(rv, xv)) for rv in range(k)] for xv in range(k)])
    states = {(0,) * k: 0.0}
    for rv in range(k):
        n_r = int(np.sum(np.asarray(r) == rv))
        comps = [c for c in itertools.product(range(n_r + 1), repeat=k) if sum(c) == n_r]
        new = {}
        for st, lw in states.items():
            for c in comps:
                term = (special.gammaln(n_r + 1) - special.gammaln(np.array(c) + 1).sum()
                        + float(np.dot(c, logm[:, rv])))
                key = tuple(a + b for a, b in zip(st, c))
                new[key] = np.logaddexp(new.get(key, -np.inf), lw + term)
        states = new
    cs = np.array(list(states), dtype=float)
    logw = np.array(list(states.values())) + special.gammaln(alpha + cs).sum(1)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    big_n, total = len(r), alpha.sum()
    a0 = alpha[0] + cs[:, 0]
    theta = (np.sum(w * a0) / (total + big_n), np.sum(w * a0 * (a0 + 1)) / ((total + big_n) * (total + big_n + 1)))
    return theta, (np.sum(w * cs[:, 0]), np.sum(w * cs[:, 0] ** 2))


@pytest.mark.slow
def test_rr_table_dirichlet_exact_theta_and_records():
    rng = np.random.default_rng(7)
    alpha = np.array([1.0, 1.5, 2.0, 1.0])
    mech = pdp.RandomizedResponse(epsilon=1.2, n_categories=4)
    r = pdp.release(rng.choice(4, size=14, p=[0.4, 0.3, 0.2, 0.1]), pdp.Local(), mech, rng=rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", alpha)
        x = pm.Categorical("x", pi, shape=len(r))
        pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=r)
    assert _assigned(model) == {"Collapsed": ["pi_simplex__", "x"]}
    idata = _sample(model, 6)
    theta_m, count_m = _rr_table_exact(np.asarray(r), mech, alpha)
    exact.assert_moments(idata.posterior["pi"].values[..., 0], *theta_m, label="Collapsed RR table π_0")
    exact.assert_moments((idata.posterior["x"].values == 0).sum(-1), *count_m, label="Collapsed RR table c_0")


def test_large_counts_stay_with_data_augmentation():
    rng = np.random.default_rng(3)
    stat, mech = pdp.Counts(4), pdp.Laplace(epsilon=1.0)
    s = pdp.release(rng.choice(4, size=400), stat, mech, rng=rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(4))
        x = pm.Categorical("x", pi, shape=400)
        pdp.DPObserved("c", x, statistic=stat, mechanism=mech, observed=s)
    assert _assigned(model) == {"ConjugateTheta": ["pi_simplex__"], "DataAugmentation": ["x"]}
    from pymc_dp.marginal.step import MAX_ITERATION_SECONDS, iteration_seconds

    (plan,) = pdp.marginal.collapsed_plans(model).values()  # collapsible, but too slow per iteration
    assert iteration_seconds(plan) > MAX_ITERATION_SECONDS


@pytest.mark.slow
def test_hierarchical_hyperparameter_moved_by_nuts_exact():
    n, s, scale = 20, 6.4, 1.5
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 1.0)
        p = pm.Beta("p", a, 2.0)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(lower=0, upper=1), mechanism=pdp.Laplace(scale=scale),
                       observed=s)
    assert _assigned(model) == {"Collapsed": ["p_logodds__", "x"], "NUTS": ["a_log__"]}
    idata = _sample(model, 8)
    # p | s: ∫ Gamma(a; 2, 1) Beta(p; a, 2) da × Σ_k Bin(k; n, p) e^{-|s-k|/b}, 2-d quadrature
    ag = np.linspace(1e-4, 25, 2500)[:, None]
    pg = np.linspace(1e-6, 1 - 1e-6, 4001)[None, :]
    k = np.arange(n + 1)
    lik = np.exp(special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
                 - np.abs(s - k) / scale)
    like_p = (lik[:, None] * pg**k[:, None] * (1 - pg) ** (n - k[:, None])).sum(0)
    prior = np.exp(np.log(ag) - ag + (ag - 1) * np.log(pg) + np.log1p(-pg) - special.betaln(ag, 2.0))
    post_p = np.trapezoid(prior, ag[:, 0], axis=0) * like_p
    post_p /= np.trapezoid(post_p, pg[0])
    m1 = np.trapezoid(post_p * pg[0], pg[0])
    m2 = np.trapezoid(post_p * pg[0] ** 2, pg[0])
    exact.assert_moments(idata.posterior["p"].values, m1, m2, label="Collapsed hierarchical p")


def test_both_chains_tune_with_one_core():
    model, *_ = _beta_bernoulli()
    idata = _sample(model, 9, draws=300, tune=300)
    for c in range(2):
        imh = idata.sample_stats["dp_accept"].values[c]
        rw = idata.sample_stats["dp_accept_rw"].values[c]
        assert np.all(np.isfinite(imh)) and imh.mean() > 0.6, f"chain {c}: IMH not fitted"
        assert 0.1 < rw.mean() < 0.6, f"chain {c}: random walk not tuned ({rw.mean():.2f})"
    with model:  # tune=0: no fit, the random walk alone (still exact)
        idata = pm.sample(draws=20, tune=0, chains=1, progressbar=False, random_seed=1,
                          compute_convergence_checks=False)
    assert np.all(np.isnan(idata.sample_stats["dp_accept"].values))


def test_explicit_steps_and_delegation():
    model, *_ = _beta_bernoulli(n=10, s=4.0)
    with model:
        # records given to DataAugmentation: p keeps what PyMC chose before Collapsed existed
        step = pdp.Collapsed([model["p"]])
        assert type(step).__name__ == "ConjugateTheta"
        idata = pm.sample(step=[pm.NUTS([model["p"]])], draws=20, tune=20, chains=1, progressbar=False,
                          random_seed=2, compute_convergence_checks=False)
        assert np.all(np.isnan(idata.sample_stats["dp_accept"].values))  # Collapsed: the records alone
        with pytest.raises(ValueError, match=re.escape("df must be a number > 2 (finite proposal "
                                                       "covariance), got df=1.")):
            pdp.Collapsed([model["p"], model["x"]], df=1)
    with pm.Model() as m2:
        k = pm.Poisson("k", 3.0)
        x = pm.Bernoulli("x", pm.Beta("p", 1, 1), shape=5)
        pdp.DPObserved("s", x, statistic=pdp.Sum(lower=0, upper=1), mechanism=pdp.Laplace(scale=1.0),
                       observed=2.0)
        with pytest.raises(ValueError, match=re.escape("Collapsed moves continuous parameters only; ['k'] "
                                                       "are discrete.")):
            pdp.Collapsed([k, x])


def test_poor_independence_acceptance_warns_and_freezes_more_tries():
    model, *_ = _beta_bernoulli(n=10, s=4.0)
    with model:
        step = pdp.Collapsed([model["p"], model["x"]])
    step._imh_tune = [0.05] * 40  # as if the Student-t had missed the posterior in warm-up
    with pytest.warns(UserWarning, match=re.escape("Collapsed: the Student-t independence proposal for "
                                                   "['p_logodds__'] was accepted 0.05 of the time")):
        step.stop_tuning()
    assert not step.tune


def test_refuses_a_release_changed_after_it_was_built():
    """A release in pm.Data changed by pm.set_data after the step was built is refused (the
    collapsed likelihood was planned for the old value); an unchanged one is sampled."""
    from tests.test_sbc import bernoulli_sum

    model, simulate, _ = bernoulli_sum()
    rng = np.random.default_rng(3)
    _, _, data = simulate(rng)
    pm.set_data({"obs": data}, model=model)
    with model:
        step = pdp.Collapsed()
    point = model.initial_point(random_seed=0)
    point, _ = step.step(point)  # the release it was built with: fine
    pm.set_data({"obs": np.asarray(data) + 3.0}, model=model)
    with pytest.raises(ValueError, match=re.escape("changed after pdp.Collapsed was built (pm.set_data)")):
        step.step(point)


def test_marginalize_leaves_no_silent_release_container():
    """The collapsed release is planned at marginalize time: its pm.Data container leaves the new
    model, so pm.set_data there fails instead of changing nothing."""
    from tests.test_sbc import bernoulli_sum

    model, _, _ = bernoulli_sum()
    new = pdp.marginalize(model)
    assert "obs" in model.named_vars and "obs" not in new.named_vars
    with pytest.raises(KeyError):
        pm.set_data({"obs": 3.0}, model=new)
