"""Coverage and speed of `pdp.intervals` vs the naive "noisy value ± 1.96 σ (clipped at 0)".

For each noise and each true count c, draw R releases s = c + noise with the library's exact
samplers (seeded), form nominal 95 % intervals and record the fraction that contain c and the
mean width. Writes benchmarks/INTERVALS_RESULTS.md. Run: python benchmarks/bench_intervals.py

The (noise, true count) cells are independent units run through `pymc_dp.runner.map_units`, one
generator per cell derived from one seed: ``--workers 0`` (default) in this process, ``--workers N``
on a local Dask cluster, ``--scheduler tcp://host:8786`` on a running one; the numbers are the same
whatever the workers. ``--reps`` sets R (20,000 for the results file).
"""

import argparse
import functools
import pathlib
import time

import numpy as np

import pymc_dp as pdp
from pymc_dp.runner import map_units

TRUTHS = [0, 1, 3, 10, 100, 10**4, 10**6]
R = 20_000
STAT = pdp.Counts(n_categories=2)
NOISES = {
    "DiscreteGaussian(sigma=3.18)": pdp.DiscreteGaussian(sigma=3.18),
    "Laplace(epsilon=0.5), counts (b = 4)": pdp.Laplace(epsilon=0.5).bind(STAT, n=1, dim=2),
}


def noise_sd(mech):
    return mech.noise_sd if hasattr(mech, "noise_sd") else np.sqrt(2.0) * mech.noise_scale


def coverage_cell(unit, rng, reps=R):
    """Coverage and mean width of the four intervals for one (noise, true count) cell."""
    name, c = unit
    mech = NOISES[name]
    sd = noise_sd(mech)
    s = mech.sample(np.full(reps, c, dtype=np.int64), rng)
    ours = pdp.intervals(s, 0.95, mechanism=mech, statistic=STAT)
    post = pdp.intervals(s, 0.95, mechanism=mech, statistic=STAT, kind="posterior")
    conf = pdp.intervals(s, 0.95, mechanism=mech, statistic=STAT, kind="confidence")
    naive = np.stack([np.maximum(s - 1.96 * sd, 0.0), np.maximum(s + 1.96 * sd, 0.0)], axis=-1)
    row = [c]
    for iv in (ours, post, conf, naive):
        hit = (iv[:, 0] <= c) & (c <= iv[:, 1])
        row += [
            hit.mean(),
            np.sqrt(hit.mean() * (1 - hit.mean()) / reps),
            (iv[:, 1] - iv[:, 0]).mean(),
        ]
    return row


def speed(mech, rng, m=10**6):
    s = mech.sample(rng.integers(0, 10**6, size=m), rng)
    t = time.perf_counter()
    pdp.intervals(s, 0.95, mechanism=mech, statistic=STAT)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=0, help="0: this process; N: local Dask")
    ap.add_argument("--scheduler", default=None, help="address of a running Dask scheduler")
    ap.add_argument("--reps", type=int, default=R, help="simulated releases per cell")
    ap.add_argument("--out", default=str(pathlib.Path(__file__).with_name("INTERVALS_RESULTS.md")))
    args = ap.parse_args()
    reps = args.reps
    units = [(name, c) for name in NOISES for c in TRUTHS]
    cells = map_units(
        functools.partial(coverage_cell, reps=reps),
        units,
        seed=20261125,
        n_workers=args.workers,
        client=args.scheduler,
    )
    by_cell = dict(zip(units, cells, strict=True))
    rng = np.random.default_rng(20261125)
    lines = [
        "# Intervals: coverage of nominal 95 % intervals (`benchmarks/bench_intervals.py`)",
        "",
        f"{reps:,} simulated releases per true count (exact seeded samplers of the mechanisms); "
        'ours = `pdp.intervals` (default `kind="both"`: the smallest interval that is both the '
        "equal-tailed posterior interval under a flat prior on {0, 1, ...} and Neyman's central "
        'confidence interval); posterior / confidence = `kind="posterior"` / '
        '`kind="confidence"` alone; '
        "naive = noisy value ± 1.96 σ clipped at 0 (σ = the noise sd). ± = Monte Carlo standard error.",
        "",
    ]
    for name, mech in NOISES.items():
        rows = [by_cell[(name, c)] for c in TRUTHS]
        secs = speed(mech, rng)
        lines += [
            f"## {name}",
            "",
            "| true count | coverage (ours) | mean width (ours) | coverage (posterior) | "
            "mean width (posterior) | coverage (confidence) | mean width (confidence) | "
            "coverage (naive) | mean width (naive) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for c, *cells in rows:
            parts = [
                f"{cov:.4f} ± {se:.4f} | {w:.2f}"
                for cov, se, w in zip(cells[::3], cells[1::3], cells[2::3])
            ]
            lines.append(f"| {c:,} | " + " | ".join(parts) + " |")
        lines += [
            "",
            f"Time for 10^6 intervals (true counts uniform on 0..10^6): {secs:.2f} s "
            f"({1e6 / secs:,.0f} intervals/s, one core).",
            "",
        ]
        print("\n".join(lines[-len(rows) - 5 :]))
    pathlib.Path(args.out).write_text("\n".join(lines))


if __name__ == "__main__":
    main()
