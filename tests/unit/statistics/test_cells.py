"""``pdp.Cells`` (a latent count table released as it is) and ``pdp.TableCells``' refusals (issue 18 item 4)."""

import math
import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.sampling import assigned


def test_sensitivity_follows_the_neighbouring_relation():
    assert pdp.Cells().sensitivity(1, n=5, dim=1) == 1.0
    assert pdp.Cells().sensitivity(2, n=5, dim=1) == 1.0
    assert pdp.Cells("replace-one").sensitivity(1, n=5, dim=1) == 2.0
    assert pdp.Cells("replace-one").sensitivity(2, n=5, dim=1) == math.sqrt(2.0)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "neighbouring must be one of ['add/remove', 'replace-one'], got neighbouring='bounded'."
        ),
    ):
        pdp.Cells("bounded")


def test_release_of_a_table_and_its_refusals():
    table = np.array([3, 0, 12, 7])
    rel = pdp.release(
        table, pdp.Cells(), pdp.DiscreteLaplace(epsilon=1.0), rng=np.random.default_rng(0)
    )
    assert rel.shape == (4,) and rel.mechanism.sensitivity == 1.0
    rel2 = pdp.release(table, pdp.Cells("replace-one"), pdp.DiscreteLaplace(epsilon=1.0), rng=0)
    assert rel2.mechanism.sensitivity == 2.0
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Cells releases counts, but the table holds negative entries. Pass the table of counts "
            "(integers >= 0)."
        ),
    ):
        pdp.release(np.array([3, -1, 2]), pdp.Cells(), pdp.DiscreteLaplace(epsilon=1.0), rng=0)
    with pytest.raises(
        ValueError,
        match=re.escape("Cells releases counts, but the table holds non-integer entries."),
    ):
        pdp.release(np.array([3.0, 1.5, 2.0]), pdp.Cells(), pdp.Laplace(epsilon=1.0), rng=0)


def test_node_refuses_a_table_of_another_shape_and_float_tables():
    with pm.Model():
        c = pm.Multinomial("c", n=10, p=np.full(4, 0.25))
        with pytest.raises(
            ValueError,
            match=re.escape("observed for 's' has shape (3,), but the statistic has shape (4,)"),
        ):
            pdp.DPObserved(
                "s",
                c,
                statistic=pdp.Cells(),
                mechanism=pdp.DiscreteGaussian(sigma=1.0),
                observed=np.array([1, 2, 3]),
            )
        y = pm.Normal("y", shape=4)
        with pytest.raises(
            TypeError,
            match=re.escape(
                "Cells releases a table of counts and needs an integer table, got dtype float64."
            ),
        ):
            pdp.DPObserved(
                "t",
                y,
                statistic=pdp.Cells(),
                mechanism=pdp.Laplace(scale=1.0),
                observed=np.zeros(4),
            )


def test_pm_sample_assigns_table_cells_and_refusals_name_the_reason():
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(3))
        c = pm.Multinomial("c", n=20, p=pi)
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.array([4, 0, 9]),
        )
    assert assigned(model) == {"ConjugateTheta": ["pi_simplex__"], "TableCells": ["c"]}
    with pm.Model() as model:
        c = pm.Poisson("c", 3.0, shape=3)
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.array([4, 0, 9]),
        )
        pm.Normal("y", c.sum(), 1.0, observed=5.0)
        with pytest.raises(
            ValueError,
            match=re.escape(
                "TableCells cannot update 'c': 'y' depends on the table 'c'; TableCells needs the Cells "
                "releases to be the only terms that do."
            ),
        ):
            pdp.TableCells([c])
    assert "TableCells" not in assigned(model)
    with pm.Model():
        b = pm.Binomial("b", 10, 0.3, shape=3)
        pdp.DPObserved(
            "s",
            b,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.array([4, 0, 9]),
        )
        with pytest.raises(
            ValueError,
            match=re.escape(
                "TableCells cannot update 'b': 'b' is a BinomialRV; TableCells samples a pm.Poisson "
                "or pm.NegativeBinomial table, or a pm.Multinomial table (rows on the last axis)."
            ),
        ):
            pdp.TableCells([b])


def test_table_cells_starts_at_the_release_and_keeps_the_total():
    r = np.array([40, 0, 3, 55])
    with pm.Model() as model:
        c = pm.Multinomial("c", n=100, p=np.full(4, 0.25))
        pdp.DPObserved(
            "s", c, statistic=pdp.Cells(), mechanism=pdp.DiscreteGaussian(sigma=2.0), observed=r
        )
        step = pdp.TableCells([c], reps=1, width=1, rng=np.random.default_rng(0))
    point = model.initial_point(random_seed=0)
    new, _ = step.step(point)
    assert new["c"].sum() == 100 and np.abs(new["c"] - r).max() <= 3  # started near the release
    for _ in range(20):
        new, (stats,) = step.step(new)
        assert new["c"].sum() == 100 and new["c"].min() >= 0
    assert 0 < stats["dp_accept_rate"] <= 1
