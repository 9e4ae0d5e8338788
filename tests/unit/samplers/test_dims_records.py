"""Records whose count comes from ``dims=`` and is changed by ``model.set_dim`` (or
``pm.set_data(..., coords=)``) after the ``DPObserved`` node was built.

PyMC compiles ``pm.sample()``'s functions with the lengths the coords hold when it samples. The
node's record count was fixed when it was built. A node whose density does not depend on the count
(``Sum``, ``Counts``, ...) now follows the new count: every route draws what a model built at the
new size draws, from the same seed. A node whose noise was calibrated for the old count (``Mean``:
sensitivity (upper - lower)/n) is refused by name: before, it sampled a silently wrong posterior
(E[mu] 0.64 against 0.96 in the case below)."""

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.sampling import sample

SUM = pdp.Sum(-3.0, 3.0)


def _normal(n, release, statistic=SUM):
    with pm.Model(coords={"obs": range(n)}) as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        x = pm.Normal("x", mu, 1.0, dims="obs")
        rel = pm.Data("rel", np.asarray(release, dtype=float))
        pdp.DPObserved(
            "s", x, statistic=statistic, mechanism=pdp.Laplace(epsilon=1.0), observed=rel
        )
    return model


def _bernoulli(n, release):
    with pm.Model(coords={"obs": range(n)}) as model:
        p = pm.Beta("p", 1.0, 1.0)
        x = pm.Bernoulli("x", p, dims="obs")
        rel = pm.Data("rel", np.asarray(release, dtype="int64"))
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(0, 1),
            mechanism=pdp.DiscreteLaplace(epsilon=1.0),
            observed=rel,
        )
    return model


def _resized(build, release_small, release):
    model = build(5, release_small)
    with model:
        pm.set_data({"rel": np.asarray(release, dtype=model["rel"].dtype)})
    model.set_dim("obs", 8, coord_values=range(8))
    return model


STEPS = {
    "default": (_normal, 9.0, None),
    "DataAugmentation": (_normal, 9.0, lambda: pdp.DataAugmentation()),
    "MHAAR": (_normal, 9.0, lambda: [pdp.MHAAR([pm.modelcontext(None)["mu"]])]),
    "PMMH": (_normal, 9.0, lambda: [pdp.PMMH([pm.modelcontext(None)["mu"]])]),
    "Collapsed": (_bernoulli, 6, None),
}


@pytest.mark.parametrize("route", list(STEPS))
def test_records_resized_by_set_dim_draw_what_a_model_built_at_that_size_draws(route):
    build, release, step = STEPS[route]
    small = build(5, release)
    got = sample(_resized(build, release, release), step, draws=60, tune=40, seed=3)
    want = sample(build(8, release), step, draws=60, tune=40, seed=3)
    del small
    assert got.posterior["x"].shape[-1] == 8
    for name in want.posterior.data_vars:
        np.testing.assert_array_equal(got.posterior[name].values, want.posterior[name].values)


def test_a_mean_whose_noise_was_calibrated_for_another_count_is_refused_by_name():
    model = _resized(lambda n, r: _normal(n, r, pdp.Mean(-3.0, 3.0)), 0.6, 1.1)
    with pytest.raises(ValueError, match=r"now hold 8 records.*calibrated for n=5.*pdp\.Sum"):
        sample(model, draws=10, tune=10, seed=1)


def test_a_release_from_another_count_is_refused_after_resizing():
    rng = np.random.default_rng(0)
    with pm.Model(coords={"obs": range(5)}) as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        x = pm.Normal("x", mu, 1.0, dims="obs")
        first = pdp.release(rng.normal(size=5), SUM, pdp.Laplace(epsilon=1.0), rng=rng)
        rel = pdp.ReleaseData("rel", first)
        pdp.DPObserved("s", x, statistic=SUM, mechanism=pdp.Laplace(epsilon=1.0), observed=rel)
    model.set_dim("obs", 8, coord_values=range(8))
    with pytest.raises(ValueError, match=r"Release computed from n=5 records.*now hold n=8"):
        sample(model, draws=10, tune=10, seed=1)
    # the release made from the 8 records: it samples
    new = pdp.release(rng.normal(size=8), SUM, pdp.Laplace(epsilon=1.0), rng=rng)
    pdp.set_release({"rel": new}, model=model)
    idata = sample(model, draws=10, tune=10, seed=1)
    assert idata.posterior["x"].shape[-1] == 8
