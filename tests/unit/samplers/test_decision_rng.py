"""Library decisions draw from the step's generator (no seed of their own)."""

import numpy as np

import pymc_dp as pdp
from pymc_dp._checks import child_rng
from tests.support.models import clamped_model


def test_child_rng_leaves_the_parent_stream_alone():
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    child = child_rng(a)
    assert a.random() == b.random()  # spawning consumed nothing
    assert child.random() != np.random.default_rng(3).random()
    assert child_rng(5).random() == child_rng(5).random()  # int seeds: reproducible
    assert child_rng(5).random() != np.random.default_rng(5).random()  # not the step's own stream


def test_weakness_ratio_comes_from_the_step_generator():
    model, *_ = clamped_model(50, 0.1)
    with model:
        ratios = [
            pdp.DataAugmentation(rng=seed).interweave_decisions[0]["ratio"] for seed in (1, 1, 2)
        ]
    assert ratios[0] == ratios[1] and ratios[0] != ratios[2]
    # noise sd √2·60 = 85 against sd(Σ clip x) ≈ √50·0.98 ≈ 7: r ≈ 12, precise from Σ_i Var t_i
    assert all(10.0 < r < 14.5 for r in ratios)


def test_construction_probes_do_not_change_the_draws():
    """PMMH's construction probes (the record block's factorisation check at a point drawn from the
    step's generator, the shape probe `layout_point` at a random ``initval="prior"``) draw from
    children of ``rng``: two construction generators give the same chain for one sampling seed."""
    import pymc as pm

    from pymc_dp.samplers.points import layout_point

    with pm.Model() as model:
        th = pm.Normal("th", 0.0, 2.0, initval="prior")
        x = pm.Normal("x", th, 1.0, shape=6)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.RecordSum(lambda x: x, sensitivity=1.0),
            mechanism=pdp.Laplace(scale=1.0),
            observed=3.0,
        )
    a, b = layout_point(model), layout_point(model)
    assert a["th"] != b["th"] and a["th"].shape == b["th"].shape  # random values, one layout
    draws = []
    for construction in (1, 2):
        with model:
            step = pdp.PMMH([th], n_particles=4, rng=construction)
            idata = pm.sample(
                draws=15,
                tune=15,
                chains=1,
                step=[step],
                random_seed=5,
                progressbar=False,
                compute_convergence_checks=False,
            )
        draws.append(idata.posterior["th"].values)
    np.testing.assert_array_equal(draws[0], draws[1])
    assert np.unique(draws[0]).size > 1  # the chain moved
