"""What DPObserved knows survives copies of the model (clone_model, pm.do, pm.observe,
cloudpickle), nested models are seen, and one Release is observed by one node (issue 20 item 4)."""

import pickle
import re

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from pymc.model.fgraph import clone_model

import pymc_dp as pdp
from tests.support.sampling import assigned

DELTA = 1e-6
STAT, MECH = pdp.Sum(-3, 3), pdp.Laplace(epsilon=1.0)


def _model(release=None):
    rng = np.random.default_rng(3)
    r = release if release is not None else pdp.release(rng.normal(size=8), STAT, MECH, rng=rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        x = pm.Normal("x", mu, 1.0, shape=8)
        pdp.DPObserved("s", x, statistic=STAT, mechanism=MECH, observed=r)
    return model, r


COPIES = {
    "clone_model": clone_model,
    "do": lambda m: pm.do(m, {"mu": 0.5}),
    "observe": lambda m: pm.observe(m, {"mu": 0.5}),
    "cloudpickle": lambda m: cloudpickle.loads(cloudpickle.dumps(m)),
}


@pytest.mark.parametrize("how", list(COPIES))
def test_copies_keep_the_nodes_and_the_account(how):
    """Old code: privacy_spent(copy) raised 'the model has no DPObserved node'."""
    model, r = _model()
    copy = COPIES[how](model)
    nodes = pdp.dp_nodes(copy)
    assert list(nodes) == ["s"]
    node = nodes["s"]
    assert node.rv is copy["s"] and node.data == (copy["x"],)
    assert node.release_id == r.release_id and node.n == 8
    assert float(pdp.privacy_spent(copy, delta=DELTA)) == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize("how", ["clone_model", "do"])
def test_pm_sample_on_a_copy_assigns_our_steps(how):
    """Old code: the copy's records went to PyMC's NUTS (our steps silently dropped)."""
    model, _ = _model()
    copy = COPIES[how](model)
    with copy:
        steps = assigned(copy)
    assert steps.get("DataAugmentation") == ["x"]


def test_pm_sample_runs_on_a_do_copy():
    model, _ = _model()
    copy = pm.do(model, {"mu": 0.5})
    with copy:
        idata = pm.sample(
            draws=5,
            tune=0,
            chains=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    stats = idata["sample_stats"] if hasattr(idata, "children") else idata.sample_stats
    assert "dp_accept_rate" in stats  # DataAugmentation ran on the copy's records


def test_copy_sampled_outside_a_context_warns():
    """pm.sample(model=copy) outside `with copy:` cannot find the copy: a warning, not silence."""
    model, _ = _model()
    copy = clone_model(model)
    with pytest.warns(UserWarning, match="its model is not known to pymc-dp"):
        steps = assigned(copy)
    assert "DataAugmentation" not in steps
    pdp.dp_nodes(copy)  # a copy read once is known
    assert assigned(copy).get("DataAugmentation") == ["x"]


def test_plain_pickle_of_a_model_raises():
    """PyMC models do not pickle with the standard pickle (PyMC's own limitation): it raises."""
    model, _ = _model()
    with pytest.raises(Exception):  # noqa: B017 - PyMC's error, not ours
        pickle.dumps(model)


def test_nested_model_nodes_reach_the_samplers():
    with pm.Model() as outer:
        mu = pm.Normal("mu", 0, 2)
        with pm.Model("sub"):
            x = pm.Normal("x", mu, 1.0, shape=5)
            pdp.DPObserved("s", x, statistic=STAT, mechanism=MECH, observed=1.0)
    assert list(pdp.dp_nodes(outer)) == ["sub::s"]
    with outer:
        assert assigned(outer).get("DataAugmentation") == ["sub::x"]


def test_same_release_in_two_nodes_refused():
    """Old code: accepted; the likelihood (and ε) of the release counted twice."""
    model, r = _model()
    with (
        model,
        pytest.raises(
            ValueError,
            match=re.escape("DPObserved 's2' observes the same Release as DPObserved 's'"),
        ),
    ):
        pdp.DPObserved("s2", model["x"], statistic=STAT, mechanism=MECH, observed=r)


def test_same_release_in_a_sibling_submodel_refused():
    rng = np.random.default_rng(0)
    r = pdp.release(rng.normal(size=4), STAT, MECH, rng=rng)
    with pm.Model():
        with pm.Model("a"):
            x = pm.Normal("x", 0, 1, shape=4)
            pdp.DPObserved("s", x, statistic=STAT, mechanism=MECH, observed=r)
        with pm.Model("b"), pytest.raises(ValueError, match=re.escape("observes the same Release")):
            y = pm.Normal("y", 0, 1, shape=4)
            pdp.DPObserved("s", y, statistic=STAT, mechanism=MECH, observed=r)


def test_equal_values_distinct_releases_accepted():
    rng = np.random.default_rng(0)
    x = rng.normal(size=4)
    r1 = pdp.release(x, STAT, MECH, rng=np.random.default_rng(1))
    r2 = pdp.release(x, STAT, MECH, rng=np.random.default_rng(1))
    assert float(r1) == float(r2)
    with pm.Model() as model:
        xs = pm.Normal("x", 0, 1, shape=4)
        pdp.DPObserved("s1", xs, statistic=STAT, mechanism=MECH, observed=r1)
        pdp.DPObserved("s2", xs, statistic=STAT, mechanism=MECH, observed=r2)
    assert float(pdp.privacy_spent(model, delta=DELTA)) == pytest.approx(2.0, abs=1e-4)


@pytest.mark.parametrize(
    "call, owner",
    [
        (lambda m: pdp.dp_nodes(m), "pdp.dp_nodes"),
        (lambda m: pdp.marginalize(m), "pdp.marginalize"),
        (lambda m: pdp.set_release({}, model=m), "pdp.set_release"),
        (lambda m: pdp.check_convergence(None, model=m), "pdp.check_convergence"),
    ],
)
def test_a_model_argument_that_is_not_a_model_is_named(call, owner):
    """pdp.marginalize("model") failed with "cannot create weak reference to 'str' object"."""
    with pytest.raises(TypeError, match=rf"{re.escape(owner)}: model must be a pm.Model.*got str"):
        call("model")
