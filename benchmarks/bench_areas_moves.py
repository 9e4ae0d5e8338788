"""Cell moves of the many-areas route (issue 18 item 4, h/areas4): ESS per CPU second of the
hyperparameters for `DirichletHyper(moves=..., cells=...)`, several settings in one process.

The model of ``bench_tables.py --areas GxK --areas-numpy-noise`` (its `_areas_model`, seed 0);
``pm.sample(chains=2, cores=1, random_seed=6, var_names=["alpha", "base"])`` with
``step=[pdp.DirichletHyper([alpha, base, pi, c], moves=..., cells=...)]``. CPU seconds
(``time.process_time``) from the first draw of the first chain to the last draw (PyMC's
``callback``), so set-up is left out; ESS = ``az.ess`` over both chains / (2 · draws).

    nice python benchmarks/bench_areas_moves.py --g 300 --tune 100 --draws 400 \\
        --settings pairs:4 records:2 records:4
"""

from __future__ import annotations

import argparse
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(_HERE), _HERE]  # this checkout's pymc_dp, then bench_tables


def run(g, k, moves, cells, tune, draws, seed):
    import arviz as az
    import numpy as np
    import pymc as pm

    import pymc_dp as pdp
    from bench_tables import _areas_model

    model, _ = _areas_model(g, k, np.random.default_rng(0), release=False)
    stamps = []

    def callback(trace, draw):
        stamps.append(time.process_time())

    with model:
        step = pdp.DirichletHyper(
            [model["alpha"], model["base"], model["pi"], model["c"]], moves=moves, cells=cells
        )
        idata = pm.sample(
            tune=tune,
            draws=draws,
            chains=2,
            cores=1,
            step=[step],
            random_seed=seed,
            var_names=["alpha", "base"],
            progressbar=False,
            compute_convergence_checks=False,
            callback=callback,
        )
    n_iter = len(stamps) - 1
    cpu = stamps[-1] - stamps[0]
    ess = az.ess(idata)
    total = 2 * draws
    a = float(ess["alpha"]) / total
    b = np.asarray(ess["base"]) / total
    worst = min(a, float(b.min()))
    its = n_iter / cpu
    mean_a = "/".join(f"{m:.0f}" for m in idata.posterior["alpha"].mean("draw").values)
    rhat = float(az.rhat(idata)["alpha"])
    means = np.asarray(idata.posterior["base"].mean(("chain", "draw")))
    rank = int((means < means[int(np.argmin(b))]).sum())  # the worst coordinate's rank by size
    small = b[np.argsort(means)[:20]]  # the 20 smallest coordinates of base
    print(
        f"| {moves} | {cells} | {seed} | {its:.2f} | {a:.3f} | {np.median(b):.2f} | "
        f"{b.min():.3f} (rank {rank}) | {np.median(small):.3f} | {worst * its:.3f} | "
        f"{a * its:.3f} | {mean_a} | {rhat:.3f} | "
        f"{os.getloadavg()[0]:.1f} |",
        flush=True,
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--g", type=int, default=300)
    p.add_argument("--k", type=int, default=2016)
    p.add_argument("--tune", type=int, default=100)
    p.add_argument("--draws", type=int, default=400)
    p.add_argument("--seeds", type=int, nargs="+", default=[6])
    p.add_argument(
        "--settings", nargs="+", default=["pairs:4", "records:2"], help="moves:cells, e.g. pairs:4"
    )
    args = p.parse_args()
    print(f"G = {args.g}, K = {args.k}, 2 chains x ({args.tune} + {args.draws}), threads off")
    print(
        "| moves | cells | seed | it/s (CPU) | ESS/draw α | base median | base min (its rank by "
        "size) | base: median of the 20 smallest | worst ESS per CPU s | α ESS per CPU s | α mean per chain | R-hat α | load |"
    )
    for seed in args.seeds:
        for s in args.settings:
            moves, cells = s.split(":")
            run(args.g, args.k, moves, int(cells), args.tune, args.draws, seed)


if __name__ == "__main__":
    main()
