"""Per-row random streams (`pymc_dp.samplers.streams`) and the steps that run rows in parallel on
them (TableCells' Multinomial rows, DirichletHyper's π draw): the draws follow their laws, and the
same seed gives the same draws with 1 and 2 numba threads."""

import numba
import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.samplers import streams

two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")


@numba.njit(cache=True)
def _draws(seed, kind, a, n):
    states = streams.seed_states(np.array([seed], dtype=np.uint64))
    out = np.empty(n)
    for t in range(n):
        if kind == 0:
            out[t] = streams.uniform(states, 0)
        elif kind == 1:
            out[t] = streams.exponential(states, 0)
        elif kind == 2:
            out[t] = streams.normal(states, 0)
        else:
            out[t] = np.exp(streams.log_gamma(states, 0, a))
    return out


@pytest.mark.parametrize(
    "kind, a, law",
    [
        (0, 0.0, stats.uniform()),
        (1, 0.0, stats.expon()),
        (2, 0.0, stats.norm()),
        (3, 0.05, stats.gamma(0.05)),
        (3, 0.7, stats.gamma(0.7)),
        (3, 1.0, stats.gamma(1.0)),
        (3, 3.5, stats.gamma(3.5)),
        (3, 40.0, stats.gamma(40.0)),
    ],
)
def test_stream_draws_follow_their_law(kind, a, law):
    # 100,000 draws: a KS test detects a 0.6 % shift of the CDF; seeds fixed, level 1e-4
    x = _draws(np.uint64(12345 + kind * 7 + int(a * 100)), kind, a, 100_000)
    assert stats.kstest(x, law.cdf).pvalue > 1e-4


def test_stream_ks_check_catches_a_wrong_shape():
    """Control: the same check refuses Gamma(3.5) draws tested as Gamma(3.6)."""
    x = _draws(np.uint64(12345 + 3 * 7 + 350), 3, 3.5, 100_000)
    assert stats.kstest(x, stats.gamma(3.6).cdf).pvalue < 1e-4


def test_row_seeds_come_from_the_generator():
    a = streams.row_seeds(np.random.default_rng(4), 5)
    assert a.dtype == np.uint64 and np.array_equal(
        a, streams.row_seeds(np.random.default_rng(4), 5)
    )
    assert not np.array_equal(a, streams.row_seeds(np.random.default_rng(5), 5))


def _with_threads(n, fn):
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        return fn()
    finally:
        numba.set_num_threads(old)


@two_threads
def test_dirichlet_rows_same_with_one_and_two_threads():
    rng = np.random.default_rng(0)
    base = rng.gamma(0.5, size=7)
    add = rng.poisson(2.0, size=(40, 7))
    seeds = streams.row_seeds(rng, 40)

    def draw():
        out = np.empty((40, 6))
        streams.dirichlet_rows_simplex_streams(seeds, base, add, out)
        return out

    one, two = _with_threads(1, draw), _with_threads(2, draw)
    assert np.array_equal(one, two) and np.all(np.isfinite(one))


def _areas_model(g=12, k=5):
    rng = np.random.default_rng(3)
    noisy = rng.poisson(3.0, size=(g, k))
    with pm.Model() as model:
        base = pm.Dirichlet("base", np.ones(k))
        alpha = pm.LogNormal("alpha", np.log(k), 1.0)
        pi = pm.Dirichlet("pi", alpha * base, shape=(g, k))
        c = pm.Multinomial("c", n=np.full(g, 15), p=pi, shape=(g, k))
        pdp.DPObserved(
            "s", c, statistic=pdp.Cells(), mechanism=pdp.DiscreteGaussian(sigma=1.5), observed=noisy
        )
    return model


@two_threads
def test_areas_steps_same_with_one_and_two_threads():
    """TableCells (rows in parallel) and DirichletHyper (π's rows in parallel) from the same seed
    give the same chain with 1 and 2 threads."""
    model = _areas_model()

    def chain():
        with model:
            tc = pdp.TableCells([model["c"]], rng=np.random.default_rng(7))
            dh = pdp.DirichletHyper(
                [model["alpha"], model["base"], model["pi"]], rng=np.random.default_rng(8)
            )
        assert tc.parallel_rows
        point = model.initial_point(0)
        out = []
        for _ in range(4):
            for step in (dh, tc):
                point, _ = step.step(point)
            out.append(np.concatenate([np.ravel(point[n]) for n in sorted(point)]))
        return np.array(out)

    one, two = _with_threads(1, chain), _with_threads(2, chain)
    assert np.array_equal(one, two)
    assert not np.array_equal(one[-1], one[-2])  # the chain moved


def test_table_cells_rows_not_parallel_when_a_margin_mixes_rows():
    with pm.Model():
        c = pm.Multinomial("c", n=np.array([5, 4]), p=np.full((2, 3), 1 / 3), shape=(2, 3))
        pdp.DPObserved(
            "cols",
            c,
            statistic=pdp.Marginals((1,), shape=(2, 3)),
            mechanism=pdp.DiscreteGaussian(sigma=1.0),
            observed=np.array([3, 3, 3]),
        )
        assert not pdp.TableCells([c]).parallel_rows
