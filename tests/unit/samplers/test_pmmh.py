"""PMMH (seed 001 Algorithm 5): kernel unit tests, errors, exactness through pm.sample."""

import math
import re

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.samplers.pmmh import PMMHState, pmmh_kernel

# ------------------------------------------------------------------------------------------------
# kernel
# ------------------------------------------------------------------------------------------------


def test_kernel_carries_the_estimate_and_uses_the_pseudo_marginal_ratio():
    rng = np.random.default_rng(0)
    calls = []

    def estimate(rng, theta):
        calls.append(theta.copy())
        log_w = rng.normal(-1.0 - theta[0] ** 2, 1.0, size=4)
        return log_w, [np.full(3, j) for j in range(4)]

    def propose(rng, th):
        return th + 0.5 * rng.standard_normal(1), 0.0

    def log_prior(th):
        return -0.5 * float(th[0] ** 2)

    state = PMMHState(np.zeros(1), 0.0, -1.0, [np.zeros(3)])
    for _ in range(200):
        prev = state
        state, info = pmmh_kernel(rng, state, propose_theta=propose, log_prior=log_prior,
                                  estimate=estimate)
        # the current estimate is never re-estimated: one estimate (the proposal's) per iteration
        if info.accepted:
            assert state.log_lik == pytest.approx(info.log_lik_proposal)
            assert np.array_equal(state.theta, calls[-1])
        else:
            assert state.log_lik == prev.log_lik and np.array_equal(state.theta, prev.theta)
        log_alpha = log_prior(calls[-1]) + info.log_lik_proposal - prev.log_prior - prev.log_lik
        assert info.accept_prob == pytest.approx(min(1.0, math.exp(log_alpha)))
    assert len(calls) == 200


def test_kernel_nan_estimate_rejects():
    state = PMMHState(np.zeros(1), 0.0, -1.0, [np.zeros(1)])
    out, info = pmmh_kernel(
        np.random.default_rng(1), state,
        propose_theta=lambda rng, th: (th + 1.0, 0.0),
        log_prior=lambda th: 0.0,
        estimate=lambda rng, th: (np.array([np.nan, np.nan]), [np.ones(1), np.ones(1)]),
    )
    assert not info.accepted and out is state


@pytest.mark.parametrize("user_proposal", [False, True])
def test_likelihood_estimate_is_unbiased(user_proposal):
    n, b, y, theta = 50, 0.05, 1.3, 2.5
    with pm.Model() as model:
        th = pm.HalfNormal("th", 5.0)
        mu, var = pdp.normal_variance_moments(th, a=1)
        pdp.CLTRelease("s", mu, var, n, mechanism=pdp.Laplace(scale=b), sensitivity=0.2, observed=y)

        def proposal(rng, point, n_particles):
            u = rng.normal(y, 0.2, size=(n_particles, 1))
            return [u], stats.norm.logpdf(u[:, 0], y, 0.2)

        step = pdp.PMMH([th], n_particles=5, proposal=proposal if user_proposal else None)
    step.set_rng(np.random.default_rng(7))
    estimate = step.estimator(model.initial_point(random_seed=0))
    rng = np.random.default_rng(8)
    z = np.array([np.exp(estimate(rng, np.array([np.log(theta)]))[0]).mean() for _ in range(3000)])
    m, v = pdp.normal_variance_moments(theta, a=1)
    u = np.linspace(m - 2, m + 2, 40001)
    exact = np.trapezoid(stats.norm.pdf(u, m, math.sqrt(v / n)) * stats.laplace.pdf(y, u, b), u)
    assert abs(z.mean() - exact) < 4 * z.std() / math.sqrt(z.size), (z.mean(), exact)


# ------------------------------------------------------------------------------------------------
# errors
# ------------------------------------------------------------------------------------------------
def _records_model(n=6, mechanism=None):
    with pm.Model() as model:
        th = pm.Normal("th", 0.0, 2.0)
        x = pm.Normal("x", th, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.RecordSum(lambda x: x, sensitivity=1.0),
                       mechanism=mechanism or pdp.Laplace(scale=1.0), observed=3.0)
    return model


@pytest.mark.parametrize("bad", [0, -2, 2.5, True])
def test_n_particles_must_be_a_positive_integer(bad):
    model = _records_model()
    with model, pytest.raises(ValueError, match=re.escape(f"n_particles must be an integer >= 1, got n_particles={bad!r}.")):
        pdp.PMMH([model["th"]], n_particles=bad)


def test_latent_that_no_dpobserved_depends_on():
    model = _records_model()
    with model:
        other = pm.Normal("other", model["th"], 1.0, shape=6)
        with pytest.raises(ValueError, match=re.escape("latent must be variables a pdp.DPObserved node depends on, got latent=['other']")):
            pdp.PMMH([model["th"]], latent=[other])


def test_theta_that_no_dpobserved_depends_on():
    model = _records_model()
    with model:
        phi = pm.Normal("phi")
        with pytest.raises(ValueError, match=re.escape("vars='phi', but none does")):
            pdp.PMMH([phi])


def test_mechanism_without_density():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Opaque(pdp.mechanisms.Mechanism):
        norm = None

        @property
        def calibrated(self):
            return True

        def random_graph(self, statistic, size=None):
            return pm.Normal.dist(statistic, 1.0, size=size)

    model = _records_model(mechanism=Opaque())
    with model, pytest.raises(ValueError, match=re.escape("PMMH needs the density of the release, but the mechanism")):
        pdp.PMMH([model["th"]])


def test_pmmh_must_own_every_parent_of_the_records():
    with pm.Model():
        mu = pm.Normal("mu")
        sd = pm.HalfNormal("sd")
        x = pm.Normal("x", mu, sd, shape=4)
        pdp.DPObserved("s", x, statistic=pdp.RecordSum(lambda x: x, sensitivity=1.0),
                       mechanism=pdp.Laplace(scale=1.0), observed=3.0)
        with pytest.raises(ValueError, match=re.escape("'sd' is missing from vars='mu'. Pass vars=['mu', 'sd']")):
            pdp.PMMH([mu])


# ------------------------------------------------------------------------------------------------
# exactness (slow tier)
# ------------------------------------------------------------------------------------------------
def exact_records_sum(y=3.0, n=6, prior_sd=2.0, b=1.0):
    """θ ~ N(0, prior_sd), Σx ~ N(nθ, n), s_dp ~ Laplace(Σx, b): posterior mean/sd by quadrature."""
    s = np.linspace(-60, 60, 6001)
    th = np.linspace(-8, 8, 1601)
    lik = stats.norm.pdf(s[None, :], n * th[:, None], math.sqrt(n)) * stats.laplace.pdf(y, s, b)[None, :]
    post = np.trapezoid(lik, s, axis=1) * stats.norm.pdf(th, 0, prior_sd)
    post /= np.trapezoid(post, th)
    mean = np.trapezoid(th * post, th)
    return mean, math.sqrt(np.trapezoid((th - mean) ** 2 * post, th))


def run(model, make_step, draws=1000, tune=300, chains=2, seed=1, var="th"):
    with model:
        step = make_step()
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, step=step,
                          random_seed=seed, progressbar=False, compute_convergence_checks=False)
    d = np.asarray(idata.posterior[var]).ravel()
    ess = float(np.asarray(az.ess(idata, var_names=[var])[var]))
    return idata, d, ess


def assert_matches(draws, ess, mean, sd, k=4.0):
    mcse = sd / math.sqrt(ess)
    print(f"\nposterior mean {draws.mean():.4f} (exact {mean:.4f}, {(draws.mean() - mean) / mcse:+.2f} MCSE), "
          f"sd {draws.std():.4f} (exact {sd:.4f}), ESS {ess:.0f}")
    assert abs(draws.mean() - mean) < k * mcse, (draws.mean(), mean, mcse)
    assert abs(draws.std() - sd) < k * sd / math.sqrt(2 * ess) + 0.02 * sd, (draws.std(), sd)


@pytest.mark.slow
def test_pmmh_records_exact_through_pm_sample():
    model = _records_model()
    idata, d, ess = run(model, lambda: [pdp.PMMH([model["th"]], n_particles=8)])
    mean, sd = exact_records_sum()
    assert_matches(d, ess, mean, sd)
    diag = az.summary(idata, var_names=["th"], kind="diagnostics")
    assert float(np.asarray(diag["r_hat"])[0]) < 1.05
    stats_ = idata.sample_stats
    assert {"dp_accept", "dp_loglik_estimate"} <= set(stats_.data_vars)
    assert "diverging" not in stats_.data_vars  # no NUTS: the step owns th and x
    assert np.all(np.ptp(np.asarray(stats_["dp_scale"]), axis=1) == 0)  # tuning stops after warm-up
    x = np.asarray(idata.posterior["x"])
    assert np.unique(x[0, :, 0]).size > 50  # the written-back particle moves
    # the written-back particle is a joint posterior draw: E[Σx] under p(θ, x | s_dp)
    assert abs(x.sum(axis=-1).mean() - 6 * mean) < 6 * 6 * sd / math.sqrt(ess) + 0.3


@pytest.mark.slow
def test_pmmh_latent_statistic_exact():
    # seed 001 §5.3 model: X ~ N(0, θ), s(x)=|x|, CLT latent statistic, Laplace(ε)
    n, A, eps, y = 50, 10.0, 5.0, 1.3
    with pm.Model() as model:
        th = pm.HalfNormal("th", 5.0)
        mu, var = pdp.normal_variance_moments(th, a=1)
        pdp.CLTRelease("s", mu, var, n, mechanism=pdp.Laplace(epsilon=eps), sensitivity=A / n,
                       observed=y)
    idata, d, ess = run(model, lambda: [pdp.PMMH([th], n_particles=10)])
    mean, sd = exact_clt_laplace(y, n, A / (n * eps))
    assert_matches(d, ess, mean, sd)


def exact_clt_laplace(y, n, b):
    th = np.linspace(1e-4, 12, 2401)
    u = np.linspace(-5, 10, 3001)
    g1 = math.gamma(1.0) / math.sqrt(math.pi)
    g2 = math.gamma(1.5) / math.sqrt(math.pi)
    mu = np.sqrt(2 * th) * g1
    var = 2 * th * (g2 - g1**2)
    f = stats.norm.pdf(u[None, :], mu[:, None], np.sqrt(var / n)[:, None])
    lik = np.trapezoid(f * stats.laplace.pdf(y, u, b)[None, :], u, axis=1)
    post = lik * stats.halfnorm.pdf(th, scale=5.0)
    post /= np.trapezoid(post, th)
    mean = np.trapezoid(th * post, th)
    return mean, math.sqrt(np.trapezoid((th - mean) ** 2 * post, th))


@pytest.mark.slow
def test_pmmh_mhaar_and_data_augmentation_agree():
    n, y = 6, 3.0
    with pm.Model() as model:
        th = pm.Normal("th", 0.0, 2.0)
        x = pm.Normal("x", th, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Mean(lower=-3, upper=5),
                       mechanism=pdp.Laplace(epsilon=1.0), observed=y / n)
    res = {}
    for name, step in [
        ("da", lambda: [pdp.DataAugmentation([x], sweeps=2)]),
        ("pmmh", lambda: [pdp.PMMH([th], n_particles=8)]),
        ("mhaar", lambda: [pdp.MHAAR([th], n_particles=8)]),
    ]:
        _, d, ess = run(model, step, draws=800, seed=3)
        res[name] = (d.mean(), d.std() / math.sqrt(ess))
    for a in ("pmmh", "mhaar"):
        diff = abs(res[a][0] - res["da"][0])
        assert diff < 4 * math.hypot(res[a][1], res["da"][1]), res
