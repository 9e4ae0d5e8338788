r"""One random stream per row, for numba loops that run rows in parallel: reproducible by seed and
independent of the number of threads.

A step that updates G independent rows (areas) in a ``numba.prange`` loop draws G seeds from its own
``np.random.Generator`` (`row_seeds`, one call per sweep) and row g then reads only its own stream:
SplitMix64 (Steele, Lea & Flood 2014, *OOPSLA*: the state advances by the golden-ratio increment
and each output is the state passed through a bijective 64-bit finaliser), started from the mixed
seed. Which thread runs which row, and in which order, cannot change a draw; the same seed gives
the same chain with 1 or 2 threads. Streams of different rows start at independent uniform 64-bit
states, so two of them overlap within L outputs with probability about L·G²/2⁶⁴.

Draws, all exact transformations of the stream's 64-bit outputs z (uniforms ``(z >> 11)·2⁻⁵³``):

* `uniform` on [0, 1), `exponential` = −log(1 − U);
* `index_pair`: two distinct indices below n, uniform over the ordered pairs, from one output
  (Lemire's exact bounded integers on its two 32-bit halves);
* `normal`: the ziggurat (Marsaglia & Tsang 2000, *J. Stat. Softw.* 5(8)) with 256 layers, the
  layer, the sign and a 52-bit abscissa taken from disjoint bits of one 64-bit output (Doornik
  2005's remedy for the original's correlated bits; NumPy's layout and constants), Marsaglia's
  exact tail beyond r = 3.654…: an exact rejection sampler that returns after one output and one
  multiplication 99 % of the time;
* `log_gamma`: log of a Gamma(a, 1) draw, Marsaglia & Tsang (2000, *ACM TOMS* 26) for a ≥ 1 and
  ``log Gamma(a) = log Gamma(a + 1) + log(U)/a`` for a < 1 (exact where the draw itself
  underflows);
* `dirichlet_rows_simplex_streams`: PyMC's simplex values of one Dirichlet draw per row (the
  per-row-stream twin of `conjugate.dirichlet_rows_simplex`).

Threads are automatic for large tables sampled in the process that built the step (`use_threads`,
`auto_threads`): each loop has a threaded (``prange``) and a plain twin calling the same per-row
function, so the draws do not depend on the choice.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys

import numba
import numpy as np

__all__ = [
    "use_threads",
    "threads",
    "row_seeds",
    "seed_states",
    "uniform",
    "stream_uniform",
    "exponential",
    "index_pair",
    "normal",
    "log_gamma",
    "dirichlet_rows_simplex_streams",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53
_S8, _S9, _S32 = np.uint64(8), np.uint64(9), np.uint64(32)
_LOW32, _TWO32 = np.uint64(0xFFFFFFFF), np.uint64(1 << 32)
_ONE, _LOW8, _LOW52 = np.uint64(1), np.uint64(0xFF), np.uint64((1 << 52) - 1)


def _ziggurat_tables():
    """The 256-layer ziggurat of exp(−x²/2) (Marsaglia & Tsang 2000's ``zigset`` for 52-bit
    abscissas; NumPy's r and layer area): W[i] the layer's right edge / 2⁵², K[i] the part of the
    layer inside the density's rectangle (x_{i−1}/x_i · 2⁵²; K[0] the base strip's r/q), F[i] =
    exp(−x_i²/2)."""
    m1 = float(2**52)
    dn = tn = _ZIG_R
    vn = 0.00492867323399  # the area of each layer
    w, k, f = np.empty(256), np.zeros(256, dtype=np.uint64), np.empty(256)
    q = vn / math.exp(-0.5 * dn * dn)
    k[0] = np.uint64((dn / q) * m1)
    k[1] = np.uint64(0)
    w[0], w[255] = q / m1, dn / m1
    f[0], f[255] = 1.0, math.exp(-0.5 * dn * dn)
    for i in range(254, 0, -1):
        dn = math.sqrt(-2.0 * math.log(vn / dn + math.exp(-0.5 * dn * dn)))
        k[i + 1] = np.uint64((dn / tn) * m1)
        tn = dn
        f[i] = math.exp(-0.5 * dn * dn)
        w[i] = dn / m1
    return w, k, f


_ZIG_R = 3.6541528853610088
_ZIG_INV_R = 1.0 / _ZIG_R
_ZIG_W, _ZIG_K, _ZIG_F = _ziggurat_tables()


def _env_threads():
    """``PYMC_DP_THREADS``: 1/true/yes forces threads on, 0/false/no off; unset: automatic."""
    value = os.environ.get("PYMC_DP_THREADS", "").strip().lower()
    if value in ("1", "true", "yes"):
        return True
    if value in ("0", "false", "no"):
        return False
    return None


_THREADS = [_env_threads()]  # True / False: forced; None: each step decides (`auto_threads`)
_AUTO = [False]  # the decision of the step running now (`stepping`)
_LAUNCHED = [None]  # the process that launched numba's threading layer from here (`auto_threads`)

#: cells of the work a step threads by itself (`auto_threads`): below, a loop is too short for
#: the threads' start-up to pay (and the test suite's small tables stay serial)
AUTO_THREADS_SIZE = 100_000


def use_threads(flag) -> None:
    """Run the row / pair loops of the steps in numba threads (``prange``): ``True`` always,
    ``False`` never, ``None`` (the default; ``PYMC_DP_THREADS`` unset) when `auto_threads` says so.
    ``PYMC_DP_THREADS=1`` / ``0`` in the environment forces them on / off. The draws are the same
    either way and with any number of threads. Forcing them on in a process that then forks is
    unsafe with numba's usual threading layer here, GNU OpenMP (a forked child that runs a parallel
    loop is terminated), and ``pm.sample(cores > 1)`` forks on Linux: the automatic choice never
    runs them in a process other than the one that built the step."""
    if flag is not None and not isinstance(flag, bool):
        raise ValueError(f"use_threads takes True, False or None (automatic), got {flag!r}.")
    _THREADS[0] = flag


def threads() -> bool:
    """Whether the steps' row / pair loops run in numba threads now (`use_threads`)."""
    forced = _THREADS[0]
    return _AUTO[0] if forced is None else forced


def auto_threads(size: int, built_pid: int) -> bool:
    """The automatic choice for a step whose parallel loops cover ``size`` cells, built in process
    ``built_pid``: threads when the chain runs in the process that built the step (``pm.sample``
    with ``cores=1``; PyMC's worker processes for ``cores > 1`` already fill the cores, and GNU
    OpenMP must not run in a forked child: nor in a process forked from one where this function
    launched the threading layer), the work has at least `AUTO_THREADS_SIZE` cells, numba has two
    threads or more, and the process is not a Dask worker (``sample_many`` runs one unit per
    worker)."""
    here = os.getpid()
    if size < AUTO_THREADS_SIZE or here != built_pid:
        return False
    if _LAUNCHED[0] not in (None, here):  # a forked child of a process that launched the layer
        return False
    _LAUNCHED[0] = here  # numba.get_num_threads launches the threading layer in this process
    if numba.get_num_threads() < 2:
        return False
    distributed = sys.modules.get("distributed")
    if distributed is not None:
        try:
            distributed.get_worker()
        except ValueError:  # not in a worker
            return True
        return False
    return True


@contextlib.contextmanager
def stepping(on: bool):
    """Within: `threads` is ``on`` unless `use_threads` forced a choice (a step's iteration)."""
    old, _AUTO[0] = _AUTO[0], bool(on)
    try:
        yield
    finally:
        _AUTO[0] = old


def row_seeds(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` independent uniform 64-bit seeds (uint64) from the step's generator."""
    return rng.integers(0, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)


@numba.njit(cache=True, inline="always")
def _mix(z):
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@numba.njit(cache=True)
def seed_states(seeds):
    """The streams' starting states: each seed through the finaliser (a bijection of 64 bits)."""
    out = np.empty(seeds.shape[0], dtype=np.uint64)
    for i in range(seeds.shape[0]):
        out[i] = _mix(seeds[i])
    return out


@numba.njit(cache=True, inline="always")
def uniform(states, i):
    """A uniform on [0, 1) from stream ``i`` (53 bits); advances ``states[i]``."""
    s = states[i] + _GOLDEN
    states[i] = s
    return float(_mix(s) >> _S11) * _TO_UNIT


@numba.njit(cache=True, inline="always")
def _next(states, i):
    """The next 64-bit output of stream ``i``."""
    s = states[i] + _GOLDEN
    states[i] = s
    return _mix(s)


@numba.njit(cache=True, inline="always")
def _below(states, i, x, n):
    """Uniform on 0 … n − 1 (n < 2³²) from the 32-bit uniform ``x``, exactly: Lemire's
    multiply-shift with rejection (2019, *ACM TOMS* 29(1)); a rejected x (probability < n/2³²) is
    replaced by the top 32 bits of stream ``i``'s next output."""
    m = x * n
    low = m & _LOW32
    if low < n:
        floor = (_TWO32 - n) % n
        while low < floor:
            x = _next(states, i) >> _S32
            m = x * n
            low = m & _LOW32
    return np.int64(m >> _S32)


@numba.njit(cache=True, inline="always")
def index_pair(states, i, n):
    """Two distinct indices (j, k) of 0 … n − 1, uniform over the n(n − 1) ordered pairs, from one
    64-bit output of stream ``i`` (j from its top 32 bits, k from its bottom 32, `_below`)."""
    z = _next(states, i)
    j = _below(states, i, z >> _S32, np.uint64(n))
    k = _below(states, i, z & _LOW32, np.uint64(n - 1))
    if k >= j:
        k += 1
    return j, k


@numba.njit(cache=True, inline="always")
def stream_uniform(source):
    """`uniform` from ``source = (states, i)``: the ``uniform_of`` of `slice.shrink_1d` for a
    row's stream."""
    return uniform(source[0], source[1])


@numba.njit(cache=True, inline="always")
def exponential(states, i):
    """A standard exponential from stream ``i``: −log(1 − U), U on [0, 1)."""
    return -math.log(1.0 - uniform(states, i))


@numba.njit(cache=True, inline="always")
def normal(states, i):
    """A standard normal from stream ``i`` (the ziggurat, module docstring: bits 0–7 of an output
    pick the layer, bit 8 the sign, bits 9–60 the abscissa; the stream's state is the only
    state)."""
    while True:
        s = states[i] + _GOLDEN
        states[i] = s
        z = _mix(s)
        idx = int(z & _LOW8)
        neg = (z >> _S8) & _ONE
        rabs = (z >> _S9) & _LOW52
        x = float(rabs) * _ZIG_W[idx]
        if neg:
            x = -x
        if rabs < _ZIG_K[idx]:  # inside the layer's rectangle under the density
            return x
        if idx == 0:  # the base strip beyond r: Marsaglia's tail (exponential proposals)
            while True:
                xx = exponential(states, i) * _ZIG_INV_R
                yy = exponential(states, i)
                if yy + yy > xx * xx:
                    return -(_ZIG_R + xx) if neg else _ZIG_R + xx
        f1 = _ZIG_F[idx]
        if (_ZIG_F[idx - 1] - f1) * uniform(states, i) + f1 < math.exp(-0.5 * x * x):
            return x


@numba.njit(cache=True, inline="always")
def _log_gamma_ge1(states, i, a):
    """log of a Gamma(a, 1) draw for a ≥ 1 (Marsaglia & Tsang 2000)."""
    d = a - 1.0 / 3.0
    cc = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = normal(states, i)
        v = 1.0 + cc * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniform(states, i)
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2:
            return math.log(d * v)
        if u > 0.0 and math.log(u) < 0.5 * x2 + d * (1.0 - v + math.log(v)):
            return math.log(d * v)


@numba.njit(cache=True, inline="always")
def log_gamma(states, i, a):
    """log of a Gamma(a, 1) draw from stream ``i`` (a > 0; module docstring)."""
    if a >= 1.0:
        return _log_gamma_ge1(states, i, a)
    g = _log_gamma_ge1(states, i, a + 1.0)
    return g + math.log(1.0 - uniform(states, i)) / a


@numba.njit(cache=True)
def _dirichlet_row(states, row, base, add, out):
    k = add.shape[1]
    g = np.empty(k)
    tot = 0.0
    for j in range(k):
        v = log_gamma(states, row, base[j] + add[row, j])
        g[j] = v
        tot += v
    mean = tot / k
    for j in range(k - 1):
        out[row, j] = g[j] - mean


@numba.njit(cache=True, parallel=True)
def _dirichlet_rows_threads(states, base, add, out):
    for row in numba.prange(add.shape[0]):
        _dirichlet_row(states, row, base, add, out)


@numba.njit(cache=True)
def _dirichlet_rows_serial(states, base, add, out):
    for row in range(add.shape[0]):
        _dirichlet_row(states, row, base, add, out)


def dirichlet_rows_simplex_streams(seeds, base, add, out):
    """PyMC's simplex values ``y = g[:-1] − mean(g)`` of one Dirichlet(base + add[row]) draw per
    row (``g`` log-gamma draws; the normalisation cancels), row g from stream ``seeds[g]``, rows in
    threads if `use_threads`. ``base`` (K,) float, ``add`` (rows × K) counts (any real dtype),
    ``out`` (rows × (K − 1))."""
    states = seed_states(seeds)
    if _THREADS[0]:
        _dirichlet_rows_threads(states, base, add, out)
    else:
        _dirichlet_rows_serial(states, base, add, out)
