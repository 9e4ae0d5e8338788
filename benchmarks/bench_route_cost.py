"""Seconds per unit of work of the steps whose warm-up decisions weigh cost (the defaults of
``pymc_dp.samplers.cost.SECONDS_PER_UNIT``).

Two warm-up decisions weigh what a move gains against what it costs: `InterweaveTrial` (keep the
non-centred θ-move of ``DataAugmentation``?) and ``Collapsed``'s number of independence tries. They
count their work (records updated by the sweep, θ-move evaluations, collapsed log-density
evaluations and terms) and price it with these constants, so the same seed gives the same draws
under any machine load. This script measures the constants on the models users write
(``tests/support/user_models.py``) by timing the steps inside ``pm.sample`` (2 chains, ``cores=1``):

* ``sweep`` + ``record_update`` · n: one DataAugmentation sweep of n records (a line fitted through
  ``normal_scale`` at two sizes);
* ``interweave_eval`` + ``interweave_record`` · n: one evaluation of the θ-move's target (same fit);
* ``iteration``: the rest of an iteration (PyMC's loop and the θ steps), on (b), (d) and (e) at
  the sizes of ``bench_user_models.py`` (the default is their median);
* ``collapsed_eval``: one collapsed log-density evaluation beyond its terms
  (``SECONDS_PER_TERM``), and ``collapsed_iteration``: one Collapsed iteration beyond its
  evaluations and the records draw (``CostModel.draw_seconds``), on (a).

Pass other numbers as ``cost=pdp.marginal.CostModel(seconds_per_unit={...})`` to
``DataAugmentation`` / ``Collapsed``. Run from the repository root: ``PYTHONPATH=. python
benchmarks/bench_route_cost.py``.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

import pymc as pm

sys.path.insert(0, ".")
import pymc_dp as pdp
from pymc_dp.marginal import step as collapsed_step
from pymc_dp.samplers import augmentation, interweave
from pymc_dp.samplers.cost import CostModel
from tests.support.user_models import BUILDERS

CLOCK = {"da": 0.0, "move": 0.0, "evals": 0, "calls": 0}


def _timed(fn, key, evals=False):
    def wrapper(self, point):
        t0 = time.perf_counter()
        out = fn(self, point)
        CLOCK[key] += time.perf_counter() - t0
        if evals:
            CLOCK["evals"] += int(out[1][0]["dp_iw_evals"])
        else:
            CLOCK["calls"] += 1
        return out

    return wrapper


augmentation.DataAugmentation.step = _timed(augmentation.DataAugmentation.step, "da")
interweave.Interweave.step = _timed(interweave.Interweave.step, "move", evals=True)


def da_run(name, **kw):
    """Seconds per iteration of the sweep, per θ-move evaluation and of the rest; n records."""
    model, _ = BUILDERS[name](**kw)
    CLOCK.update(da=0.0, move=0.0, evals=0, calls=0)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step = [pdp.DataAugmentation(interweave=True)]
        idata = pm.sample(
            draws=150, tune=150, chains=2, cores=1, random_seed=1, progressbar=False,
            compute_convergence_checks=False, step=step,
        )  # fmt: skip
    iters = CLOCK["calls"]
    total = float(idata.sample_stats.attrs["sampling_time"])
    n = sum(g.block.n for g in step[0].groups)
    sweep = (CLOCK["da"] - CLOCK["move"]) / iters
    return n, sweep, CLOCK["move"] / CLOCK["evals"], total / iters - CLOCK["da"] / iters


def collapsed_run():
    model, _ = BUILDERS["rr_two_answers"]()
    spent = {"eval": 0.0, "evals": 0, "iter": 0.0, "iters": 0}
    kernel = collapsed_step.collapsed_kernel

    def timed_kernel(rng, state, logp_fn, proposals, draw):
        def timed_logp(t):
            t0 = time.perf_counter()
            out = logp_fn(t)
            spent["eval"] += time.perf_counter() - t0
            spent["evals"] += 1
            return out

        t0 = time.perf_counter()
        out = kernel(rng, state, timed_logp, proposals, draw)
        spent["iter"] += time.perf_counter() - t0
        spent["iters"] += 1
        return out

    collapsed_step.collapsed_kernel = timed_kernel
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step = pdp.Collapsed()
        pm.sample(
            draws=300, tune=300, chains=2, cores=1, random_seed=1, progressbar=False,
            compute_convergence_checks=False, step=[step],
        )  # fmt: skip
    collapsed_step.collapsed_kernel = kernel
    cost = CostModel()
    terms = sum(cost.seconds(p) for p in step.plans.values())
    draw = sum(cost.draw_seconds(p) for p in step.plans.values())
    per_eval = spent["eval"] / spent["evals"]
    per_iter = spent["iter"] / spent["iters"]
    evals_per_iter = spent["evals"] / spent["iters"]
    return per_eval - terms, per_iter - evals_per_iter * per_eval - draw


print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
da_run("normal_scale", n=100)  # numba compiles (or loads) the sweep's kernels: not timed
rows = [da_run("normal_scale", n=n) for n in (100, 10_000)]
(n0, s0, e0, _), (n1, s1, e1, _) = rows
record_update, interweave_record = (s1 - s0) / (n1 - n0), (e1 - e0) / (n1 - n0)
print(
    f"| sweep | {s0 - record_update * n0:.3g} s | record_update | {record_update:.3g} s |\n"
    f"| interweave_eval | {e0 - interweave_record * n0:.3g} s | interweave_record | "
    f"{interweave_record:.3g} s |",
    flush=True,
)
rest = [da_run(name)[3] for name in ("normal_scale", "regression_user", "table_dgauss")]
print(f"| iteration (b, d, e) | {', '.join(f'{r:.3g}' for r in rest)} s |", flush=True)
print("| collapsed_eval | %.3g s | collapsed_iteration | %.3g s |" % collapsed_run())
print(f"load average {os.getloadavg()[0]:.2f}")
