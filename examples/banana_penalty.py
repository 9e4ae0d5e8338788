r"""DP penalty MH on the banana posterior: MMD to the exact posterior versus ε (seed 002, Theorem 5, §7).

Model (seed 002, Theorem 5, d = 2, T = 1): θ ~ Ban(0, σ0² I, a, b, m), i.e. θ1 ~ N(0, σ0²) and
θ2 + a(θ1 - m)² + b ~ N(0, σ0²); records x_i = (x_i1, x_i2) with x_i1 ~ N(θ1, σ1²) and
x_i2 ~ N(θ2 + a(θ1 - m)² + b, σ2²). The posterior is Ban(μ, Σ, a, b, m) with
μ_j = nτ_j x̄_j / (nτ_j + τ0) and Σ = diag(1 / (nτ_j + τ0)), so exact draws are cheap.

For each ε the noise multiplier τ is planned so that the whole run (all chains, tuning included)
is (ε, δ)-DP (Theorem 7 / PLD accountant), the chain is run with ``pdp.PenaltyMH`` through
``pm.sample`` and its draws are compared with exact draws by MMD (RBF kernel, median heuristic).
Baselines: a non-private random-walk Metropolis chain of the same length, the same penalty kernel
without noise (clipping only), and a second exact sample.

Usage::

    python examples/banana_penalty.py                 # n = 10_000, a couple of minutes
    python examples/banana_penalty.py --n 100000      # the seed's n
"""

from __future__ import annotations

import time
from pathlib import Path

from _report import outputs, parser, quiet_blas_warning, summary

quiet_blas_warning()

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_dp as pdp  # noqa: E402
from pymc_dp.accounting import penalty_tau  # noqa: E402
from pymc_dp.diagnostics import mmd  # noqa: E402

A, B, M = 20.0, 0.0, 0.0
S1, S2, S0 = np.sqrt(20.0), np.sqrt(2.5), np.sqrt(1000.0)


def simulate(n, rng, theta=(0.0, 0.0)):
    t1, t2 = theta
    x1 = rng.normal(t1, S1, size=n)
    x2 = rng.normal(t2 + A * (t1 - M) ** 2 + B, S2, size=n)
    return np.column_stack([x1, x2])


def exact_draws(x, size, rng):
    n = len(x)
    tau = np.array([1 / S1**2, 1 / S2**2])
    prec = n * tau + 1 / S0**2
    mu = n * tau * x.mean(0) / prec
    z = rng.normal(mu, 1 / np.sqrt(prec), size=(size, 2))
    return np.column_stack([z[:, 0], z[:, 1] - A * (z[:, 0] - M) ** 2 - B])


def banana_model(x):
    with pm.Model() as model:
        t1 = pm.Normal("theta1", 0.0, S0)
        t2 = pm.Normal("theta2", -A * (t1 - M) ** 2 - B, S0)
        mean = pm.math.stack([t1 + 0 * t2, t2 + A * (t1 - M) ** 2 + B])
        pm.Normal("x", mean, np.array([S1, S2]), observed=x)
    return model


def draws_of(idata):
    post = idata["posterior"]
    return np.column_stack([np.asarray(post["theta1"]).ravel(), np.asarray(post["theta2"]).ravel()])


def main(argv=None):
    p = parser(__doc__, results="examples/figures/banana_penalty.png")
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument(
        "--eps",
        type=float,
        nargs="+",
        default=None,
        help="whole-run ε values (default 3 10 30 100 300; --smoke 30 300)",
    )
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--draws", type=int, default=1500)
    p.add_argument("--tune", type=int, default=500)
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--lipschitz", type=float, default=5.0)
    p.add_argument("--proposal", default="guided", choices=["rw", "coordinate", "guided"])
    p.add_argument("--scale", type=float, default=1.5, help="proposal sd in posterior sds")
    p.add_argument("--seed", type=int, default=2020)
    p.add_argument("--repeats", type=int, default=3, help="independent runs per setting")
    p.add_argument(
        "--out",
        default=None,
        help="figure path (default banana_penalty.png in the output "
        "folder; with --refresh, examples/figures/banana_penalty.png)",
    )
    args = p.parse_args(argv)
    if args.smoke:
        args.n, args.draws, args.tune, args.repeats = min(args.n, 2000), 300, 150, 1
    args.eps = args.eps or ([30.0, 300.0] if args.smoke else [3.0, 10.0, 30.0, 100.0, 300.0])
    if args.out is None:
        args.out = str(outputs(args)[1] / "banana_penalty.png")

    rng = np.random.default_rng(args.seed)
    x = simulate(args.n, rng)
    exact = exact_draws(x, 2000, rng)
    exact2 = exact_draws(x, 2000, rng)
    scale = args.scale / np.sqrt(
        args.n / np.array([S1**2, S2**2])
    )  # ~1.5 posterior sd per coordinate
    model = banana_model(x)
    start = {
        "theta1": 0.1,
        "theta2": 0.1,
    }  # fixed in advance: the start must not depend on the data
    total = args.chains * (args.tune + args.draws)
    kw = dict(
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        cores=1,
        initvals=start,
        progressbar=False,
        compute_convergence_checks=False,
    )

    def score(draws):
        idx = np.random.default_rng(0).choice(len(draws), size=min(2000, len(draws)), replace=False)
        return mmd(draws[idx], exact, rng=np.random.default_rng(1))

    seeds = [args.seed + r for r in range(args.repeats)]  # independent runs, each (ε, δ)-DP
    floor = score(exact2)
    with model:
        t = time.perf_counter()
        base = [
            score(draws_of(pm.sample(step=pm.Metropolis(), random_seed=sd, **kw))) for sd in seeds
        ]
        print(
            f"non-private RW Metropolis: MMD={np.mean(base):.4f} ± {np.std(base):.4f} "
            f"({time.perf_counter() - t:.1f} s)"
        )
        # the same kernel with negligible noise: what the privacy noise alone costs
        nonoise = []
        for sd in seeds:
            step0 = pdp.PenaltyMH(
                lipschitz=args.lipschitz, tau=1e-9, scale=scale, proposal=args.proposal
            )
            nonoise.append(score(draws_of(pm.sample(step=[step0], random_seed=sd, **kw))))
        print(
            f"same kernel without noise (tau=1e-9): MMD={np.mean(nonoise):.4f} ± {np.std(nonoise):.4f}"
        )
        rows = []
        for eps in args.eps:
            tau = penalty_tau(eps, args.delta, total)
            vals, accs, clips, spent = [], [], [], []
            t = time.perf_counter()
            for sd in seeds:
                step = pdp.PenaltyMH(
                    lipschitz=args.lipschitz, tau=tau, scale=scale, proposal=args.proposal
                )
                idata = pm.sample(step=[step], random_seed=sd, **kw)
                spent.append(pdp.privacy_spent(idata, delta=args.delta))
                ss = idata["sample_stats"]
                accs.append(float(np.asarray(ss["dp_accepted"]).mean()))
                clips.append(float(np.asarray(ss["dp_clipped_fraction"]).mean()))
                vals.append(score(draws_of(idata)))
            rows.append(
                (eps, tau, max(spent), np.mean(accs), np.mean(clips), np.mean(vals), np.std(vals))
            )
            print(
                f"eps={eps:7.2f} tau={tau:9.3f} spent/run={max(spent):8.3f} accept={np.mean(accs):.3f} "
                f"clipped={np.mean(clips):.4f} MMD={np.mean(vals):.4f} ± {np.std(vals):.4f} "
                f"({time.perf_counter() - t:.1f} s)"
            )
    print(f"exact vs exact MMD={floor:.4f}\n")
    summary(
        idata,
        ["theta1", "theta2"],
        title=f"DP penalty MH posterior at ε = {args.eps[-1]:g} (last run, "
        f"{args.chains} chains × {args.draws}):",
    )
    ex = exact_draws(x, 4000, np.random.default_rng(2))
    print(
        "exact posterior: "
        + ", ".join(
            f"{nm} mean {ex[:, j].mean():.4g} sd {ex[:, j].std():.3g}"
            for j, nm in enumerate(("theta1", "theta2"))
        )
    )
    base_mmd, nonoise_mmd = float(np.mean(base)), float(np.mean(nonoise))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    e = [r[0] for r in rows]
    ax[0].errorbar(
        e,
        [r[5] for r in rows],
        yerr=[r[6] for r in rows],
        fmt="o-",
        capsize=3,
        label=f"DP penalty MH (mean ± sd of {args.repeats} runs)",
    )
    ax[0].axhline(base_mmd, color="C1", ls="--", label="non-private RW Metropolis")
    ax[0].axhline(nonoise_mmd, color="C2", ls="-.", label=f"{args.proposal} MH without noise")
    ax[0].axhline(floor, color="k", ls=":", label="exact vs exact")
    ax[0].set_xscale("log")
    ax[0].set_xlabel(f"ε (δ={args.delta:g}, whole run)")
    ax[0].set_ylabel("MMD to exact posterior")
    ax[0].set_title(f"banana posterior, n={args.n}, proposal={args.proposal}")
    ax[0].legend()
    ax[1].plot(exact[:, 0], exact[:, 1], ".", ms=2, alpha=0.4, label="exact")
    ax[1].plot(*draws_of(idata)[::2].T, ".", ms=2, alpha=0.4, label=f"DP, ε={e[-1]:g}")
    ax[1].set_xlabel("θ1")
    ax[1].set_ylabel("θ2")
    ax[1].legend()
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return rows, base_mmd, nonoise_mmd, floor


if __name__ == "__main__":
    main()
