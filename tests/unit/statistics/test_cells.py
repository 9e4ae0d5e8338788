"""``pdp.Cells`` (a latent count table released as it is) and ``pdp.TableCells``' refusals (issue 18 item 4)."""

import math
import re
import warnings

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
    # π with a fixed concentration and its table: one step, the cells moved with π summed out
    assert assigned(model) == {"DirichletCells": ["c", "pi_simplex__"]}
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
    # pm.sample() leaves it to PyMC's Metropolis, and says so with TableCells' reason
    with pytest.warns(UserWarning, match="pdp.TableCells cannot take it: 'y' depends on the table"):
        assert "TableCells" not in assigned(model)
    with pm.Model():
        b = pm.Geometric("b", 0.3, shape=3)
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
                "TableCells cannot update 'b': 'b' is a GeometricRV; TableCells samples a "
                "pm.Poisson, pm.NegativeBinomial or pm.Binomial table, or a pm.Multinomial table "
                "(rows on the last axis)."
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
    # started near the release (PyMC's start, 25 per cell, is 30 away): within 1 of it (rounding to
    # the total) plus the sweep's 4 moves of one person
    assert new["c"].sum() == 100 and np.abs(new["c"] - r).max() <= 1 + 4
    for _ in range(20):
        new, (stats,) = step.step(new)
        assert new["c"].sum() == 100 and new["c"].min() >= 0
    assert 0 < stats["dp_accept_rate"] <= 1


# -- Marginals, (G, K) tables, declared totals (issue 18 items 4–5, bad input) -------------------
def test_marginals_release_sums_and_sensitivities():
    table = np.array([[3, 0, 2], [1, 4, 0]])  # a 2 × 3 table
    rows = pdp.release(table, pdp.Marginals((0,)), pdp.DiscreteLaplace(scale=1e-9), rng=0)
    cols = pdp.release(table, pdp.Marginals((1,)), pdp.DiscreteLaplace(scale=1e-9), rng=0)
    flat = pdp.release(
        table.ravel(), pdp.Marginals((1,), shape=(2, 3)), pdp.DiscreteLaplace(scale=1e-9), rng=0
    )
    np.testing.assert_array_equal(rows, [5, 5])
    np.testing.assert_array_equal(cols, [4, 4, 2])
    np.testing.assert_array_equal(flat, [4, 4, 2])
    assert pdp.Marginals((0,)).sensitivity(1, n=2, dim=3) == 1.0
    assert pdp.Marginals((0,), neighbouring="replace-one").sensitivity(2, n=2, dim=3) == math.sqrt(
        2
    )
    idx = pdp.Marginals((1,), shape=(2, 3)).entry_index((6,))
    np.testing.assert_array_equal(idx, [0, 1, 2, 0, 1, 2])
    np.testing.assert_array_equal(pdp.Marginals(()).entry_index((2, 3)), np.zeros((2, 3)))


def test_marginals_refusals_name_the_argument():
    with pytest.raises(
        ValueError, match=re.escape("keep must list distinct axes in increasing order")
    ):
        pdp.Marginals((1, 0))
    with pytest.raises(ValueError, match=re.escape("keep must be the axes the margin keeps")):
        pdp.Marginals(("rows",))
    with pytest.raises(
        ValueError, match=re.escape("keep=(2,) names axis 2, but shape=(2, 3) has 2 axes.")
    ):
        pdp.Marginals((2,), shape=(2, 3))
    with pytest.raises(ValueError, match=re.escape("Marginals(keep=()) releases the grand total")):
        pdp.Marginals((), neighbouring="replace-one")
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Marginals(keep=(0,), shape=(2, 2), neighbouring='add/remove') reads the table as "
            "shape=(2, 2), but the table has shape (6,) (6 cells)."
        ),
    ):
        pdp.release(np.arange(6), pdp.Marginals((0,), shape=(2, 2)), pdp.DiscreteLaplace(scale=1.0))


def test_a_table_whose_shape_disagrees_with_the_release_is_refused():
    with pm.Model():
        c = pm.Multinomial("c", n=np.array([10, 20]), p=np.full(4, 0.25), shape=(2, 4))
        with pytest.raises(
            ValueError,
            match=re.escape(
                "observed for 's' has shape (4, 2), but the statistic has shape (2, 4)"
            ),
        ):
            pdp.DPObserved(
                "s",
                c,
                statistic=pdp.Cells(),
                mechanism=pdp.DiscreteGaussian(sigma=1.0),
                observed=np.ones((4, 2), dtype=int),
            )
        with pytest.raises(
            ValueError,
            match=re.escape("observed for 'r' has shape (3,), but the statistic has shape (2,)"),
        ):
            pdp.DPObserved(
                "r",
                c,
                statistic=pdp.Marginals((0,)),
                mechanism=pdp.DiscreteGaussian(sigma=1.0),
                observed=np.ones(3, dtype=int),
            )


def test_a_total_that_disagrees_with_the_declared_n_is_refused():
    table = np.array([[3, 0, 2], [1, 4, 0]])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Cells(neighbouring='add/remove', total=6) declares the number of people in the table "
            "(summed over its last axis, shape (2,)), but the table's totals differ."
        ),
    ):
        pdp.release(table, pdp.Cells(total=6), pdp.DiscreteLaplace(scale=1.0), rng=0)
    rel = pdp.release(table, pdp.Cells(total=5), pdp.DiscreteLaplace(scale=1.0), rng=0)
    with pm.Model():
        c = pm.Multinomial("c", n=6, p=np.full(3, 1 / 3), shape=(2, 3))
        with pytest.raises(
            ValueError,
            match=re.escape(
                "DPObserved 's' releases Cells(neighbouring='add/remove', total=5), but the table 'c' "
                "is a pm.Multinomial with n=[6, 6]. Give the table n=total"
            ),
        ):
            pdp.DPObserved("s", c, statistic=rel.statistic, mechanism=rel.mechanism, observed=rel)
    with pm.Model():
        c = pm.Multinomial("c", n=5, p=np.full(3, 1 / 3), shape=(2, 3))
        pdp.DPObserved("s", c, statistic=rel.statistic, mechanism=rel.mechanism, observed=rel)
    with pytest.raises(ValueError, match=re.escape("total must be the public number of people")):
        pdp.Cells(total=-3)
    with pytest.raises(ValueError, match=re.escape("total must be the public number of people")):
        pdp.Cells(total=2.5)


def test_float_and_negative_tables_are_refused_by_marginals_too():
    with pytest.raises(
        ValueError,
        match=re.escape("Marginals releases counts, but the table holds negative entries."),
    ):
        pdp.release(
            np.array([[3, -1], [2, 2]]), pdp.Marginals((0,)), pdp.DiscreteLaplace(scale=1.0)
        )
    with pytest.raises(
        ValueError,
        match=re.escape("Marginals releases counts, but the table holds non-integer entries."),
    ):
        pdp.release(np.array([[3, 1.5], [2, 2]]), pdp.Marginals((0,)), pdp.Laplace(scale=1.0))


def test_pm_sample_assigns_table_cells_to_area_tables_negative_binomial_and_margins():
    with pm.Model() as model:
        base = pm.Dirichlet("base", np.ones(3))
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        pi = pm.Dirichlet("pi", alpha * base, shape=(4, 3))
        c = pm.Multinomial("c", n=np.arange(5, 9), p=pi, shape=(4, 3))
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.ones((4, 3), dtype=int),
        )
        pdp.DPObserved(
            "t",
            c,
            statistic=pdp.Marginals((0,)),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.full(4, 6),
        )
    got = assigned(model)
    assert got["TableCells"] == ["c"]  # π with α and base, π summed out (issue 18 item 4)
    assert got["DirichletHyper"] == ["alpha_log__", "base_simplex__", "pi_simplex__"]
    with pm.Model() as model:
        c = pm.NegativeBinomial("c", mu=3.0, alpha=2.0, shape=(2, 3))
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.ones((2, 3), dtype=int),
        )
    assert assigned(model) == {"TableCells": ["c"]}


def test_a_binomial_table_is_taken_and_bernoulli_cells_go_to_collapsed():
    """Binomial cells go to TableCells, their Beta p to ConjugateTheta. Bernoulli cells, which
    Collapsed takes, raise no warning. (Tables whose shape comes from dims= or pm.Data:
    tests/unit/samplers/test_dims_tables.py.)"""
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0, shape=3)
        c = pm.Binomial("c", n=[5, 8, 9], p=p, shape=3)
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=[4, 7, 9],
        )
    assert assigned(model) == {"ConjugateTheta": ["p_logodds__"], "TableCells": ["c"]}
    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        x = pm.Bernoulli("x", p, shape=3)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=[1, 0, 1],
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "Metropolis" not in assigned(model)


@pytest.mark.parametrize("owner", ["DataAugmentation", "MHAAR", "PMMH"])
def test_record_steps_refuse_a_count_table_by_name(owner):
    """Record steps took a table's rows as records: with a column margin they failed in PyTensor
    ("Reshape: Input shape (3,) is incompatible with new shape (2, 1)"), and with a row margin
    they ran untested. They now refuse the table at construction, pointing to the table steps."""
    with pm.Model():
        lam = pm.Gamma("lam", 2.0, 0.2, shape=(2, 3))
        c = pm.Poisson("c", lam, shape=(2, 3))
        for keep, value in (((0,), [20, 31]), ((1,), [10, 21, 20])):
            pdp.DPObserved(
                f"m{keep[0]}",
                c,
                statistic=pdp.Marginals(keep),
                mechanism=pdp.DiscreteGaussian(sigma=1.0),
                observed=np.array(value),
            )
        make = {
            "DataAugmentation": lambda: pdp.DataAugmentation([c]),
            "MHAAR": lambda: pdp.MHAAR([lam]),
            "PMMH": lambda: pdp.PMMH([lam]),
        }[owner]
        with pytest.raises(
            ValueError, match=rf"{owner} updates records.*latent count table.*TableCells"
        ):
            make()


def test_cells_with_queries_points_to_marginals():
    with pytest.raises(TypeError, match=r"takes no queries=.*pdp\.Marginals\(keep\)"):
        pdp.Cells(queries=[(0,), (1,)])


def _cells_model(table, stat, *, n=6, k=3, data_n=False):
    with pm.Model() as model:
        if table == "multinomial":
            n_var = pm.Data("N", n) if data_n else n
            c = pm.Multinomial("c", n=n_var, p=pm.Dirichlet("pi", np.ones(k)))
        elif table == "poisson":
            c = pm.Poisson("c", 3.0, shape=k)
        else:
            c = pm.Categorical("c", pm.Dirichlet("pi", np.ones(k)), shape=n)
        pdp.DPObserved(
            "s",
            c,
            statistic=stat,
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.array([2, 3, 1]) if table != "categorical" else np.array([2, 3, 1] * 2),
        )
    return model


def test_table_statistics_refuse_category_codes_and_totals_they_would_ignore():
    """Cells() of Categorical records read each code as a count (a code of 2 counted 2 people);
    Cells(total=6) of Poisson cells was accepted and the total ignored; total=[6, 6, 6] on one
    table failed inside NumPy ("cannot broadcast a non-scalar to a scalar array")."""
    with pytest.raises(ValueError, match="holds categorical records"):
        _cells_model("categorical", pdp.Cells())
    with pytest.raises(ValueError, match="whose total is not fixed by the model"):
        _cells_model("poisson", pdp.Cells(total=6))
    with pytest.raises(ValueError, match=r"3 total\(s\) of shape \(3,\).*one number"):
        _cells_model("multinomial", pdp.Cells(total=[6, 6, 6]))
    _cells_model("multinomial", pdp.Cells(total=6))  # the table it declares
    with pm.Model():  # a DirichletMultinomial's n fixes its total too (it was refused)
        c = pm.DirichletMultinomial("c", n=6, a=np.ones(3))
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(total=6),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.array([2, 3, 1]),
        )


def test_a_declared_total_is_checked_again_when_pm_set_data_changes_n():
    """Cells(total=12) on pm.Multinomial(n=pm.Data("N", 12)): after pm.set_data({"N": 14}) the
    chains sampled tables of 14 people against a release declared for 12."""
    model = _cells_model("multinomial", pdp.Cells(total=12), n=12, data_n=True)
    with model:
        pm.set_data({"N": 14})
        with pytest.raises(ValueError, match=r"declares the public total\(s\) 12"):
            pm.sample(draws=5, tune=5, chains=1, progressbar=False, random_seed=1)
