"""Models written the way users write them (issue 17, "What must work" 2), shared by the tests and
``benchmarks/bench_user_models.py``.

Each builder returns ``(model, theta names)``; ``potential=True`` gives the joint model PyMC samples
on its own (records latent, the mechanism's log density as a ``pm.Potential``), for the "NUTS on
the joint model" baseline.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

import pymc_dp as pdp
from pymc_dp.release import bind_mechanism

__all__ = [
    "BUILDERS",
    "hierarchical_groups",
    "normal_scale",
    "regression_user",
    "rr_two_answers",
    "table_dgauss",
]


def _node(name, data, stat, mech, release, potential, n):
    """A DPObserved node, or the same density as a ``pm.Potential`` (plain PyMC)."""
    if not potential:
        pdp.DPObserved(name, data, statistic=stat, mechanism=mech, observed=release)
        return
    data_t = data if isinstance(data, tuple) else (data,)
    value = stat(*data_t)
    rel = np.asarray(release, dtype=float)
    dim = int(np.prod(rel.shape[1 if stat.local else 0 :], dtype=int)) or 1
    bound = bind_mechanism(stat, mech, n, dim)
    pm.Potential(name, bound.logp(pt.as_tensor(rel), value).sum())


def _two_answers(x):
    """Cell 0..3 of a 2×2 table -> (row answer, column answer)."""
    return pt.stack([x // 2, x % 2], axis=-1)


def rr_two_answers(n=400, eps=1.0, seed=0, potential=False):
    """(a) 2×2 table; each record answers both questions under binary randomized response."""
    rng = np.random.default_rng(seed)
    cells = rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1])
    stat = pdp.Local(fn=_two_answers)
    mech = pdp.RandomizedResponse(epsilon=eps, n_categories=2)
    answers = np.stack([cells // 2, cells % 2], axis=-1)
    released = np.asarray(mech.sample(answers, rng=rng))
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(4))
        x = pm.Categorical("x", pi, shape=n)
        if potential:
            keep, other = mech.kernel_params()
            pm.Potential("r", pt.switch(pt.eq(_two_answers(x), released), keep, other).sum())
        else:
            pdp.DPObserved("r", x, statistic=stat, mechanism=mech, observed=released)
    return model, ["pi"]


def normal_scale(n=100, eps=1.0, seed=1, potential=False):
    """(b) records N(mu, sigma); only a clamped mean is released."""
    rng = np.random.default_rng(seed)
    stat, mech = pdp.Mean(lower=-4.0, upper=6.0), pdp.Laplace(epsilon=eps)
    s = pdp.release(rng.normal(1.0, 1.5, n), stat, mech, rng=rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        sigma = pm.HalfNormal("sigma", 2)
        x = pm.Normal("x", mu, sigma, shape=n)
        _node("s", x, stat, mech, s, potential, n)
    return model, ["mu", "sigma"]


def hierarchical_groups(n=50, eps=1.0, seed=2, potential=False, groups=4):
    """(c) ``mu_g = mu0 + tau * z_g``; each group's records give one clamped-mean release."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(1.0, 1.0, groups)
    stat, mech = pdp.Mean(lower=-3.0, upper=5.0), pdp.Laplace(epsilon=eps)
    releases = [
        pdp.release(rng.normal(truth[g], 1.0, n), stat, mech, rng=rng) for g in range(groups)
    ]
    with pm.Model() as model:
        mu0 = pm.Normal("mu0", 0, 5)
        tau = pm.HalfNormal("tau", 2)
        z = pm.Normal("z", 0, 1, shape=groups)
        mu_g = mu0 + tau * z
        for g in range(groups):
            x = pm.Normal(f"x{g}", mu_g[g], 1.0, shape=n)
            _node(f"s{g}", x, stat, mech, releases[g], potential, n)
    return model, ["mu0", "tau", "z"]


def regression_user(n=50, eps=10.0, seed=3, potential=False):
    """(d) y = b0 + x b + noise written as a PyMC model; 9 clamped, normalised sufficient
    statistics (x̃ᵀỹ, ỹᵀỹ, x̃ᵀx̃ without the constant) + Laplace."""
    p, a, b, sd = 2, -10.0, 10.0, 2.0
    beta_true = np.array([1.0, 2.0, -1.0])

    def norm(v):
        return (2.0 * pt.clip(v, a, b) - a - b) / (b - a)

    def stats(x, y):
        xt = pt.concatenate([pt.ones((x.shape[0], 1)), norm(x)], axis=1)
        yt = norm(y)
        cols = [xt * yt[:, None], (yt**2)[:, None]]
        cols += [
            (xt[:, j] * xt[:, k])[:, None]
            for j in range(p + 1)
            for k in range(j, p + 1)
            if (j, k) != (0, 0)
        ]
        return pt.concatenate(cols, axis=1)

    rng = np.random.default_rng(seed)
    xv = rng.normal(0.0, 2.0, size=(n, p))
    yv = beta_true[0] + xv @ beta_true[1:] + rng.normal(0, sd, n)
    stat = pdp.RecordSum(stats, sensitivity={1: float(p**2 + 4 * p + 3)})
    mech = pdp.Laplace(epsilon=eps)
    s = pdp.release((xv, yv), stat, mech, rng=rng)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 2, shape=p + 1)
        x = pm.Normal("x", 0, 2, shape=(n, p))
        y = pm.Normal("y", beta[0] + pt.dot(x, beta[1:]), sd, shape=n)
        _node("s", (x, y), stat, mech, s, potential, n)
    return model, ["beta"]


def table_dgauss(n=944, eps=0.1, delta=1e-6, seed=4, potential=False):
    """(e) 2×3 table of ``n`` records, counts released with the discrete Gaussian mechanism."""
    rng = np.random.default_rng(seed)
    stat, mech = pdp.Counts(6), pdp.DiscreteGaussian(epsilon=eps, delta=delta)
    s = pdp.release(rng.choice(6, size=n, p=[0.3, 0.2, 0.15, 0.15, 0.1, 0.1]), stat, mech, rng=rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(6))
        x = pm.Categorical("x", pi, shape=n)
        _node("c", x, stat, mech, s, potential, n)
    return model, ["pi"]


#: name -> builder, in the order of the issue's list
BUILDERS = {
    "rr_two_answers": rr_two_answers,
    "normal_scale": normal_scale,
    "hierarchical_groups": hierarchical_groups,
    "regression_user": regression_user,
    "table_dgauss": table_dgauss,
}
