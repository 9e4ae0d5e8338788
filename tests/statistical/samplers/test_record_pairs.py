"""DataAugmentation's pair moves against exact posteriors, under releases that pin their statistic
tightly against one record (where the record-wise moves alone crawl)."""

import arviz as az
import numpy as np
import pymc as pm
from scipy import special, stats

import pymc_dp as pdp
from tests.support.mc import assert_mc_close
from tests.support.zoo import _clipped_sum_loglik, _grid_moments


def _sample(model, seed, chains=4, draws=1500, tune=500, step=None):
    with model:
        return pm.sample(
            step=step() if step else None,
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )


def _record_ess_per_draw(idata):
    x = idata.posterior["x"]
    return float(az.ess(idata, var_names=["x"])["x"].min()) / (x.sizes["chain"] * x.sizes["draw"])


def test_exponential_records_near_noiseless_sum():
    """λ ~ Gamma(2, 1), x_i ~ Exponential(λ), n = 8, Σ clip(x, 0, 2) + Laplace(ε = 60) (noise sd
    0.047 against one record's 0.5): ``pm.sample()`` runs the pair moves by itself (``"auto"``), λ
    matches clipped-sum quadrature, and every record mixes (ESS/draw ≥ 0.01; the record-wise moves
    alone gave 0.001)."""
    n, s, eps = 8, 4.0, 60.0
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2, 1)
        x = pm.Exponential("x", lam, shape=n)
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(0, 2), mechanism=pdp.Laplace(epsilon=eps), observed=s
        )
    idata = _sample(model, seed=11)
    b = 2.0 / eps
    grid = np.linspace(0.02, 8.0, 400)
    loglik = [
        _clipped_sum_loglik(
            lambda t, lam=lam_: stats.expon.cdf(t, scale=1 / lam),
            0.0,
            2.0,
            n,
            lambda k: -np.abs(s - k) / b,
            h=0.002,
        )
        for lam_ in grid
    ]
    mean, sd = _grid_moments(grid, stats.gamma.logpdf(grid, 2) + np.array(loglik))
    assert_mc_close(idata.posterior["lam"], mean, sd, label="pairs, Exponential, ε = 60")
    assert np.nanmean(idata.sample_stats["dp_pair_accept"]) > 0.1
    assert _record_ess_per_draw(idata) >= 0.01


def test_poisson_records_near_noiseless_sum():
    """λ ~ Gamma(2, 0.5), x_i ~ Poisson(λ), n = 6, Σ clip(x, 0, 6) + DiscreteLaplace(scale 0.25)
    (a change of one in the sum costs a factor e⁴), ``DataAugmentation`` passed (``pm.sample()``
    would integrate these records out): λ against the exact posterior (the clipped
    sum's law by convolution, on a grid of λ); integer pair moves (±1 … ±m) keep the records
    moving (ESS/draw ≥ 0.01; 0.002 without them)."""
    n, upper, s, scale = 6, 6, 17, 0.25
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2, 0.5)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(0, upper),
            mechanism=pdp.DiscreteLaplace(scale=scale),
            observed=s,
        )
    # pm.sample() gives these records to Collapsed (integer records of a Sum: exact by itself)
    idata = _sample(model, seed=12, step=lambda: [pdp.DataAugmentation([model["x"]])])
    assert np.nanmean(idata.sample_stats["dp_pair_accept"]) > 0.1
    grid = np.linspace(0.05, 12.0, 600)
    totals = np.arange(n * upper + 1)
    log_noise = -np.abs(s - totals) / scale  # up to a constant
    loglik = []
    for lam_ in grid:
        pmf = stats.poisson.pmf(np.arange(upper + 1), lam_)
        pmf[upper] += stats.poisson.sf(upper, lam_)
        law = np.array([1.0])
        for _ in range(n):
            law = np.convolve(law, pmf)
        loglik.append(special.logsumexp(log_noise, b=law))
    mean, sd = _grid_moments(grid, stats.gamma.logpdf(grid, 2, scale=2.0) + np.array(loglik))
    assert_mc_close(idata.posterior["lam"], mean, sd, label="pairs, Poisson, DiscreteLaplace")
    assert _record_ess_per_draw(idata) >= 0.01
