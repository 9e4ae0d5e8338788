"""Building the table steps does no work per released value in Python (issue 18 item 4: set-up
independent of G).

Before, the steps of a (G, K) table compiled a cast of its releases, which PyTensor constant-folds
one value at a time in Python (``Elemwise.perform``), and `DirichletHyper`'s check of the
concentration broadcast it to ``pi.shape``, a graph that draws π (G·K Dirichlet values) at each
of the four checks of step assignment: 5 s of a 6.6 s set-up at G = 1,000, K = 2,016. The test
watches PyTensor's Python implementations while ``pm.sample()`` assigns the steps and they are
built, and fails on any draw of a random variable or any elementwise Python loop over an array the
size of the table; and that the pair moves' compiled code is cached on disk (it was compiled
again, about 6 s, in every process), as the row sweeps' is."""

import numpy as np
import pymc as pm
import pytest
from numba.core import types
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.random.op import RandomVariable

import pymc_dp as pdp
from tests.support.sampling import assigned

G, K = 40, 25


def _watch(monkeypatch):
    """A list that collects, from now on, every draw of a random variable and every Python
    elementwise loop over at least G·K values."""
    seen = []
    perform_elemwise, perform_rv = Elemwise.perform, RandomVariable.perform

    def elemwise(self, node, inputs, output_storage):
        if any(np.size(x) >= G * K for x in inputs):
            seen.append(f"{self} over {[np.shape(x) for x in inputs]}")
        return perform_elemwise(self, node, inputs, output_storage)

    def rv(self, node, inputs, output_storage):
        seen.append(f"a draw of {self}")
        return perform_rv(self, node, inputs, output_storage)

    monkeypatch.setattr(Elemwise, "perform", elemwise)
    monkeypatch.setattr(RandomVariable, "perform", rv)
    return seen


def _released(name, c, statistic, shape, seed):
    """A release of ``c`` by ``statistic`` (integers 0 … 5 as the noisy values)."""
    noisy = np.random.default_rng(seed).integers(0, 6, size=shape)
    mechanism = pdp.DiscreteGaussian(sigma=2.0)
    pdp.DPObserved(name, c, statistic=statistic, mechanism=mechanism, observed=noisy)


def _table(pi):
    return pm.Multinomial("c", n=np.full(G, 30), p=pi, shape=(G, K))


def _areas():  # rows around a shared Dirichlet mean: DirichletHyper, cells included
    with pm.Model() as model:
        base = pm.Dirichlet("base", np.ones(K))
        alpha = pm.LogNormal("alpha", np.log(K), 1.0)
        c = _table(pm.Dirichlet("pi", alpha * base, shape=(G, K)))
        _released("s", c, pdp.Cells(), (G, K), 0)
    return model


def _margin():  # a table with a margin too: ConjugateTheta + TableCells
    with pm.Model() as model:
        c = _table(pm.Dirichlet("pi", np.ones(K), shape=(G, K)))
        _released("s", c, pdp.Cells(), (G, K), 1)
        _released("m", c, pdp.Marginals((1,)), K, 2)
    return model


@pytest.mark.parametrize(
    "build, steps",
    [
        (_areas, {"DirichletHyper": ["alpha_log__", "base_simplex__", "c", "pi_simplex__"]}),
        (_margin, {"ConjugateTheta": ["pi_simplex__"], "TableCells": ["c"]}),
    ],
)
def test_step_assignment_and_build_do_no_python_work_per_release(build, steps, monkeypatch):
    model = build()
    seen = _watch(monkeypatch)
    assert assigned(model) == steps
    with model:
        if "DirichletHyper" in steps:
            pdp.DirichletHyper([model["alpha"], model["base"], model["pi"], model["c"]])
        else:
            pdp.TableCells([model["c"]])
    assert seen == []


def test_the_watch_sees_a_python_cast_and_a_draw(monkeypatch):
    """The control: the two kinds of work the test above must not find are seen when done in
    Python. (Under PyTensor 3, Python 3.12, functions compiled in the default mode draw in numba,
    out of the watch's sight: there the test above catches the cast only; the draws are caught
    on Python 3.11.)"""
    import pytensor
    import pytensor.tensor as pt

    seen = _watch(monkeypatch)
    data = pt.constant(np.arange(G * K))
    pytensor.function([], pt.cast(data, "float64"))()
    pm.draw(pm.Dirichlet.dist(np.ones(K)), random_seed=0, mode="FAST_COMPILE")
    assert any("Cast" in s for s in seen)
    assert any("dirichlet" in s for s in seen)


def _uncacheable(*dispatchers):
    """The compiled overloads of ``dispatchers`` that numba cannot reuse from its disk cache in
    another process: one holding a dynamic global, or one whose signature holds a function (a
    dispatcher passed as an argument: its type is keyed by the object of this process)."""
    out = []
    for f in dispatchers:
        assert f.overloads, f"{f.__name__} was not compiled"
        for sig, res in f.overloads.items():
            passed = any(isinstance(t, (types.Dispatcher, types.FunctionType)) for t in sig)
            if passed or res.library.has_dynamic_globals:
                out.append(f"{f.__name__}{sig}")
    return out


def test_pair_moves_compiled_code_is_cacheable():
    """`DirichletHyper`'s pair moves compile to code numba can cache on disk: none holds a dynamic
    global (a dispatcher object passed to `slice.shrink_1d` was one, and numba then compiled the
    moves again in every process: about 6 s at the second iteration of each ``pm.sample()``)."""
    from pymc_dp.samplers import dirichlet_hyper as dh

    model = _areas()
    with model:
        step = pdp.DirichletHyper([model["alpha"], model["base"], model["pi"], model["c"]])
    step.set_rng(np.random.default_rng(0))
    point = model.initial_point(0)
    for _ in range(3):  # the column and base pair moves run from the second iteration
        point, _ = step.step(point)
    assert _uncacheable(dh._pairs_serial, dh._base_pairs_serial) == []


def test_row_sweeps_compiled_code_is_cacheable():
    """The pair moves of multinomial and Dirichlet-multinomial rows (`TableCells`, and
    `DirichletHyper` with ``moves="pairs"``) are cached on disk too. They took the row's law as
    a numba function argument, which numba compiled again in every process (about 5 s each at a
    table step's first iteration, in every chain's process of ``pm.sample(cores=...)``). Serial
    loops only: a process that has run numba threads cannot fork (`streams.use_threads`), and the
    threaded loop takes the same arguments."""
    from pymc_dp.mechanisms.base import GAUSSIAN_KERNEL
    from pymc_dp.samplers import cells

    rng = np.random.default_rng(0)
    c = rng.multinomial(20, np.full(K, 1 / K), size=G).reshape(-1)
    r = c + rng.integers(-2, 3, size=c.size).astype(np.float64)
    s, idx = c.astype(np.float64), np.arange(G * K).reshape(1, -1)
    release = (np.array([GAUSSIAN_KERNEL]), np.array([0.1]), np.array([0.0]), r, s, idx)
    seeds = np.arange(G, dtype=np.uint64)
    logs = np.append(0.0, np.cumsum(np.log(np.arange(1.0, 61.0))))  # log v!
    log_p = np.full(G * K, -np.log(K))
    cells.multinomial_rows_sweep_streams(seeds, c, log_p, K, *release, 1, 2, logs)
    cells.dm_rows_sweep_streams(seeds, c, np.ones(K), K, *release, 1, 2)
    assert _uncacheable(cells._rows_serial) == []
