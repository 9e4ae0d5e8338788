"""Shared pieces of the count-table exactness tests: enumerating tables, running TableCells alone."""

import itertools

import numpy as np

import pymc_dp as pdp


def compositions(n, k):
    """Every table of k non-negative counts with total n (stars and bars)."""
    for cut in itertools.combinations(range(n + k - 1), k - 1):
        edges = (-1, *cut, n + k - 1)
        yield np.array([edges[i + 1] - edges[i] - 1 for i in range(k)])


def run_table_cells(model, n_iter, seed, **step_kwargs):
    """Draws of ``model["c"]`` (flattened) from `pdp.TableCells` alone: 2 chains × ``n_iter`` after
    200 warm-up iterations, chain ``c`` seeded ``[seed, c]`` from ``initial_point(random_seed=c)``."""
    with model:
        step = pdp.TableCells([model["c"]], **step_kwargs)
    out = []
    for chain in range(2):
        step.set_rng(np.random.default_rng([seed, chain]))
        point = model.initial_point(random_seed=chain)
        draws = []
        for it in range(n_iter + 200):
            point, _ = step.step(point)
            if it >= 200:
                draws.append(np.ravel(point["c"]).copy())
        out.append(draws)
    return np.asarray(out)
