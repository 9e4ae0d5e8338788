"""MHAAR (seed 001 Algorithms 6–8): kernel branches, errors, exactness of each variant."""

import itertools
import math
import re

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.samplers.mhaar import MHAARState, mhaar_kernel
from pymc_dp.statistics.order import order_smooth_sensitivity
from tests.unit.samplers.test_pmmh import _records_model, assert_matches, exact_clt_laplace, exact_records_sum, run

# ------------------------------------------------------------------------------------------------
# kernel: the returned particle is drawn with w' when accepted and with w when rejected
# ------------------------------------------------------------------------------------------------
W = np.array([1.0, 2.0, 7.0])
WP = np.array([5.0, 3.0, 2.0])


def _weights(rng, theta, theta_p, latent):
    return np.log(W)[:, None], np.log(WP)[:, None], lambda k, acc: (int(k[0]), acc)


@pytest.mark.parametrize("prior_shift, accepted, probs", [(-1e3, False, W / W.sum()), (1e3, True, WP / WP.sum())])
def test_particle_weights_in_accept_and_reject_branch(prior_shift, accepted, probs):
    rng = np.random.default_rng(5)
    state = MHAARState(np.zeros(1), 0.0, None)
    counts = np.zeros(3)
    K = 3000
    for _ in range(K):
        out, info = mhaar_kernel(
            rng, state, propose_theta=lambda rng, th: (th + 1.0, 0.0),
            log_prior=lambda th: float(th[0]) * prior_shift, weights=_weights,
        )
        k, acc = out.latent
        assert acc is accepted and info.accepted is accepted
        counts[k] += 1
    sd = np.sqrt(K * probs * (1 - probs))
    assert np.all(np.abs(counts - K * probs) < 4.5 * sd), (counts, K * probs)


def test_averaged_ratio_and_product_over_blocks():
    lw = np.log(np.array([[1.0, 2.0], [3.0, 1.0]]))
    lwp = np.log(np.array([[2.0, 1.0], [2.0, 5.0]]))
    _, info = mhaar_kernel(
        np.random.default_rng(0), MHAARState(np.zeros(1), 0.5, None),
        propose_theta=lambda rng, th: (th, 0.1), log_prior=lambda th: 0.2,
        weights=lambda rng, th, thp, lat: (lw, lwp, lambda k, acc: k),
    )
    want = math.log((4 / 4) * (6 / 3))
    assert info.log_ratio_estimate == pytest.approx(want)
    assert info.accept_prob == pytest.approx(min(1.0, math.exp(0.1 + 0.2 - 0.5 + want)))


# ------------------------------------------------------------------------------------------------
# errors
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, 7, -1, 2.0])
def test_subset_size_outside_one_to_n(bad):
    model = _records_model(n=6)
    with model, pytest.raises(ValueError, match=re.escape(f"subset_size must be an integer in 1..n=6 (records refreshed per particle), got subset_size={bad!r}.")):
        pdp.MHAAR([model["th"]], subset_size=bad)


def test_n_particles_checked():
    model = _records_model()
    with model, pytest.raises(ValueError, match=re.escape("n_particles must be an integer >= 1, got n_particles=0.")):
        pdp.MHAAR([model["th"]], n_particles=0)


def test_z_space_refuses_records_drawn_from_each_other():
    with pm.Model():
        th = pm.Normal("th")
        c = pm.Bernoulli("c", 0.5, shape=4)
        f = pm.Normal("f", th + c, 1.0, shape=4)
        pdp.DPObserved("s", (c, f), statistic=pdp.RecordSum(lambda c, f: f, sensitivity=1.0),
                       mechanism=pdp.Laplace(scale=1.0), observed=0.5)
        with pytest.raises(ValueError, match=re.escape("but 'f' depends on another record variable. Use space='u'")):
            pdp.MHAAR([th], space="z")


def test_latent_statistic_needs_both_moments():
    with pm.Model():
        th = pm.HalfNormal("th")
        with pytest.raises(ValueError, match=re.escape("needs both moments of the per-record statistic s(X), got var=None")):
            pdp.CLTRelease("s", th, None, 10, mechanism=pdp.Laplace(scale=1.0), sensitivity=1.0, observed=1.0)


# ------------------------------------------------------------------------------------------------
# exactness (slow tier)
# ------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("subset_size", [None, 2])
def test_z_space_records_exact(subset_size):
    model = _records_model()
    _, d, ess = run(model, lambda: [pdp.MHAAR([model["th"]], n_particles=8, subset_size=subset_size)],
                    seed=2)
    assert_matches(d, ess, *exact_records_sum())


@pytest.mark.slow
def test_u_space_latent_statistic_exact():
    n, A, eps, y = 50, 10.0, 5.0, 1.3
    with pm.Model() as model:
        th = pm.HalfNormal("th", 5.0)
        mu, var = pdp.normal_variance_moments(th, a=1)
        pdp.CLTRelease("s", mu, var, n, mechanism=pdp.Laplace(epsilon=eps), sensitivity=A / n, observed=y)
    with model:
        assert pdp.MHAAR([th]).space == "u"
    _, d, ess = run(model, lambda: [pdp.MHAAR([th], n_particles=10)], seed=4)
    assert_matches(d, ess, *exact_clt_laplace(y, n, A / (n * eps)))


@pytest.mark.slow
def test_local_releases_exact():
    y = np.array([2.5, -0.3, 1.8, 4.0])
    with pm.Model() as model:
        th = pm.Normal("th", 0.0, 2.0)
        x = pm.Normal("x", th, 1.0, shape=4)
        pdp.DPObserved("s", x, statistic=pdp.Local(lower=-3, upper=3),
                       mechanism=pdp.Laplace(scale=1.5), observed=y)
    with model:
        assert pdp.MHAAR([th]).space == "local"
    _, d, ess = run(model, lambda: [pdp.MHAAR([th], n_particles=6)], seed=5)
    xs = np.linspace(-12, 12, 2401)
    th_g = np.linspace(-7, 8, 801)
    f = stats.norm.pdf(xs[None, :], th_g[:, None], 1.0)
    lik = np.ones_like(th_g)
    for yi in y:
        lik *= np.trapezoid(f * stats.laplace.pdf(yi, np.clip(xs, -3, 3), 1.5)[None, :], xs, axis=1)
    post = lik * stats.norm.pdf(th_g, 0, 2)
    post /= np.trapezoid(post, th_g)
    mean = np.trapezoid(th_g * post, th_g)
    assert_matches(d, ess, mean, math.sqrt(np.trapezoid((th_g - mean) ** 2 * post, th_g)))


def exact_geometric_order(stat, mech, y, n=3):
    """p ~ Beta(2, 2), x_i ~ Geometric(p), clipped to [1, 4]: enumerate the clipped records."""
    p = np.linspace(1e-4, 1 - 1e-4, 2001)
    lik = np.zeros_like(p)
    for rec in itertools.product([1, 2, 3, 4], repeat=n):
        rec = np.array(rec, float)
        pr = np.ones_like(p)
        for k in rec:
            pr *= (1 - p) ** 3 if k == 4 else (1 - p) ** (k - 1) * p
        value = np.sort(rec)[stat.rank(n) - 1]
        scale = order_smooth_sensitivity(rec - 1, stat.rank(n), 3.0, mech.beta) / mech.alpha
        lik += pr * stats.laplace.pdf(y, value, scale)
    post = lik * stats.beta.pdf(p, 2, 2)
    post /= np.trapezoid(post, p)
    mean = np.trapezoid(p * post, p)
    return mean, math.sqrt(np.trapezoid((p - mean) ** 2 * post, p))


@pytest.mark.slow
@pytest.mark.parametrize("which, y", [("median", 1.2), ("max", 3.4)])
def test_z_space_median_and_max_with_smooth_laplace_exact(which, y):
    stat = pdp.Median(1, 4) if which == "median" else pdp.Max(1, 4)
    mech = pdp.SmoothLaplace(epsilon=2.0, delta=0.1)
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        x = pm.Geometric("x", p, shape=3)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=y)
    _, d, ess = run(model, lambda: [pdp.MHAAR([p], n_particles=6)], seed=6, var="p")
    assert_matches(d, ess, *exact_geometric_order(stat, mech, y))
