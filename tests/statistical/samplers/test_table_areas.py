"""TableCells on tables of many areas, margins and NegativeBinomial cells (issue 18, items 4–5)
against enumeration: posterior mean and sd of every cell within 4 Monte Carlo standard errors.

* a (2, 3) Multinomial table (two areas, their own π and totals), released cell by cell;
* a 2 × 3 Multinomial table (N = 5) released as its detailed cells, its row totals and its column
  totals, each with its own noise (three ``DPObserved`` nodes on one latent table);
* independent Poisson cells of a 2 × 2 table released only through their row and column margins;
* NegativeBinomial cells released by ``Cells``.
"""

import itertools

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from tests.support.mc import assert_mc_close
from tests.support.tables import compositions, run_table_cells

pytestmark = pytest.mark.slow


def moments(tables, log_w, *, vectorized=False):
    """Mean and sd of the flattened tables under weights exp(log_w); ``vectorized``: ``log_w``
    takes the (tables, cells) array at once (one call instead of one per table)."""
    tables = np.array([np.ravel(t) for t in tables])
    lw = log_w(tables) if vectorized else np.array([log_w(t) for t in tables])
    w = np.exp(lw - lw.max())
    w /= w.sum()
    mean = w @ tables
    return mean, np.sqrt(np.maximum(w @ tables**2 - mean**2, 0.0))


def test_two_areas_multinomial_rows():
    n = np.array([4, 3])
    p = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3]])
    mech, r = pdp.DiscreteGaussian(sigma=1.0), np.array([[1, 3, 0], [2, 0, 2]])
    with pm.Model() as model:
        c = pm.Multinomial("c", n=n, p=p, shape=(2, 3))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=r)
    draws = run_table_cells(model, 4000, seed=1, width=2)
    assert np.all(draws.reshape(2, -1, 2, 3).sum(axis=-1) == n)
    tables = [np.stack([a, b]) for a in compositions(4, 3) for b in compositions(3, 3)]
    mean, sd = moments(
        tables,
        lambda t: (
            sum(stats.multinomial(n[g], p[g]).logpmf(t.reshape(2, 3)[g]) for g in range(2))
            + mech.logpdf(r.ravel(), t).sum()
        ),
    )
    assert_mc_close(draws, mean, sd, label="two areas")


def test_detailed_cells_with_row_and_column_margins():
    n, p = 5, np.array([0.3, 0.1, 0.1, 0.2, 0.2, 0.1])  # a 2 × 3 table, row-major
    cells = (pdp.DiscreteGaussian(sigma=1.5), np.array([2, 0, 1, 0, 3, 1]))
    rows = (pdp.DiscreteLaplace(scale=0.7), np.array([1, 4]))
    cols = (pdp.Laplace(scale=0.8), np.array([0.5, 2.7, 1.2]))
    with pm.Model() as model:
        c = pm.Multinomial("c", n=n, p=p)
        pdp.DPObserved("cells", c, statistic=pdp.Cells(), mechanism=cells[0], observed=cells[1])
        pdp.DPObserved(
            "rows",
            c,
            statistic=pdp.Marginals((0,), shape=(2, 3)),
            mechanism=rows[0],
            observed=rows[1],
        )
        pdp.DPObserved(
            "cols",
            c,
            statistic=pdp.Marginals((1,), shape=(2, 3)),
            mechanism=cols[0],
            observed=cols[1],
        )
    draws = run_table_cells(model, 5000, seed=2)

    def log_w(t):
        m = t.reshape(2, 3)
        return (
            stats.multinomial(n, p).logpmf(t)
            + cells[0].logpdf(cells[1], t).sum()
            + rows[0].logpdf(rows[1], m.sum(axis=1)).sum()
            + cols[0].logpdf(cols[1], m.sum(axis=0)).sum()
        )

    mean, sd = moments(compositions(n, 6), log_w)
    assert_mc_close(draws, mean, sd, label="cells + margins")


def test_poisson_cells_released_through_margins_only():
    lam = np.array([[1.0, 2.0], [0.5, 1.5]])
    rows = (pdp.DiscreteGaussian(sigma=1.0), np.array([4, 1]))
    cols = (pdp.DiscreteGaussian(sigma=1.0), np.array([2, 2]))
    with pm.Model() as model:
        c = pm.Poisson("c", lam, shape=(2, 2))
        pdp.DPObserved(
            "rows", c, statistic=pdp.Marginals((0,)), mechanism=rows[0], observed=rows[1]
        )
        pdp.DPObserved(
            "cols", c, statistic=pdp.Marginals((1,)), mechanism=cols[0], observed=cols[1]
        )
    draws = run_table_cells(model, 6000, seed=3, width=1)
    grid = itertools.product(range(16), repeat=4)

    def log_w(t):  # t: (tables, 4), all 16⁴ tables in one call
        m = t.reshape(-1, 2, 2)
        return (
            stats.poisson(lam.ravel()).logpmf(t).sum(-1)
            + rows[0].logpdf(rows[1], m.sum(axis=2)).sum(-1)
            + cols[0].logpdf(cols[1], m.sum(axis=1)).sum(-1)
        )

    mean, sd = moments(grid, log_w, vectorized=True)
    assert_mc_close(draws, mean, sd, label="Poisson cells, margins only")


def test_negative_binomial_cells():
    mu, alpha = np.array([2.0, 6.0, 0.7]), np.array([1.5, 0.8, 3.0])
    mech, r = pdp.DiscreteLaplace(scale=1.2), np.array([0, 9, 3])
    with pm.Model() as model:
        c = pm.NegativeBinomial("c", mu=mu, alpha=alpha, shape=3)
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=r)
    draws = run_table_cells(model, 5000, seed=4, width=2)
    mean, sd = np.zeros(3), np.zeros(3)
    grid = np.arange(200)
    for k in range(3):  # independent cells: each enumerated on 0..199
        nb = stats.nbinom(alpha[k], alpha[k] / (alpha[k] + mu[k]))
        lw = nb.logpmf(grid) + mech.logpdf(r[k], grid)
        w = np.exp(lw - lw.max())
        w /= w.sum()
        mean[k] = w @ grid
        sd[k] = np.sqrt(w @ grid**2 - mean[k] ** 2)
    assert_mc_close(draws, mean, sd, label="NegativeBinomial cells")


def _default_dirichlet_hyper_run(model, variables, *, seed, step=None):
    """``pm.sample()`` with no ``step=`` after checking that it gives ``variables`` (value names)
    to one DirichletHyper (``step``: that step passed instead, unchecked): 2 chains × 1000 draws
    (500 warm-up)."""
    from pymc.sampling.mcmc import assign_step_methods

    if step is None:
        _, assigned = assign_step_methods(model)
        assert {cls.__name__: sorted(v.name for v in vs) for cls, vs in assigned.items()} == {
            "DirichletHyper": variables
        }
    with model:
        return pm.sample(
            draws=1000,
            tune=500,
            chains=2,
            cores=1,
            step=step,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )


@pytest.mark.parametrize(
    "step_kw",
    [None, {"cells": 3, "rounds": 3}, {"moves": "pairs", "cells": 2, "rounds": 2}],
    ids=["default", "records in 3 rounds", "pairs in 2 rounds"],
)
def test_hierarchical_areas_default_sample(step_kw):
    """``pm.sample()`` with no ``step=`` on two areas under a shared Dirichlet mean: it assigns
    one DirichletHyper (α, base, π and the table: cells moved with π summed out, α also moved with
    the table as uniforms) by itself, and log α, base and every cell match
    quadrature over (log α, base) with the tables enumerated (areas independent given α·base).
    ``step_kw``: the step passed with these options instead (``rounds``: (base, α) moved between
    rounds of cell moves)."""
    from scipy.special import gammaln

    n, k, mu, sd = np.array([4, 3]), 3, np.log(3.0), 1.0
    mech, r = pdp.DiscreteGaussian(sigma=1.0), np.array([[3, 0, 1], [0, 2, 1]])
    with pm.Model() as model:
        base = pm.Dirichlet("base", np.ones(k))
        alpha = pm.LogNormal("alpha", mu, sd)
        pi = pm.Dirichlet("pi", alpha * base, shape=(2, k))
        c = pm.Multinomial("c", n=n, p=pi, shape=(2, k))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=r)
    # 1000 draws per chain: ESS ≈ 0.7 per draw for log α, base and the cells (measured with 3000:
    # ESS 4000–4300 of 6000), so ≈ 1400 here; the tolerance is 4 MCSE of these draws
    variables = ["alpha_log__", "base_simplex__", "c", "pi_simplex__"]
    if step_kw is None:
        idata = _default_dirichlet_hyper_run(model, variables, seed=18)
    else:
        with model:
            step = [pdp.DirichletHyper([alpha, base, pi, c], **step_kw)]
        idata = _default_dirichlet_hyper_run(model, variables, seed=19, step=step)
    post = idata.posterior
    draws = np.concatenate(
        [
            np.log(post["alpha"].values)[..., None],
            post["base"].values,
            post["c"].values.reshape(2, -1, 2 * k),
        ],
        axis=-1,
    )
    # quadrature: u = log α (midpoints, ±7 sd), base = (x, (1 − x) y, (1 − x)(1 − y)) (midpoints,
    # Jacobian 1 − x); per area, Σ over its tables of DirMult(c | n, α·base) η(r − c)
    u = mu + sd * np.linspace(-7, 7, 281)
    m = (np.arange(90) + 0.5) / 90
    x, y = np.meshgrid(m, m, indexing="ij")
    b = np.stack([x, (1 - x) * y, (1 - x) * (1 - y)], axis=-1).reshape(-1, k)
    tabs = [np.array(list(compositions(int(n[g]), k))) for g in range(2)]
    log_w = np.empty((u.size, b.shape[0]))
    first = np.empty((u.size, b.shape[0], 2, k))
    second = np.empty_like(first)
    for i, ui in enumerate(u):
        a = np.exp(ui) * b  # (base, K)
        log_w[i] = -0.5 * ((ui - mu) / sd) ** 2 + np.log(1 - x).reshape(-1)
        for g in range(2):
            log_t = (
                gammaln(a.sum(-1))[:, None]
                - gammaln(n[g] + a.sum(-1))[:, None]
                + (gammaln(tabs[g][None] + a[:, None]) - gammaln(a[:, None])).sum(-1)
                + (gammaln(n[g] + 1.0) - gammaln(tabs[g] + 1.0).sum(-1))
                + mech.logpdf(r[g][None], tabs[g]).sum(-1)
            )  # (base, tables)
            top = log_t.max(axis=-1, keepdims=True)
            t = np.exp(log_t - top)
            z = t.sum(-1)
            log_w[i] += np.log(z) + top[:, 0]
            first[i, :, g] = t @ tabs[g] / z[:, None]
            second[i, :, g] = t @ tabs[g] ** 2 / z[:, None]
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    feats = [np.broadcast_to(u[:, None], w.shape)]
    feats += [np.broadcast_to(b[None, :, j], w.shape) for j in range(k)]
    m1 = [np.sum(w * f) for f in feats] + [
        np.sum(w * first[:, :, g, j]) for g in range(2) for j in range(k)
    ]
    m2 = [np.sum(w * f**2) for f in feats] + [
        np.sum(w * second[:, :, g, j]) for g in range(2) for j in range(k)
    ]
    mean = np.array(m1)
    sd_exact = np.sqrt(np.array(m2) - mean**2)
    assert_mc_close(draws, mean, sd_exact, label="hierarchical areas, pm.sample()")


def test_areas_around_a_fixed_mean_default_sample():
    """Rows ``π_g ~ Dirichlet(α·b)`` with a fixed, unnormalised mean b (two areas, α with mass
    near 0): ``pm.sample()`` gave α to NUTS and π to ConjugateTheta (α's ESS/draw 0.06, and on
    PyMC 5 a bare "Bad initial energy" once α reached 0.01, π's simplex values ±490). It now
    assigns DirichletHyper([α, π, c]) (α slice-sampled with π summed out) and log α and every
    cell match quadrature over log α with the tables enumerated."""
    from scipy.special import gammaln

    n, k = np.array([4, 3]), 3
    b = np.array([1.2, 0.5, 0.3])  # sums to 2: α·b, b not on the simplex
    mech, r = pdp.DiscreteGaussian(sigma=1.0), np.array([[3, 0, 1], [0, 2, 1]])
    with pm.Model() as model:
        alpha = pm.Exponential("alpha", 0.5)
        pi = pm.Dirichlet("pi", alpha * b, shape=(2, k))
        c = pm.Multinomial("c", n=n, p=pi, shape=(2, k))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=r)
    idata = _default_dirichlet_hyper_run(model, ["alpha_log__", "c", "pi_simplex__"], seed=21)
    post = idata.posterior
    draws = np.concatenate(
        [np.log(post["alpha"].values)[..., None], post["c"].values.reshape(2, -1, 2 * k)], axis=-1
    )
    # quadrature over u = log α (Exponential(0.5) prior of α, Jacobian α), tables enumerated
    u = np.linspace(-12, 5, 1701)
    tabs = [np.array(list(compositions(int(n[g]), k))) for g in range(2)]
    log_w = np.log(0.5) - 0.5 * np.exp(u) + u
    first = np.empty((u.size, 2, k))
    second = np.empty_like(first)
    for i, ui in enumerate(u):
        a = np.exp(ui) * b
        for g in range(2):
            log_t = (
                gammaln(a.sum())
                - gammaln(n[g] + a.sum())
                + (gammaln(tabs[g] + a) - gammaln(a)).sum(-1)
                + (gammaln(n[g] + 1.0) - gammaln(tabs[g] + 1.0).sum(-1))
                + mech.logpdf(r[g][None], tabs[g]).sum(-1)
            )
            top = log_t.max()
            t = np.exp(log_t - top)
            z = t.sum()
            log_w[i] += np.log(z) + top
            first[i, g] = t @ tabs[g] / z
            second[i, g] = t @ tabs[g] ** 2 / z
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    mean = np.concatenate([[w @ u], (w[:, None, None] * first).sum(0).ravel()])
    m2 = np.concatenate([[w @ u**2], (w[:, None, None] * second).sum(0).ravel()])
    assert_mc_close(draws, mean, np.sqrt(m2 - mean**2), label="areas around a fixed mean")
