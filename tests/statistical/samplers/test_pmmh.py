"""PMMH (seed 001 Algorithm 5) through pm.sample against exact posteriors (slow tier)."""

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.exact import exact_clt_laplace, exact_records_sum, exact_records_total
from tests.support.mc import assert_mc_close, assert_within_se, mcse
from tests.support.models import records_model
from tests.support.sampling import sample


@pytest.mark.slow
def test_pmmh_records_exact_through_pm_sample():
    model = records_model()
    idata = sample(
        model, lambda: [pdp.PMMH([model["th"]], n_particles=8)], draws=1000, tune=300, seed=1
    )
    mean, sd = exact_records_sum()
    assert_mc_close(idata.posterior["th"], mean, sd, label="PMMH records")
    ess = float(np.asarray(az.ess(idata, var_names=["th"])["th"]))
    diag = az.summary(idata, var_names=["th"], kind="diagnostics")
    assert float(np.asarray(diag["r_hat"])[0]) < 1.05
    stats_ = idata.sample_stats
    assert {"dp_accept", "dp_loglik_estimate"} <= set(stats_.data_vars)
    assert "diverging" not in stats_.data_vars  # no NUTS: the step owns th and x
    assert np.all(np.ptp(np.asarray(stats_["dp_scale"]), axis=1) == 0)  # tuning stops after warm-up
    x = np.asarray(idata.posterior["x"])
    assert np.unique(x[0, :, 0]).size > 50  # the written-back particle moves
    # the written-back particle is a joint posterior draw: Σx against its exact posterior
    # (Σx is N(0, 36·4 + 6) a priori, so E[Σx | s] = 6.25 E[θ | s], not 6 E[θ | s])
    assert ess > 100
    assert_mc_close(x.sum(axis=-1), *exact_records_total(), label="PMMH written-back Σx")


@pytest.mark.slow
def test_pmmh_latent_statistic_exact():
    # seed 001 §5.3 model: X ~ N(0, θ), s(x)=|x|, CLT latent statistic, Laplace(ε)
    n, A, eps, y = 50, 10.0, 5.0, 1.3
    with pm.Model() as model:
        th = pm.HalfNormal("th", 5.0)
        mu, var = pdp.normal_variance_moments(th, a=1)
        pdp.CLTRelease(
            "s", mu, var, n, mechanism=pdp.Laplace(epsilon=eps), sensitivity=A / n, observed=y
        )
    idata = sample(model, lambda: [pdp.PMMH([th], n_particles=10)], draws=1000, tune=300, seed=1)
    assert_mc_close(
        idata.posterior["th"],
        *exact_clt_laplace(y, n, A / (n * eps)),
        label="PMMH latent statistic",
    )


@pytest.mark.slow
def test_pmmh_mhaar_and_data_augmentation_agree():
    n, y = 6, 3.0
    with pm.Model() as model:
        th = pm.Normal("th", 0.0, 2.0)
        x = pm.Normal("x", th, 1.0, shape=n)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Mean(lower=-3, upper=5),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=y / n,
        )
    res = {}
    for name, step in [
        ("da", lambda: [pdp.DataAugmentation([x], sweeps=2)]),
        ("pmmh", lambda: [pdp.PMMH([th], n_particles=8)]),
        ("mhaar", lambda: [pdp.MHAAR([th], n_particles=8)]),
    ]:
        d = np.asarray(sample(model, step, draws=800, tune=300, seed=3).posterior["th"])
        res[name] = (d.mean(), float(mcse(d)))
    for a in ("pmmh", "mhaar"):
        assert_within_se(
            res[a][0], res["da"][0], math.hypot(res[a][1], res["da"][1]), label=f"{a} vs DA mean"
        )
