"""TableCells (``pymc_dp.samplers.cells``) against enumeration of small count tables (issue 18, item 4).

Multinomial tables (K = 3, N = 6: 28 tables) and Poisson cells (each enumerated on 0..60) released
by ``pdp.Cells``: posterior mean and sd of every cell within 4 Monte Carlo standard errors; with
steps of one person and of up to three, with two releases of the table, and the Gibbs pair
ConjugateTheta + TableCells on a Dirichlet π against the Dirichlet–multinomial posterior.
"""

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_dp as pdp
from tests.support.mc import assert_mc_close
from tests.support.tables import compositions, run_table_cells
from tests.support.sampling import assigned, sample

pytestmark = pytest.mark.slow


def posterior_moments(tables, log_prior, releases):
    tables = np.array(list(tables))
    lw = np.array([log_prior(t) + sum(m.logpdf(r, t).sum() for m, r in releases) for t in tables])
    w = np.exp(lw - lw.max())
    w /= w.sum()
    mean = w @ tables
    return mean, np.sqrt(w @ tables**2 - mean**2)


@pytest.mark.parametrize("width", [1, 3])
def test_multinomial_table_two_releases(width):
    n, p = 6, np.array([0.5, 0.3, 0.2])
    releases = [
        (pdp.DiscreteGaussian(sigma=1.0), np.array([1, 4, 2])),
        (pdp.Laplace(scale=1.5), np.array([2.5, 3.0, 0.2])),
    ]
    with pm.Model() as model:
        c = pm.Multinomial("c", n=n, p=p)
        for i, (mech, r) in enumerate(releases):
            pdp.DPObserved(f"s{i}", c, statistic=pdp.Cells(), mechanism=mech, observed=r)
    draws = run_table_cells(model, 4000, seed=width, width=width)
    assert np.all(draws.sum(axis=-1) == n)
    mean, sd = posterior_moments(
        compositions(n, 3), lambda t: stats.multinomial(n, p).logpmf(t), releases
    )
    assert_mc_close(draws, mean, sd, label=f"multinomial table, width {width}")


def test_poisson_cells():
    lam = np.array([1.5, 4.0, 0.5])
    releases = [(pdp.DiscreteLaplace(scale=1.0), np.array([0, 6, 2]))]
    with pm.Model() as model:
        c = pm.Poisson("c", lam, shape=3)
        pdp.DPObserved(
            "s", c, statistic=pdp.Cells(), mechanism=releases[0][0], observed=releases[0][1]
        )
    draws = run_table_cells(model, 4000, seed=7, width=2)
    mean, sd = np.zeros(3), np.zeros(3)
    for k in range(3):  # cells are independent: enumerate each on 0..60
        grid = np.arange(61)
        lw = stats.poisson(lam[k]).logpmf(grid) + releases[0][0].logpdf(releases[0][1][k], grid)
        w = np.exp(lw - lw.max())
        w /= w.sum()
        mean[k] = w @ grid
        sd[k] = np.sqrt(w @ grid**2 - mean[k] ** 2)
    assert_mc_close(draws, mean, sd, label="poisson cells")


@pytest.mark.parametrize("width", [1, 3])
def test_binomial_cells_with_a_margin(width):
    """Binomial cells (out of a known n per cell, 2 × 2) released cell by cell and by their row
    margin: the table enumerated on its 3·5·4·6 = 360 values. Cells near 0 and near n (p = 0.9)
    test both bounds of the moves."""
    n = np.array([[2, 4], [3, 5]])
    p = np.array([[0.3, 0.9], [0.5, 0.1]])
    cell_mech, margin_mech = pdp.DiscreteGaussian(sigma=1.0), pdp.Laplace(scale=1.0)
    r_cells, r_margin = np.array([[2, 3], [0, 3]]), np.array([6.5, 1.0])
    with pm.Model() as model:
        c = pm.Binomial("c", n=n, p=p, shape=(2, 2))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=cell_mech, observed=r_cells)
        pdp.DPObserved(
            "m",
            c,
            statistic=pdp.Marginals((0,), shape=(2, 2)),
            mechanism=margin_mech,
            observed=r_margin,
        )
    assert assigned(model) == {"TableCells": ["c"]}
    draws = run_table_cells(model, 4000, seed=11 + width, width=width)
    assert draws.min() >= 0 and np.all(draws <= n.reshape(-1))
    grid = np.stack(np.meshgrid(*[np.arange(v + 1) for v in n.reshape(-1)], indexing="ij"), -1)
    tables = grid.reshape(-1, 4)
    lw = (
        stats.binom(n.reshape(-1), p.reshape(-1)).logpmf(tables).sum(axis=1)
        + cell_mech.logpdf(r_cells.reshape(-1), tables).sum(axis=1)
        + margin_mech.logpdf(r_margin, tables.reshape(-1, 2, 2).sum(axis=2)).sum(axis=1)
    )
    w = np.exp(lw - lw.max())
    w /= w.sum()
    mean = w @ tables
    sd = np.sqrt(w @ tables**2 - mean**2)
    assert_mc_close(draws, mean, sd, label=f"binomial cells, width {width}")


def test_conjugate_theta_and_table_cells_dirichlet_multinomial():
    """The Gibbs pair ConjugateTheta (π | c) + TableCells (c | π), passed explicitly (pm.sample()
    now gives this model to DirichletCells: tests/statistical/samplers/test_dirichlet_cells.py)."""
    n, alpha = 6, np.array([1.0, 2.0, 1.5])
    mech, r = pdp.DiscreteGaussian(sigma=1.5), np.array([0, 5, 2])
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", alpha)
        c = pm.Multinomial("c", n=n, p=pi)
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=r)
    assert assigned(model) == {"DirichletCells": ["c", "pi_simplex__"]}
    idata = sample(
        model,
        lambda: [pdp.ConjugateTheta([pi]), pdp.TableCells([c])],
        draws=1000,
        tune=300,
        seed=11,
    )

    def log_dirmult(t):
        return (
            special.gammaln(alpha.sum())
            - special.gammaln(n + alpha.sum())
            + np.sum(special.gammaln(t + alpha) - special.gammaln(alpha) - special.gammaln(t + 1))
            + special.gammaln(n + 1)
        )

    mean, sd = posterior_moments(compositions(n, 3), log_dirmult, [(mech, r)])
    assert_mc_close(
        np.asarray(idata.posterior["c"]), mean, sd, label="pm.sample Dirichlet-multinomial"
    )


def test_beta_binomial_cells_by_pm_sample():
    """p_k ~ Beta(a, b), c_k ~ Binomial(n_k, p_k) released by Cells: pm.sample() gives p to
    ConjugateTheta (p | c = Beta(a + c, b + n − c)) and c to TableCells. Against the enumerated
    posterior of each cell (c_k ~ BetaBinomial(n_k, a, b) a priori), the cells and E[p_k | s]."""
    a, b, n = 2.0, 3.0, np.array([5, 12, 8])
    mech, r = pdp.DiscreteGaussian(sigma=1.5), np.array([4, 1, 7])
    with pm.Model() as model:
        p = pm.Beta("p", a, b, shape=3)
        pm.Binomial("c", n=n, p=p, shape=3)
        pdp.DPObserved("s", model["c"], statistic=pdp.Cells(), mechanism=mech, observed=r)
    assert assigned(model) == {"ConjugateTheta": ["p_logodds__"], "TableCells": ["c"]}
    idata = sample(model, None, draws=1000, tune=300, seed=5)
    mean_c, sd_c, mean_p, sd_p = (np.zeros(3) for _ in range(4))
    for k in range(3):  # cells independent: enumerate each on 0..n_k
        grid = np.arange(n[k] + 1)
        lw = stats.betabinom(n[k], a, b).logpmf(grid) + mech.logpdf(r[k], grid)
        w = np.exp(lw - lw.max())
        w /= w.sum()
        mean_c[k], sd_c[k] = w @ grid, np.sqrt(w @ grid**2 - (w @ grid) ** 2)
        pa, pb = a + grid, b + n[k] - grid  # p | c, s = Beta(a + c, b + n − c)
        m1 = pa / (pa + pb)
        m2 = m1 * (pa + 1) / (pa + pb + 1)
        mean_p[k], sd_p[k] = w @ m1, np.sqrt(w @ m2 - (w @ m1) ** 2)
    assert_mc_close(np.asarray(idata.posterior["c"]), mean_c, sd_c, label="beta-binomial cells")
    assert_mc_close(np.asarray(idata.posterior["p"]), mean_p, sd_p, label="beta-binomial p")


def test_two_tables_sharing_pi_by_pm_sample():
    """Two Multinomial tables of one π (totals 4 and 3; one released under a discrete Gaussian, the
    other under Laplace noise): pm.sample() gives both tables to one TableCells (PyMC groups the
    variables a step class claims), which moves each in turn; π to ConjugateTheta. Against the
    joint enumeration of the two tables (15 × 10 pairs) with π summed out."""
    alpha, n1, n2 = np.array([1.0, 0.5, 2.0]), 4, 3
    mech1, r1 = pdp.DiscreteGaussian(sigma=1.0), np.array([3, -1, 2])
    mech2, r2 = pdp.Laplace(scale=1.5), np.array([0.4, 1.7, 0.2])
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", alpha)
        c1 = pm.Multinomial("c1", n=n1, p=pi)
        c2 = pm.Multinomial("c2", n=n2, p=pi)
        pdp.DPObserved("s1", c1, statistic=pdp.Cells(), mechanism=mech1, observed=r1)
        pdp.DPObserved("s2", c2, statistic=pdp.Cells(), mechanism=mech2, observed=r2)
    assert assigned(model) == {"ConjugateTheta": ["pi_simplex__"], "TableCells": ["c1", "c2"]}
    idata = sample(model, None, draws=1500, tune=300, seed=3)
    t1, t2 = np.array(list(compositions(n1, 3))), np.array(list(compositions(n2, 3)))
    c1s, c2s = np.repeat(t1, len(t2), axis=0), np.tile(t2, (len(t1), 1))
    both = c1s + c2s
    lw = (
        special.gammaln(n1 + 1)
        - special.gammaln(c1s + 1).sum(axis=1)
        + special.gammaln(n2 + 1)
        - special.gammaln(c2s + 1).sum(axis=1)
        + special.gammaln(both + alpha).sum(axis=1)  # ∫ Π π^(c1 + c2) Dirichlet(α)
        + mech1.logpdf(r1, c1s).sum(axis=1)
        + mech2.logpdf(r2, c2s).sum(axis=1)
    )
    w = np.exp(lw - lw.max())
    w /= w.sum()
    for name, tab in (("c1", c1s), ("c2", c2s)):
        mean = w @ tab
        sd = np.sqrt(w @ tab**2 - mean**2)
        assert_mc_close(np.asarray(idata.posterior[name]), mean, sd, label=f"two tables, {name}")
    m1 = (both + alpha) / (alpha.sum() + n1 + n2)  # E[π | c1, c2], then over the tables
    mean_pi = w @ m1
    m2 = m1 * (both + alpha + 1) / (alpha.sum() + n1 + n2 + 1)
    sd_pi = np.sqrt(w @ m2 - mean_pi**2)
    assert_mc_close(np.asarray(idata.posterior["pi"]), mean_pi, sd_pi, label="two tables, pi")
