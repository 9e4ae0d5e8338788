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
    (text,) = [str(w.message) for w in rec if "depends on the table" in str(w.message)]
    assert "expect very slow mixing" in text


RELEASE = np.array([9, 1, 0, 3, 5])


def _resizable(cells, release_dims=True):
    """A Poisson table and its release on the dim ``cell`` of ``cells`` cells (GammaCells); the
    release is a ``pm.Data`` on that dim too, or (``release_dims=False``) of its own length."""
    with pm.Model(coords={"cell": range(cells)}) as model:
        pm.Data("grid", np.arange(cells), dims="cell")  # another holder of the dim's length
        obs = pm.Data("obs", RELEASE[:cells], dims="cell" if release_dims else None)
        lam = pm.Gamma("lam", 3.0, 1.0, dims="cell")
        pdp.DPObserved(
            "s",
            pm.Poisson("c", lam, dims="cell"),
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=1.5),
            observed=obs,
            dims="cell" if release_dims else None,
        )
    return model


def test_a_table_resized_by_set_data_draws_what_a_model_built_at_that_size_draws():
    """``pm.set_data(..., coords=)`` grows a table and its release from 3 to 5 cells: the chain is
    that of the model built with 5 cells (same seed). Before, the table step sized the release by
    its length when the node was built (3), and its compiled moves read and wrote past it: the two
    new cells ignored their releases."""
    model = _resizable(3)
    with model:
        pm.set_data({"obs": RELEASE, "grid": np.arange(5)}, coords={"cell": range(5)})
    a = sample(model, draws=30, tune=10, chains=1, seed=2)
    b = sample(_resizable(5), draws=30, tune=10, chains=1, seed=2)
    assert a.posterior["c"].shape[-1] == 5
    for var in b.posterior.data_vars:
        np.testing.assert_array_equal(a.posterior[var].values, b.posterior[var].values)


def test_a_table_resized_without_its_release_is_refused_by_name():
    model = _resizable(3, release_dims=False)
    with model:
        pm.set_data({"grid": np.arange(5)}, coords={"cell": range(5)})  # the table grows, not s
        with pytest.raises(
            ValueError, match="release 's' holds 3 values but the table's cells map to 5 entries"
        ):
            pdp.TableCells([model["c"]])


def _data_total():
    with pm.Model() as model:
        n = pm.Data("n", 4)
        pi = pm.Dirichlet("pi", np.ones(K))
        _cells(pm.Multinomial("c", n=n, p=pi), observed=[0, 1, 6])
    return model


def test_a_multinomial_total_in_pm_data_sets_the_start_after_set_data():
    """The start of a Multinomial table (an even split of n) follows ``pm.set_data`` of its total.
    Before, it was the split of the total when the model was built, and the moves, which keep each
    row's total, sampled tables of 4 people for n = 6."""
    model = _data_total()
    with model:
        pm.set_data({"n": 6})
    assert model.initial_point()["c"].sum() == 6
    idata = sample(model, draws=20, tune=10, chains=1, seed=3)
    assert set(np.unique(idata.posterior["c"].values.sum(axis=-1))) == {6}


@pytest.mark.parametrize("route", ["default", "TableCells", "DirichletHyper"])
def test_a_start_whose_rows_do_not_sum_to_n_is_refused(route):
    """The table moves keep each row's total: a start with other totals (a user's initvals) would
    stay where the model has probability 0, so each table step refuses it at the chain's start."""
    model = _areas(False) if route == "DirichletHyper" else _data_total()
    bad = np.ones((G, K) if route == "DirichletHyper" else (K,), dtype=np.int64)
    step = None
    if route == "TableCells":
        step = lambda: [pdp.TableCells([model["c"]]), pm.Slice([model["pi"]])]  # noqa: E731
    with pytest.raises(ValueError, match="start of the Multinomial table 'c' has rows whose total"):
        sample(model, step, draws=2, tune=2, chains=1, seed=1, initvals={"c": bad})


@pytest.mark.parametrize(
    "mechanism",
    [pdp.TruncatedDiscreteLaplace(epsilon=1.0, delta=0.05), pdp.Staircase(epsilon=1.0)],
    ids=["TruncatedDiscreteLaplace", "Staircase"],
)
def test_a_table_under_a_mechanism_without_a_compiled_kernel_is_left_to_pymc_by_name(mechanism):
    """The table steps evaluate the noise in compiled code: a mechanism without a compiled kernel
    is refused at step assignment (PyMC's samplers, with the warning naming the mechanism) and by
    the constructors. Before, pm.sample() assigned DirichletCells and crashed building it."""
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(K))
        c = pm.Multinomial("c", n=4, p=pi)
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mechanism, observed=[3, 0, 1])
    name = type(mechanism).__name__
    with pytest.warns(UserWarning, match=f"'s' is made with {name}, which has no compiled noise"):
        steps = assigned(model)
    assert "Metropolis" in steps and "DirichletCells" not in steps
    with model, pytest.raises(ValueError, match=f"{name}, which has no compiled noise kernel"):
        pdp.TableCells([c])
