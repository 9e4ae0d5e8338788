"""Time per gradient of each collapsed-likelihood route against its cost in terms, and time of
one exact records draw against its units.

Measures the defaults of ``pymc_dp.marginal.CostModel``: ``SECONDS_PER_TERM`` (and so the refusal
limit) from the gradients, ``DRAW_SECONDS`` from the records draws (``Collapsed``'s exact draw of
the records given θ, units as `CostModel.draw_seconds` counts them); pass the numbers measured on
another machine as ``cost=pdp.marginal.CostModel(...)``. Prints one table row per size: route, n,
terms, ms per gradient, ns per term; then route, n, units, ms per draw, ns per unit. Run:
``.venv/bin/python benchmarks/bench_collapsed_cost.py`` (``--draws`` for the draws alone).
"""

import sys
import time

import numpy as np
import pymc as pm

import pymc_dp as pdp
from pymc_dp.marginal import CostModel
from pymc_dp.samplers.cost import DRAW_SECONDS, _route

NO_LIMIT = CostModel(max_seconds=1e9)


def grad_time(model):
    new = pdp.marginalize(model, cost=NO_LIMIT)
    plan = next(iter(new._pymc_dp_collapsed["plans"].values()))
    f = new.compile_dlogp()
    pt_ = new.initial_point()
    f(pt_)
    t0 = time.perf_counter()
    k = 0
    while time.perf_counter() - t0 < 1.0:
        f(pt_)
        k += 1
    return plan.cost, (time.perf_counter() - t0) / k


def draw_time(model):
    """Seconds of one exact records draw of the model's collapsed plan, and its units."""
    with model:
        step = pdp.Collapsed(list(model.free_RVs), cost=NO_LIMIT)
    plan = next(iter(step.plans.values()))
    route = _route(plan)
    units = CostModel().draw_seconds(plan) / DRAW_SECONDS[route]
    (cond,) = step.record_conditionals(model.initial_point()).values()
    rng = np.random.default_rng(0)
    cond.draw(rng)
    t0, k = time.perf_counter(), 0
    while time.perf_counter() - t0 < 1.0:
        cond.draw(rng)
        k += 1
    return route, units, (time.perf_counter() - t0) / k


def draw_rows():
    """The records draw of each route (the cases of `CostModel.draw_seconds`)."""
    out = []
    rng = np.random.default_rng(0)

    def measured(n, m):
        out.append((n, *draw_time(m)))
        print("  measured", out[-1][:3], flush=True)

    for n in (200, 1000):
        with pm.Model() as m:  # convolution: Binomial(4) clamped at 3
            x = pm.Binomial("x", 4, pm.Beta("p", 1, 1), shape=n)
            pdp.DPObserved(
                "s", x, statistic=pdp.Sum(0, 3), mechanism=pdp.Laplace(scale=3.0), observed=n * 1.5
            )
        measured(n, m)
        with pm.Model() as m:  # closed: unclamped Poisson sums
            x = pm.Poisson("x", pm.Gamma("lam", 2, 1), shape=n)
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(),
                mechanism=pdp.Laplace(scale=10.0),
                observed=2.0 * n,
            )
        measured(n, m)
        with pm.Model() as m:  # gaussian: Normal records, Gaussian noise
            x = pm.Normal("x", pm.Normal("mu", 0, 1), 1.0, shape=n)
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(),
                mechanism=pdp.Gaussian(sigma=5.0),
                observed=0.3 * n,
            )
        measured(n, m)
        with pm.Model() as m:  # local: Poisson records released one by one
            x = pm.Poisson("x", pm.Gamma("lam", 2, 1), shape=n)
            obs = rng.poisson(3, n) + rng.laplace(0, 1, n)
            pdp.DPObserved(
                "r", x, statistic=pdp.Local(), mechanism=pdp.Laplace(scale=1.0), observed=obs
            )
        measured(n, m)
    for n in (100, 300):
        with pm.Model() as m:  # counts: (n + 1)² · w units
            x = pm.Categorical("x", pm.Dirichlet("pi", np.ones(4)), shape=n)
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Counts(4),
                mechanism=pdp.Gaussian(sigma=n / 2),
                observed=np.full(4, n / 4),
            )
        measured(n, m)
    return out


def print_draw_rows():
    for n, route, units, sec in draw_rows():
        print(
            f"| {route} | {n} | {units:.3g} | {sec * 1e3:.3f} ms | {sec / units * 1e9:.1f} ns/unit "
            f"(DRAW_SECONDS {DRAW_SECONDS[route] * 1e9:.0f}) |",
            flush=True,
        )


if "--draws" in sys.argv:
    print_draw_rows()
    sys.exit(0)

rows = []
for n in (50, 200, 500, 1000):  # convolution: Binomial(4) clamped at 3 → L = 3n+1
    with pm.Model() as m:
        x = pm.Binomial("x", 4, pm.Beta("p", 1, 1), shape=n)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=3),
            mechanism=pdp.Laplace(scale=3.0),
            observed=n * 1.5,
        )
    rows.append(("additive convolution", n) + grad_time(m))
for n in (200, 400, 1000, 2000):  # counts, wide noise (full band)
    with pm.Model() as m:
        x = pm.Categorical("x", pm.Dirichlet("pi", np.ones(4)), shape=n)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Counts(4),
            mechanism=pdp.Gaussian(sigma=n / 2),
            observed=np.full(4, n / 4),
        )
    rows.append(("counts", n) + grad_time(m))
for n in (
    1000,
    10000,
    100000,
):  # local, Poisson truncated by Laplace(scale 1): w ≈ 40, u distinct values
    rng = np.random.default_rng(0)
    with pm.Model() as m:
        x = pm.Poisson("x", pm.Gamma("lam", 2, 1), shape=n)
        pdp.DPObserved(
            "r",
            x,
            statistic=pdp.Local(),
            mechanism=pdp.Laplace(scale=1.0),
            observed=rng.poisson(3, n) + rng.laplace(0, 1, n),
        )
    rows.append(("local", n) + grad_time(m))
for r in rows:
    print(
        f"| {r[0]} | {r[1]} | {r[2]:.3g} | {r[3] * 1e3:.3f} ms | {r[3] / r[2] * 1e9:.1f} ns/term |",
        flush=True,
    )
print_draw_rows()
