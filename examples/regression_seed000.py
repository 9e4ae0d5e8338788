"""Seed 000 §7.2 in miniature: distributed private linear regression, five methods across ε.

Data as in the seed: θ ~ N(0, I_d), Σ_x ~ IW(Λ, d + 1) with Λ = VᵀV (V i.i.d. N(0, 1)),
x_i ~ N(0, Σ_x), y_i = x_iᵀθ + N(0, 1); 80 % train / 20 % test; the train rows are split over J nodes,
each releasing noisy (XᵀX, Xᵀy) (plus yᵀy for MCMC-B&S, plus λ_min for adaSSP) at (ε, δ).
Hyper-parameters a = 20, b = 0.5, m = 0, C = (a − 1)/b·I, the same Λ, κ = d + 1 (seed §7.2).
Bounds ‖X‖, ‖Y‖ are the data maxima, as in the seed (not private in itself; see docs/regression.md).

Reported per method and ε (means over repetitions): prediction MSE on the test rows (the seed's
metric), estimation MSE ‖θ̂ − θ*‖²/d, coverage of the 90 % credible intervals of θ, seconds per fit.
Every MCMC method runs its default 2 chains; the fits of the first repetition at the middle ε are
summarised (mean, sd, 94 % HDI, ESS, R-hat).

    python examples/regression_seed000.py --smoke    # one repetition, ε = 1, n = 5000: seconds
    python examples/regression_seed000.py            # miniature, a few minutes on one core
    python examples/regression_seed000.py --refresh  # ... and rewrite examples/REGRESSION_RESULTS.md
    python examples/regression_seed000.py --full     # n = 1e5, d ∈ {2, 5}, J ∈ {1, 5, 10}: hours
    python examples/regression_seed000.py --prior weak   # the package's default prior instead
"""

from __future__ import annotations

import pathlib
import sys
import time

from _report import outputs, parser, quiet_blas_warning, summary

quiet_blas_warning()

import numpy as np  # noqa: E402

from pymc_dp import regression as R  # noqa: E402
from pymc_dp.regression.linalg import wishart_rvs  # noqa: E402

METHODS = ["mcmc_normalX", "mcmc_fixedS", "bayes_fixedS_fast", "mcmc_bs", "adassp"]
SCHEME = {"mcmc_bs": "szu", "adassp": "adassp"}
MARKER = "<!-- commentary below is kept when the script rewrites this file -->"


def simulate(n, d, rng):
    V = rng.normal(size=(d, d))
    Lam = V.T @ V
    Sigma = np.linalg.inv(wishart_rvs(rng, np.linalg.inv(Lam), d + 1.0))
    theta = rng.normal(size=d)
    X = rng.multivariate_normal(np.zeros(d), Sigma, size=n)
    y = X @ theta + rng.normal(size=n)
    return X, y, theta, Lam


SHOWN = {}  # (method) -> (eps, fit) of the first repetition at the middle ε, summarised at the end


def one_run(n, d, J, epsilons, delta, rng, draws, tune, prior_kind="seed"):
    X, y, theta, Lam = simulate(n, d, rng)
    n_train = int(0.8 * n)
    Xtr, ytr, Xte, yte = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    x_bound = float(np.linalg.norm(Xtr, axis=1).max())
    y_bound = float(np.abs(ytr).max())
    prior = (
        R.RegressionPrior.seed000(d, Lam=Lam)
        if prior_kind == "seed"
        else R.RegressionPrior(Lam=Lam)
    )
    rows = []
    for eps in epsilons:
        releases = {
            s: R.release_suff_stats(
                Xtr,
                ytr,
                x_bound=x_bound,
                y_bound=y_bound,
                epsilon=eps,
                delta=delta,
                n_nodes=J,
                scheme=s,
                rng=rng,
            )
            for s in ("sz", "szu", "adassp")
        }
        for m in METHODS:
            st = releases[SCHEME.get(m, "sz")]
            kw = {} if m == "adassp" else {"rng": rng, "prior": prior}
            if m in ("mcmc_normalX", "mcmc_fixedS", "mcmc_bs"):
                kw.update(draws=draws, tune=tune)  # default chains=2
            fit = R.fit(st, m, **kw)
            if eps == epsilons[len(epsilons) // 2] and fit.draws is not None:
                SHOWN.setdefault(m, (eps, fit))
            lo, hi = fit.interval(0.9)
            rows.append(
                dict(
                    eps=eps,
                    method=m,
                    pred=float(np.mean((fit.predict(Xte) - yte) ** 2)),
                    est=float(np.mean((fit.theta_hat - theta) ** 2)),
                    cover=(
                        float(np.mean((lo <= theta) & (theta <= hi)))
                        if fit.draws is not None
                        else float("nan")
                    ),
                    secs=fit.seconds,
                )
            )
    return rows


def table(rows, epsilons):
    lines = [
        "| ε | method | pred. MSE median | pred. MSE mean | est. MSE median | est. MSE mean "
        "| 90% coverage | s / fit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for eps in epsilons:
        for m in METHODS:
            r = [x for x in rows if x["eps"] == eps and x["method"] == m]
            cov = np.mean([x["cover"] for x in r])
            cov_s = "—" if np.isnan(cov) else f"{cov:.2f}"
            pred = [x["pred"] for x in r]
            est = [x["est"] for x in r]
            lines.append(
                f"| {eps:g} | {m} | {np.median(pred):.4f} | {np.mean(pred):.4g} | "
                f"{np.median(est):.2e} | {np.mean(est):.2e} | {cov_s} | "
                f"{np.mean([x['secs'] for x in r]):.3f} |"
            )
    return "\n".join(lines)


def main(argv=None):
    ap = parser(__doc__, results="examples/REGRESSION_RESULTS.md")
    ap.add_argument("--full", action="store_true", help="n=1e5, d∈{2,5}, J∈{1,5,10}, 20 reps")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--seed", type=int, default=2023)
    ap.add_argument(
        "--prior",
        choices=["seed", "weak"],
        default="seed",
        help="seed §7.2 hyper-parameters (default) or the package's weak default prior",
    )
    ap.add_argument(
        "--out",
        default=None,
        help="results file (default REGRESSION_RESULTS.md in the "
        "output folder; with --refresh, examples/REGRESSION_RESULTS.md)",
    )
    args = ap.parse_args(argv)
    if args.out is None:
        args.out = str(outputs(args)[0] / "REGRESSION_RESULTS.md")
    if args.full:
        n, dims, nodes, epsilons, reps, draws, tune = (
            100_000,
            (2, 5),
            (1, 5, 10),
            (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0),
            20,
            2000,
            1000,
        )
    else:
        n, dims, nodes, epsilons, reps, draws, tune = (
            20_000,
            (2,),
            (5,),
            (0.2, 1.0, 5.0),
            15,
            1000,
            600,
        )
    if args.smoke:
        n, dims, nodes, epsilons, reps, draws, tune = 5_000, (2,), (5,), (1.0,), 1, 1000, 500
    reps = args.reps or reps
    rng = np.random.default_rng(args.seed)
    cmd = "python examples/regression_seed000.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    delta = 1.0 / n**2
    out = [
        f"# Seed 000 §7.2 in miniature\n\nCommand: `{cmd.strip()}`\n",
        (
            f"Settings: n = {n} (80 % train), δ = 1/n² = {delta:.0e}, repetitions = {reps}, "
            f"MCMC: 2 chains, {tune} tuning + {draws} kept iterations each; prior: "
            + (
                "seed §7.2 (a = 20, b = 0.5, m = 0, C = (a−1)/b·I, κ = d + 1, Λ as generated)"
                if args.prior == "seed"
                else "package default (a = 2, b = 1, m = 0, C = 10·I, κ = d + 1, Λ as generated)"
            )
            + "; bounds = data maxima (as the seed); Bayes-fixedS-fast uses σ̃² = ‖Y‖/3.\n"
        ),
    ]
    t0 = time.perf_counter()
    for d in dims:
        for J in nodes:
            rows = []
            for _ in range(reps):
                rows += one_run(n, d, J, epsilons, delta, rng, draws, tune, args.prior)
            tab = table(rows, epsilons)
            print(f"\n## d = {d}, J = {J}\n\n{tab}", flush=True)
            out.append(f"\n## d = {d}, J = {J}\n\n{tab}\n")
    out.append(f"\nTotal wall time: {time.perf_counter() - t0:.0f} s.\n\n")
    for m, (eps, fit) in SHOWN.items():
        print()
        names = [v for v in ("theta", "sigma2_y") if v in fit.draws]
        summary(
            fit.idata,
            names,
            title=f"{m} at ε = {eps:g} (first repetition, d = {dims[0]}, "
            f"J = {nodes[0]}), {fit.draws['theta'].shape[0]} chains × {fit.draws['theta'].shape[1]}:",
        )
    path = pathlib.Path(args.out)
    old = path.read_text() if path.exists() else ""
    out.append(MARKER + old.split(MARKER, 1)[1] if MARKER in old else MARKER + "\n")
    path.write_text("".join(out))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
