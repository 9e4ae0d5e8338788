"""θ ESS/s of ``pm.sample()`` without ``step=``: pymc-dp's assignment vs PyMC's own (issue 10 item 5).

Models: the README quickstart (200 normal records, clamped mean, Laplace ε = 1) and a Poisson count
(500 records, sum, DiscreteLaplace). "PyMC's own" = the same call with DataAugmentation removed from
``pm.STEP_METHODS`` (PyMC then gives NUTS to continuous records, Metropolis to integer ones).
2 chains, ``cores=1``, 1000 tune + 1000 draws; time = ``sample_stats.attrs["sampling_time"]``.
Run: ``python benchmarks/bench_auto_assign.py``.
"""

import time

import arviz as az
import numpy as np
import pymc as pm

import pymc_dp as pdp


def quickstart():
    rng = np.random.default_rng(1)
    x_conf = rng.normal(1.0, 1.0, size=200)
    stat, mech = pdp.Mean(lower=-2, upper=4), pdp.Laplace(epsilon=1.0)
    release = pdp.release(x_conf, statistic=stat, mechanism=mech, rng=rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=200)
        pdp.DPObserved("s_dp", x, statistic=stat, mechanism=mech, observed=release)
    return model, "mu"


def poisson():
    rng = np.random.default_rng(2)
    mech = pdp.DiscreteLaplace(scale=2.0)
    s = pdp.release(rng.poisson(2.0, 500), pdp.Sum(), mech, rng=rng)
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=3.0, beta=1.0)
        x = pm.Poisson("x", lam, shape=500)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    return model, "lam"


def run(make, ours):
    model, var = make()
    removed = False
    if not ours and pdp.DataAugmentation in pm.STEP_METHODS:
        pm.STEP_METHODS.remove(pdp.DataAugmentation)
        removed = True
    try:
        t0 = time.perf_counter()
        with model:
            idata = pm.sample(draws=1000, tune=1000, chains=2, cores=1, random_seed=3,
                              progressbar=False, compute_convergence_checks=False)
        wall = time.perf_counter() - t0
    finally:
        if removed:
            pm.STEP_METHODS.insert(0, pdp.DataAugmentation)
    ess = float(np.asarray(az.ess(idata, var_names=[var])[var]))
    t = float(idata.sample_stats.attrs.get("sampling_time", wall))
    steps = "DataAugmentation" if "dp_accept_rate" in idata.sample_stats else "PyMC default"
    return ess, t, wall, steps


if __name__ == "__main__":
    print(f"pymc_dp from {pdp.__file__}")
    for make in (quickstart, poisson):
        res = {ours: run(make, ours) for ours in (True, False)}
        for ours, (ess, t, wall, steps) in res.items():
            print(f"{make.__name__:10s} {steps:17s} ESS {ess:7.0f}  sampling {t:7.1f} s  (wall {wall:6.1f} s)"
                  f"  ESS/s {ess / t:8.1f}")
        a, b = res[True], res[False]
        print(f"{make.__name__:10s} ratio of θ ESS/s (ours / PyMC default): {(a[0] / a[1]) / (b[0] / b[1]):.1f}×")
