"""Small models that several test files build: shared here so that each is written once."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.samplers.penalty import PenaltyState, penalty_kernel


def records_model(n=6, mechanism=None):
    with pm.Model() as model:
        th = pm.Normal("th", 0.0, 2.0)
        x = pm.Normal("x", th, 1.0, shape=n)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.RecordSum(lambda x: x, sensitivity=1.0),
            mechanism=mechanism or pdp.Laplace(scale=1.0),
            observed=3.0,
        )
    return model


class NormalMeans:
    """x_i ~ N(theta, I_d), theta ~ N(0, prior_sd^2 I): per-record log-likelihood in NumPy."""

    def __init__(self, x, prior_sd=10.0):
        self.x, self.n, self.prior_sd = x, len(x), prior_sd

    def loglik(self, theta, idx=None):
        xx = self.x if idx is None else self.x[idx]
        return -0.5 * np.sum((xx - theta) ** 2, axis=1)

    def logprior(self, theta):
        return -0.5 * float(np.dot(theta, theta)) / self.prior_sd**2

    def posterior(self):
        prec = self.n + 1.0 / self.prior_sd**2
        return self.x.sum(0) / prec, 1.0 / prec


def run_kernel(target, params, iters, seed):
    rng = np.random.default_rng(seed)
    theta = np.zeros(target.x.shape[1])
    st = PenaltyState(theta, target.loglik(theta), target.logprior(theta), np.ones(theta.size))
    out, clipped, acc = np.empty((iters, theta.size)), 0.0, 0
    for i in range(iters):
        st, info = penalty_kernel(rng, st, target, params)
        out[i], clipped, acc = st.theta, clipped + info.clipped_fraction, acc + info.accepted
    return out, clipped / iters, acc / iters


def penalty_model(n=100, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(1.0, 1.0, size=(n, 2))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0, shape=2)
        pm.Normal("y", mu, 1.0, observed=x)
    return model, x


def compound_model(n=100, seed=4):
    """mu ~ N(0, 10²), y_i ~ N(mu, 1) (confidential), z ~ N(0, 1) data-free (left to Metropolis)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(1.0, 1.0, size=n)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("z", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=x)
    return model, mu, x


def compound_steps(model, mu, tau=0.5, **kw):
    with model:
        with pytest.warns(UserWarning, match="not in privacy_spent"):
            pen = pdp.PenaltyMH([mu], lipschitz=12.0, tau=tau, proposal="guided", **kw)
        return pen, pm.Metropolis([model["z"]])


def normal_model(n=40, b=2.0, seed=40):
    """Quickstart-style: normal records, their sum released with Laplace noise (no clamping)."""
    rng = np.random.default_rng(seed)
    # no clamping, so no sensitivity: pdp.release refuses it; the mechanism's exact noise on the sum
    s = float(pdp.Laplace(scale=b).sample(np.asarray(rng.normal(1.0, 1.0, n).sum()), rng))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s_dp", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=b), observed=s)
    return model, s


def poisson_model(n=60, seed=41):
    rng = np.random.default_rng(seed)
    mech = pdp.DiscreteLaplace(scale=2.0)
    s = int(mech.sample(np.asarray(rng.poisson(2.0, n).sum()), rng))  # unbounded: no pdp.release
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=3.0, beta=1.0)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    return model, s


# ---------------------------------------------------------------------------------------------
# ConjugateTheta and interweaving chosen by pm.sample() (issue 11 items 2-3)
# ---------------------------------------------------------------------------------------------
L, U = -2.0, 4.0  # the clamping bounds of the clamped-normal models


def quickstart_model(n=300, seed=2026):
    """examples/quickstart.py: a Beta–Bernoulli count and Gamma stays (clamped mean)."""
    rng = np.random.default_rng(seed)
    condition, stay = rng.binomial(1, 0.12, size=n), rng.gamma(2.0, 2.5, size=n)
    count_stat, count_mech = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=0.5)
    stay_stat, stay_mech = pdp.Mean(lower=0, upper=20), pdp.Laplace(epsilon=1.0)
    s_count = float(pdp.release(condition, count_stat, count_mech, rng=rng))
    s_stay = float(pdp.release(stay, stay_stat, stay_mech, rng=rng))
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        mean_stay = pm.Gamma("mean_stay", alpha=2.0, beta=0.4)
        has = pm.Bernoulli("has_condition", p, shape=n)
        los = pm.Gamma("length_of_stay", alpha=2.0, beta=2.0 / mean_stay, shape=n)
        pdp.DPObserved("count", has, statistic=count_stat, mechanism=count_mech, observed=s_count)
        pdp.DPObserved("stay", los, statistic=stay_stat, mechanism=stay_mech, observed=s_stay)
    return model, s_count, 1.0 / 0.5


def clamped_model(n, eps, seed=21, mu_sigma=False):
    """Clamped normal mean: mu ~ N(0, 3²), x_i ~ N(mu, sigma), Σ clip(x_i, -2, 4) + Laplace(6/ε);
    sigma = 1, or ~ HalfNormal(2) with ``mu_sigma``. Returns (model, s, Laplace scale)."""
    rng = np.random.default_rng(seed)
    stat, mech = pdp.Sum(lower=L, upper=U), pdp.Laplace(epsilon=eps)
    s = float(pdp.release(rng.normal(1.0, 1.0, n), stat, mech, rng=rng))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        sigma = pm.HalfNormal("sigma", 2.0) if mu_sigma else 1.0
        x = pm.Normal("x", mu, sigma, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    return model, s, (U - L) / eps


N_REC, Y_A, Y_B = 6, 3.0, -2.0


def three_part_model():
    """Three independent θ's, each with 6 normal records and a Laplace-noised sum."""
    with pm.Model() as model:
        for name, y in (("a", Y_A), ("b", Y_B), ("c", Y_A)):
            th = pm.Normal(f"th_{name}", 0.0, 2.0)
            x = pm.Normal(f"x_{name}", th, 1.0, shape=N_REC)
            pdp.DPObserved(
                f"s_{name}",
                x,
                statistic=pdp.RecordSum(lambda x: x, sensitivity=1.0),
                mechanism=pdp.Laplace(scale=1.0),
                observed=y,
            )
    return model


def three_part_steps(model):
    """PMMH on th_a, MHAAR on th_b, DataAugmentation on x_c (call inside the model context)."""
    return [
        pdp.PMMH([model["th_a"]], n_particles=8),
        pdp.MHAAR([model["th_b"]], n_particles=8),
        pdp.DataAugmentation([model["x_c"]]),
    ]


# ------------------------------------------------------------------------------------------------
# MHAAR when NUTS moves a parent of the records (issue 10 item 2)
# ------------------------------------------------------------------------------------------------
N_LOC, S_NOISE = 30, 0.5


def local_gaussian_model():
    rng = np.random.default_rng(30)
    x_conf = rng.normal(0.5, 0.7, N_LOC)
    y = x_conf + rng.normal(
        0, S_NOISE, N_LOC
    )  # the test needs the numbers only, not a vetted release
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        x = pm.Normal("x", mu, sigma, shape=N_LOC)
        pdp.DPObserved(
            "y",
            x,
            statistic=pdp.Local(lower=-20, upper=20),
            mechanism=pdp.Gaussian(sigma=S_NOISE),
            observed=y,
        )
    return model, y


def rr_model(n=300, eps=1.0, seed=50):
    rng = np.random.default_rng(seed)
    mech = pdp.RandomizedResponse(epsilon=eps)
    r = np.asarray(pdp.release(rng.binomial(1, 0.3, n), pdp.Local(), mech, rng=rng))
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=r)
    return model, r


def pt_concat(a, b):
    import pytensor.tensor as pt

    return pt.concatenate([pt.clip(a, -1, 1), pt.clip(b, -1, 1)[:, None]], axis=1)


class NormalMeansGrad(NormalMeans):
    def loglik_grad(self, theta, idx=None):
        xx = self.x if idx is None else self.x[idx]
        return -0.5 * np.sum((xx - theta) ** 2, axis=1), xx - theta


def simulate_regression(n, d, rng, sigma_y=1.0, x_bound=3.0, y_bound=6.0):
    X = rng.normal(0.0, 1.0, size=(n, d)) / math.sqrt(d)
    theta = rng.normal(0.0, 1.0, size=d)
    y = X @ theta + rng.normal(0.0, sigma_y, size=n)
    keep = (np.linalg.norm(X, axis=1) <= x_bound) & (np.abs(y) <= y_bound)
    return X[keep], y[keep], theta


def regression_data():
    """400 records, d = 2, seed 20240601: the regression tests' data set (X, y, θ)."""
    return simulate_regression(400, 2, np.random.default_rng(20240601))


def fixed_s_release(data, delta=1e-5):
    """The MCMC-fixedS test case: a sufficient-statistics release of ``data`` (ε = 2) and its prior."""
    from pymc_dp import regression as R

    X, y, _ = data
    st = R.release_suff_stats(
        X,
        y,
        x_bound=3.0,
        y_bound=6.0,
        epsilon=2.0,
        delta=delta,
        n_nodes=3,
        rng=np.random.default_rng(5),
    )
    return st, R.RegressionPrior(C=4.0 * np.eye(2), a=6.0, b=5.0).resolve(2)


# ------------------------------------------------------------------------------------------------
# pdp.Collapsed and SufficientTheta (unit/ and statistical/ test_collapsed_step.py, test_sufficient.py)
# ------------------------------------------------------------------------------------------------
def beta_bernoulli_sum_model(n=30, s=19.3, a=2.0, b=2.0, scale=2.0):
    """p ~ Beta(a, b), x_i ~ Bern(p) (n records), s = clamped Σx + Laplace(scale) observed."""
    with pm.Model() as model:
        p = pm.Beta("p", a, b)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=1),
            mechanism=pdp.Laplace(scale=scale),
            observed=s,
        )
    return model


def released_beta_bernoulli(n, seed, p_true, *, scale=1.0, a=2.0, b=2.0):
    """A Beta–Bernoulli sum released for this test: n Bern(p_true) records drawn with ``seed``,
    Σx + Laplace(scale) by ``pdp.release``; the model of :func:`beta_bernoulli_sum_model`.
    Returns (model, s)."""
    rng = np.random.default_rng(seed)
    s = float(
        pdp.release(
            rng.binomial(1, p_true, n), pdp.Sum(lower=0, upper=1), pdp.Laplace(scale=scale), rng=rng
        )
    )
    return beta_bernoulli_sum_model(n, s, a, b, scale), s


def quickstart_like_model(seed=11, n_count=40, n_stay=8, sigma=4.0):
    """A Beta–Bernoulli count (Laplace, ε = 0.5) and Gamma stays with mean ``mean_stay`` whose sum is
    released with Gaussian noise. Returns (model, s_count, Laplace scale, s_stay, n_stay, sigma)."""
    rng = np.random.default_rng(seed)
    cond, stay = rng.binomial(1, 0.2, n_count), rng.gamma(2.0, 2.5, n_stay)
    cs, cm = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=0.5)
    s_count = float(pdp.release(cond, cs, cm, rng=rng))
    s_stay = float(
        stay.sum() + rng.normal(0, sigma)
    )  # the test's release: Gaussian noise on Σ stays
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        m = pm.Gamma("mean_stay", alpha=2.0, beta=0.4)
        has = pm.Bernoulli("has_condition", p, shape=n_count)
        los = pm.Gamma("length_of_stay", alpha=2.0, beta=2.0 / m, shape=n_stay)
        pdp.DPObserved("count", has, statistic=cs, mechanism=cm, observed=s_count)
        pdp.DPObserved(
            "stay", los, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=sigma), observed=s_stay
        )
    return model, s_count, 2.0, s_stay, n_stay, sigma


# ------------------------------------------------------------------------------------------------
# PMMH / MHAAR over independent record groups (unit/ and statistical/ test_pmmh_groups.py)
# ------------------------------------------------------------------------------------------------
GROUP_N, GROUP_A, GROUP_B, GROUP_SCALE = 8, 2.0, 2.0, 1.0
GROUP_STAT = pdp.Sum(lower=0, upper=1)
GROUP_RELEASES = {2: [2.3, 6.1], 3: [2.3, 6.1, 4.4]}


def groups_model(releases):
    """p ~ Beta(GROUP_A, GROUP_B); group g: x_g ~ Bern(p)^GROUP_N, s_g = Σ x_g + Laplace(GROUP_SCALE)."""
    with pm.Model() as model:
        p = pm.Beta("p", GROUP_A, GROUP_B)
        for g, s in enumerate(releases):
            x = pm.Bernoulli(f"x{g}", p, shape=GROUP_N)
            pdp.DPObserved(
                f"s{g}",
                x,
                statistic=GROUP_STAT,
                mechanism=pdp.Laplace(scale=GROUP_SCALE),
                observed=s,
            )
    return model


# ------------------------------------------------------------------------------------------------
# PenaltyMH after pm.set_data (unit/ and statistical/ test_penalty_set_data.py)
# ------------------------------------------------------------------------------------------------
def data_normal_model(x, prior_sd=2.0):
    """μ ~ N(0, prior_sd²), x_i ~ N(μ, 1) observed through the ``pm.Data`` container ``"obs"``."""
    with pm.Model() as model:
        obs = pm.Data("obs", x)
        mu = pm.Normal("mu", 0.0, prior_sd)
        pm.Normal("x", mu, 1.0, observed=obs)
    return model


def geometric_median_model(release=1.2):
    """p ~ Beta(2, 2), 3 Geometric(p) records, Median(1, 4) under SmoothLaplace(2, 0.1): discrete
    records of a non-additive release (NonAdditiveRoute's MHAAR)."""
    with pm.Model() as model:
        p = pm.Beta("p", 2, 2)
        x = pm.Geometric("x", p, shape=3)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Median(1, 4),
            mechanism=pdp.SmoothLaplace(epsilon=2.0, delta=0.1),
            observed=release,
        )
    return model
