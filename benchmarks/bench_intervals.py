"""Coverage and speed of `pdp.intervals` vs the naive "noisy value ± 1.96 σ (clipped at 0)".

For each noise and each true count c, draw R releases s = c + noise with the library's exact
samplers (seeded), form nominal 95 % intervals and record the fraction that contain c and the
mean width. Writes benchmarks/INTERVALS_RESULTS.md. Run: python benchmarks/bench_intervals.py
"""

import pathlib
import time

import numpy as np

import pymc_dp as pdp

TRUTHS = [0, 1, 3, 10, 100, 10**4, 10**6]
R = 20_000
STAT = pdp.Counts(n_categories=2)
NOISES = {
    "DiscreteGaussian(sigma=3.18)": pdp.DiscreteGaussian(sigma=3.18),
    "Laplace(epsilon=0.5), counts (b = 4)": pdp.Laplace(epsilon=0.5).bind(STAT, n=1, dim=2),
}


def noise_sd(mech):
    return mech.noise_sd if hasattr(mech, "noise_sd") else np.sqrt(2.0) * mech.noise_scale


def coverage(mech, rng):
    rows = []
    sd = noise_sd(mech)
    for c in TRUTHS:
        s = mech.sample(np.full(R, c, dtype=np.int64), rng)
        ours = pdp.intervals(s, 0.95, mechanism=mech, statistic=STAT)
        post = pdp.intervals(s, 0.95, mechanism=mech, statistic=STAT, kind="posterior")
        conf = pdp.intervals(s, 0.95, mechanism=mech, statistic=STAT, kind="confidence")
        naive = np.stack([np.maximum(s - 1.96 * sd, 0.0), np.maximum(s + 1.96 * sd, 0.0)], axis=-1)
        row = [c]
        for iv in (ours, post, conf, naive):
            hit = (iv[:, 0] <= c) & (c <= iv[:, 1])
            row += [
                hit.mean(),
                np.sqrt(hit.mean() * (1 - hit.mean()) / R),
                (iv[:, 1] - iv[:, 0]).mean(),
            ]
        rows.append(row)
    return rows


def speed(mech, rng, m=10**6):
    s = mech.sample(rng.integers(0, 10**6, size=m), rng)
    t = time.perf_counter()
    pdp.intervals(s, 0.95, mechanism=mech, statistic=STAT)
    return time.perf_counter() - t


def main():
    rng = np.random.default_rng(20261125)
    lines = [
        "# Intervals: coverage of nominal 95 % intervals (`benchmarks/bench_intervals.py`)",
        "",
        f"{R:,} simulated releases per true count (exact seeded samplers of the mechanisms); "
        'ours = `pdp.intervals` (default `kind="both"`: the smallest interval that is both the '
        "equal-tailed posterior interval under a flat prior on {0, 1, ...} and Neyman's central "
        'confidence interval); posterior / confidence = `kind="posterior"` / '
        '`kind="confidence"` alone; '
        "naive = noisy value ± 1.96 σ clipped at 0 (σ = the noise sd). ± = Monte Carlo standard error.",
        "",
    ]
    for name, mech in NOISES.items():
        rows = coverage(mech, rng)
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
    path = pathlib.Path(__file__).with_name("INTERVALS_RESULTS.md")
    path.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
