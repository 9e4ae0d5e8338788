"""Rounds of cell moves in the many-areas route (issue 18 item 4, wave 3 session 22): ESS per
draw of the hyperparameters and wall-clock iterations per second for
`DirichletHyper(cells=..., rounds=...)` against ``pm.sample()``'s default.

The model of ``bench_tables.py --areas GxK`` with NumPy noise (its `_areas_model`,
``release=False``); ``pm.sample(tune, draws, chains=2, cores=1, random_seed=seed,
var_names=["alpha", "base"])``, with no ``step=`` for ``default`` or
``step=[pdp.DirichletHyper([alpha, base, pi, c], cells=C, rounds=R)]`` for ``C:R`` (``C:R:S``:
``sweeps=S`` as well). Iterations
per second: the mean wall-clock time between two draws (PyMC's ``callback``; the slowest 1 %
left out: a chain's start); ESS = ``az.ess`` over both chains / (2 · draws). One setting per
process: run them one after the other on an idle machine to compare speeds (or side by side,
``PYMC_DP_THREADS=0``, for a like-for-like comparison without threads).

    python benchmarks/bench_areas_rounds.py --g 1000 --tune 300 --draws 1000 --seed 8 default
    python benchmarks/bench_areas_rounds.py --g 1000 --tune 300 --draws 1000 --seed 8 2:2
"""

from __future__ import annotations

import argparse
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(_HERE), _HERE]  # this checkout's pymc_dp, then bench_tables


def run(g, k, setting, tune, draws, seed):
    import arviz as az
    import numpy as np
    import pymc as pm
    from bench_tables import _areas_model

    import pymc_dp as pdp

    model, _ = _areas_model(g, k, np.random.default_rng(seed), release=False)
    walls = []
    with model:
        step = None
        if setting != "default":
            cells, rounds, *sweeps = (int(v) for v in setting.split(":"))
            step = [
                pdp.DirichletHyper(
                    [model["alpha"], model["base"], model["pi"], model["c"]],
                    cells=cells,
                    rounds=rounds,
                    **({"sweeps": sweeps[0]} if sweeps else {}),
                )
            ]
        idata = pm.sample(
            tune=tune,
            draws=draws,
            chains=2,
            cores=1,
            step=step,
            var_names=["alpha", "base"],
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            callback=lambda **_: walls.append(time.perf_counter()),
        )
    gaps = np.sort(np.diff(walls))
    per_it = gaps[: int(0.99 * gaps.size)].mean()
    ess = az.ess(idata, var_names=["alpha", "base"])
    base = np.asarray(ess["base"]) / (2 * draws)
    return {
        "setting": setting,
        "seed": seed,
        "alpha": float(ess["alpha"]) / (2 * draws),
        "base_median": float(np.median(base)),
        "base_min": float(base.min()),
        "it_per_s": 1.0 / per_it,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("setting", help="default, CELLS:ROUNDS or CELLS:ROUNDS:SWEEPS")
    ap.add_argument("--g", type=int, default=1000)
    ap.add_argument("--k", type=int, default=2016)
    ap.add_argument("--tune", type=int, default=300)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=8)
    args = ap.parse_args(argv)
    r = run(args.g, args.k, args.setting, args.tune, args.draws, args.seed)
    print(
        f"| {r['setting']} | {r['seed']} | {r['alpha']:.3f} | {r['base_median']:.3f} "
        f"| {r['base_min']:.3f} | {r['it_per_s']:.2f} |"
    )


if __name__ == "__main__":
    main()
