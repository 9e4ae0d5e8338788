"""DirichletCells: what pm.sample() gives it, what it refuses (naming the problem), one step's
invariants. Exactness against enumeration: tests/statistical/samplers/test_dirichlet_cells.py."""

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.sampling import assigned

MECH = pdp.DiscreteGaussian(sigma=2.0)


def _model(conc=None, *, shape=(3,), n=20, margins=False, extra_child=False):
    with pm.Model() as model:
        a = np.array([1.0, 0.5, 2.0]) if conc is None else conc(model)
        pi = pm.Dirichlet("pi", a, shape=shape)
        c = pm.Multinomial("c", n=n, p=pi, shape=shape)
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=MECH, observed=np.full(shape, 4))
        if margins:
            pdp.DPObserved(
                "t",
                c,
                statistic=pdp.Marginals(()),
                mechanism=MECH,
                observed=np.array(float(np.sum(np.broadcast_to(n, shape[:-1])))),
            )
        if extra_child:
            pm.Multinomial("y", n=5, p=pi, shape=shape, observed=np.broadcast_to([1, 2, 2], shape))
    return model


def test_pm_sample_assigns_pi_and_table_together():
    assert assigned(_model()) == {"DirichletCells": ["c", "pi_simplex__"]}
    assert assigned(_model(shape=(4, 3), n=np.array([5, 6, 7, 8]))) == {
        "DirichletCells": ["c", "pi_simplex__"]
    }


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(conc=lambda m: pm.HalfNormal("tau", 1.0) * np.ones(3)),
            r"reads the free parameters \['tau'\].*pdp\.DirichletHyper",
        ),
        (
            dict(margins=True, shape=(2, 3), n=np.array([5, 6])),  # a grand total over 2 areas
            "sums cells of several rows",
        ),
        (dict(extra_child=True), "must have one child, a latent pm.Multinomial table"),
        (
            dict(conc=lambda m: np.array([[1.0, 1.0, 1.0], [2.0, 1.0, 1.0]]), shape=(2, 3)),
            "differs between rows",
        ),
    ],
)
def test_refusals_name_the_problem_and_leave_the_default_alone(kwargs, message):
    model = _model(**kwargs)
    with model, pytest.raises(ValueError, match=message):
        pdp.DirichletCells([model["pi"], model["c"]])
    assert "DirichletCells" not in assigned(model)


def test_pi_or_table_alone_and_other_variables_are_refused():
    model = _model()
    with model:
        with pytest.raises(
            ValueError, match=r"only together with its Dirichlet.*pass pdp\.TableCells\(\[c\]\)"
        ):
            pdp.DirichletCells([model["c"]])
        with pytest.raises(ValueError, match=r"pass each with its Multinomial table c"):
            pdp.DirichletCells([model["pi"]])
        with pytest.raises(ValueError, match=r"reps must be an integer >= 1, got reps=0"):
            pdp.DirichletCells([model["pi"], model["c"]], reps=0)
        with pytest.raises(ValueError, match=r"width must be an integer >= 1 or None"):
            pdp.DirichletCells([model["pi"], model["c"]], width=0.5)
    with pm.Model():
        mu = pm.Normal("mu")
        pi = pm.Dirichlet("pi", np.ones(3))
        c = pm.Multinomial("c", n=4, p=pi)
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=MECH, observed=np.ones(3))
        pm.Normal("y", mu, observed=0.0)
        with pytest.raises(ValueError, match=r"got \['mu'\]\. Pass vars=\[pi, c\]"):
            pdp.DirichletCells([pi, c, mu])


def test_step_keeps_row_totals_and_leaves_the_given_point_alone():
    model = _model(shape=(2, 3), n=np.array([7, 9]))
    with model:
        step = pdp.DirichletCells([model["pi"], model["c"]], rng=np.random.default_rng(0))
    step.start_chain()
    given = model.initial_point()
    copies = {k: v.copy() for k, v in given.items()}
    point = given
    for _ in range(3):
        point, stats = step.step(point)
        assert np.array_equal(point["c"].sum(axis=-1), [7, 9])
        assert point["pi_simplex__"].shape == copies["pi_simplex__"].shape
        assert 0.0 < stats[0]["dp_accept_rate"] <= 1.0
    assert not np.array_equal(point["c"], copies["c"])  # it moved
    for k, v in copies.items():  # cores > 1: a step never writes into the arrays it was given
        np.testing.assert_array_equal(given[k], v)


def test_a_step_given_for_pi_alone_gets_a_message_naming_table_cells():
    """pm.sample(step=ConjugateTheta([pi])) leaves c to the registered steps: DirichletCells is
    competent for it but cannot move it alone, and says what to pass."""
    model = _model()
    with model, pytest.raises(ValueError, match=r"pdp\.TableCells\(\[c\]\) for the table too"):
        pm.sample(step=[pdp.ConjugateTheta([model["pi"]])], draws=5, tune=5, chains=1)
    with model:
        idata = pm.sample(
            step=[pdp.ConjugateTheta([model["pi"]]), pdp.TableCells([model["c"]])],
            draws=5,
            tune=5,
            chains=1,
            progressbar=False,
            random_seed=1,
        )
    assert idata.posterior["c"].shape == (1, 5, 3)
