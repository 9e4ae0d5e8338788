"""Peak memory of ``pm.sample()`` with many latent records (issue 18.6), before and after.

Model: the clamped normal mean (mu ~ N(0, 3), x_i ~ N(mu, 1) for i < N, Sum on [-2, 4] + Laplace,
ε = 1), default assignment (DataAugmentation + ConjugateTheta), 2 chains, ``cores=1``, seed 3.
Each configuration runs in its own Python process, which reports its peak resident set size
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``), the wall time of ``pm.sample`` and the variables of
the posterior. Routes:

* ``default`` — ``pm.sample()`` as a user calls it: latent records above `pymc_dp.TRACE_LIMIT`
  (10⁷ numbers over the run) are left out of the trace (`pymc_dp.LatentTraceWarning`);
* ``keep`` — inside ``pdp.keep_latent()``: every latent record traced at every iteration, which is
  what ``pm.sample()`` did before the rule (the "before" column). At N = 10⁶ and 2 × 800
  iterations this needs about 21 GB (issue 18), more than this shared machine should be asked
  for, so the keep route runs there with ``--keep-iterations`` (default 2 × 100) and the table
  also gives the 2 × 800 figure scaled linearly from the measured trace (marked "scaled").
* ``baseline`` — the model built and compiled, one step of each sampler, no ``pm.sample`` (what a
  process needs before any trace).

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_trace_memory.py`` (writes
``benchmarks/TRACE_MEMORY_RESULTS.md``). ``--quick``: N = 10⁵ only. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent


def worker(n: int, route: str, tune: int, draws: int) -> dict:
    import resource
    import warnings

    import numpy as np
    import pymc as pm

    import pymc_dp as pdp

    rng = np.random.default_rng(1)
    stat, mech = pdp.Sum(lower=-2.0, upper=4.0), pdp.Laplace(epsilon=1.0)
    s = float(pdp.release(rng.normal(1.0, 1.0, n), stat, mech, rng=rng))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    out = {"n": n, "route": route, "tune": tune, "draws": draws}
    if route == "baseline":
        with model:
            da = pdp.DataAugmentation([x], rng=np.random.default_rng(0))
            ct = pdp.ConjugateTheta([mu])
        point = model.initial_point(random_seed=0)
        point, _ = da.step(point)
        point, _ = ct.step(point)
        out.update(seconds=0.0, posterior=[], warned=False)
    else:
        with model, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            keep = pdp.keep_latent() if route == "keep" else _null()
            t0 = time.perf_counter()
            with keep:
                idata = pm.sample(
                    draws=draws,
                    tune=tune,
                    chains=2,
                    cores=1,
                    random_seed=3,
                    progressbar=False,
                    compute_convergence_checks=False,
                )
            out["seconds"] = time.perf_counter() - t0
        out["posterior"] = sorted(idata.posterior.data_vars)
        out["mu_mean"] = float(idata.posterior["mu"].mean())
        out["warned"] = any(issubclass(w.category, pdp.LatentTraceWarning) for w in caught)
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9
    return out


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def spawn(n, route, tune, draws) -> dict:
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    cmd = [
        sys.executable,
        str(pathlib.Path(__file__).resolve()),
        "--worker",
        f"{n},{route},{tune},{draws}",
    ]
    proc = subprocess.run(cmd, env=env, cwd=str(HERE.parent), capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"worker {cmd[-1]} failed:\n{proc.stderr[-3000:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="N = 10⁵ only")
    parser.add_argument("--tune", type=int, default=400)
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--keep-iterations", type=int, default=100, help="keep route at N = 10⁶")
    parser.add_argument("--out", type=pathlib.Path, default=HERE / "TRACE_MEMORY_RESULTS.md")
    args = parser.parse_args()
    if args.worker is not None:
        n, route, tune, draws = args.worker.split(",")
        print("RESULT " + json.dumps(worker(int(n), route, int(tune), int(draws))), flush=True)
        return
    load0, start = os.getloadavg(), time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    half = args.keep_iterations // 2
    configs = [(10**5, "baseline", 0, 0), (10**5, "default", args.tune, args.draws)]
    configs.append((10**5, "keep", args.tune, args.draws))
    if not args.quick:
        configs += [
            (10**6, "baseline", 0, 0),
            (10**6, "default", args.tune, args.draws),
            (10**6, "keep", half, args.keep_iterations - half),
        ]
    results = []
    for cfg in configs:
        res = spawn(*cfg)
        print(json.dumps(res), flush=True)
        results.append(res)
    load1, end = os.getloadavg(), time.strftime("%H:%M", time.gmtime())
    import pymc

    iters = args.tune + args.draws
    lines = [
        "# Trace memory benchmark (issue 18.6)",
        "",
        f"Machine: {platform.machine()}, {platform.system()}, Python {platform.python_version()}, "
        f"PyMC {pymc.__version__}. Command: `python benchmarks/bench_trace_memory.py"
        f"{' --quick' if args.quick else ''}`. Run {start}–{end} UTC; load average at start "
        f"{load0[0]:.1f}, at end {load1[0]:.1f} (2 cores shared with other jobs). Peak RSS of the "
        "process (`ru_maxrss`), one process per row; 2 chains, `cores=1`, default assignment.",
        "",
        "| N records | route | iterations per chain | records in the posterior | peak RSS (GB) | "
        "`pm.sample` (s) |",
        "|---:|---|---:|:-:|---:|---:|",
    ]
    base = {}
    for r in results:
        its = r["tune"] + r["draws"]
        if r["route"] == "baseline":
            base[r["n"]] = r["peak_rss_gb"]
            lines.append(
                f"| {r['n']:,} | model + one step, no trace | — | — | {r['peak_rss_gb']:.2f} | — |"
            )
            continue
        label = (
            "`pm.sample()` now (records dropped)"
            if r["route"] == "default"
            else "`pdp.keep_latent()` = before"
        )
        has_x = "yes" if "x" in r["posterior"] else "no"
        lines.append(
            f"| {r['n']:,} | {label} | {its} | {has_x} | {r['peak_rss_gb']:.2f} | "
            f"{r['seconds']:.0f} |"
        )
        if r["route"] == "keep" and its != iters:
            scaled = base[r["n"]] + (r["peak_rss_gb"] - base[r["n"]]) * iters / its
            lines.append(
                f"| {r['n']:,} | `pdp.keep_latent()` = before, scaled to {iters} iterations | "
                f"{iters} | yes | {scaled:.1f} (scaled) | — |"
            )
    lines += [
        "",
        "Scaled rows: the measured peak above the no-trace baseline grows with the trace, which "
        "is linear in the iterations; issue 18 measured 21 GB for the 10⁶ × 2 × 800 run.",
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
