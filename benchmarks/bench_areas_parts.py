"""Where one iteration of the many-areas route goes (issue 18 item 4): CPU and wall-clock ms per
part of a `DirichletHyper([alpha, base, pi, c])` iteration, and density evaluations per pair.

The model of ``bench_tables.py --areas GxK --areas-numpy-noise`` (its `_areas_model`, seed 0); the
step as ``pm.sample()`` assigns it, with π untraced (``pm.sample()``'s default at this size, or
``var_names`` without π: its last draw skipped). 3 iterations, then ``--iters`` timed; each part
timed by wrapping its entry point (``time.process_time`` and ``time.perf_counter``). With
``--threads`` the row and pair loops run in numba threads (`streams.use_threads`).

    python benchmarks/bench_areas_parts.py --g 1000 --k 2016 --iters 5 [--threads]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(_HERE), _HERE]  # this checkout's pymc_dp, then bench_tables

_PARTS = {  # dirichlet_hyper's name of the entry point -> the row it is reported under
    "_move_cells": "cell moves (records)",
    "column_pair_sweep": "column pairs (and count tails)",
    "pair_sweep_marginal": "base pairs given the table",
    "alpha_terms_marginal": "α slice evaluations",
}


def measure(g, k, iters, threads):
    import numpy as np

    import pymc_dp as pdp
    from bench_tables import _areas_model
    from pymc_dp.samplers import dirichlet_hyper as dh
    from pymc_dp.samplers import streams

    streams.use_threads(threads)
    model, _ = _areas_model(g, k, np.random.default_rng(0), release=False)
    with model:
        step = pdp.DirichletHyper([model["alpha"], model["base"], model["pi"], model["c"]])
    step.untraced = frozenset({"pi", "pi_simplex__"})
    point = model.initial_point(0)
    for _ in range(3):
        point, _ = step.step(point)
    cpu = dict.fromkeys(_PARTS.values(), 0.0)
    wall = dict.fromkeys(_PARTS.values(), 0.0)
    evals = {"column pairs": [], "base pairs": []}

    def timed(fn, label, count=None):
        def inner(*args, **kwargs):
            c0, w0 = time.process_time(), time.perf_counter()
            out = fn(*args, **kwargs)
            cpu[label] += time.process_time() - c0
            wall[label] += time.perf_counter() - w0
            if count is not None:
                evals[count].append(out[0] if isinstance(out, tuple) else out)
            return out

        return inner

    for name, label in _PARTS.items():
        count = {"column_pair_sweep": "column pairs", "pair_sweep_marginal": "base pairs"}.get(name)
        if name == "_move_cells":
            step._move_cells = timed(step._move_cells, label)
        else:
            setattr(dh, name, timed(getattr(dh, name), label, count))
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(iters):
        point, _ = step.step(point)
    total_cpu, total_wall = time.process_time() - c0, time.perf_counter() - w0
    pairs = k // 2
    print(f"G = {g}, K = {k}, threads {'on' if threads else 'off'}, {iters} iterations")
    print("| part | CPU ms | wall ms |")
    print("|---|---:|---:|")
    for label in _PARTS.values():
        print(f"| {label} | {1e3 * cpu[label] / iters:.1f} | {1e3 * wall[label] / iters:.1f} |")
    rest_cpu = total_cpu - sum(cpu.values())
    rest_wall = total_wall - sum(wall.values())
    print(
        f"| rest (π seeds, copies, α's prior) | {1e3 * rest_cpu / iters:.1f} | "
        f"{1e3 * rest_wall / iters:.1f} |"
    )
    print(
        f"| **iteration** | **{1e3 * total_cpu / iters:.1f}** | **{1e3 * total_wall / iters:.1f}** |"
    )
    print(f"iterations/s: {iters / total_cpu:.2f} of CPU, {iters / total_wall:.2f} of wall-clock")
    for what, got in evals.items():
        print(f"evaluations per {what[:-1]}: {np.mean(got) / pairs:.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--g", type=int, default=1000)
    parser.add_argument("--k", type=int, default=2016)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--threads", action="store_true")
    args = parser.parse_args(argv)
    measure(args.g, args.k, args.iters, args.threads)


if __name__ == "__main__":
    main()
