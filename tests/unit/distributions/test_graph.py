"""The one graph-query module answers on a model whose answers are known by construction."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt

import pymc_dp as pdp
from pymc_dp.distributions import graph

STAT, MECH = pdp.Sum(-3, 3), pdp.Laplace(epsilon=1.0)


def _model():
    rng = np.random.default_rng(5)
    r = pdp.release(rng.normal(size=6), STAT, MECH, rng=rng)
    r2 = pdp.release(rng.normal(size=6), STAT, MECH, rng=rng)
    r3 = pdp.release(rng.normal(size=6), STAT, MECH, rng=rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        tau = pm.HalfNormal("tau", 1)
        k = pm.Poisson("k", 3)  # discrete: not a continuous parent
        w = pm.Deterministic("w", 2 * mu)
        x = pm.Normal("x", w + k, tau, shape=6)  # reads mu through w: w is no RV
        y = pm.Normal("y", x, 1.0, shape=6)  # a record that reads another record
        pdp.DPObserved("s", x, statistic=STAT, mechanism=MECH, observed=r)
        pdp.DPObserved("s2", y, statistic=STAT, mechanism=MECH, observed=r2)
        pdp.DPObserved("s3", x, statistic=STAT, mechanism=MECH, observed=r3)
    return model


def test_records_fed_to_releases_once_each_in_node_order():
    model = _model()
    nodes = pdp.dp_nodes(model)
    names = [v.name for v in graph.released_records(nodes)]
    assert names == ["x", "y"]
    assert [v.name for v in graph.free_records(model, nodes)] == ["x", "y"]
    assert sorted(graph.nodes_reading(nodes, model["x"])) == ["s", "s3"]
    assert list(graph.nodes_reading(nodes, model["mu"])) == []


def test_direct_parents_stop_at_random_variables():
    model = _model()
    assert [v.name for v in graph.direct_parents(model, [model["x"]])] == ["mu", "tau", "k"]
    assert [v.name for v in graph.direct_parents(model, model["x"], continuous=True)] == [
        "mu",
        "tau",
    ]
    # y reads mu and tau only through x: its one direct parent is x
    assert [v.name for v in graph.direct_parents(model, [model["y"]])] == ["x"]
    up = graph.direct_upstream(model, model["y"].owner.inputs)
    assert model["x"] in up and model["mu"] not in up


def test_direct_children_are_the_terms_reading_theta_directly():
    model = _model()
    mu, tau, x, y = model["mu"], model["tau"], model["x"], model["y"]
    # x reads mu through the Deterministic w (no RV): a child; y reads mu only through x: not
    assert graph.direct_children(model, mu) == [x]
    assert graph.direct_children(model, [x]) == [y, model["s"], model["s3"]]
    assert graph.direct_children(model, [mu, tau]) == [x]  # once, the variables left out
    assert graph.direct_children(model, [mu, x]) == [y, model["s"], model["s3"]]
    with model:
        pot = pm.Potential("pot", pt.sum(y) * mu)  # a potential is its own term
    assert graph.direct_children(model, mu) == [x, pot]
    assert graph.direct_children(model, y) == [model["s2"], pot]


def test_what_depends_on_theta():
    model = _model()
    mu, x, y, tau = model["mu"], model["x"], model["y"], model["tau"]
    assert graph.depends_on(y, [mu])  # through x
    assert not graph.depends_on(x, [y])
    assert graph.reads([y], [tau, y, model["k"], mu]) == [tau, y, model["k"], mu]
    assert graph.reads(mu, [tau, x]) == []
    assert mu in graph.upstream([y]) and y in graph.upstream(y)


def test_is_constant():
    a = pt.constant(2.0) * pt.constant(3.0)
    assert graph.is_constant(a)
    assert not graph.is_constant(a * pt.dscalar("v"))


def test_fixed_shape_reads_dims_and_data_as_they_are_now_and_folds_once(monkeypatch):
    """`fixed_shape` of lengths left open by ``dims=`` and ``pm.Data``: the lengths the model holds
    at each call (after ``pm.set_data`` too); the shape's graph folded once per variable (each
    fold is a rewrite pass, about 25 ms, and step assignment asks for the same shapes dozens of
    times); None for a length that depends on a random variable; a ``pm.Data`` variable's own
    reader is not kept (it would keep the variable and its values alive)."""
    from pymc import pytensorf

    folds = []
    fold = pytensorf.constant_fold
    monkeypatch.setattr(
        pytensorf, "constant_fold", lambda *a, **k: folds.append(1) or fold(*a, **k)
    )
    with pm.Model(coords={"area": range(4), "cell": range(3)}) as model:
        n = pm.Data("n", np.full(4, 5), dims="area")
        pi = pm.Dirichlet("pi", np.ones(3), dims=("area", "cell"))
        c = pm.Multinomial("c", n=n, p=pi, dims=("area", "cell"))
        x = pm.Normal("x", 0, 1, shape=n.shape)
        z = pm.Normal("z", 0, 1, shape=(pm.math.switch(x.sum() > 0, 3, 2),))
    assert c.type.shape == (None, 3)  # the length is open in the graph
    assert [graph.fixed_shape(v) for v in (c, pi, x, z, n)] == [(4, 3), (4, 3), (4,), None, (4,)]
    assert len(folds) == 5
    assert [graph.fixed_shape(v) for v in (c, pi, x, z)] == [(4, 3), (4, 3), (4,), None]
    assert len(folds) == 5  # nothing folded again
    with model:
        pm.set_data({"n": np.full(6, 5)}, coords={"area": range(6)})
    assert [graph.fixed_shape(v) for v in (c, pi, x, z, n)] == [(6, 3), (6, 3), (6,), None, (6,)]
    assert len(folds) == 6  # n's own shape: folded at each call, its reader not kept
    assert n not in graph._SHAPE_READERS and c in graph._SHAPE_READERS
