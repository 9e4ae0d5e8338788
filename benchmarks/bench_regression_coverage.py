"""Coverage of each private-regression method's 90 % intervals at ε ∈ {1, 5, 20} (issue 22.6).

Each replication draws θ ~ N(0, I_d), n rows x ~ N(0, I/d) and y = xᵀθ + N(0, 1) (rows outside the
declared bounds ‖x‖ ≤ 3, |y| ≤ 6 dropped, as a curator would clip), releases (XᵀX, Xᵀy) from
``--nodes`` nodes (scheme "sz"; "szu" for MCMC-B&S) and fits every method. Reported per method and ε:
the fraction of the d coefficients whose true value lies in the 90 % equal-tailed interval (over
all replications, with its binomial standard error at 90 %), the mean interval width ``w``, and for
the fixed-S methods the fraction of fits that raised ``NoisyStatsWarning``. adaSSP is a point estimate (no interval).

Usage::

    python benchmarks/bench_regression_coverage.py [--reps 8] [--reps-fast 200] [--n 2000] [--nodes 3]

``--reps`` replications for the MCMC methods (≈ 8 s each on one core), ``--reps-fast`` for the
closed-form Bayes-fixedS-fast. Prints a Markdown table (the one in docs/regression.md).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from pymc_dp import regression as R

EPSILONS = (1.0, 5.0, 20.0)
MCMC = ("mcmc_normalX", "mcmc_fixedS", "mcmc_bs")
KW = {"x_bound": 3.0, "y_bound": 6.0, "delta": 1e-5}


def simulate(rng, n, d):
    theta = rng.normal(size=d)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    y = X @ theta + rng.normal(size=n)
    keep = (np.linalg.norm(X, axis=1) <= KW["x_bound"]) & (np.abs(y) <= KW["y_bound"])
    return X[keep], y[keep], theta


def one(rng, eps, n, d, nodes, methods, draws):
    X, y, theta = simulate(rng, n, d)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        sz = R.release_suff_stats(X, y, epsilon=eps, n_nodes=nodes, rng=rng, **KW)
    for m in methods:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("always", R.NoisyStatsWarning)
            if m == "mcmc_bs":
                st = R.release_suff_stats(
                    X, y, epsilon=eps, n_nodes=nodes, scheme="szu", rng=rng, **KW
                )
                fit = R.fit(st, m, draws=draws, tune=draws, chains=1, rng=rng)
            elif m == "bayes_fixedS_fast":
                fit = R.fit(sz, m, draws=2000, chains=1, rng=rng)
            else:
                fit = R.fit(sz, m, draws=draws, tune=draws, chains=1, rng=rng)
        lo, hi = fit.interval(0.9)
        warned = any(issubclass(w.category, R.NoisyStatsWarning) for w in rec)
        out[m] = ((lo <= theta) & (theta <= hi), hi - lo, warned)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--reps-fast", type=int, default=200)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--d", type=int, default=2)
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--draws", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    table = {}
    for eps in EPSILONS:
        root = np.random.SeedSequence([args.seed, int(eps * 100)])
        hits, widths, noisy = {}, {}, {}
        for k, child in enumerate(root.spawn(args.reps_fast)):
            methods = ("bayes_fixedS_fast",) + (MCMC if k < args.reps else ())
            res = one(
                np.random.default_rng(child), eps, args.n, args.d, args.nodes, methods, args.draws
            )
            for m, (h, w, warned) in res.items():
                hits.setdefault(m, []).append(h)
                widths.setdefault(m, []).append(w)
                noisy.setdefault(m, []).append(warned)
        for m, per_rep in hits.items():
            h = np.concatenate(per_rep)
            cov, se = h.mean(), np.sqrt(0.09 / h.size)
            warned = (
                f", warned {np.mean(noisy[m]):.0%}"
                if m in ("mcmc_fixedS", "bayes_fixedS_fast")
                else ""
            )
            table[(m, eps)] = f"{cov:.2f} ± {se:.2f} ({h.size}), w {np.mean(widths[m]):.2f}{warned}"
    print(
        f"n = {args.n}, d = {args.d}, J = {args.nodes} nodes, δ = 1e-5, 90 % intervals; "
        f"{args.reps} replications (MCMC, {args.draws} draws + {args.draws} tune), {args.reps_fast} "
        f"(bayes_fixedS_fast); {time.perf_counter() - t0:.0f} s\n"
    )
    print("| method | " + " | ".join(f"ε = {e:g}" for e in EPSILONS) + " |")
    print("|---|" + "---|" * len(EPSILONS))
    for m in ("mcmc_normalX", "mcmc_fixedS", "bayes_fixedS_fast", "mcmc_bs"):
        print(f"| {m} | " + " | ".join(table.get((m, e), "–") for e in EPSILONS) + " |")


if __name__ == "__main__":
    main()
