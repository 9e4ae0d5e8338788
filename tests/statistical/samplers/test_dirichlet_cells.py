"""DirichletCells (``pymc_dp.samplers.dirichlet_cells``) against enumeration of small count tables.

π ~ Dirichlet(a) with a fixed a, c ~ Multinomial(n, π), c released by ``pdp.Cells``. The posterior
of c is the Dirichlet–multinomial prior times the releases, enumerated over every table; π's
posterior moments follow exactly from c's (π | c is Dirichlet(a + c)). ``pm.sample()``'s own
assignment, cells moved with π summed out and π drawn given them: the mean and sd of every cell and
of every π_k within 4 Monte Carlo standard errors. Cases: one table with two releases (steps of one
person and of up to three), and a (2, 3) table of two areas with their own totals.
"""

import itertools

import numpy as np
import pymc as pm
import pytest
from scipy import special

import pymc_dp as pdp
from tests.support.mc import assert_mc_close
from tests.support.sampling import assigned, sample
from tests.support.tables import compositions

pytestmark = pytest.mark.slow


def log_dirmult(t, n, a):
    return (
        special.gammaln(a.sum())
        - special.gammaln(n + a.sum())
        + np.sum(special.gammaln(t + a) - special.gammaln(a) - special.gammaln(t + 1))
        + special.gammaln(n + 1)
    )


def _with_maps(releases):
    """(mechanism, release, map) triples: ``map`` the released entries of a flat table (a margin),
    None for the table itself."""
    return [(m, r, rel[0] if rel else None) for m, r, *rel in releases]


def exact_moments(rows, a, releases):
    """Posterior mean and sd of the flattened table and of π (rows × K) by enumeration: every row
    of ``rows`` (totals) Dirichlet-multinomial(n_g, a), the releases' densities over the table."""
    k = a.size
    tables = [
        np.concatenate(t) for t in itertools.product(*[list(compositions(n, k)) for n in rows])
    ]
    tables = np.array(tables)
    lw = np.array(
        [
            sum(log_dirmult(t[g * k : (g + 1) * k], n, a) for g, n in enumerate(rows))
            + sum(m.logpdf(r, f(t) if f else t).sum() for m, r, f in _with_maps(releases))
            for t in tables
        ]
    )
    w = np.exp(lw - lw.max())
    w /= w.sum()
    mean_c = w @ tables
    sd_c = np.sqrt(w @ tables**2 - mean_c**2)
    big_a = a.sum() + np.repeat(np.asarray(rows, dtype=float), k)  # A + n_g per cell
    post = tables + np.tile(a, len(rows))  # Dirichlet(a + c_g) parameters, per table
    m1 = w @ (post / big_a)
    m2 = w @ (post * (post + 1) / (big_a * (big_a + 1)))
    return mean_c, sd_c, m1, np.sqrt(m2 - m1**2)


@pytest.mark.parametrize("width", [1, 3])
def test_one_table_two_releases_default_sample(width):
    n, a = 6, np.array([0.7, 2.0, 1.5])
    releases = [
        (pdp.DiscreteGaussian(sigma=1.0), np.array([1, 4, 2])),
        (pdp.Laplace(scale=1.5), np.array([2.5, 3.0, 0.2])),
    ]
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", a)
        c = pm.Multinomial("c", n=n, p=pi)
        for i, (mech, r) in enumerate(releases):
            pdp.DPObserved(f"s{i}", c, statistic=pdp.Cells(), mechanism=mech, observed=r)
    assert assigned(model) == {"DirichletCells": ["c", "pi_simplex__"]}
    step = None if width == 1 else (lambda: [pdp.DirichletCells([pi, c], width=width)])
    idata = sample(model, step, draws=1500, tune=300, seed=20 + width)
    draws_c = np.asarray(idata.posterior["c"])
    assert np.all(draws_c.sum(axis=-1) == n)
    mean_c, sd_c, mean_p, sd_p = exact_moments([n], a, releases)
    assert_mc_close(draws_c, mean_c, sd_c, label=f"cells, width {width}")
    assert_mc_close(np.asarray(idata.posterior["pi"]), mean_p, sd_p, label=f"pi, width {width}")


def test_areas_with_their_own_totals():
    rows, a = [3, 4], np.array([1.0, 0.5, 2.5])
    mech, r = pdp.DiscreteGaussian(sigma=1.2), np.array([[0, 1, 3], [2, 0, 1]])
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", a, shape=(2, 3))
        c = pm.Multinomial("c", n=np.array(rows), p=pi, shape=(2, 3))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=r)
    assert assigned(model) == {"DirichletCells": ["c", "pi_simplex__"]}
    idata = sample(model, draws=1500, tune=300, seed=31)
    draws_c = np.asarray(idata.posterior["c"]).reshape(2, -1, 6)
    assert np.all(draws_c.reshape(2, -1, 2, 3).sum(axis=-1) == np.array(rows))
    mean_c, sd_c, mean_p, sd_p = exact_moments(rows, a, [(mech, r.reshape(-1))])
    assert_mc_close(draws_c, mean_c, sd_c, label="area cells")
    draws_p = np.asarray(idata.posterior["pi"]).reshape(2, -1, 6)
    assert_mc_close(draws_p, mean_p, sd_p, label="area pi")


def test_one_table_with_margins_default_sample():
    """A table of 4 cells read as 2 × 2, released cell by cell and by its row and column margins
    (each margin entry within the one row of the Multinomial): pm.sample() gives π and c to
    DirichletCells, whose moves weigh every release touching a moved cell."""
    n, a = 5, np.array([0.8, 1.5, 1.2, 0.6])
    mech = pdp.DiscreteGaussian(sigma=0.9)
    rows_of, cols_of = (
        pdp.Marginals(keep=(0,), shape=(2, 2)),
        pdp.Marginals(keep=(1,), shape=(2, 2)),
    )
    releases = [
        (pdp.Laplace(scale=2.0), np.array([0.5, 2.2, 1.0, 3.1])),
        (mech, np.array([1, 4]), lambda t: t.reshape(2, 2).sum(axis=1)),
        (mech, np.array([3, 1]), lambda t: t.reshape(2, 2).sum(axis=0)),
    ]
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", a)
        c = pm.Multinomial("c", n=n, p=pi)
        pdp.DPObserved(
            "s", c, statistic=pdp.Cells(), mechanism=releases[0][0], observed=releases[0][1]
        )
        pdp.DPObserved("r", c, statistic=rows_of, mechanism=mech, observed=releases[1][1])
        pdp.DPObserved("k", c, statistic=cols_of, mechanism=mech, observed=releases[2][1])
    assert assigned(model) == {"DirichletCells": ["c", "pi_simplex__"]}
    idata = sample(model, draws=1500, tune=300, seed=41)
    draws_c = np.asarray(idata.posterior["c"])
    mean_c, sd_c, mean_p, sd_p = exact_moments([n], a, releases)
    assert_mc_close(draws_c, mean_c, sd_c, label="cells with margins")
    assert_mc_close(np.asarray(idata.posterior["pi"]), mean_p, sd_p, label="pi with margins")
