"""θ mixing of ``pm.sample()`` on the models users write (issue 17, "What must work" 2). Not a test.

Models (builders in ``tests/support/user_models.py``, shared with the tests):
(a) ``rr_two_answers`` — 2×2 table, two randomized-response answers per record, N = 400;
(b) ``normal_scale`` — records N(μ, σ), only a clamped mean released (n = 100, ε = 1);
(c) ``hierarchical_groups`` — four groups, μ_g = μ0 + τ z_g, one clamped-mean release each;
(d) ``regression_user`` — linear regression, 9 clamped normalised sufficient statistics + Laplace,
n = 50, ε = 10;
(e) ``table_dgauss`` — 2×3 table, N = 944, Counts + DiscreteGaussian(ε = 0.1, δ = 1e-6).

Routes: ``pm.sample()`` with no ``step=`` (pymc-dp's assignment) and PyMC's own assignment on the same
model (pymc-dp's classes removed from ``pm.STEP_METHODS``: NUTS on the joint model of θ and continuous
records with the release density as a term; Metropolis / Gibbs on discrete records).

``--joint`` adds NUTS on the joint model written in plain PyMC (the builders' ``potential=True``:
records latent, the mechanism's log density as a ``pm.Potential``, PyMC's own assignment) for the
models with continuous records (NUTS does not run on discrete records).

Printed per model and route: the assignment, the route chosen at warm-up (``dp_route`` stat: the
chains that kept DataAugmentation's measured θ-move),
θ bulk ESS/draw (the smallest over θ's coordinates), the largest R-hat over θ, θ ESS/s over PyMC's
``sampling_time`` (wall clock, tuning included) and θ ESS per CPU second of the sampling process
(steps are built before ``pm.sample``, so compilation is not counted; less sensitive to the load
of a shared machine). 2 chains, ``cores=1``.

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_user_models.py [--draws 1000]
[--pymc-draws 500] [--only normal_scale,regression_user] [--skip-pymc] [--joint]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
from pymc.sampling.mcmc import assign_step_methods

sys.path.insert(0, ".")
import pymc_dp as pdp
from tests.support.user_models import BUILDERS

#: models whose records are discrete (no NUTS on the joint model)
DISCRETE_RECORDS = ("rr_two_answers", "table_dgauss")

OURS = (pdp.Collapsed, pdp.DataAugmentation, pdp.ConjugateTheta, pdp.SufficientTheta)


@contextlib.contextmanager
def pymc_default():
    saved = list(pm.STEP_METHODS)
    for cls in OURS:
        if cls in pm.STEP_METHODS:
            pm.STEP_METHODS.remove(cls)
    try:
        yield
    finally:
        pm.STEP_METHODS[:] = saved


def diagnostics(idata, names):
    ess, rhat = [], []
    for name in names:
        d = np.asarray(idata.posterior[name], dtype=float)
        d = d.reshape(d.shape[0], d.shape[1], -1)
        for k in range(d.shape[2]):
            ess.append(float(az.ess(d[..., k], method="bulk")))
            rhat.append(float(az.rhat(d[..., k])))
    return min(ess), max(rhat)


def run(build, ours, draws, tune, seed, joint=False):
    model, names = build(potential=True) if joint else build()
    ctx = contextlib.nullcontext() if ours else pymc_default()
    with ctx, model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step, sel = assign_step_methods(model, None, methods=pm.STEP_METHODS)
        steps = " + ".join(f"{c.__name__}[{','.join(v.name for v in vs)}]" for c, vs in sel.items())
        t0, c0 = time.perf_counter(), time.process_time()
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=2,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            step=step,
        )
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    routes = []
    if "dp_route" in idata.sample_stats:  # groups whose θ-move was kept after warm-up, per chain
        r = np.asarray(idata.sample_stats["dp_route"])
        routes = [f"θ-move kept in chains {[int(c) for c in np.flatnonzero(r[:, -1] > 0)]}"]
    ess, rhat = diagnostics(idata, names)
    t = float(idata.sample_stats.attrs.get("sampling_time", wall))
    return {
        "steps": steps,
        "route": "; ".join(routes),
        "per_draw": ess / (2 * draws),
        "rhat": rhat,
        "rate": ess / t,
        "cpu_rate": ess / cpu,
        "t": t,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=1000, help="draws (and tuning steps) per chain")
    ap.add_argument("--only", default=None, help="comma-separated model names")
    ap.add_argument("--skip-pymc", action="store_true", help="no PyMC default route")
    ap.add_argument("--skip-ours", action="store_true", help="no pymc-dp route")
    ap.add_argument(
        "--pymc-draws",
        type=int,
        default=500,
        help="draws (and tuning steps) per chain of PyMC's own assignment (slow)",
    )
    ap.add_argument(
        "--joint",
        action="store_true",
        help="also NUTS on the joint model in plain PyMC (records + pm.Potential), --draws draws",
    )
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(BUILDERS)
    print(
        f"load: {os.getloadavg()}; PyMC {pm.__version__}; {platform.processor() or platform.machine()}"
    )
    print(f"2 chains × ({args.draws} tune + {args.draws} draws), cores=1, seed {args.seed}")
    print(
        "| model | route | assignment (warm-up choice) | θ ESS/draw (min) | R-hat (max) | θ ESS/s "
        "| θ ESS/CPU-s | s |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|")
    routes = [] if args.skip_ours else [("ours", True, False)]
    if not args.skip_pymc:
        routes.append(("pymc", False, False))
    if args.joint:
        routes.append(("joint", True, True))
    labels = {
        "ours": "pm.sample() (pymc-dp)",
        "pymc": "PyMC default (DPObserved model)",
        "joint": "NUTS on the joint model (pm.Potential)",
    }
    for name in names:
        for kind, ours, joint in routes:
            if joint and name in DISCRETE_RECORDS:
                continue  # NUTS does not run on discrete records
            try:
                draws = args.pymc_draws if kind == "pymc" else args.draws
                r = run(BUILDERS[name], ours, draws, draws, args.seed, joint=joint)
            except Exception as err:  # noqa: BLE001 - report and go on
                print(
                    f"| {name} | {labels[kind]} | failed: "
                    f"{type(err).__name__}: {str(err)[:120]} | | | | | |",
                    flush=True,
                )
                continue
            route = f" ({r['route']})" if r["route"] else ""
            print(
                f"| {name} | {labels[kind]} | {r['steps']}{route} | {r['per_draw']:.3f} | "
                f"{r['rhat']:.3f} | {r['rate']:.1f} | {r['cpu_rate']:.1f} | {r['t']:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
