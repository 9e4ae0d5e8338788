"""Benchmark: θ ESS/draw and ESS/s of ``pm.sample()``'s default (``pdp.Collapsed`` where it is
cheap), of ``pdp.Collapsed`` asked for explicitly, and of NUTS on the collapsed model
(``pdp.marginalize``) next to DataAugmentation + NUTS (and PyMC's Gibbs step for binary records),
side by side in one run.

Models (issue 11, item 1):

1. Beta–Bernoulli sum + Laplace(ε = 1), n = 100 (additive, Binomial closed form and the general
   convolution route);
2. 2×2 randomized-response table: N = 400 categorical records in 0..3, ``Local`` +
   ``RandomizedResponse(ε = 1, n_categories = 4)``, π ~ Dirichlet(1, 1, 1, 1) (local);
3. Poisson counts + DiscreteLaplace(ε = 1) on the sum, n = 100 and 500, λ ~ Gamma(2, 1) (closed
   form).
4. Counts of N = 400 categorical records (K = 4) + Laplace(ε = 1) on each cell (counts DP), and a
   weak release: N = 200, ε = 0.1.

ESS is ArviZ bulk ESS (minimum over the entries of a vector θ); time is PyMC's ``sampling_time``
(tuning + draws, after compilation), 2 chains, ``cores=1``.

Run: ``.venv/bin/python benchmarks/bench_collapsed.py [--quick] [--only LABEL] [--routes TEXT]``.
"""

from __future__ import annotations

import argparse
import platform
import time

import arviz as az
import numpy as np
import pymc as pm

import pymc_dp as pdp


def bernoulli_model(rng, n=100):
    stat, mech = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=1.0)
    release = float(pdp.release(rng.binomial(1, 0.3, n), stat, mech, rng=rng))
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=release)
    return model, "p"


def rr_table_model(rng, n=400):
    mech = pdp.RandomizedResponse(1.0, n_categories=4)
    truth = rng.choice(4, size=n, p=[0.4, 0.2, 0.25, 0.15])
    release = pdp.release(truth, pdp.Local(), mech, rng=rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(4))
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=release)
    return model, "pi"


def poisson_model(rng, n=500):
    stat, mech = pdp.Sum(), pdp.DiscreteLaplace(scale=1.0)
    release = int(pdp.release(rng.poisson(3.0, n), stat, mech, rng=rng))
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 1.0)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=release)
    return model, "lam"


def counts_model(rng, n=400, epsilon=1.0):
    stat, mech = pdp.Counts(4), pdp.Laplace(epsilon=epsilon)
    release = pdp.release(rng.choice(4, size=n, p=[0.4, 0.2, 0.25, 0.15]), stat, mech, rng=rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(4))
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=release)
    return model, "pi"


def weak_counts_model(rng):
    return counts_model(rng, n=200, epsilon=0.1)


def run(model, var, draws, step=None):
    with model:
        kwargs = {} if step is None else {"step": step(model)}
        t0 = time.perf_counter()
        idata = pm.sample(
            draws=draws,
            tune=max(500, draws // 2),
            chains=2,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
            **kwargs,
        )
        wall = time.perf_counter() - t0
    ess = float(np.min(np.asarray(az.ess(idata, var_names=[var])[var])))
    secs = float(idata.sample_stats.attrs.get("sampling_time", wall))
    return ess, draws, secs, wall


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer draws, skip the slow baselines")
    parser.add_argument("--only", default=None, help="run only the cases whose label contains this")
    parser.add_argument(
        "--routes", default=None, help="run only the routes whose label contains this"
    )
    args = parser.parse_args()
    d = 1000 if args.quick else 2000
    print(
        f"Machine: {platform.machine()}, Python {platform.python_version()}, PyMC {pm.__version__}"
    )
    print("| model | route | draws | θ ESS | ESS/draw | sampling s | ESS/s |")
    print("|---|---|---|---|---|---|---|")
    cases = [
        ("Beta–Bernoulli sum + Laplace, n=100", bernoulli_model),
        ("2×2 randomized-response table, N=400", rr_table_model),
        ("Poisson sum + DiscreteLaplace, n=100", lambda rng: poisson_model(rng, n=100)),
        ("Poisson sum + DiscreteLaplace, n=500", poisson_model),
        ("Counts (K=4) + Laplace, N=400", counts_model),
        ("Counts (K=4) + Laplace ε=0.1, N=200", weak_counts_model),
    ]
    if args.only:
        cases = [c for c in cases if args.only in c[0]]
    for label, build in cases:
        model, var = build(np.random.default_rng(7))
        record = model["x"]
        big = build in (counts_model, weak_counts_model)
        routes = [
            ("pm.sample() default", model, None, d if not big else d // 2),
            (
                "pdp.Collapsed",
                model,
                lambda m, r=record, v=var: [pdp.Collapsed([m[v], r])],
                d if not big else d // 2,
            ),
            (
                "collapsed NUTS (pdp.marginalize)",
                pdp.marginalize(model),
                None,
                d if not big else d // 2,
            ),
        ]
        if build is bernoulli_model:
            routes.append(
                (
                    "collapsed NUTS, convolution route",
                    pdp.marginalize(model, method="convolution"),
                    None,
                    d,
                )
            )
        if not args.quick:
            routes.append(
                (
                    "DataAugmentation + NUTS",
                    model,
                    lambda m, r=record, v=var: [pdp.DataAugmentation([r]), pm.NUTS([m[v]])],
                    d if build not in (counts_model, weak_counts_model) else d // 2,
                )
            )
            if build is bernoulli_model:
                routes.append(
                    (
                        "BinaryGibbsMetropolis + NUTS",
                        model,
                        lambda m, r=record, v=var: [pm.BinaryGibbsMetropolis([r]), pm.NUTS([m[v]])],
                        d,
                    )
                )
        if args.routes:
            routes = [r for r in routes if args.routes in r[0]]
        for route, m, step, draws in routes:
            ess, n_draws, secs, _ = run(m, var, draws, step)
            per_draw = ess / (2 * n_draws)
            print(
                f"| {label} | {route} | {n_draws} | {ess:.0f} | {per_draw:.2f} | {secs:.1f} | "
                f"{ess / secs:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
