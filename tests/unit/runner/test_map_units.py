"""`pdp.runner.map_units` and the grids that run through it: the same results in this process and on
any number of Dask workers (each unit draws from its own generator)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pymc_dp.fisher import select_statistic
from pymc_dp.runner import map_units, unit_seed
from tests.support import grid as G

UNITS = [("cell", k) for k in (5, 50, 500)]


def test_each_unit_draws_from_its_own_generator_in_this_process():
    out = map_units(G.noisy_mean, UNITS, seed=7, n_workers=0)
    want = [G.noisy_mean(u, np.random.default_rng(unit_seed(7, u))) for u in UNITS]
    assert out == want
    # the same unit gives the same result whatever the other units and their order
    again = map_units(G.noisy_mean, UNITS[::-1][:2], seed=7, n_workers=0)
    assert again == want[::-1][:2]
    assert map_units(G.noisy_mean, UNITS, seed=8, n_workers=0) != out


def test_a_failing_unit_raises_its_own_error():
    def fn(unit, rng):
        if unit == 2:
            raise ValueError("unit 2 has no data")
        return unit

    with pytest.raises(ValueError, match="unit 2 has no data"):
        map_units(fn, [1, 2, 3], n_workers=0)
    with pytest.raises(ValueError, match="n_workers must be an int >= 0"):
        map_units(fn, [1], n_workers=-1)
    with pytest.raises(TypeError, match="fn must be a function"):
        map_units(3, [1], n_workers=0)


@pytest.mark.parametrize(
    "kwargs, msg",
    [
        ({"batch_size": -1}, "batch_size must be an int >= 1 (units per Dask task; not a bool)"),
        ({"batch_size": 0}, "got batch_size=0. Pass e.g. batch_size=4, or None"),
        ({"batch_size": 2.5}, "got batch_size=2.5."),
        ({"batch_size": True}, "got batch_size=True."),
        ({"n_workers": True}, "n_workers must be an int >= 0 (not a bool), got n_workers=True."),
        ({"n_workers": 1.5}, "got n_workers=1.5. Use 0 to run in this process"),
    ],
)
def test_batch_size_and_n_workers_are_checked_up_front(kwargs, msg):
    """batch_size=-1 submitted nothing and returned [None, ...]; 2.5 raised a bare TypeError on
    the first batch; 0 meant the default; n_workers=True started one worker."""
    with pytest.raises(ValueError, match=re.escape(msg)):
        map_units(G.noisy_mean, UNITS, **{"n_workers": 0, **kwargs})


def test_select_statistic_draws_per_candidate_and_point():
    kw = dict(theta=[1.0, 2.0], max_seconds=None)
    a = select_statistic(G.candidates(), rng=np.random.default_rng(3), **kw)
    b = select_statistic(G.candidates(), rng=np.random.default_rng(3), workers=0, **kw)
    for k, v in G.selection_values(a).items():
        np.testing.assert_array_equal(v, G.selection_values(b)[k], err_msg=k)
    # a point's estimate depends on the candidate, the point's index and rng alone
    other = select_statistic(
        G.candidates(), rng=np.random.default_rng(3), theta=[1.0, 5.0], max_seconds=None
    )
    assert other.fisher["a=1"][0] == a.fisher["a=1"][0]
    assert other.fisher["a=1"][1] != a.fisher["a=1"][1]
    assert a.best == "a=1"
    with pytest.raises(ValueError, match="workers must be an int >= 0"):
        select_statistic(G.candidates(), workers=-2, **kw)


@pytest.mark.slow
@pytest.mark.heavy
def test_the_same_results_on_a_two_worker_cluster():
    from distributed import Client

    from pymc_dp.runner import local_cluster

    kw = dict(theta=[1.0, 2.0], max_seconds=None)
    here = select_statistic(G.candidates(), rng=np.random.default_rng(3), **kw)
    cells = map_units(G.noisy_mean, UNITS, seed=7, n_workers=0)
    with local_cluster(2) as cluster, Client(cluster) as client:
        there = select_statistic(G.candidates(), rng=np.random.default_rng(3), client=client, **kw)
        assert map_units(G.noisy_mean, UNITS, seed=7, client=client, batch_size=1) == cells
        with pytest.raises(ValueError, match="unit 2 has no data"):
            map_units(G.fails_on_two, [1, 2, 3], client=client, batch_size=1)
        workers = client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 2
    for k, v in G.selection_values(here).items():
        np.testing.assert_array_equal(v, G.selection_values(there)[k], err_msg=k)
    assert there.best == here.best
