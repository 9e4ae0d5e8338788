"""Per-row random streams (`pymc_dp.samplers.streams`) and the steps that run rows in parallel on
them (TableCells' Multinomial rows, DirichletHyper's π draw): the draws follow their laws, and the
same seed gives the same draws with 1 and 2 numba threads."""

import os

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


_SHAPES = [0.01, 0.1, 0.5, 0.999, 1.0, 1.5, 10.0, 300.0, 1e4]


def _log_gamma_check(y, a):
    """z-scores (draw − law) / MCSE of the mean and the variance of log X, X ~ Gamma(a):
    E log X = ψ(a), Var log X = ψ₁(a), fourth cumulant ψ₃(a) (polygamma; the variance's MCSE from
    the fourth central moment ψ₃(a) + 3ψ₁(a)²), and the KS p-value of log X against scipy's
    ``loggamma(a)`` (the law of log X, exact where X itself underflows)."""
    from scipy import special

    n = y.size
    var = special.polygamma(1, a)
    mu4 = special.polygamma(3, a) + 3.0 * var**2
    z_mean = (y.mean() - special.digamma(a)) / np.sqrt(var / n)
    z_var = (y.var() - var) / np.sqrt((mu4 - var**2) / n)
    return z_mean, z_var, stats.kstest(y, stats.loggamma(a).cdf).pvalue


@numba.njit(cache=True)
def _log_gamma_draws(seed, a, n):
    states = streams.seed_states(np.array([seed], dtype=np.uint64))
    out = np.empty(n)
    for t in range(n):
        out[t] = streams.log_gamma(states, 0, a)
    return out


@pytest.mark.parametrize("a", _SHAPES)
def test_log_gamma_matches_scipy(a):
    """`log_gamma` (Marsaglia–Tsang on the ziggurat normal; U^(1/a) below 1) against the law of
    log X, X ~ Gamma(a), from shape 0.01 to 10⁴: 200,000 draws, fixed seeds; the mean and the
    variance of log X within 5 MCSE of ψ(a) and ψ₁(a), KS at level 1e-4."""
    y = _log_gamma_draws(np.uint64(777 + int(a * 1000)), a, 200_000)
    z_mean, z_var, p = _log_gamma_check(y, a)
    assert abs(z_mean) < 5.0 and abs(z_var) < 5.0 and p > 1e-4, (z_mean, z_var, p)


def test_log_gamma_check_catches_a_wrong_shape():
    """Control: draws of shape 10 checked as shape 10.1 (a 1 % error: ~14 MCSE of the mean of
    log X) and draws of shape 0.1 checked as 0.102 fail the check."""
    for a, wrong in ((10.0, 10.1), (0.1, 0.102)):
        y = _log_gamma_draws(np.uint64(777 + int(a * 1000)), a, 200_000)
        z_mean, _, p = _log_gamma_check(y, wrong)
        assert abs(z_mean) > 5.0 and p < 1e-4, (a, z_mean, p)


def test_row_seeds_come_from_the_generator():
    a = streams.row_seeds(np.random.default_rng(4), 5)
    assert a.dtype == np.uint64 and np.array_equal(
        a, streams.row_seeds(np.random.default_rng(4), 5)
    )
    assert not np.array_equal(a, streams.row_seeds(np.random.default_rng(5), 5))


_THREAD_CHECK = r"""
import hashlib, sys
import numba, numpy as np, pymc as pm
import pymc_dp as pdp
from pymc_dp.samplers import streams

rng = np.random.default_rng(3)
g, k = 12, 5
noisy = rng.poisson(3.0, size=(g, k))
with pm.Model() as model:
    base = pm.Dirichlet("base", np.ones(k))
    alpha = pm.LogNormal("alpha", np.log(k), 1.0)
    pi = pm.Dirichlet("pi", alpha * base, shape=(g, k))
    c = pm.Multinomial("c", n=np.full(g, 15), p=pi, shape=(g, k))
    pdp.DPObserved(
        "s", c, statistic=pdp.Cells(), mechanism=pdp.DiscreteGaussian(sigma=1.5), observed=noisy
    )


def chain():
    with model:
        tc = pdp.TableCells([model["c"]], rng=np.random.default_rng(7))
        dh = pdp.DirichletHyper([alpha, base, pi], rng=np.random.default_rng(8))
    assert tc.parallel_rows and dh.columns
    point, out = model.initial_point(0), []
    for _ in range(4):
        for step in (dh, tc):
            point, _ = step.step(point)
        out.append(np.concatenate([np.ravel(point[n]).astype(float) for n in sorted(point)]))
    assert not np.array_equal(out[-1], out[-2])  # the chain moved
    return hashlib.sha256(np.array(out).tobytes()).hexdigest()


def chain_with_table(moves):
    # DirichletHyper with the table: its cell moves (π summed out) run on the rows' streams too
    with model:
        dh = pdp.DirichletHyper([alpha, base, pi, c], moves=moves, rng=np.random.default_rng(9))
    point, out = model.initial_point(0), []
    for _ in range(4):
        point, _ = dh.step(point)
        out.append(np.concatenate([np.ravel(point[n]).astype(float) for n in sorted(point)]))
    assert not np.array_equal(out[-1], out[-2])
    return hashlib.sha256(np.array(out).tobytes()).hexdigest()


plain = chain() + chain_with_table("pairs") + chain_with_table("records")
streams.use_threads(True)
numba.set_num_threads(1)
one = chain() + chain_with_table("pairs") + chain_with_table("records")
numba.set_num_threads(2)
two = chain() + chain_with_table("pairs") + chain_with_table("records")
assert numba.threading_layer() in ("omp", "tbb", "workqueue")
print("HASHES", plain, one, two)
"""


@pytest.mark.slow  # a child process: import, build and compile (~15 s idle, 30 s at load 7)
@two_threads
def test_areas_steps_same_with_one_and_two_threads():
    """TableCells (rows), DirichletHyper (column pairs, π's rows; with the table: its rows' cell
    moves, pairs and records) from the same seeds give the same chain without threads, with 1
    and with 2 numba threads. In a child process: a process that has
    run a GNU OpenMP parallel loop cannot fork, and other tests fork (`streams.use_threads`)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _THREAD_CHECK], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    hashes = next(ln for ln in out.stdout.splitlines() if ln.startswith("HASHES")).split()[1:]
    assert len(hashes) == 3 and len(set(hashes)) == 1, hashes


def test_threads_are_automatic_for_large_tables_in_the_building_process():
    assert not streams.threads()  # outside a step: no threads (the test process may fork)
    with pytest.raises(ValueError, match="use_threads takes True, False or None"):
        streams.use_threads(1)
    size, here = streams.AUTO_THREADS_SIZE, os.getpid()
    assert not streams.auto_threads(size - 1, here)  # too small to pay
    assert not streams.auto_threads(size, here + 1)  # a worker process (a forked chain)
    assert streams.auto_threads(size, here) == (numba.get_num_threads() >= 2)
    with streams.stepping(True):
        assert streams.threads()
    assert not streams.threads()


_AUTO_CHECK = r"""
import numba, numpy as np, pymc as pm
import pymc_dp as pdp
from pymc_dp.samplers import dirichlet_hyper as dh, streams

streams.AUTO_THREADS_SIZE = 1  # a small table threads by itself
seen = []
sweep = dh.column_pair_sweep
def spy(*args, **kwargs):
    seen.append(streams.threads())
    return sweep(*args, **kwargs)
dh.column_pair_sweep = spy

def build():
    rng = np.random.default_rng(3)
    g, k = 12, 5
    with pm.Model() as model:
        base = pm.Dirichlet("base", np.ones(k))
        alpha = pm.LogNormal("alpha", np.log(k), 1.0)
        pi = pm.Dirichlet("pi", alpha * base, shape=(g, k))
        c = pm.Multinomial("c", n=np.full(g, 15), p=pi, shape=(g, k))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=pdp.DiscreteGaussian(sigma=2.0),
                       observed=rng.poisson(3.0, size=(g, k)))
    return model


def forked(q):  # a process forked after threads ran here builds and steps its own table step
    m = build()
    with m:
        step = pdp.DirichletHyper([m["alpha"], m["base"], m["pi"], m["c"]])
    point = m.initial_point(0)
    for _ in range(3):
        point, _ = step.step(point)
    q.put(("serial", not step._threaded and not any(seen[n_parent:])))


model = build()
kw = dict(tune=5, draws=10, random_seed=4, progressbar=False, compute_convergence_checks=False)
with model:
    auto = pm.sample(chains=1, cores=1, **kw)
    threaded = all(seen) and len(seen) > 0
    # forked chains after a threaded loop in this process: serial there, not terminated
    both = pm.sample(chains=2, cores=2, **kw)
    streams.use_threads(False)
    seen.clear()
    plain = pm.sample(chains=1, cores=1, **kw)
same = np.array_equal(auto.posterior["alpha"].values, plain.posterior["alpha"].values)
streams.use_threads(None)
import multiprocessing as mp
n_parent = len(seen)
ctx = mp.get_context("fork")
q = ctx.Queue()
proc = ctx.Process(target=forked, args=(q,))
proc.start()
proc.join(120)
child = q.get(timeout=5)[1] if proc.exitcode == 0 else proc.exitcode
print("AUTO", threaded, not any(seen), same, both.posterior["alpha"].shape, child,
      numba.threading_layer())
"""


@pytest.mark.slow  # a child process: import, build and compile
@two_threads
def test_auto_threads_run_in_the_building_process_and_forked_chains_stay_serial():
    """With threads automatic, a step built and sampled in this process (cores=1) runs its loops in
    threads; pm.sample(cores=2) afterwards forks chains that run serially (GNU OpenMP terminates a
    forked child that runs a parallel loop); the draws equal those without threads; a process
    forked afterwards that builds its own table step keeps it serial. In a child process, as the
    test above."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _AUTO_CHECK], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("AUTO"))
    assert line.split()[1:5] == ["True", "True", "True", "(2,"], line
    assert line.split()[6] == "True", line  # the forked process: serial, not terminated


def test_dirichlet_row_reads_only_its_own_stream():
    """The plain loop (the default) draws a Dirichlet row from its stream alone: row g's draw does
    not depend on the other rows."""
    rng = np.random.default_rng(0)
    base = rng.gamma(0.5, size=7)
    add = rng.poisson(2.0, size=(40, 7))
    seeds = streams.row_seeds(rng, 40)
    out, part = np.empty((40, 6)), np.empty((5, 6))
    streams.dirichlet_rows_simplex_streams(seeds, base, add, out)
    streams.dirichlet_rows_simplex_streams(seeds[10:15], base, add[10:15], part)
    assert np.array_equal(out[10:15], part) and np.all(np.isfinite(out))


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
