"""Run the model zoo (tests/support/zoo.py) with pm.sample() and no step=; write ZOO_RESULTS.md.

For every model: the route pm.sample() picked, θ's bulk ESS/draw, R-hat, exactness (|z| of mean and
sd against the exact posterior, in Monte Carlo standard errors), ESS per second of sampling, the
convergence guard's verdict; with ``--pymc`` also PyMC's own assignment (the same model sampled by
the steps PyMC picks without pymc_dp: NUTS on the joint model — the mechanism's density is the
release's log density, as a ``pm.Potential`` would be — plus PyMC's Metropolis-type samplers for
discrete records).

    python benchmarks/bench_zoo.py [--draws 500 --tune 300] [--pymc] [--only NAME ...]

Results are cached per model in ``benchmarks/.zoo_cache/`` (``--fresh`` ignores the cache), so a run
can be split: ``--only a b`` then a plain run that collects everything.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import arviz as az
import pymc as pm
from pymc.step_methods import STEP_METHODS
import xarray as xr

import pymc_dp  # noqa: F401
from tests.support.sampling import sample
from tests.support.zoo import CASES, _select, run_case

CACHE = ROOT / "benchmarks" / ".zoo_cache"
OUT = ROOT / "benchmarks" / "ZOO_RESULTS.md"


def _ess_rhat(d):
    d = np.asarray(d, dtype=float)
    dims = ("chain", "draw", *[f"e{i}" for i in range(d.ndim - 2)])
    ds = xr.Dataset({"q": (dims, d)})
    ess = float(np.min(np.asarray(az.ess(ds, method="bulk")["q"])))
    rhat = float(np.max(np.asarray(az.rhat(ds)["q"])))
    return ess, rhat


def _pymc_own(c, keys, draws, tune, seed):
    """The model sampled by the steps PyMC assigns without pymc_dp's registered steps."""
    from pymc.sampling.mcmc import assign_step_methods

    model, _, _ = c.build()
    ours = {m for m in STEP_METHODS if m.__module__.startswith("pymc_dp")}
    with model:
        _, selected = assign_step_methods(
            model, None, methods=[m for m in STEP_METHODS if m not in ours]
        )
        steps = [cls(vars=list(vs)) for cls, vs in selected.items()]
    route = {cls.__name__: sorted(v.name for v in vs) for cls, vs in selected.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sample(model, steps, draws=draws, tune=tune, seed=seed)
    seconds = float(idata.posterior.attrs.get("sampling_time", float("nan")))
    out = {}
    for key in keys:
        d = _select(idata.posterior, key)
        ess, rhat = _ess_rhat(d)
        out[key] = {
            "ess_per_draw": ess / (d.shape[0] * d.shape[1]),
            "r_hat": rhat,
            "ess_per_s": ess / seconds,
        }
    return {"route": route, "rows": out, "seconds": seconds}


def _run(c, args):
    path = CACHE / f"{c.name}.json"
    if path.exists() and not args.fresh:
        res = json.loads(path.read_text())
        if res.get("pymc") is not None or not args.pymc:
            return res
    t0 = time.perf_counter()
    try:
        r = run_case(c, draws=args.draws, tune=args.tune, seed=args.seed)
        res = {
            "name": c.name,
            "description": r["description"].strip(),
            "route": r["route"],
            "seconds": r["seconds"],
            "wall": time.perf_counter() - t0,
            "guard": len(r["guard"]),
            "rows": {
                k: {
                    kk: float(np.max(v))
                    if kk in ("ess_per_draw", "r_hat", "ess_per_s", "z_mean", "z_sd")
                    else None
                    for kk, v in row.items()
                    if kk in ("ess_per_draw", "r_hat", "ess_per_s", "z_mean", "z_sd")
                }
                for k, row in r["rows"].items()
            },
            "error": None,
        }
    except Exception as err:  # noqa: BLE001 (a crash is a result: report it)
        res = {
            "name": c.name,
            "description": c.build.__doc__.strip(),
            "route": {},
            "seconds": float("nan"),
            "wall": time.perf_counter() - t0,
            "guard": 0,
            "rows": {},
            "error": f"{type(err).__name__}: {err}",
        }
    res.update(
        statistic=c.statistic, mechanism=c.mechanism, records=c.records, fast=c.fast, xfail=c.xfail
    )
    if args.pymc and res["rows"]:
        try:
            res["pymc"] = _pymc_own(c, list(res["rows"]), args.draws, args.tune, args.seed)
        except Exception as err:  # noqa: BLE001 (PyMC own may fail on a model)
            res["pymc"] = {"error": f"{type(err).__name__}: {str(err).splitlines()[0]}"}
    CACHE.mkdir(exist_ok=True)
    path.write_text(json.dumps(res, default=float, indent=1))
    return res


def _fmt(v, spec=".3g"):
    return "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, spec)


def _route(route):
    return ", ".join(f"{k}: {', '.join(v)}" for k, v in route.items())


def write(results, args):
    lines = [
        "# Model zoo: `pm.sample()` without `step=`",
        "",
        (
            f"`python benchmarks/bench_zoo.py` — {len(results)} models of `tests/support/zoo.py`, 2 chains × "
            f"{args.draws} draws after {args.tune} tuning steps, `cores=1`, seed {args.seed}; PyMC "
            f"{pm.__version__}. ESS is ArviZ's bulk ESS of the worst entry; |z| is the distance of the "
            "posterior mean / sd from the exact value in Monte Carlo standard errors (tests fail at 4); "
            "ESS/s uses PyMC's `sampling_time` (compilation excluded). *guard*: the number of "
            "`pdp.ConvergenceWarning`s issued during sampling (one check per chain end). *PyMC own*: the "
            "same model with the steps PyMC assigns without pymc_dp (NUTS on the joint model for continuous "
            "records, Metropolis-type samplers for discrete ones)."
        ),
        "",
        "| model | statistic / mechanism / records | route picked | θ | ESS/draw | R-hat | \\|z\\| mean / sd | ESS/s | guard | PyMC own: ESS/draw, R-hat, ESS/s | speed-up (ESS/s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        head = f"`{r['name']}`" + (" (xfail: known bug)" if r.get("xfail") else "")
        kind = f"{r['statistic']} / {r['mechanism']} / {r['records']}"
        if r["error"]:
            lines.append(f"| {head} | {kind} | **crash**: {r['error'][:200]} | | | | | | | | |")
            continue
        for key, row in r["rows"].items():
            z = (
                f"{_fmt(row.get('z_mean'), '.2f')} / {_fmt(row.get('z_sd'), '.2f')}"
                if row.get("z_mean") is not None
                else "no exact answer"
            )
            own = r.get("pymc") or {}
            orow = (own.get("rows") or {}).get(key)
            if orow:
                o = f"{_fmt(orow['ess_per_draw'])}, {_fmt(orow['r_hat'], '.3f')}, {_fmt(orow['ess_per_s'])}"
                ratio = (
                    _fmt(
                        row["ess_per_s"] / orow["ess_per_s"]
                        if orow["ess_per_s"] > 0
                        else float("nan"),
                        ".3g",
                    )
                    + "×"
                )
            else:
                o, ratio = (own.get("error", "not run")[:80], "—")
            lines.append(
                f"| {head} | {kind} | {_route(r['route'])} | `{key}` | {_fmt(row['ess_per_draw'])} | "
                f"{_fmt(row['r_hat'], '.3f')} | {z} | {_fmt(row['ess_per_s'])} | {r['guard']} | {o} | {ratio} |"
            )
    bad = [
        r
        for r in results
        if r["rows"]
        and any(
            (row.get("z_mean") or 0) >= 4 or (row.get("z_sd") or 0) >= 4
            for row in r["rows"].values()
        )
    ]
    stuck = [
        r
        for r in results
        if r["rows"]
        and any(row["ess_per_draw"] < 0.1 or row["r_hat"] > 1.01 for row in r["rows"].values())
    ]

    def names(rs):
        return ", ".join(f"`{r['name']}`" for r in rs) or "none"

    lines += [
        "",
        "## Verdict",
        "",
        f"* beyond 4 MCSE of the exact posterior: {names(bad)}",
        f"* below the mixing target (ESS/draw < 0.1 or R-hat > 1.01, issue 17): {names(stuck)}",
        f"* crashed: {names([r for r in results if r['error']])}",
        "",
    ]
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--tune", type=int, default=300)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--pymc", action="store_true", help="also run PyMC's own assignment")
    ap.add_argument("--only", nargs="*", default=None, help="model names (default: all)")
    ap.add_argument("--fresh", action="store_true", help="ignore cached results")
    ap.add_argument(
        "--cached", action="store_true", help="write the report from the cached models only"
    )
    args = ap.parse_args(argv)
    cases = [c for c in CASES if args.only is None or c.name in args.only]
    if args.cached:
        done = [
            json.loads((CACHE / f"{c.name}.json").read_text())
            for c in cases
            if (CACHE / f"{c.name}.json").exists()
        ]
        write(done, args)
        return
    results = []
    for c in cases:
        r = _run(c, args)
        print(
            f"{c.name}: route {_route(r['route'])} "
            + "; ".join(
                f"{k} ESS/draw {v['ess_per_draw']:.3f} R-hat {v['r_hat']:.3f}"
                for k, v in r["rows"].items()
            )
            + (f" ERROR {r['error']}" if r["error"] else ""),
            flush=True,
        )
        results.append(r)
    if args.only is None:
        write(results, args)


if __name__ == "__main__":
    main()
