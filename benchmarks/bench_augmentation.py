"""Benchmark: DataAugmentation record updates and theta ESS/s vs the baselines a user would pick.

Model: mu ~ N(0, 3), x_i ~ N(mu, 1), release = clamped sum of x over [-2, 4] + Laplace(6/eps), eps = 1.

1. Cost per record update (proposal draw + contributions + compiled sweep) of one
   ``DataAugmentation.step`` call, for n = 1e2 .. 1e6, with the fast proposals (numba, the default)
   and with the PyMC graph's (``fast_proposals=False``), next to a straightforward pure-Python loop
   over records implementing the same sweep (per-record draw, running total, Laplace ratio).
2. Effective samples of θ per second with ``pm.sample``: what it assigns by itself
   (DataAugmentation + ConjugateTheta), DataAugmentation + NUTS on θ, and plain PyMC on the joint
   model with the mechanism as a ``pm.Potential`` (NUTS on mu and x; for binary records, count +
   Laplace, PyMC's default BinaryGibbsMetropolis + NUTS). The trace keeps every variable (PyMC's
   default), so at large n the per-draw copy of the records into the trace is part of the time.

Run: ``.venv/bin/python benchmarks/bench_augmentation.py [--quick]``; writes ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import platform
import time

import arviz as az
import numpy as np
import pymc as pm
import pytensor

import pymc_dp as pdp

LOWER, UPPER, EPS = -2.0, 4.0, 1.0


def normal_model(n, rng, potential=False):
    stat, mech = pdp.Sum(lower=LOWER, upper=UPPER), pdp.Laplace(epsilon=EPS)
    release = float(pdp.release(rng.normal(1.0, 1.0, n), stat, mech, rng=rng))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=n)
        if potential:
            b = (UPPER - LOWER) / EPS
            pm.Potential("mech", -abs(release - pm.math.clip(x, LOWER, UPPER).sum()) / b)
        else:
            pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=release)
    return model


def binary_model(n, rng, potential=False):
    stat, mech = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=EPS)
    release = float(pdp.release(rng.binomial(1, 0.3, n), stat, mech, rng=rng))
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=n)
        if potential:
            pm.Potential("mech", -abs(release - x.sum()) * EPS)
        else:
            pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=release)
    return model


def python_loop_sweep(x, mu, release, rng):
    """Algorithm 1 as one would first write it: a Python loop over the records."""
    b = (UPPER - LOWER) / EPS
    total = sum(min(max(v, LOWER), UPPER) for v in x)
    cur = -abs(release - total) / b
    for i in range(len(x)):
        prop = rng.normal(mu, 1.0)
        new_total = total - min(max(x[i], LOWER), UPPER) + min(max(prop, LOWER), UPPER)
        new = -abs(release - new_total) / b
        if math.log(rng.random()) < new - cur:
            x[i], total, cur = prop, new_total, new
    return x


def time_per_record(n, rng, repeats):
    model = normal_model(n, rng)
    ours = []
    for fast in (True, False):
        with model:
            step = pdp.DataAugmentation(
                [model["x"]], fast_proposals=fast, rng=np.random.default_rng(0)
            )
        point = model.initial_point(random_seed=0)
        point, _ = step.step(point)  # warm (numba compile, caches)
        t0 = time.perf_counter()
        for _ in range(repeats):
            point, _ = step.step(point)
        ours.append((time.perf_counter() - t0) / (repeats * n) * 1e6)
    py_reps = max(1, min(repeats, 200_000 // n))
    x = list(np.asarray(point["x"]))
    t0 = time.perf_counter()
    for _ in range(py_reps):
        python_loop_sweep(x, 1.0, 100.0, rng)
    loop = (time.perf_counter() - t0) / (py_reps * n) * 1e6
    return ours, loop


def ess_per_second(model, step_fn, draws, var):
    with model:
        steps = step_fn(model)
        t0 = time.perf_counter()
        idata = pm.sample(
            step=steps,
            draws=draws,
            tune=draws // 2,
            chains=2,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
        wall = time.perf_counter() - t0
    ess = float(az.ess(idata, var_names=[var])[var])
    sampling = float(idata.sample_stats.attrs.get("sampling_time", wall))
    return ess, sampling, ess / sampling


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller n and fewer draws")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    ns = [10**2, 10**3, 10**4, 10**5] if args.quick else [10**2, 10**3, 10**4, 10**5, 10**6]
    lines = [
        "# DataAugmentation benchmark",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {platform.system()}, Python "
        f"{platform.python_version()}, PyMC {pm.__version__}, PyTensor {pytensor.__version__}, "
        f"numpy {np.__version__}. Command: `.venv/bin/python benchmarks/bench_augmentation.py"
        f"{' --quick' if args.quick else ''}`. Load average (1/5/15 min) at start: "
        f"{'/'.join(f'{v:.1f}' for v in os.getloadavg())}.",
        "",
        "## Cost per record update (normal records, clamped sum, Laplace)",
        "",
        "One `DataAugmentation.step` = proposal draw of all n records + contributions + compiled "
        "sweep; proposals drawn in numba from the step's generator (default) or from the PyMC "
        "graph (`fast_proposals=False`). Pure-Python loop = the same sweep as a Python `for` loop.",
        "",
        "| n | pymc-dp µs / record update | same, graph proposals | pure-Python loop µs / record update | speed-up |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in ns:
        repeats = max(3, 2_000_000 // n)
        (ours, graph), loop = time_per_record(n, rng, repeats)
        lines.append(f"| {n:,} | {ours:.4f} | {graph:.4f} | {loop:.3f} | {loop / ours:.0f}× |")
        print(lines[-1], flush=True)

    lines += [
        "",
        "## Effective samples of θ per second (`pm.sample`, 2 chains, sequential)",
        "",
        "| model | n | sampler | draws/chain | ESS(θ) | sampling s | ESS/s |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    cases = [
        (
            "normal",
            normal_model,
            "mu",
            "pm.sample() default: DataAugmentation + ConjugateTheta",
            False,
            lambda m: None,
            10**6,
        ),
        (
            "normal",
            normal_model,
            "mu",
            "DataAugmentation + NUTS",
            False,
            lambda m: [pdp.DataAugmentation([m["x"]]), pm.NUTS([m["mu"]])],
            10**6,
        ),
        (
            "normal",
            normal_model,
            "mu",
            "plain PyMC: NUTS on (mu, x), mechanism as Potential",
            True,
            lambda m: None,
            10**3,
        ),
        (
            "binary",
            binary_model,
            "p",
            "pm.sample() default: DataAugmentation + ConjugateTheta",
            False,
            lambda m: None,
            10**6,
        ),
        (
            "binary",
            binary_model,
            "p",
            "DataAugmentation + NUTS",
            False,
            lambda m: [pdp.DataAugmentation([m["x"]]), pm.NUTS([m["p"]])],
            10**6,
        ),
        (
            "binary",
            binary_model,
            "p",
            "plain PyMC: BinaryGibbsMetropolis + NUTS, Potential",
            True,
            lambda m: None,
            10**3,
        ),
    ]
    sizes = [10**2, 10**3] if args.quick else [10**2, 10**3, 10**4, 10**5, 10**6]
    for n in sizes:
        draws = 1000 if n <= 10**4 else (400 if n <= 10**5 else 150)
        if args.quick:
            draws = 300
        for name, make, var, label, potential, steps, n_max in cases:
            if n > n_max:
                continue
            d = draws
            model = make(n, np.random.default_rng(n), potential=potential)
            ess, secs, rate = ess_per_second(model, steps, d, var)
            lines.append(
                f"| {name} | {n:,} | {label} | {d} | {ess:.0f} | {secs:.1f} | {rate:.2f} |"
            )
            print(lines[-1], flush=True)
    lines += [
        "",
        f"Load average at the end: {'/'.join(f'{v:.1f}' for v in os.getloadavg())}. Baselines are run "
        "only where they finish in minutes: PyMC's BinaryGibbsMetropolis visits "
        "the records one by one in Python (cost per iteration grows like n × a logp evaluation), and "
        "NUTS on the joint model has an n-dimensional state: at n = 10,000 it did not finish "
        "2 chains × (100 tune + 200 draws) in 13 minutes (2026-11-23, this machine).",
        "",
        "Reading the tables. The sweep's cost per record is flat from n = 10⁴ on (below that the "
        "fixed cost of the compiled graph calls dominates), so the cost is linear in n; the published "
        "R implementation of seed 003 loops over records at about 30 µs per update. What "
        "`pm.sample()` assigns by itself (DataAugmentation + ConjugateTheta, θ drawn from the records' "
        "sufficient statistic) keeps θ ESS/draw near 1 at every n; with NUTS on θ it falls at large n "
        "(the latent records pin θ and each NUTS step costs gradients over n records). At large n "
        "the time per draw is the sweep plus PyMC's copy of the n records into the trace "
        "(`benchmarks/bench_large_n.py` breaks one iteration down; `pm.sample(var_names=[...θ...])` "
        "keeps the records out of the trace).",
    ]
    out = pathlib.Path(__file__).parent / "RESULTS.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
