"""`select_statistic` takes θ grids and draws in their documented shapes, never reshaped.

A (2, 3) grid for a scalar θ used to be flattened into six points without a word (the user meant
something else: two points of a 3-parameter model), and a (3, 2) grid for a 3-parameter model was
reshaped into (2, 3).
"""

import numpy as np
import pytest

import pymc_dp as pdp
from pymc_dp.fisher import Candidate, normal_variance_example


def _scalar():
    return [
        Candidate(
            f"|x|^{a}",
            moments=normal_variance_example(a),
            n=100,
            mechanism=pdp.Gaussian(sigma=10.0**a / 100),
        )
        for a in (1, 2)
    ]


def test_a_matrix_grid_for_a_scalar_theta_is_refused():
    with pytest.raises(ValueError, match=r"theta must have shape \(G,\).*\(2, 3\)"):
        pdp.select_statistic(_scalar(), theta=np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"theta_samples must have shape \(G,\)"):
        pdp.select_statistic(_scalar(), theta_samples=np.ones((4, 2)))


def test_scalar_grids_as_vectors_or_columns_agree():
    a = pdp.select_statistic(_scalar(), theta=[1.0, 2.0])
    b = pdp.select_statistic(_scalar(), theta=[[1.0], [2.0]])
    assert a.scores == b.scores and a.best == b.best
