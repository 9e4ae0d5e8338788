"""TableCells with several tables (``pymc_dp.samplers.cells``): what ``pm.sample()`` builds when a
model holds more than one count table that the step claims (PyMC gives every variable a step class
claims to one instance of it). Each table moves by its own sweeps, in turn; exactness against
enumeration is in tests/statistical/samplers/test_table_cells.py."""

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.sampling import assigned, sample


def _tables_of_two_kinds():
    """A (2, 3) Multinomial table released cell by cell and by its column margin, and a Binomial
    table of a Beta p: different kinds, shapes and releases."""
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(3), shape=(2, 3))
        c1 = pm.Multinomial("c1", n=[4, 3], p=pi, shape=(2, 3))
        p = pm.Beta("p", 1, 1)
        c2 = pm.Binomial("c2", n=5, p=p, shape=2)
        mech = pdp.DiscreteGaussian(sigma=1.0)
        pdp.DPObserved(
            "r1", c1, statistic=pdp.Cells(), mechanism=mech, observed=[[3, -1, 2], [0, 1, 1]]
        )
        pdp.DPObserved("r1m", c1, statistic=pdp.Marginals((1,)), mechanism=mech, observed=[3, 1, 3])
        pdp.DPObserved("r2", c2, statistic=pdp.Cells(), mechanism=mech, observed=[0, 2])
    return model


def test_pm_sample_gives_several_tables_to_one_step_that_moves_each():
    model = _tables_of_two_kinds()
    assert assigned(model)["TableCells"] == ["c1", "c2"]
    idata = sample(model, None, draws=30, tune=30, seed=4)
    c1, c2 = np.asarray(idata.posterior["c1"]), np.asarray(idata.posterior["c2"])
    assert (c1.sum(axis=-1) == [4, 3]).all() and (c1 >= 0).all()  # rows keep their totals
    assert ((c2 >= 0) & (c2 <= 5)).all()
    assert len(np.unique(c1.reshape(-1, 6), axis=0)) > 1  # both tables moved
    assert len(np.unique(c2.reshape(-1, 2), axis=0)) > 1
    rate = np.asarray(idata.sample_stats["dp_accept_rate"])
    assert ((rate > 0) & (rate <= 1)).all()
    again = sample(model, None, draws=30, tune=30, seed=4)
    np.testing.assert_array_equal(np.asarray(again.posterior["c1"]), c1)
    np.testing.assert_array_equal(np.asarray(again.posterior["c2"]), c2)


def test_several_tables_one_of_which_cannot_be_moved_name_it():
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 1.0)
        c1 = pm.Poisson("c1", lam, shape=3)
        c2 = pm.Poisson("c2", lam, shape=2)
        mech = pdp.DiscreteGaussian(sigma=1.0)
        pdp.DPObserved("r1", c1, statistic=pdp.Cells(), mechanism=mech, observed=[1, 2, 0])
        pm.Normal("y", c2.sum(), 1.0, observed=3.0)  # c2 feeds more than its releases
        pdp.DPObserved("r2", c2, statistic=pdp.Cells(), mechanism=mech, observed=[2, 1])
        with pytest.raises(ValueError, match="TableCells cannot update 'c2'"):
            pdp.TableCells([c1, c2])
        step = pdp.TableCells([c1], reps=2)
    assert step.vars == [model.rvs_to_values[c1]] and step.reps == 2
