"""Records under a release that pins its statistic against one record (a large ε, tight bounds,
few records): ``DataAugmentation`` with its pair moves (``pairs="auto"``, the default, which turns
them on here) against the record-wise moves alone (``pairs=False``) and against plain PyMC (the
mechanism as a ``pm.Potential`` on the joint model, PyMC's own assignment: NUTS on continuous
records, Metropolis on integer ones). Not a test.

Models (the exact posteriors are in ``tests/statistical/samplers/test_record_pairs.py``):
(a) λ ~ Gamma(2, 1), x_i ~ Exponential(λ), n = 8, Σ clip(x, 0, 2) + Laplace(ε = 60), s = 4;
(b) λ ~ Gamma(2, 0.5), x_i ~ Poisson(λ), n = 6, Σ clip(x, 0, 6) + DiscreteLaplace(0.25), s = 17.

Printed per model and route: λ's bulk ESS/draw (ArviZ) and a batch-means ESS/draw (batches of
``draws``/10 per chain: what ArviZ's estimate should agree with when the chain explores), the
records' smallest ESS/draw, ESS/s of λ and of the slowest record over PyMC's ``sampling_time``, and
µs per record update of the pair sweep, CPU seconds of the run (compilation included). 4 chains,
``cores=1``; plain PyMC runs ``--pymc-draws`` warm-up and draws (NUTS on these joints takes
minutes per chain).

    PYTHONPATH=. python benchmarks/bench_record_pairs.py [--draws 2000] [--pymc-draws 500] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt

import pymc_dp as pdp


def _model(kind, potential=False):
    with pm.Model() as model:
        if kind == "a":
            lam = pm.Gamma("lam", 2, 1)
            x = pm.Exponential("x", lam, shape=8)
            stat, mech, s = pdp.Sum(0, 2), pdp.Laplace(epsilon=60.0), 4.0
        else:
            lam = pm.Gamma("lam", 2, 0.5)
            x = pm.Poisson("x", lam, shape=6)
            stat, mech, s = pdp.Sum(0, 6), pdp.DiscreteLaplace(scale=0.25), 17
        if potential:  # what a user writes without pymc-dp: the Laplace density of the clipped sum
            b = 2.0 / 60.0 if kind == "a" else 0.25
            upper = 2.0 if kind == "a" else 6
            pm.Potential("release", -pt.abs(s - pt.clip(x, 0, upper).sum()) / b)
        else:
            pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    return model


def _batch_ess(draws):
    c, n = draws.shape
    m = n // 10
    means = draws[:, : 10 * m].reshape(c, 10, m).mean(axis=2)
    return float(draws.var() / (means.var(ddof=1) * m))


def run(kind, route, draws, seed, tune=1000):
    model = _model(kind, potential=route == "plain PyMC")
    with model:
        step = None
        if route != "plain PyMC":
            step = [pdp.DataAugmentation([model["x"]], pairs=route == "pairs")]
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=4,
            cores=1,
            step=step,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    secs = idata.sample_stats.attrs["sampling_time"]
    total = 4 * draws
    ess = az.ess(idata, var_names=["lam", "x"])
    lam = float(ess["lam"]) / total
    rec = float(ess["x"].min()) / total
    batch = _batch_ess(idata.posterior["lam"].values)
    return lam, batch, rec, lam * total / secs, rec * total / secs


def pair_sweep_us(kind, reps=200, seed=0):
    """µs per record update of the pair sweep alone (two compiled calls and the numba pass)."""
    model = _model(kind)
    with model:
        step = pdp.DataAugmentation([model["x"]], pairs=True, rng=seed)
    pairs, group = step._pairs[0], step.groups[0]
    point = model.initial_point(seed)
    add_r = group.block.releases()[0]
    t = group.block.contributions(point)[0]
    rng = np.random.default_rng(seed)
    pairs.sweep(rng, point, t, group.add_table, add_r, False)
    t0 = time.perf_counter()
    for _ in range(reps):
        pairs.sweep(rng, point, t, group.add_table, add_r, False)
    return (time.perf_counter() - t0) / reps / group.block.n * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--pymc-draws", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print(
        "| model | route | λ ESS/draw (ArviZ) | λ ESS/draw (batch means) | records: min ESS/draw "
        "| λ ESS/s | slowest record ESS/s | CPU s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for kind in ("a", "b"):
        for route in ("pairs", "record-wise only", "plain PyMC"):
            plain = route == "plain PyMC"
            t0 = time.process_time()
            row = run(
                kind,
                route,
                args.pymc_draws if plain else args.draws,
                args.seed,
                tune=args.pymc_draws if plain else 1000,
            )
            cpu = time.process_time() - t0
            print(
                f"| ({kind}) | {route} | {row[0]:.3f} | {row[1]:.3f} | {row[2]:.4f} | "
                f"{row[3]:.0f} | {row[4]:.1f} | {cpu:.0f} |",
                flush=True,
            )
    for kind in ("a", "b"):
        print(f"({kind}) pair sweep: {pair_sweep_us(kind):.1f} µs per record update")


if __name__ == "__main__":
    main()
