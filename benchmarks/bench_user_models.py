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

Printed per model and route: the assignment, the route chosen at warm-up (``dp_route`` stat: the
chains that kept DataAugmentation's measured θ-move),
θ bulk ESS/draw (the smallest over θ's coordinates), the largest R-hat over θ, θ ESS/s over PyMC's
``sampling_time``. 2 chains, ``cores=1``.

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_user_models.py [--draws 1000]
[--pymc-draws 500] [--only normal_scale,regression_user] [--skip-pymc]``.
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


def run(build, ours, draws, tune, seed):
    model, names = build()
    ctx = contextlib.nullcontext() if ours else pymc_default()
    with ctx, model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, sel = assign_step_methods(model, None, methods=pm.STEP_METHODS)
        steps = " + ".join(f"{c.__name__}[{','.join(v.name for v in vs)}]" for c, vs in sel.items())
        t0 = time.perf_counter()
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=2,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
        wall = time.perf_counter() - t0
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
        "t": t,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=1000, help="draws (and tuning steps) per chain")
    ap.add_argument("--only", default=None, help="comma-separated model names")
    ap.add_argument("--skip-pymc", action="store_true", help="pymc-dp's assignment only")
    ap.add_argument(
        "--pymc-draws",
        type=int,
        default=500,
        help="draws (and tuning steps) per chain of PyMC's own assignment (slow)",
    )
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(BUILDERS)
    print(
        f"load: {os.getloadavg()}; PyMC {pm.__version__}; {platform.processor() or platform.machine()}"
    )
    print(f"2 chains × ({args.draws} tune + {args.draws} draws), cores=1, seed {args.seed}")
    print(
        "| model | route | assignment (warm-up choice) | θ ESS/draw (min) | R-hat (max) | θ ESS/s | s |"
    )
    print("|---|---|---|---:|---:|---:|---:|")
    for name in names:
        for ours in (True, False) if not args.skip_pymc else (True,):
            try:
                draws = args.draws if ours else args.pymc_draws
                r = run(BUILDERS[name], ours, draws, draws, args.seed)
            except Exception as err:  # noqa: BLE001 - report and go on
                print(
                    f"| {name} | {'pm.sample()' if ours else 'PyMC default'} | failed: "
                    f"{type(err).__name__}: {str(err)[:120]} | | | | |",
                    flush=True,
                )
                continue
            label = "pm.sample() (pymc-dp)" if ours else "PyMC default (joint NUTS)"
            route = f" ({r['route']})" if r["route"] else ""
            print(
                f"| {name} | {label} | {r['steps']}{route} | {r['per_draw']:.3f} | {r['rhat']:.3f} | "
                f"{r['rate']:.1f} | {r['t']:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
