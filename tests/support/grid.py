"""A tiny Monte Carlo grid for the `map_units` / `select_statistic(workers=...)` tests: module-level
so Dask workers can import it."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

import pymc_dp as pdp
from pymc_dp.fisher import Candidate, normal_variance_example

A, N = 10.0, 100


def noisy_mean(unit, rng) -> float:
    """One cell of a grid: the mean of ``unit[1]`` normal draws plus Laplace noise."""
    _, size = unit
    return float(rng.normal(size=size).mean() + rng.laplace())


def candidates(n_outer=40):
    """|x| against x² released by Laplace(ε = 1), each scored by a normal-approximation Monte Carlo."""
    return [
        Candidate(
            f"a={a}",
            statistic=pdp.Mean(lower=0, upper=A**a, fn=lambda x, a=a: pt.abs(x) ** a),
            mechanism=pdp.Laplace(epsilon=1.0),
            moments=normal_variance_example(a),
            n=N,
            options=dict(method="normal_approx_mc", n_outer=n_outer, n_inner=40),
        )
        for a in (1, 2)
    ]


def selection_values(sel) -> dict:
    """Everything random in a Selection, as arrays (for equality across runs)."""
    return {
        **{f"F[{k}]": np.asarray(v) for k, v in sel.fisher.items()},
        **{f"se[{k}]": np.asarray(v) for k, v in sel.stderr.items()},
    }


def fails_on_two(unit, rng):
    """A grid cell that raises for unit 2 (a bad cell must stop the grid with its own error)."""
    if unit == 2:
        raise ValueError("unit 2 has no data")
    return unit
