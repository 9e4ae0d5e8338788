"""Peak memory of the curator's side at n = 10⁶ records and K = 10⁴ categories (issue 20, item 9).

Measures with ``tracemalloc`` (NumPy allocations are traced) the peak memory and the time of:

* ``Median`` / ``Max`` β-smooth sensitivity (``smooth_sensitivity_np``), O(n) memory: the former
  (n+1)(n+2) index tables would need 8·(n+1)(n+2) bytes per table (8 TB at n = 10⁶);
* ``Counts(K).evaluate`` (bincount, O(n + K)); a dense one-hot would be 8·n·K bytes (80 GB);
* whole releases: ``pdp.release`` of a ``Median`` with ``SmoothLaplace`` and of ``Counts(K)``
  with ``DiscreteGaussian`` (exact sampler, ``rng`` seeded), the compile of their PyTensor
  graphs done once before measuring.

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_release_memory.py
[--n 1000000] [--k 10000]``. Not a test.
"""

from __future__ import annotations

import argparse
import platform
import time
import tracemalloc

import numpy as np

import pymc_dp as pdp


def measure(label, fn, n_bytes_reference=None):
    fn()  # compile / warm up outside the measurement
    tracemalloc.start()
    t0 = time.perf_counter()
    fn()
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    ref = (
        ""
        if n_bytes_reference is None
        else f"   (dense formula: {n_bytes_reference / 2**30:,.0f} GiB)"
    )
    print(f"{label:<48} peak {peak / 2**20:9.1f} MiB   {seconds:7.2f} s{ref}")
    return peak, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--k", type=int, default=10**4)
    args = parser.parse_args(argv)
    n, k = args.n, args.k
    rng = np.random.default_rng(0)
    x = rng.normal(5.0, 2.0, n)
    codes = rng.integers(0, k, n)
    mech = pdp.SmoothLaplace(epsilon=1.0, delta=1.0 / n**2)
    print(f"n = {n:,}, K = {k:,}; {platform.python_version()}, NumPy {np.__version__}")
    print(f"input arrays: records {x.nbytes / 2**20:.1f} MiB, codes {codes.nbytes / 2**20:.1f} MiB")
    tables = 8.0 * (n + 1) * (n + 2)
    for stat in (pdp.Median(lower=0, upper=10), pdp.Max(lower=0, upper=10)):
        measure(
            f"{type(stat).__name__} smooth sensitivity",
            lambda stat=stat: stat.smooth_sensitivity_np(x, mech.beta),
            tables,
        )
    counts = pdp.Counts(k)
    measure(f"Counts({k}).evaluate", lambda: counts.evaluate(codes), 8.0 * n * k)
    measure(
        "release Median + SmoothLaplace",
        lambda: pdp.release(x, pdp.Median(lower=0, upper=10), mech, rng=1),
    )
    measure(
        f"release Counts({k}) + DiscreteGaussian",
        lambda: pdp.release(codes, counts, pdp.DiscreteGaussian(rho=0.5), rng=1),
    )


if __name__ == "__main__":
    main()
