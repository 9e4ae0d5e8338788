"""Time per gradient of each collapsed-likelihood route against its cost in terms.

Measures the defaults of ``pymc_dp.marginal.CostModel`` (``SECONDS_PER_TERM``, and so the refusal
limit); pass the numbers measured on another machine as ``cost=pdp.marginal.CostModel(...)``. Prints one table row per
size: route, n, terms, ms per gradient, ns per term. Run: ``.venv/bin/python
benchmarks/bench_collapsed_cost.py``.
"""

import time

import numpy as np
import pymc as pm

import pymc_dp as pdp
from pymc_dp.marginal import CostModel

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
