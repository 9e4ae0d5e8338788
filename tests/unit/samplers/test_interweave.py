"""Interweave (non-centred θ-move, Yu & Meng 2011): target graph, kernel, refusals, exactness."""

import math
import re

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import special, stats

import pymc_dp as pdp
from pymc_dp.samplers.interweave import (
    InterweaveParams,
    InterweaveState,
    InterweaveTarget,
    interweave_kernel,
)
from tests.support import exact

L, U = -2.0, 4.0


def clamped_model(n, eps, seed, mu_sigma=False):
    rng = np.random.default_rng(seed)
    stat, mech = pdp.Sum(lower=L, upper=U), pdp.Laplace(epsilon=eps)
    s = float(pdp.release(rng.normal(1.0, 1.0, n), stat, mech, rng=rng))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        sigma = pm.HalfNormal("sigma", 2.0) if mu_sigma else 1.0
        x = pm.Normal("x", mu, sigma, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    return model, s, (U - L) / eps


# ---------------------------------------------------------------------------------------------
# the target log π(θ | z) against a hand computation
# ---------------------------------------------------------------------------------------------
def test_target_is_prior_plus_release_on_clamped_records():
    model, s, b = clamped_model(30, 0.5, seed=1, mu_sigma=True)
    target = InterweaveTarget(model, [model["mu"], model["sigma"]])
    assert target.kinds == {"x": "location-scale"}
    point = model.initial_point(random_seed=0)
    point["x"] = np.random.default_rng(2).normal(1.0, 2.0, 30)
    point["mu"], point["sigma_log__"] = np.array(0.7), np.array(math.log(1.3))
    zs = target.z_of(point)
    np.testing.assert_allclose(zs[0], (point["x"] - 0.7) / 1.3, rtol=1e-12)

    def by_hand(mu, log_sigma):
        x = mu + math.exp(log_sigma) * zs[0]
        t = np.clip(x, L, U).sum()
        return (stats.norm.logpdf(mu, 0, 3) + stats.halfnorm.logpdf(math.exp(log_sigma), scale=2.0)
                + log_sigma + stats.laplace.logpdf(s, t, b))

    values = [(0.7, math.log(1.3)), (-1.5, math.log(0.4)), (3.0, math.log(2.5))]
    got = [target.logp(target.with_theta(point, np.array(v)), zs) for v in values]
    want = [by_hand(*v) for v in values]
    np.testing.assert_allclose(np.diff(got), np.diff(want), rtol=1e-9, atol=1e-9)
    moved = target.update(point, np.array([-1.5, math.log(0.4)]), zs)
    np.testing.assert_allclose(moved["x"], -1.5 + 0.4 * zs[0], rtol=1e-12)
    back = target.update(point, target.theta_flat(point), zs)
    np.testing.assert_allclose(back["x"], point["x"], rtol=1e-12)


def test_icdf_representation_for_positive_records():
    """Exponential records: x = F_λ⁻¹(u), stored in log space like the point."""
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 1.0)
        x = pm.Exponential("x", lam, shape=4)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=1.0), observed=3.0)
    target = InterweaveTarget(model, [lam])
    assert target.kinds == {"x": "icdf"}
    point = model.initial_point(random_seed=0)
    point["x_log__"] = np.log([0.2, 1.0, 2.5, 0.05])
    point["lam_log__"] = np.array(math.log(1.7))
    zs = target.z_of(point)
    np.testing.assert_allclose(zs[0], 1 - np.exp(-1.7 * np.exp(point["x_log__"])), rtol=1e-10)
    back = target.update(point, target.theta_flat(point), zs)
    np.testing.assert_allclose(back["x_log__"], point["x_log__"], rtol=1e-8, atol=1e-12)
    moved = target.update(point, np.array([math.log(3.4)]), zs)  # doubling the rate halves x
    np.testing.assert_allclose(np.exp(moved["x_log__"]), np.exp(point["x_log__"]) / 2, rtol=1e-8)


def test_kernel_samples_a_known_density():
    """The slice kernel alone targets a standard normal in 2-d (4 MCSE on mean and variance)."""
    def log_density(theta):
        return -0.5 * float(np.sum(theta**2))

    rng = np.random.default_rng(3)
    draws = np.empty((2, 2000, 2))
    for c in range(2):
        state = InterweaveState(np.array([3.0, -3.0]), log_density(np.array([3.0, -3.0])), np.ones(2), 0)
        for i in range(2200):
            state, info = interweave_kernel(rng, state, log_density, InterweaveParams(adapt=i < 200))
            if i >= 200:
                draws[c, i - 200] = state.theta
            assert info.n_evals >= 1
    for k in range(2):
        exact.assert_moments(draws[..., k], 0.0, 1.0, label=f"slice kernel coordinate {k}")


# ---------------------------------------------------------------------------------------------
# refusals
# ---------------------------------------------------------------------------------------------
def test_refuses_discrete_records():
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=5)
        pdp.DPObserved("s", x, statistic=pdp.Sum(0, 1), mechanism=pdp.Laplace(epsilon=1.0), observed=2.0)
        with pytest.raises(ValueError, match=re.escape("Interweave needs records with a θ-free representation")):
            pdp.Interweave([p])


def test_refuses_bad_arguments():
    model, _, _ = clamped_model(5, 1.0, seed=0)
    with model:
        with pytest.raises(ValueError, match=re.escape("n_steps must be an integer >= 1, got n_steps=0.")):
            pdp.Interweave([model["mu"]], n_steps=0)
        with pytest.raises(ValueError, match=re.escape("initial_width must be finite and > 0, got initial_width=-1.0.")):
            pdp.Interweave([model["mu"]], initial_width=-1.0)
        with pytest.raises(ValueError, match=re.escape("'x' is both in vars and in records")):
            pdp.Interweave([model["mu"], model["x"]], records=[model["x"]])
    with pm.Model():
        mu = pm.Normal("mu")
        pm.Normal("x", mu, 1.0, shape=3)
        with pytest.raises(ValueError, match=re.escape("Interweave found no pdp.DPObserved node")):
            pdp.Interweave([mu])


def test_step_moves_theta_and_records_together():
    model, _, _ = clamped_model(20, 0.5, seed=4)
    with model:
        step = pdp.Interweave([model["mu"]], rng=np.random.default_rng(0))
    point = model.initial_point(random_seed=0)
    point["x"] = np.random.default_rng(1).normal(0.0, 1.0, 20)
    z = point["x"] - point["mu"]
    new, (st,) = step.step(point)
    assert set(new) == set(point) and st["dp_iw_evals"] >= 1 and st["tune"] is True
    np.testing.assert_allclose(new["x"] - new["mu"], z, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# statistical tier: DataAugmentation + NUTS + Interweave against exact posteriors
# ---------------------------------------------------------------------------------------------
def clamped_normal_sum_laplace(s, n, prior_sd, b, h=0.01):
    """mu ~ N(0, prior_sd²), x_i ~ N(mu, 1), s = Σ clip(x_i, L, U) + Laplace(b): quadrature.

    The clipped record is put on a grid of step h (atoms at L and U exact, each interior cell's
    mass at its centre); the n-fold sum by FFT; the Laplace convolution summed on the grid.
    """
    m = int(round((U - L) / h))
    grid = L + h * np.arange(m + 1)
    size = 1 << int(math.ceil(math.log2(n * m + 1)))
    totals = n * L + h * np.arange(n * m + 1)
    noise = -np.abs(s - totals) / b
    mus = np.linspace(-6 * prior_sd, 6 * prior_sd, 1201)
    loglik = np.empty_like(mus)
    for j, mu in enumerate(mus):
        cdf = stats.norm.cdf(np.concatenate([[-np.inf], grid[:-1] + h / 2, [np.inf]]) - mu)
        pmf = np.diff(cdf)
        sum_pmf = np.fft.irfft(np.fft.rfft(pmf, size) ** n, size)[: n * m + 1]
        sum_pmf = np.clip(sum_pmf, 0.0, None)
        loglik[j] = special.logsumexp(noise, b=sum_pmf)
    logpost = stats.norm.logpdf(mus, 0, prior_sd) + loglik
    w = np.exp(logpost - logpost.max())
    w /= np.trapezoid(w, mus)
    return np.trapezoid(w * mus, mus), np.trapezoid(w * mus**2, mus)


SAMPLE = dict(chains=2, cores=1, progressbar=False, compute_convergence_checks=False)


@pytest.mark.slow
def test_exact_clamped_normal_mean_weak_laplace():
    n, eps = 50, 0.1
    model, s, b = clamped_model(n, eps, seed=21)
    with model:
        idata = pm.sample(
            step=[pdp.DataAugmentation([model["x"]]), pm.NUTS([model["mu"]]), pdp.Interweave([model["mu"]])],
            draws=1000, tune=300, random_seed=5, **SAMPLE,
        )
    mu = np.asarray(idata.posterior["mu"])
    exact.assert_moments(mu, *clamped_normal_sum_laplace(s, n, 3.0, b), label="interweave clamped n=50 eps=0.1")
    ess = float(pdp_ess(mu))
    assert ess / mu.size > 0.2, f"ESS/draw {ess / mu.size:.3f} (target >= 0.2)"


@pytest.mark.slow
def test_exact_normal_mean_gaussian_without_nuts():
    """Interweave as the only θ-move (centred part left out): still exact."""
    rng = np.random.default_rng(22)
    n = 40
    s = float(rng.normal(1.0, 1.0, n).sum() + rng.normal(0, 8.0))
    with pm.Model():
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=8.0), observed=s)
        idata = pm.sample(step=[pdp.DataAugmentation([x]), pdp.Interweave([mu])], draws=1500, tune=300,
                          random_seed=6, **SAMPLE)
    exact.assert_moments(np.asarray(idata.posterior["mu"]), *exact.normal_sum_gaussian(s, n, 3.0, 8.0),
                         label="interweave normal-gaussian")


def pdp_ess(draws):
    import arviz as az

    return az.ess(xr.Dataset({"q": (("chain", "draw"), draws)}), method="bulk")["q"]


def test_records_depending_on_a_kept_record():
    """Regression records (x0, y): y = Xβ + σz is moved, the MvNormal covariates x0 are kept."""
    n = 6
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 2.0, shape=2)
        x0 = pm.MvNormal("x0", np.zeros(2), np.eye(2), shape=(n, 2))
        y = pm.Normal("y", x0 @ beta, 0.5, shape=n)
        stat = pdp.RecordSum(lambda a, b: pt_concat(a, b), sensitivity=8.0)
        pdp.DPObserved("s", (x0, y), statistic=stat, mechanism=pdp.Laplace(epsilon=1.0), observed=np.zeros(3))
    assert InterweaveTarget(model, [beta]).kinds == {"y": "location-scale"}  # default: records of β
    target = InterweaveTarget(model, [beta], records=[x0, y])
    assert target.kinds == {"x0": "fixed", "y": "location-scale"}
    point = model.initial_point(random_seed=0)
    rng = np.random.default_rng(5)
    point["x0"], point["y"] = rng.normal(size=(n, 2)), rng.normal(size=n)
    zs = target.z_of(point)
    new_beta = np.array([0.3, -1.2])
    moved = target.update(point, new_beta, zs)
    np.testing.assert_allclose(moved["x0"], point["x0"])
    np.testing.assert_allclose(moved["y"], point["x0"] @ new_beta + 0.5 * zs[0], rtol=1e-12)

    def by_hand(b):
        yy = point["x0"] @ b + 0.5 * zs[0]
        t = np.concatenate([np.clip(point["x0"], -1, 1).sum(axis=0), [np.clip(yy, -1, 1).sum()]])
        return stats.norm.logpdf(b, 0, 2).sum() + stats.laplace.logpdf(0.0, t, 8.0).sum()

    got = [target.logp(target.with_theta(point, b), zs) for b in (new_beta, np.array([1.0, 0.5]))]
    np.testing.assert_allclose(got[0] - got[1], by_hand(new_beta) - by_hand(np.array([1.0, 0.5])), rtol=1e-9)


def pt_concat(a, b):
    import pytensor.tensor as pt

    return pt.concatenate([pt.clip(a, -1, 1), pt.clip(b, -1, 1)[:, None]], axis=1)


@pytest.mark.slow
def test_exact_location_and_scale_parents():
    """x_i ~ N(μ, σ²), both moved; s = Σx + N(0, τ²) so s | μ, σ ~ N(nμ, nσ² + τ²): 2-d quadrature.

    Interweave is the only θ-move here. With NUTS on (μ, σ) alongside (DataAugmentation with
    interweave=False), re-checked over seeds 1-10 at 2 × 1500 draws: the z-scores of E[μ] have
    mean +0.07 and mean square 0.84 with ArviZ's MCSE, 1.12 with batch-means MCSE (30 batches of
    100), each seed's two within 0.34: no ESS over-estimate (an earlier variance of 2.9 over 7
    seeds is not reproduced).
    """
    rng = np.random.default_rng(23)
    n, tau = 20, 6.0
    s = float(rng.normal(1.0, 1.5, n).sum() + rng.normal(0, tau))
    with pm.Model():
        mu = pm.Normal("mu", 0, 3)
        sigma = pm.HalfNormal("sigma", 2.0)
        x = pm.Normal("x", mu, sigma, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=tau), observed=s)
        steps = [pdp.DataAugmentation([x]), pdp.Interweave([mu, sigma])]
        idata = pm.sample(step=steps, draws=1500, tune=500, random_seed=7, **SAMPLE)
    m = np.linspace(-15, 15, 1501)[:, None]
    sd = np.linspace(1e-4, 12, 1500)[None, :]
    logp = (stats.norm.logpdf(m, 0, 3) + stats.halfnorm.logpdf(sd, scale=2.0)
            + stats.norm.logpdf(s, n * m, np.sqrt(n * sd**2 + tau**2)))
    w = np.exp(logp - logp.max())
    w /= w.sum()
    for name, grid in (("mu", m), ("sigma", sd)):
        g = np.broadcast_to(grid, w.shape)
        exact.assert_moments(np.asarray(idata.posterior[name]), float((w * g).sum()), float((w * g**2).sum()),
                             label=f"interweave two parents {name}")
