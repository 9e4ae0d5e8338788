"""Models of the simulation-based calibration tests: each returns (model, simulate, θ name).

``simulate(rng) -> (θ*, point values, release)`` draws θ* from the prior, the records given θ* and
the release by OpenDP (:func:`pymc_dp.release`); the release enters the model through the
``pm.Data`` container ``"obs"``. Shared by ``statistical/samplers/test_sbc.py``,
``statistical/samplers/test_sbc_routes.py`` and ``unit/marginal/test_collapsed_step.py``.
"""

import numpy as np
import pymc as pm
from scipy import special, stats

import pymc_dp as pdp

__all__ = [
    "bernoulli_local",
    "bernoulli_sum",
    "gamma_mean_sum",
    "normal_local",
    "normal_sum",
    "rank_test",
]


def rank_test(ranks, n_draws, bins):
    """Ranks on 0..``n_draws`` binned into ``bins`` equal bins and Pearson's χ² against uniform:
    ``(counts, p-value)``."""
    counts = np.bincount(np.asarray(ranks) * bins // (n_draws + 1), minlength=bins)
    return counts, stats.chisquare(counts).pvalue


# ------------------------------------------------------------------------------------------------
# models: each returns (model, simulate(rng) -> (θ*, point values, release), θ name)
# ------------------------------------------------------------------------------------------------
def bernoulli_sum():
    n, stat, mech = 10, pdp.Sum(lower=0, upper=1), pdp.Laplace(scale=1.0)
    with pm.Model() as model:
        obs = pm.Data("obs", 0.0)
        p = pm.Beta("p", 2, 2)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=obs)

    def simulate(rng):
        p = rng.beta(2, 2)
        x = rng.binomial(1, p, n)
        return (
            p,
            {"p_logodds__": special.logit(p), "x": x},
            float(pdp.release(x, stat, mech, rng=rng)),
        )

    return model, simulate, "p"


def bernoulli_local():
    n, mech = 12, pdp.RandomizedResponse(epsilon=1.0)
    with pm.Model() as model:
        obs = pm.Data("obs", np.zeros(n, dtype="int64"))
        p = pm.Beta("p", 2, 2)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=obs)

    def simulate(rng):
        p = rng.beta(2, 2)
        x = rng.binomial(1, p, n)
        r = np.asarray(pdp.release(x, pdp.Local(), mech, rng=rng), dtype="int64")
        return p, {"p_logodds__": special.logit(p), "x": x}, r

    return model, simulate, "p"


def normal_sum():
    n, stat, mech = 8, pdp.Sum(lower=-6, upper=6), pdp.Laplace(scale=2.0)
    with pm.Model() as model:
        obs = pm.Data("obs", 0.0)
        mu = pm.Normal("mu", 0, 1)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=obs)

    def simulate(rng):
        mu = rng.normal()
        x = rng.normal(mu, 1.0, n)
        return mu, {"mu": mu, "x": x}, float(pdp.release(x, stat, mech, rng=rng))

    return model, simulate, "mu"


def normal_local():
    n, mech = 8, pdp.Gaussian(sigma=1.0)
    with pm.Model() as model:
        obs = pm.Data("obs", np.zeros(n))
        mu = pm.Normal("mu", 0, 1)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("y", x, statistic=pdp.Local(lower=-8, upper=8), mechanism=mech, observed=obs)

    def simulate(rng):
        mu = rng.normal()
        x = rng.normal(mu, 1.0, n)
        return (
            mu,
            {"mu": mu, "x": x},
            np.asarray(pdp.release(x, pdp.Local(lower=-8, upper=8), mech, rng=rng), dtype=float),
        )

    return model, simulate, "mu"


def gamma_mean_sum():
    """The quickstart's stays: m ~ Gamma(2, rate 0.4), x_i ~ Gamma(2, rate 2/m) (mean m), n = 6,
    Σ clip(x_i, 0, 30) + Laplace(scale 5): m | x is not conjugate (SufficientTheta's case)."""
    n, stat, mech = 6, pdp.Sum(lower=0, upper=30), pdp.Laplace(scale=5.0)
    with pm.Model() as model:
        obs = pm.Data("obs", 0.0)
        m = pm.Gamma("m", alpha=2.0, beta=0.4)
        x = pm.Gamma("x", alpha=2.0, beta=2.0 / m, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=obs)

    def simulate(rng):
        m = rng.gamma(2.0, 1 / 0.4)
        x = rng.gamma(2.0, m / 2.0, n)
        return (
            m,
            {"m_log__": np.log(m), "x_log__": np.log(x)},
            float(pdp.release(x, stat, mech, rng=rng)),
        )

    return model, simulate, "m"
