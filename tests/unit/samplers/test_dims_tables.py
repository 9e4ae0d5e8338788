"""Count tables whose shape comes from ``dims=`` or a ``pm.Data`` length (issue 18).

``type.shape`` holds None for such a length, although ``pm.sample()`` compiles its functions with
the length the coords (or the data) hold, so it is fixed while it samples. The table steps read
that length (`pymc_dp.distributions.graph.fixed_shape`): a model written with ``dims=`` gets the
steps of its twin written with ``shape=`` and the same draws from the same seed. Before, a (G, K)
table of areas written with dims went to PyMC's Metropolis, whose chain keeps its start."""

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_dp as pdp
from tests.support.sampling import assigned, sample

G, K = 2, 3
LENGTHS = {"area": G, "cell": K}
COORDS = {"area": ["north", "south"], "cell": ["a", "b", "c"]}
TABLE = [[4, 7, 0], [3, 3, 5]]


def _where(use_dims, *names):
    """``dims=names`` or the same lengths as ``shape=``."""
    if use_dims:
        return {"dims": names if len(names) > 1 else names[0]}
    return {"shape": tuple(LENGTHS[n] for n in names)}


def _cells(c, observed=TABLE, statistic=None):
    pdp.DPObserved(
        "s",
        c,
        statistic=statistic or pdp.Cells(),
        mechanism=pdp.DiscreteGaussian(sigma=1.5),
        observed=observed,
    )


def _areas(use_dims):  # rows around a shared Dirichlet mean: DirichletHyper, cells included
    with pm.Model(coords=COORDS) as model:
        base = pm.Dirichlet("base", np.ones(K), **_where(use_dims, "cell"))
        alpha = pm.Gamma("alpha", 2.0, 0.2)
        pi = pm.Dirichlet("pi", alpha * base, **_where(use_dims, "area", "cell"))
        _cells(pm.Multinomial("c", n=[10, 12], p=pi, **_where(use_dims, "area", "cell")))
    return model


def _poisson(use_dims):  # Gamma rates of Poisson cells: GammaCells
    with pm.Model(coords=COORDS) as model:
        lam = pm.Gamma("lam", 2.0, 0.3, **_where(use_dims, "area", "cell"))
        _cells(pm.Poisson("c", lam, **_where(use_dims, "area", "cell")))
    return model


def _margin(use_dims):  # a margin of a table of rows: ConjugateTheta + TableCells
    with pm.Model(coords=COORDS) as model:
        pi = pm.Dirichlet("pi", np.ones(K), **_where(use_dims, "area", "cell"))
        c = pm.Multinomial("c", n=[10, 12], p=pi, **_where(use_dims, "area", "cell"))
        _cells(c, observed=[7, 10, 5], statistic=pdp.Marginals((1,)))
    return model


def _data_concentration(use_dims):  # a concentration held in pm.Data: DirichletCells
    with pm.Model() as model:
        a = pm.Data("a", np.ones(K)) if use_dims else np.ones(K)
        pi = pm.Dirichlet("pi", a)
        _cells(pm.Multinomial("c", n=20, p=pi), observed=[4, 7, 9])
    return model


MODELS = {
    "areas": (_areas, "DirichletHyper"),
    "poisson": (_poisson, "GammaCells"),
    "margin": (_margin, "TableCells"),
    "data": (_data_concentration, "DirichletCells"),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_a_table_with_dims_gets_the_steps_and_draws_of_its_twin_with_shape(name):
    build, step = MODELS[name]
    with_dims, with_shape = build(True), build(False)
    assert None in with_dims["c"].type.shape  # a length left open in the graph
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "left to PyMC's default samplers"
        steps = assigned(with_dims)
    assert steps == assigned(with_shape)
    assert step in steps and "Metropolis" not in steps and "NUTS" not in steps
    a = sample(with_dims, draws=15, tune=10, chains=1, seed=3)
    b = sample(with_shape, draws=15, tune=10, chains=1, seed=3)
    for var in b.posterior.data_vars:
        np.testing.assert_array_equal(a.posterior[var].values, b.posterior[var].values)
    table = a.posterior["c"].values.reshape(15, -1)
    assert np.unique(table, axis=0).shape[0] > 1  # the table moves (Metropolis kept its start)
    if name == "areas":  # the draws carry the model's coords
        assert list(a.posterior["c"].coords["cell"].values) == COORDS["cell"]


def test_a_table_whose_shape_depends_on_a_random_variable_is_refused_by_name():
    with pm.Model():
        k = pm.Poisson("k", 3.0)
        c = pm.Poisson("c", 2.0, shape=(k + 1,))
        with pytest.raises(ValueError, match="(?s)must be fixed.*depends on a random variable"):
            _cells(c, observed=[1, 2, 3])


def test_a_table_that_no_step_can_take_is_named_with_a_warning():
    """A table read by another term (here a Potential) goes to PyMC's default samplers; pm.sample()
    says so, naming the table and the reason."""
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(K))
        c = pm.Multinomial("c", n=20, p=pi)
        _cells(c, observed=[4, 7, 9])
        pm.Potential("penalty", -0.01 * pt.sum(c))
    with pytest.warns(UserWarning, match="'penalty' depends on the table 'c'") as rec:
        assert "Metropolis" in assigned(model)
    assert "the chain keeps its start" in str(rec[0].message)
