"""Collapsed likelihoods (pdp.marginalize): exact against brute-force enumeration, gradients,
NUTS exactness against known posteriors, exact record recovery, and refusals."""

from __future__ import annotations

import itertools
import math
import re
import types

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr
from scipy import special, stats

import pymc_dp as pdp
from pymc_dp.marginal import marginal_plans

# ------------------------------------------------------------------------------------ helpers


def _collapsed_fns(new, mode="FAST_COMPILE"):
    """One compiled function of the transformed point: (potential value, gradient, constrained θ).

    Returns three callables sharing it (one compilation keeps the numba tier fast).
    """
    collapsed = {name for plan in marginal_plans(new).values() for name in plan.nodes}
    lp = new.logp(
        vars=[p for p in new.potentials if p.name in collapsed or "+" in p.name], jacobian=False
    )
    grads = pt.grad(lp, new.value_vars, disconnected_inputs="ignore")
    theta = new.unobserved_value_vars
    # FAST_COMPILE keeps this tier quick; the NUTS tier below compiles with the default linker
    fn = new.compile_fn(
        [lp, pt.concatenate([pt.atleast_1d(g).ravel() for g in grads]), *theta],
        inputs=new.value_vars,
        point_fn=True,
        mode=mode,
    )
    names = [v.name for v in theta]
    return (
        lambda pt_: fn(pt_)[0],
        lambda pt_: fn(pt_)[1],
        lambda pt_: dict(zip(names, fn(pt_)[2:])),
    )


def _theta(new, constrained, point):
    return constrained(point)


def _point(new, seed):
    rng = np.random.default_rng(seed)
    start = new.initial_point()
    return {
        v.name: start[v.name] + rng.normal(0, 0.4, size=np.shape(start[v.name]))
        for v in new.value_vars
    }


def _enumerate(logf_values, support, n, loglik_of_x):
    """log Σ_x Π f(x_i) p(s | x) over all support^n record vectors."""
    terms = []
    for xs in itertools.product(range(len(support)), repeat=n):
        x = np.asarray(support)[list(xs)]
        terms.append(np.sum(logf_values[list(xs)]) + loglik_of_x(x))
    return special.logsumexp(terms)


def _check_against_enumeration(
    model, logf_fn, support, n, loglik_of_x, seeds=(0, 1), mode="FAST_COMPILE", **kw
):
    new = pdp.marginalize(model, **kw)
    assert not any(rv.name == "x" for rv in new.free_RVs)
    logp, dlogp, constrained = _collapsed_fns(new, mode)
    for seed in seeds:
        point = _point(new, seed)
        theta = constrained(point)
        brute = _enumerate(logf_fn(theta, np.asarray(support)), support, n, loglik_of_x)
        assert abs(logp(point) - brute) < 1e-10 * max(1.0, abs(brute)), (logp(point), brute)
        _check_gradient(logp, dlogp, point)
    return new


def _check_gradient(logp, dlogp, point, h=1e-6):
    grad = dlogp(point)
    keys = list(point)
    flat = np.concatenate([np.atleast_1d(point[k]).ravel() for k in keys])
    sizes = [np.size(point[k]) for k in keys]
    assert np.all(np.isfinite(grad))

    def at(v):
        out, i = {}, 0
        for k, s in zip(keys, sizes):
            out[k] = v[i : i + s].reshape(np.shape(point[k]))
            i += s
        return out

    fd = np.array(
        [(logp(at(flat + h * e)) - logp(at(flat - h * e))) / (2 * h) for e in np.eye(len(flat))]
    )
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


def _laplace(s, stat, b):
    return float(np.sum(-np.abs(s - stat) / b - math.log(2 * b)))


# ------------------------------------------------------------------ exact against enumeration


@pytest.mark.parametrize("method", ["auto", "convolution"])
def test_bernoulli_sum_laplace_matches_enumeration(method):
    n, s, mech = 5, 2.7, pdp.Laplace(epsilon=0.8)
    with pm.Model() as model:
        p = pm.Beta("p", 2, 3)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(lower=0, upper=1), mechanism=mech, observed=s)
    new = _check_against_enumeration(
        model,
        lambda th, sup: stats.bernoulli.logpmf(sup, th["p"]),
        [0, 1],
        n,
        lambda x: _laplace(s, x.sum(), 1 / 0.8),
        method=method,
        mode=None,
    )
    plan = marginal_plans(new)["x"]
    assert plan.closed == ("binomial" if method == "auto" else None)


def test_clamped_binomial_mean_gaussian_matches_enumeration():
    n, s = 4, 1.3
    mech = pdp.Gaussian(sigma=0.4)
    with pm.Model() as model:
        p = pm.Beta("p", 2, 2)
        x = pm.Binomial("x", 3, p, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Mean(lower=0, upper=2), mechanism=mech, observed=s)
    _check_against_enumeration(
        model,
        lambda th, sup: stats.binom.logpmf(sup, 3, th["p"]),
        [0, 1, 2, 3],
        n,
        lambda x: stats.norm.logpdf(s, np.clip(x, 0, 2).mean(), 0.4),
    )


def test_lattice_contributions_matches_enumeration():
    n, s = 4, 7.0
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(4))
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.RecordSum(lambda x: 2 * x + 1, sensitivity=6.0),
            mechanism=pdp.DiscreteLaplace(scale=1.5),
            observed=s,
        )
    dl = pdp.DiscreteLaplace(scale=1.5)
    _check_against_enumeration(
        model,
        lambda th, sup: np.log(th["pi"]),
        [0, 1, 2, 3],
        n,
        lambda x: float(dl.logpdf(s, np.sum(2 * x + 1))),
        seeds=(0,),
    )


def test_clamped_poisson_tail_cell_matches_enumeration():
    n, s = 3, 5
    mech = pdp.DiscreteLaplace(scale=1.2)
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 1.0)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(lower=0, upper=3), mechanism=mech, observed=s)
    support = np.arange(40)  # brute force: the raw Poisson support (tail beyond 39 < 1e-30)
    _check_against_enumeration(
        model,
        lambda th, sup: stats.poisson.logpmf(sup, th["lam"]),
        support,
        n,
        lambda x: float(mech.logpdf(s, np.clip(x, 0, 3).sum())),
        seeds=(0,),
    )


def test_unclamped_poisson_sum_closed_form():
    n, s, mech = 3, 7, pdp.DiscreteLaplace(scale=2.0)
    with pm.Model() as model:
        lam = pm.Gamma("lam", 3.0, 1.0)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    new = pdp.marginalize(model)
    logp, dlogp, constrained = _collapsed_fns(new)
    point = _point(new, 3)
    lam_v = _theta(new, constrained, point)["lam"]
    k = np.arange(400)  # Σx ~ Poisson(nλ), enumerated far past the truncation
    brute = special.logsumexp(stats.poisson.logpmf(k, n * lam_v) + mech.logpdf(s, k))
    assert abs(logp(point) - brute) < 1e-10
    _check_gradient(logp, dlogp, point)


def test_unclamped_geometric_sum_closed_form_and_recovery():
    n, s, mech = 3, 9.4, pdp.Laplace(scale=1.5)
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        x = pm.Geometric("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    new = pdp.marginalize(model)
    assert marginal_plans(new)["x"].closed == "negative_binomial"
    logp, dlogp, constrained = _collapsed_fns(new)
    point = _point(new, 4)
    grid = np.array(list(itertools.product(range(1, 80), repeat=n)))
    logw = stats.geom.logpmf(grid, constrained(point)["p"]).sum(1) + mech.logpdf(s, grid.sum(1))
    assert abs(logp(point) - special.logsumexp(logw)) < 1e-10
    _check_gradient(logp, dlogp, point)
    x = pdp.recover_records(_fake_posterior(p=0.4), new, random_seed=6).posterior["x"].values
    logw = stats.geom.logpmf(grid, 0.4).sum(1) + mech.logpdf(s, grid.sum(1))
    w = special.softmax(logw)
    _assert_mean(x.sum(-1), np.sum(w * grid.sum(1)), "E[Σx | p, s]")
    _assert_mean(x[..., 0], np.sum(w * grid[:, 0]), "E[x_1 | p, s]")


@pytest.mark.parametrize("form", ["mu_alpha", "n_p"])
def test_unclamped_negative_binomial_sum_closed_form_and_recovery(form):
    """Σx of n iid NegativeBinomial(r, p) records is NegativeBinomial(n·r, p), and x | Σx is
    Dirichlet-multinomial: the collapsed likelihood and the recovered records against brute
    force over every record vector (the dispersion r a free parameter)."""
    n, s, mech = 3, 8, pdp.DiscreteLaplace(scale=2.0)
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2.0, 0.5)
        r = pm.HalfNormal("r", 3.0)
        if form == "mu_alpha":
            x = pm.NegativeBinomial("x", mu=mu, alpha=r, shape=n)
        else:
            x = pm.NegativeBinomial("x", n=r, p=r / (mu + r), shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    new = pdp.marginalize(model)
    assert marginal_plans(new)["x"].closed == "negative_binomial"
    logp, dlogp, constrained = _collapsed_fns(new)
    grid = np.array(list(itertools.product(range(0, 60), repeat=n)))
    for seed in (3, 4):
        point = _point(new, seed)
        th = constrained(point)
        law = stats.nbinom(th["r"], th["r"] / (th["mu"] + th["r"]))
        logw = law.logpmf(grid).sum(1) + mech.logpdf(s, grid.sum(1))
        assert abs(logp(point) - special.logsumexp(logw)) < 1e-8
        _check_gradient(logp, dlogp, point)
    x = (
        pdp.recover_records(_fake_posterior(mu=3.0, r=1.5), new, random_seed=6)
        .posterior["x"]
        .values
    )
    law = stats.nbinom(1.5, 1.5 / 4.5)
    w = special.softmax(law.logpmf(grid).sum(1) + mech.logpdf(s, grid.sum(1)))
    _assert_mean(x.sum(-1), np.sum(w * grid.sum(1)), "E[Σx | θ, s]")
    _assert_mean(x[..., 0], np.sum(w * grid[:, 0]), "E[x_1 | θ, s]")
    _assert_mean(x[..., 0] ** 2, np.sum(w * grid[:, 0] ** 2), "E[x_1² | θ, s]")


@pytest.mark.parametrize("n", [1, 3])
def test_negative_binomial_records_given_their_sum_with_a_tiny_dispersion(n):
    """x | Σx was drawn through normalised gammas of shape r, which are all 0 for a small r
    (n = 1, r = 0.01: about 1 draw in 1,600): NaN weights crashed rng.multinomial."""
    s, mech = 4, pdp.DiscreteLaplace(scale=1.0)
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2.0, 0.5)
        x = pm.NegativeBinomial("x", mu=mu, alpha=0.003, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    new = pdp.marginalize(model)
    x = pdp.recover_records(_fake_posterior(mu=3.0), new, random_seed=2).posterior["x"].values
    assert np.all(x >= 0)
    grid = np.array(list(itertools.product(range(0, 40), repeat=n)))
    law = stats.nbinom(0.003, 0.003 / 3.003)
    w = special.softmax(law.logpmf(grid).sum(1) + mech.logpdf(s, grid.sum(1)))
    _assert_mean(x.sum(-1), np.sum(w * grid.sum(1)), "E[Σx | θ, s]")


def test_local_negative_binomial_records_match_enumeration():
    """Local releases of clamped NegativeBinomial records (the lumped tail P(X ≥ upper) one cell)."""
    n, up = 3, 5
    mech = pdp.DiscreteLaplace(scale=2.0)
    r_obs = np.array([0, 4, 7])
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2.0, 0.5)
        x = pm.NegativeBinomial("x", mu=mu, alpha=2.0, shape=n)
        pdp.DPObserved(
            "r", x, statistic=pdp.Local(lower=0, upper=up), mechanism=mech, observed=r_obs
        )

    def logf(th, sup):
        law = stats.nbinom(2.0, 2.0 / (th["mu"] + 2.0))
        out = law.logpmf(sup)
        out[-1] = law.logsf(up - 1)
        return out

    _check_against_enumeration(
        model, logf, list(range(up + 1)), n, lambda x: float(np.sum(mech.logpdf(r_obs, x)))
    )


@pytest.mark.parametrize("law", ["poisson_covariate", "binomial_trials"])
def test_records_with_their_own_parameters_under_local_releases(law):
    """A Poisson regression (rate exp(a + b z_i), z fixed) and Binomial cells with their own
    trials n_i, released one value per record: each record is summed out over its own pmf
    (the lumped tail its own P(X ≥ upper)). Before, both were refused ("not identically
    distributed") and went to DataAugmentation at ESS/draw 0.002-0.07; the collapsed likelihood
    and its gradient against brute force, the recovered records against each record's exact
    conditional, and pm.sample() picks it."""
    from pymc.sampling.mcmc import assign_step_methods

    n, mech = 4, pdp.DiscreteLaplace(scale=1.5)
    z = np.array([-1.0, 0.2, 0.9, 1.7])
    trials = np.array([2, 5, 3, 6])
    r = np.array([0, 3, 9, 2])
    with pm.Model() as model:
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 1)
        if law == "poisson_covariate":
            x = pm.Poisson("x", pm.math.exp(a + b * z), shape=n)
            up = 6
        else:
            x = pm.Binomial("x", trials, pm.math.invlogit(a + b), shape=n)
            up = 6
        pdp.DPObserved("r", x, statistic=pdp.Local(0, up), mechanism=mech, observed=r)
    _, assigned = assign_step_methods(model)
    assert {c.__name__ for c in assigned} == {"Collapsed"}

    def law_of(th):
        if law == "poisson_covariate":
            return [stats.poisson(np.exp(th["a"] + th["b"] * zi)) for zi in z]
        p = special.expit(th["a"] + th["b"])
        return [stats.binom(t, p) for t in trials]

    def brute(th):
        k = np.arange(400)
        return sum(
            special.logsumexp(f.logpmf(k) + mech.logpdf(ri, np.clip(k, 0, up)))
            for f, ri in zip(law_of(th), r)
        )

    new = pdp.marginalize(model)
    assert marginal_plans(new)["x"].law.per_record
    logp, dlogp, constrained = _collapsed_fns(new)
    for seed in (0, 1, 2):
        point = _point(new, seed)
        assert abs(logp(point) - brute(constrained(point))) < 1e-9
        _check_gradient(logp, dlogp, point)
    th = {"a": 0.4, "b": -0.3}
    x = pdp.recover_records(_fake_posterior(**th), new, random_seed=3).posterior["x"].values
    for i, (f, ri) in enumerate(zip(law_of(th), r)):
        k = np.arange(400)
        w = special.softmax(f.logpmf(k) + mech.logpdf(ri, np.clip(k, 0, up)))
        _assert_mean(x[..., i], np.sum(w * k), f"E[x_{i} | θ, r]")


def test_per_record_rates_that_are_free_variables_stay_with_their_steps():
    """One free rate per record (lam ~ Gamma(2, 1, shape=n)) would put n parameters into the
    collapsed θ-move: refused by name, its conjugate step keeps it."""
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 1.0, shape=4)
        x = pm.Poisson("x", lam, shape=4)
        pdp.DPObserved(
            "r",
            x,
            statistic=pdp.Local(0, 6),
            mechanism=pdp.DiscreteLaplace(scale=1.5),
            observed=np.array([0, 3, 9, 2]),
        )
    with pytest.raises(ValueError, match="a free variable with 4 entries for 4 records"):
        pdp.marginalize(model)


def test_recover_unclamped_poisson_sum_given_theta():
    n, s, lam, mech = 4, 9, 1.5, pdp.DiscreteLaplace(scale=2.0)
    with pm.Model() as model:
        x = pm.Poisson("x", pm.Gamma("lam", 2.0, 1.0), shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    x = (
        pdp.recover_records(_fake_posterior(lam=lam), pdp.marginalize(model), random_seed=7)
        .posterior["x"]
        .values
    )
    k = np.arange(300)
    w = special.softmax(stats.poisson.logpmf(k, n * lam) + mech.logpdf(s, k))
    _assert_mean(x.sum(-1), np.sum(w * k), "E[Σx | λ, s]")
    _assert_mean(x[..., 2], np.sum(w * k) / n, "E[x_3 | λ, s]")


def test_local_randomized_response_categorical_matches_enumeration():
    n, k = 4, 3
    mech = pdp.RandomizedResponse(1.0, n_categories=k)
    r = np.array([0, 2, 2, 1])
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(k))
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=r)
    _check_against_enumeration(
        model,
        lambda th, sup: np.log(th["pi"]),
        [0, 1, 2],
        n,
        lambda x: float(np.sum(mech.logpdf(r, x))),
    )


def test_two_local_releases_and_truncated_poisson_matches_enumeration():
    n, b = 3, 1.0
    r1, r2 = np.array([0.5, 3.2, 1.9]), np.array([1, 4, 2])
    m2 = pdp.DiscreteLaplace(scale=1.5)
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 1.0)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved("a", x, statistic=pdp.Local(), mechanism=pdp.Laplace(scale=b), observed=r1)
        pdp.DPObserved("c", x, statistic=pdp.Local(), mechanism=m2, observed=r2)
    new = pdp.marginalize(model)
    logp, dlogp, constrained = _collapsed_fns(new)
    point = _point(new, 5)
    lam_v = _theta(new, constrained, point)["lam"]
    xs = np.arange(200)
    per = [
        special.logsumexp(
            stats.poisson.logpmf(xs, lam_v)
            - np.abs(r1[i] - xs) / b
            - math.log(2 * b)
            + m2.logpdf(r2[i], xs)
        )
        for i in range(n)
    ]
    assert abs(logp(point) - sum(per)) < 1e-10
    _check_gradient(logp, dlogp, point)


def test_counts_laplace_matches_enumeration():
    n, k = 5, 3
    mech = pdp.Laplace(scale=1.3)
    s = np.array([2.4, 0.3, 2.9])
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.array([1.0, 2.0, 3.0]))
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Counts(k), mechanism=mech, observed=s)
    _check_against_enumeration(
        model,
        lambda th, sup: np.log(th["pi"]),
        [0, 1, 2],
        n,
        lambda x: _laplace(s, np.bincount(x, minlength=k), 1.3),
    )


def test_counts_band_truncation_matches_enumeration():
    n, k, scale = 12, 3, 0.15  # noise radius 0.15 · ln 1e12 ≈ 4.1: the bands cut
    s = np.array([5.2, 3.9, 2.8])
    mech = pdp.Laplace(scale=scale)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.array([1.0, 2.0, 3.0]))
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Counts(k), mechanism=mech, observed=s)
    new = pdp.marginalize(model)
    plan = marginal_plans(new)["x"]
    assert plan.bands[0].size < n + 1 and plan.truncation == 1e-12
    logp, dlogp, constrained = _collapsed_fns(new)
    point = _point(new, 8)
    log_pi = np.log(constrained(point)["pi"])
    comps = np.array([c for c in itertools.product(range(n + 1), repeat=k) if sum(c) == n])
    brute = special.logsumexp(
        special.gammaln(n + 1)
        - special.gammaln(comps + 1).sum(1)
        + (comps * log_pi).sum(1)
        + mech.logpdf(s, comps).sum(1)
    )
    assert abs(logp(point) - brute) < 1e-10
    _check_gradient(logp, dlogp, point)


def test_counts_gradient_finite_at_benchmark_size():
    # N = 400 with a noise band: a rewrite of the recursion once gave NaN gradients here only
    rng = np.random.default_rng(7)
    with pm.Model() as model:
        x = pm.Categorical("x", pm.Dirichlet("pi", np.ones(4)), shape=400)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Counts(4),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=np.array([161.2, 76.1, 102.7, 61.1]),
        )
    new = pdp.marginalize(model)
    dlogp, start = new.compile_dlogp(), new.initial_point()
    for shift in (0.0, 0.3, -1.0):
        point = {k: v + shift * rng.normal(size=np.shape(v)) for k, v in start.items()}
        assert np.all(np.isfinite(dlogp(point)))


# --------------------------------------------------------------------------- recovery (iid θ)


#: θ draws per chain handed to recover_records: the records are drawn i.i.d. given θ, so the
#: checks below are 4 standard errors of 2 x N_FAKE independent draws
N_FAKE = 600


def _fake_posterior(**values):
    return types.SimpleNamespace(
        posterior=xr.Dataset(
            {k: (("chain", "draw"), np.full((2, N_FAKE), v)) for k, v in values.items()},
            coords={"chain": [0, 1], "draw": np.arange(N_FAKE)},
        )
    )


def _assert_mean(draws, exact_mean, label):
    draws = np.asarray(draws, dtype=float)
    mcse = draws.std() / math.sqrt(draws.size)
    z = (draws.mean() - exact_mean) / mcse
    assert abs(z) < 4, f"{label}: {draws.mean():.4f} vs exact {exact_mean:.4f} ({z:+.2f} MCSE)"


def test_recover_bernoulli_sum_given_theta():
    n, s, p = 6, 4.2, 0.35
    with pm.Model() as model:
        pp = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", pp, shape=n)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=1),
            mechanism=pdp.Laplace(scale=1.0),
            observed=s,
        )
    new = pdp.marginalize(model)
    idata = pdp.recover_records(_fake_posterior(p=p), new, random_seed=1)
    x = idata.posterior["x"].values
    k = np.arange(n + 1)
    w = special.softmax(stats.binom.logpmf(k, n, p) - np.abs(s - k))
    _assert_mean(x.sum(-1), np.sum(w * k), "E[Σx | p, s]")
    _assert_mean(x[..., 0], np.sum(w * k) / n, "E[x_1 | p, s]")


def test_recover_clamped_poisson_tail_given_theta():
    n, s, lam = 3, 6, 2.5
    mech = pdp.DiscreteLaplace(scale=1.0)
    with pm.Model() as model:
        lm = pm.Gamma("lam", 2.0, 1.0)
        x = pm.Poisson("x", lm, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(lower=0, upper=2), mechanism=mech, observed=s)
    new = pdp.marginalize(model)
    x = pdp.recover_records(_fake_posterior(lam=lam), new, random_seed=2).posterior["x"].values
    grid = np.array(list(itertools.product(range(30), repeat=n)))
    logw = stats.poisson.logpmf(grid, lam).sum(1) + mech.logpdf(s, np.clip(grid, 0, 2).sum(1))
    w = special.softmax(logw)
    _assert_mean(x.sum(-1), np.sum(w * grid.sum(1)), "E[Σx | λ, s]")


def test_recover_local_and_counts_given_theta():
    k, r = 3, np.array([0, 2, 2, 1, 0])
    mech = pdp.RandomizedResponse(0.7, n_categories=k)
    pi = np.array([0.2, 0.3, 0.5])
    with pm.Model() as m1:
        x = pm.Categorical("x", pm.Dirichlet("pi", np.ones(k)), shape=len(r))
        pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=r)
    post = types.SimpleNamespace(
        posterior=xr.Dataset(
            {"pi": (("chain", "draw", "k"), np.broadcast_to(pi, (2, N_FAKE, k)).copy())}
        )
    )
    x = pdp.recover_records(post, pdp.marginalize(m1), random_seed=3).posterior["x"].values
    w = pi * np.exp(mech.logpdf(r[1], np.arange(k)))
    _assert_mean(x[..., 1] == 2, w[2] / w.sum(), "P(x_2 = 2 | π, r)")

    s = np.array([1.5, 0.2, 3.1])
    lap = pdp.Laplace(scale=1.0)
    with pm.Model() as m2:
        x = pm.Categorical("x", pm.Dirichlet("pi", np.ones(k)), shape=5)
        pdp.DPObserved("s", x, statistic=pdp.Counts(k), mechanism=lap, observed=s)
    x = pdp.recover_records(post, pdp.marginalize(m2), random_seed=4).posterior["x"].values
    comps = np.array([c for c in itertools.product(range(6), repeat=k) if sum(c) == 5])
    logw = (
        special.gammaln(6)
        - special.gammaln(comps + 1).sum(1)
        + (comps * np.log(pi)).sum(1)
        + lap.logpdf(s, comps).sum(1)
    )
    w = special.softmax(logw)
    _assert_mean((x == 0).sum(-1), np.sum(w * comps[:, 0]), "E[c_0 | π, s]")
    _assert_mean(x[..., 4] == 2, np.sum(w * comps[:, 2]) / 5, "P(x_5 = 2 | π, s)")


# ------------------------------------------------------------------------------------ refusals


def test_categories_of_unknown_number_are_refused_with_the_fix():
    """A Dirichlet whose concentration is a pm.Data container has no fixed length; the message
    said "static shape of p" with no way out. The fix it gives works."""
    release = np.array([2.0, 2.0, 1.0])
    for shape in (None, (3,)):
        with pm.Model() as m:
            a = pm.Data("a", np.ones(3), shape=shape)
            x = pm.Categorical("x", pm.Dirichlet("p", a), shape=5)
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Counts(3),
                mechanism=pdp.Laplace(scale=1.0),
                observed=release,
            )
        if shape is None:
            with pytest.raises(ValueError, match=re.escape("pm.Data(..., shape=(K,))")):
                pdp.marginalize(m)
        else:
            assert [v.name for v in pdp.marginalize(m).free_RVs] == ["p"]


def test_refusals_name_the_problem():
    with pm.Model() as m:
        x = pm.Normal("x", 0, 1, shape=5)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=-1, upper=1),
            mechanism=pdp.Laplace(epsilon=1),
            observed=0.3,
        )
    with pytest.raises(
        TypeError, match=re.escape("Record variable 'x' is continuous (Normal); collapsed")
    ) as err:
        pdp.marginalize(m)
    assert "Sum(lower=-1.0, upper=1.0)" in str(err.value)

    with pm.Model() as m:
        p = pm.Beta("p", 1, 1, shape=5)
        x = pm.Bernoulli("x", p, shape=5)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=1),
            mechanism=pdp.Laplace(epsilon=1),
            observed=2,
        )
    with pytest.raises(
        ValueError, match=re.escape("the records are not identically distributed given θ")
    ):
        pdp.marginalize(m)

    with pm.Model() as m:
        x = pm.Bernoulli("x", pm.Beta("p", 1, 1), shape=5)
        pdp.DPObserved(
            "s", x, statistic=pdp.Median(0, 1), mechanism=pdp.SmoothLaplace(1.0, 1e-3), observed=0.5
        )
    with pytest.raises(ValueError, match=re.escape("data-dependent noise density")):
        pdp.marginalize(m)

    with pm.Model() as m:
        x = pm.Bernoulli("x", pm.Beta("p", 1, 1), shape=5)
        pdp.DPObserved(
            "a",
            x,
            statistic=pdp.Local(),
            mechanism=pdp.RandomizedResponse(1.0),
            observed=np.ones(5),
        )
        pdp.DPObserved(
            "b",
            x,
            statistic=pdp.Sum(lower=0, upper=1),
            mechanism=pdp.Laplace(epsilon=1),
            observed=2,
        )
    with pytest.raises(
        ValueError, match=re.escape("feeds releases ['a', 'b'] of kinds ['additive', 'local']")
    ):
        pdp.marginalize(m)

    with pm.Model() as m:
        x = pm.Binomial("x", 30, pm.Beta("p", 1, 1), shape=400)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=29),
            mechanism=pdp.Laplace(epsilon=1),
            observed=10,
        )
    with pytest.raises(
        ValueError, match=re.escape("above the 30 ms where data augmentation is faster")
    ):
        pdp.marginalize(m)

    with pm.Model() as m:
        x = pm.Bernoulli("x", pm.Beta("p", 1, 1), shape=5)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=1),
            mechanism=pdp.Laplace(epsilon=1),
            observed=2,
        )
        pm.Normal("y", x.sum(), 1, observed=1.0)
    with pytest.raises(
        ValueError, match=re.escape("is also used by 'y', which is not a DPObserved release")
    ):
        pdp.marginalize(m)


def test_mixed_model_keeps_continuous_releases_for_data_augmentation():
    with pm.Model(coords={"rec": range(20), "obs": range(15)}) as m:
        p = pm.Beta("p", 1, 1)
        mu = pm.Normal("mu", 0, 3)
        x = pm.Bernoulli("x", p, dims="rec")
        y = pm.Normal("y", mu, 1.0, dims="obs")
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=1),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=8.0,
        )
        pdp.DPObserved(
            "t",
            y,
            statistic=pdp.Mean(lower=-2, upper=4),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=1.0,
        )
    with pytest.raises(
        TypeError, match=re.escape("pass records=['x'] and keep 'y' for pdp.DataAugmentation")
    ):
        pdp.marginalize(m)
    new = pdp.marginalize(m, records=["x"])
    assert sorted(rv.name for rv in new.free_RVs) == ["mu", "p", "y"]
    kept = pdp.dp_nodes(new)
    assert list(kept) == ["t"] and kept["t"].data[0] is new["y"] and kept["t"].rv is new["t"]
    assert [pot.name for pot in new.potentials] == ["s"]


# ------------------------------------------------------------------- NUTS exactness (slow tier)


def test_latent_count_table_refusal_names_table_cells():
    """A pm.Multinomial table behind Cells is sampled by pdp.TableCells (pm.sample() picks it);
    the refusal told the user to use pdp.DataAugmentation, which refuses tables."""
    with pm.Model() as m:
        pi = pm.Dirichlet("pi", np.ones(4))
        c = pm.Multinomial("c", n=100, p=pi)
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(total=100),
            mechanism=pdp.DiscreteGaussian(sigma=3.0),
            observed=np.array([30, 20, 10, 40]),
        )
    with pytest.raises(TypeError, match=r"'c' is a latent count table.*pdp\.TableCells") as err:
        pdp.marginalize(m)
    assert "DataAugmentation" not in str(err.value)
