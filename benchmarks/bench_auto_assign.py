"""θ ESS/s of ``pm.sample()`` without ``step=``: pymc-dp's assignment vs PyMC's own (issues 10.5, 11).

pymc-dp's assignment: importing ``pymc_dp`` registers ``Collapsed`` (discrete records whose releases
can be summed out cheaply, with their parents), ``DataAugmentation`` (other latent records; with
``interweave="auto"``), ``ConjugateTheta`` (conjugate parents of those records) and
``SufficientTheta`` (other continuous parents whose dependents have sufficient statistics, e.g. the
quickstart's ``mean_stay``) in ``pm.STEP_METHODS``; other parameters keep NUTS. "PyMC default" =
the same call with these classes
removed from ``pm.STEP_METHODS`` (PyMC then gives NUTS to continuous records and parameters,
Metropolis / BinaryGibbsMetropolis to discrete records).

Models: the quickstart of ``examples/quickstart.py`` (Beta–Bernoulli count, n = 300, Laplace
ε = 0.5, and Gamma stays, clamped mean, Laplace ε = 1), the README snippet (normal mean, n = 200,
clamped mean, Laplace ε = 1), a Poisson count (n = 500, Sum, DiscreteLaplace scale 2), and the
clamped normal mean + Laplace (Sum on [-2, 4]) at n = 50 / ε = 0.1, n = 1000 / ε = 0.05 and
n = 10⁵ / ε = 1.

2 chains, ``cores=1``; θ bulk ESS (ArviZ, the smallest over θ's coordinates and variables);
ESS/s over ``sample_stats.attrs["sampling_time"]`` (after compilation). Not a test.
Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_auto_assign.py [--quick]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import time

import arviz as az
import numpy as np
import pymc as pm
from pymc.sampling.mcmc import assign_step_methods

import pymc_dp as pdp

OURS = (pdp.Collapsed, pdp.DataAugmentation, pdp.ConjugateTheta, pdp.SufficientTheta)


def quickstart():
    rng = np.random.default_rng(2026)
    n = 300
    condition, stay = rng.binomial(1, 0.12, size=n), rng.gamma(2.0, 2.5, size=n)
    count_stat, count_mech = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=0.5)
    stay_stat, stay_mech = pdp.Mean(lower=0, upper=20), pdp.Laplace(epsilon=1.0)
    s_count = pdp.release(condition, count_stat, count_mech, rng=rng)
    s_stay = pdp.release(stay, stay_stat, stay_mech, rng=rng)
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        mean_stay = pm.Gamma("mean_stay", alpha=2.0, beta=0.4)
        has = pm.Bernoulli("has_condition", p, shape=n)
        los = pm.Gamma("length_of_stay", alpha=2.0, beta=2.0 / mean_stay, shape=n)
        pdp.DPObserved("count", has, statistic=count_stat, mechanism=count_mech, observed=s_count)
        pdp.DPObserved("stay", los, statistic=stay_stat, mechanism=stay_mech, observed=s_stay)
    return model, ["p", "mean_stay"]


def readme():
    rng = np.random.default_rng(1)
    x_conf = rng.normal(1.0, 1.0, size=200)
    stat, mech = pdp.Mean(lower=-2, upper=4), pdp.Laplace(epsilon=1.0)
    release = pdp.release(x_conf, statistic=stat, mechanism=mech, rng=rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=200)
        pdp.DPObserved("s_dp", x, statistic=stat, mechanism=mech, observed=release)
    return model, ["mu"]


def poisson():
    rng = np.random.default_rng(2)
    mech = pdp.DiscreteLaplace(scale=2.0)
    s = mech.sample(np.asarray(rng.poisson(2.0, 500).sum()), rng)
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=3.0, beta=1.0)
        x = pm.Poisson("x", lam, shape=500)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=mech, observed=s)
    return model, ["lam"]


def clamped(n, eps):
    def build():
        rng = np.random.default_rng(1)
        stat, mech = pdp.Sum(lower=-2.0, upper=4.0), pdp.Laplace(epsilon=eps)
        s = float(pdp.release(rng.normal(1.0, 1.0, n), stat, mech, rng=rng))
        with pm.Model() as model:
            mu = pm.Normal("mu", 0, 3)
            x = pm.Normal("x", mu, 1.0, shape=n)
            pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
        return model, ["mu"]

    build.__name__ = f"clamped n={n} eps={eps}"
    return build


@contextlib.contextmanager
def pymc_default():
    """PyMC's own assignment: pymc-dp's classes out of ``pm.STEP_METHODS``, the list restored as it
    was afterwards (same order: ``Collapsed`` must stay ahead of ``DataAugmentation``)."""
    saved = list(pm.STEP_METHODS)
    for cls in OURS:
        if cls in pm.STEP_METHODS:
            pm.STEP_METHODS.remove(cls)
    try:
        yield
    finally:
        pm.STEP_METHODS[:] = saved


def bulk_ess(idata, names):
    out = []
    for name in names:
        d = np.asarray(idata.posterior[name], dtype=float)
        d = d.reshape(d.shape[0], d.shape[1], -1)
        out += [float(az.ess(d[..., k], method="bulk")) for k in range(d.shape[2])]
    return min(out)


def run(make, ours, draws, tune):
    model, names = make()
    ctx = contextlib.nullcontext() if ours else pymc_default()
    with ctx, model:
        _, sel = assign_step_methods(model, None, methods=pm.STEP_METHODS)
        steps = " + ".join(f"{c.__name__}[{','.join(v.name for v in vs)}]" for c, vs in sel.items())
        t0 = time.perf_counter()
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=2,
            cores=1,
            random_seed=3,
            progressbar=False,
            compute_convergence_checks=False,
        )
        wall = time.perf_counter() - t0
    if "dp_iw_evals" in idata.sample_stats and int(
        np.asarray(idata.sample_stats["dp_iw_evals"]).sum()
    ):
        steps += " (+interweave)"
    ess = bulk_ess(idata, names)
    t = float(idata.sample_stats.attrs.get("sampling_time", wall))
    return dict(ess=ess, per_draw=ess / (2 * draws), t=t, rate=ess / t, steps=steps)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer draws (500 + 500)")
    parser.add_argument(
        "--only", default=None, help="comma-separated model names, e.g. quickstart,readme"
    )
    args = parser.parse_args()
    base = 500 if args.quick else 1000
    cases = [
        (quickstart, base),
        (readme, base),
        (poisson, base),
        (clamped(50, 0.1), base),
        (clamped(1000, 0.05), base),
        (clamped(100_000, 1.0), 300),
    ]
    if args.only:
        cases = [c for c in cases if c[0].__name__ in args.only.split(",")]
    print(f"load: {os.getloadavg()}")
    print(
        f"pymc_dp from {pdp.__file__}; PyMC {pm.__version__}; {platform.processor() or platform.machine()}"
    )
    print("| model | route (assignment) | θ ESS/draw | θ ESS/s | ratio ESS/s |")
    print("|---|---|---|---|---|")
    for make, draws in cases:
        res = {ours: run(make, ours, draws, draws) for ours in (True, False)}
        ratio = res[True]["rate"] / res[False]["rate"]
        for ours in (True, False):
            r = res[ours]
            label = "pm.sample() (pymc-dp)" if ours else "PyMC default"
            print(
                f"| {make.__name__} | {label}: {r['steps']} | {r['per_draw']:.3f} | {r['rate']:.1f} | "
                f"{f'{ratio:.1f}×' if ours else ''} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
