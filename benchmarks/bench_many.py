"""`pdp.sample_many`: per-unit overhead with and without compile reuse, units/s on 1 and 2 workers.

    python benchmarks/bench_many.py [--units 16] [--draws 1500] [--out benchmarks/MANY_RESULTS.md]

The unit is the issue's 50-record Beta–Bernoulli-like model written with normal records: 50
records N(μ, 1), μ ~ N(0, 3), a Laplace (ε = 1) noisy clamped sum in ``pm.Data("s")``; pm.sample()
assigns ConjugateTheta[μ] + DataAugmentation[x].

* overhead: seconds per unit of ``draws = tune = 1`` (everything but sampling), after the first unit
  of a process: a fresh ``build(unit)`` per unit, against ``data=`` (one model and its steps per
  worker, ``pm.set_data`` per unit);
* scaling: units of about 1–2 s (``--draws``) on a local cluster of 1 and of 2 workers (each warmed
  up by a first call), units/s of the second call, resident memory per worker (psutil).

On a multi-machine cluster the same script runs with ``--scheduler tcp://host:8786``: the units go
to that cluster's workers, nothing else changes.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
import pymc as pm

import pymc_dp as pdp
from pymc_dp.runner.many import local_cluster

N = 50
STAT = pdp.Sum(lower=-3, upper=5)


def release_for(unit):
    rng = np.random.default_rng(10_000 + int(unit))
    x = rng.normal(1.0, 1.0, size=N)
    return np.asarray(pdp.release(x, STAT, pdp.Laplace(epsilon=1.0), rng=rng))


def build(unit):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        x = pm.Normal("x", mu, 1.0, shape=N)
        s = pm.Data("s", release_for(unit))
        pdp.DPObserved("s_dp", x, statistic=STAT, mechanism=pdp.Laplace(epsilon=1.0), observed=s)
    return model


def data(unit):
    return {"s": release_for(unit)}


def overhead(n_units: int) -> dict:
    out = {}
    for label, kw in (
        ("fresh build per unit", {}),
        ("data= (compile once per worker)", {"data": data}),
    ):
        res = pdp.sample_many(
            build,
            list(range(n_units)),
            n_workers=0,
            draws=1,
            tune=1,
            chains=1,
            progressbar=False,
            **kw,
        )
        secs = res.units["seconds"].to_numpy()
        out[label] = (float(secs[0]), float(np.median(secs[1:])))
    return out


def scaling(workers: int, n_units: int, draws: int, scheduler: str | None) -> dict:
    import distributed

    kw = {"draws": draws, "tune": draws, "chains": 2, "progressbar": False, "data": data}
    cluster = None if scheduler else local_cluster(workers)
    client = distributed.Client(scheduler or cluster, set_as_default=False)
    try:
        n = len(client.scheduler_info(n_workers=-1)["workers"])
        pdp.sample_many(
            build, [f"warm{i}" for i in range(2 * n)], client=client, batch_size=1, **kw
        )
        t0 = time.perf_counter()
        res = pdp.sample_many(build, list(range(n_units)), client=client, **kw)
        wall = time.perf_counter() - t0
        rss = client.run(lambda: __import__("psutil").Process().memory_info().rss)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return {
        "workers": n,
        "wall": wall,
        "units_per_s": n_units / wall,
        "unit_seconds": float(np.median(res.units["seconds"])),
        "rss_mb": float(np.mean(list(rss.values()))) / 2**20,
        "ok": int((res.units["status"] == "ok").sum()),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--units", type=int, default=16)
    p.add_argument("--draws", type=int, default=1500)
    p.add_argument("--scheduler", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    load = os.getloadavg()[0]
    lines = [
        f"# sample_many benchmark\n\n`python benchmarks/bench_many.py --units {args.units} "
        f"--draws {args.draws}` on {platform.python_version()}, PyMC {pm.__version__}, "
        f"{os.cpu_count()} cores, load {load:.1f} at start.\n",
        "## Per-unit overhead (draws = tune = 1, one process)\n",
        "| | first unit (s) | later units, median (s) |",
        "|---|---|---|",
    ]
    for label, (first, later) in overhead(8).items():
        lines.append(f"| {label} | {first:.2f} | {later:.3f} |")
    lines += [
        "\n## Units per second (units of 2 chains × (draws + tune), data= reuse)\n",
        "| workers | units | wall (s) | units/s | median unit (s) | RSS per worker (MB) |",
        "|---|---|---|---|---|---|",
    ]
    rows = []
    for w in [None] if args.scheduler else [1, 2]:
        r = scaling(w, args.units, args.draws, args.scheduler)
        rows.append(r)
        lines.append(
            f"| {r['workers']} | {r['ok']}/{args.units} | {r['wall']:.1f} | "
            f"{r['units_per_s']:.2f} | {r['unit_seconds']:.2f} | {r['rss_mb']:.0f} |"
        )
    if len(rows) == 2:
        lines.append(
            f"\nSpeed-up 2 vs 1 worker: {rows[1]['units_per_s'] / rows[0]['units_per_s']:.2f}×; "
            f"load {os.getloadavg()[0]:.1f} at the end."
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
