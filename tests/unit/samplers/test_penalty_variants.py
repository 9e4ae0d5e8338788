"""Subsampled penalty (seed 002 §4.1) and DP MALA (seed 002 §4.2): kernels, accounting, PyMC adapter."""

import math
import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.accounting import epsilon_of_event, iteration_event, run_event, subsampled_sensitivity
from pymc_dp.samplers.penalty_core import PenaltyParams, PenaltyState, penalty_init, penalty_kernel
from pymc_dp.samplers.penalty_mala import MalaParams, clipped_grad_sum, mala_kernel
from pymc_dp.samplers.penalty_subsampled import batch_log_ratio, subsampled_kernel
from tests.unit.samplers.test_penalty import NormalMeans, mcse_z


class NormalMeansGrad(NormalMeans):
    def loglik_grad(self, theta, idx=None):
        xx = self.x if idx is None else self.x[idx]
        return -0.5 * np.sum((xx - theta) ** 2, axis=1), xx - theta


@pytest.fixture(scope="module")
def target():
    rng = np.random.default_rng(7)
    return NormalMeansGrad(np.clip(rng.normal([0.5, -1.0], 1.0, size=(200, 2)), -3, 3))


def test_clipped_grad_sum():
    g = np.array([[3.0, 4.0], [0.3, 0.4]])
    np.testing.assert_allclose(clipped_grad_sum(g, 1.0), [0.6 + 0.3, 0.8 + 0.4])


def test_batch_log_ratio_matches_seed_formula():
    r = np.array([0.1, -0.2, 0.05, 0.3])
    lam, var = batch_log_ratio(r, n=100, temperature=0.5)
    f = 100 * 0.5 / 4
    assert lam == pytest.approx(f * r.sum())
    assert var == pytest.approx(f**2 * (np.sum(r**2) - r.sum() ** 2 / 4))


def test_mala_exact_with_noise(target):
    rng = np.random.default_rng(3)
    mala = MalaParams(step_size=0.05, grad_bound=5.0, a=1.0, total_grad_bound=None)
    params = PenaltyParams("mala", np.full(2, 0.05), 10.0, 0.05)
    theta = np.zeros(2)
    ll, g = target.loglik_grad(theta)
    st = PenaltyState(theta, ll, target.logprior(theta), np.ones(2), clipped_grad_sum(g, mala.grad_bound))
    draws, clipped, acc = np.empty((8000, 2)), 0.0, 0
    for i in range(8000):
        st, info = mala_kernel(rng, st, target, params, mala)
        draws[i], clipped, acc = st.theta, clipped + info.clipped_fraction, acc + info.accepted
    assert clipped == 0.0 and acc > 800
    mean, var = target.posterior()
    z = mcse_z(draws[500:], mean, var)
    assert np.all(z < 4.0), z


def test_subsampled_kernel_approximates_posterior():
    rng = np.random.default_rng(5)
    x = np.clip(rng.normal([0.5, -1.0], 1.0, size=(2000, 2)), -3, 3)
    tgt = NormalMeans(x)
    params = PenaltyParams("rw", np.full(2, 0.01), 10.0, 0.05)
    theta = tgt.posterior()[0].copy()
    st = PenaltyState(theta, None, tgt.logprior(theta), np.ones(2))
    draws = np.empty((4000, 2))
    for i in range(4000):
        before = st.theta
        st, info = subsampled_kernel(rng, st, tgt, params, 500)
        draws[i] = st.theta
        if info.accepted:  # the noise follows Lemma 1 / Theorem 9 for the move actually made
            c = float(subsampled_sensitivity(2000, 500, 10.0, np.linalg.norm(st.theta - before))[2])
            assert info.sensitivity == pytest.approx(c) and info.noise_sd == pytest.approx(0.05 * c)
    mean, var = tgt.posterior()
    # CLT penalty is approximate: mean within half a posterior sd, spread within a factor 2
    assert np.all(np.abs(draws.mean(0) - mean) < 0.5 * math.sqrt(var))
    assert np.all((draws.std(0) ** 2 > var / 2) & (draws.std(0) ** 2 < 2 * var))


def _model(n=300):
    rng = np.random.default_rng(0)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=rng.normal(1.0, 1.0, size=n))
    return model


def _sample(step, model, draws=100, tune=20):
    with model:
        return pm.sample(draws=draws, tune=tune, chains=1, cores=1, step=[step], random_seed=3,
                         progressbar=False, compute_convergence_checks=False)


def test_subsampled_pm_sample_and_rdp_accounting():
    model = _model()
    with model:
        step = pdp.PenaltyMH(lipschitz=5.0, tau=0.5, scale=0.02, batch_size=100)
    idata = _sample(step, model)
    ss = idata["sample_stats"]
    assert np.asarray(ss["dp_batch_size"]).ravel()[0] == 100
    ev = run_event(iteration_event(0.5, n_records=300, batch_size=100), 120)
    assert pdp.privacy_spent(idata, delta=1e-5, accountant="rdp") == pytest.approx(
        epsilon_of_event(ev, 1e-5, accountant="rdp"))
    # subsampling amplifies: cheaper than the full-data Gaussian with the same multiplier
    assert pdp.privacy_spent(idata, delta=1e-5, accountant="rdp") < epsilon_of_event(
        run_event(iteration_event(0.5), 120), 1e-5, accountant="rdp")
    with pytest.raises(ValueError, match=re.escape("Use accountant='rdp'")):
        pdp.privacy_spent(idata, delta=1e-5, accountant="pld")


def test_mala_pm_sample_and_accounting():
    model = _model()
    with model:
        step = pdp.PenaltyMH(lipschitz=5.0, tau=0.05, scale=0.03, proposal="mala", grad_bound=4.0,
                             total_grad_bound=50.0)
    idata = _sample(step, model)
    zg = math.sqrt(1.0) / (0.03 * 4.0)
    ev = run_event(iteration_event(0.05, grad_noise_multiplier=zg), 120)
    assert pdp.privacy_spent(idata, delta=1e-5) == pytest.approx(epsilon_of_event(ev, 1e-5), rel=1e-6)
    assert np.asarray(idata["sample_stats"]["dp_accepted"]).mean() > 0.05
    assert np.asarray(idata["sample_stats"]["dp_grad_noise_multiplier"]).ravel()[0] == pytest.approx(zg)


def test_variant_errors():
    model = _model()
    with model:
        with pytest.raises(ValueError, match=re.escape("batch_size is not supported with proposal='mala'")):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, proposal="mala", grad_bound=1.0, batch_size=10)
        with pytest.raises(ValueError, match=re.escape("proposal='mala' takes one step size, got scale=[0.1, 0.2].")):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, proposal="mala", grad_bound=1.0, scale=[0.1, 0.2])
        with pytest.raises(ValueError, match=re.escape("grad_bound must be finite and > 0, got grad_bound=0.")):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, proposal="mala", grad_bound=0)


# ------------------------------------------------------------------- tempering (issue 10 item 7)


def test_tempered_kernel_exact_and_sensitivity_scaled(target):
    # target p(θ) Π p(x_i|θ)^T: conjugate, precision T n + 1/100; clipping inactive (|r_i| <= 10 ||dθ||)
    T, L, z = 0.5, 10.0, 0.4
    params = PenaltyParams("rw", np.full(2, 0.15), L, z, temperature=T)
    rng = np.random.default_rng(8)
    st = penalty_init(target, np.zeros(2), params)
    draws, clipped, acc = np.empty((12_000, 2)), 0.0, 0
    for i in range(draws.shape[0]):
        before = st.theta
        st, info = penalty_kernel(rng, st, target, params)
        draws[i], clipped, acc = st.theta, clipped + info.clipped_fraction, acc + info.accepted
        if info.accepted:  # sensitivity 2 T L ||θ'-θ||, noise sd z times it
            c = 2 * T * L * np.linalg.norm(st.theta - before)
            assert info.sensitivity == pytest.approx(c) and info.noise_sd == pytest.approx(z * c)
    assert clipped == 0.0 and 0.1 < acc / draws.shape[0] < 0.9
    prec = T * target.n + 1e-2
    mean, var = T * target.x.sum(0) / prec, 1.0 / prec
    z_scores = mcse_z(draws[1000:], mean, var)
    assert np.all(z_scores < 4.0), z_scores
    # and it is not the untempered posterior (twice the variance): the test can fail
    assert np.all(draws[1000:].var(0) > 1.5 / (target.n + 1e-2))


def test_tempered_pm_sample_accounting_unchanged_and_mala_refused():
    model = _model()
    with model:
        hot = pdp.PenaltyMH(lipschitz=5.0, tau=0.5, scale=0.02, temperature=0.25)
        cold = pdp.PenaltyMH(lipschitz=5.0, tau=0.5, scale=0.02)
        assert hot.params.temperature == 0.25 and cold.params.temperature == 1.0
        with pytest.raises(ValueError, match=re.escape(
                "temperature is not supported with proposal='mala' (the clipped-gradient drift and its "
                "privacy are those of the untempered likelihood), got temperature=0.5.")):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, proposal="mala", grad_bound=1.0, temperature=0.5)
        with pytest.raises(ValueError, match=re.escape("temperature must be finite and > 0, got temperature=0.")):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, temperature=0)
    hot_id, cold_id = _sample(hot, model), _sample(cold, model)
    # the noise sd scales with T (same proposal draws from the same seed until the first decision)
    sd_hot = np.asarray(hot_id["sample_stats"]["dp_noise_sd"]).ravel()[0]
    sd_cold = np.asarray(cold_id["sample_stats"]["dp_noise_sd"]).ravel()[0]
    assert sd_hot == pytest.approx(0.25 * sd_cold)
    assert pdp.privacy_spent(hot_id, delta=1e-5) == pytest.approx(pdp.privacy_spent(cold_id, delta=1e-5))


def test_penalty_modules_depend_one_way():
    """penalty_core imports no penalty module; the variants import only the core; no cycle."""
    import ast
    from pathlib import Path

    import pymc_dp.samplers as pkg

    root = Path(pkg.__file__).parent

    def imports(mod):
        tree = ast.parse((root / f"{mod}.py").read_text())
        names = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        return {n.rsplit(".", 1)[-1] for n in names if n.startswith("pymc_dp.samplers.penalty")}

    assert imports("penalty_core") == set()
    for variant in ("penalty_barker", "penalty_mala", "penalty_subsampled"):
        assert imports(variant) == {"penalty_core"}, variant
    assert "penalty" not in imports("penalty_options") | imports("penalty_target")
