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
