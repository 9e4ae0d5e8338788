"""Tutorial: analysing a noisy 2×2 contingency table.

A registry holds the records of n people, each with an exposure (yes/no) and an outcome (yes/no).
It publishes the four cell counts of the exposure × outcome table with privacy noise. We want the
posterior of the four cell probabilities π and of the **odds ratio**
OR = π₁₁π₀₀ / (π₁₀π₀₁), and we compare three analyses:

* **private (exact)**: the records are latent; `pdp.DPObserved` gives the density of the noisy table
  given the true one, `pdp.DataAugmentation` updates the records (Ju et al. 2022, seed 003,
  Algorithm 1) and NUTS updates π. This is the exact posterior given what was released.
* **naive**: the noisy counts (rounded, negatives set to 0) treated as if they were the true counts,
  giving a Dirichlet posterior. It ignores the noise, so it is too sure of itself.
* **confidential**: what the registry itself could compute from the true table (not available to
  the analyst; shown as the reference).

The mechanism is chosen in one line (`MECHANISMS` below, or `--mechanism`): the discrete Gaussian
when this version of pymc-dp has `pdp.DiscreteGaussian` (integer noise, zCDP), otherwise the Laplace
mechanism. Both are calibrated from the sensitivity of `pdp.Counts`: changing one person's record
moves one count down and another up, so L1 = 2 and L2 = √2.

Run: `python examples/tutorial_contingency.py` (`--smoke` for a quick check, `--mechanism laplace`
to switch). Figures: `contingency_cells.png`, `contingency_odds_ratio.png` in `examples/output/`.
"""

from __future__ import annotations

import math

from _report import hdi, outputs, parser, quiet_blas_warning, summary

quiet_blas_warning()

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_dp as pdp  # noqa: E402

CELLS = ["unexposed, no outcome", "unexposed, outcome", "exposed, no outcome", "exposed, outcome"]
PI_TRUE = np.array([0.45, 0.15, 0.25, 0.15])  # cell order: 2·exposure + outcome

# --- the one line that chooses the privacy mechanism ----------------------------------------------
MECHANISMS = {
    "laplace": lambda: pdp.Laplace(epsilon=0.5),  # ε = 0.5: scale Δ₁/ε = 2/0.5 = 4 per cell
    "discrete_gaussian": lambda: pdp.DiscreteGaussian(
        sigma=5.0
    ),  # ρ = Δ₂²/(2σ²) = 2/50 = 0.04 zCDP
}
DEFAULT = "discrete_gaussian" if hasattr(pdp, "DiscreteGaussian") else "laplace"


def log_odds_ratio(pi):
    """log OR = log π₁₁ + log π₀₀ − log π₁₀ − log π₀₁ on the last axis (cells in CELLS order)."""
    return np.log(pi[..., 3]) + np.log(pi[..., 0]) - np.log(pi[..., 2]) - np.log(pi[..., 1])


def describe(name, draws):
    lo, hi = hdi(draws)
    return (
        f"{name:<28} mean {np.mean(draws):7.3f}  median {np.median(draws):7.3f}  sd {np.std(draws):7.3f}"
        f"  94% HDI [{lo:6.3f}, {hi:6.3f}]"
    )


def main(argv=None):
    p = parser(__doc__)
    p.add_argument(
        "--mechanism",
        choices=sorted(MECHANISMS),
        default=DEFAULT,
        help=f"privacy mechanism of the release (default here: {DEFAULT})",
    )
    p.add_argument("--n", type=int, default=300, help="records in the table")
    p.add_argument(
        "--draws", type=int, default=None, help="draws per chain (default 1000; --smoke 200)"
    )
    p.add_argument("--seed", type=int, default=11)
    args = p.parse_args(argv)
    _, fig_dir = outputs(args)
    draws = args.draws or (200 if args.smoke else 1000)
    rng = np.random.default_rng(args.seed)

    # --- the registry (curator): confidential records and the noisy table ------------------------
    records = rng.choice(4, size=args.n, p=PI_TRUE)  # one cell code per person
    table = np.bincount(records, minlength=4)
    statistic, mechanism = pdp.Counts(4), MECHANISMS[args.mechanism]()
    noisy = np.asarray(pdp.release(records, statistic, mechanism, rng=rng), dtype=float)
    print(f"mechanism: {mechanism!r}")
    print(f"confidential table: {table.tolist()}")
    print(f"released table:     {np.round(noisy, 2).tolist()}\n")

    # --- the analyst: exact private posterior ------------------------------------------------------
    with pm.Model():
        pi = pm.Dirichlet("pi", np.ones(4))
        cell = pm.Categorical("cell", pi, shape=args.n)  # the latent confidential records
        pdp.DPObserved("table", cell, statistic=statistic, mechanism=mechanism, observed=noisy)
        pm.Deterministic(
            "log_odds_ratio",
            pm.math.log(pi[3]) + pm.math.log(pi[0]) - pm.math.log(pi[2]) - pm.math.log(pi[1]),
        )
        idata = pm.sample(
            step=[pdp.DataAugmentation([cell])],
            draws=draws,
            tune=draws,
            chains=2,
            cores=1,
            random_seed=args.seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    summary(
        idata,
        ["pi", "log_odds_ratio"],
        title="Private posterior (DataAugmentation + NUTS, 2 chains):",
    )
    post = idata["posterior"]
    pi_priv = np.asarray(post["pi"]).reshape(-1, 4)

    # --- the naive analysis and the confidential reference ----------------------------------------
    naive_counts = np.maximum(np.rint(noisy), 0)
    pi_naive = rng.dirichlet(1 + naive_counts, size=len(pi_priv))
    pi_conf = rng.dirichlet(1 + table, size=len(pi_priv))
    lor = {
        "private (exact)": log_odds_ratio(pi_priv),
        "naive (noise ignored)": log_odds_ratio(pi_naive),
        "confidential (reference)": log_odds_ratio(pi_conf),
    }
    print(
        f"\nlog odds ratio (true value {log_odds_ratio(PI_TRUE):.3f}, "
        f"OR = {math.exp(log_odds_ratio(PI_TRUE)):.2f}):"
    )
    for k, v in lor.items():
        print(describe(k, v))
    print("odds ratio:")
    for k, v in lor.items():
        print(describe(k, np.exp(v)))
    sd_ratio = np.std(lor["private (exact)"]) / np.std(lor["naive (noise ignored)"])
    print(
        f"\nThe exact private posterior of log OR is {sd_ratio:.2f} times as wide as the naive one."
    )

    # --- figures ---------------------------------------------------------------------------------
    fig, ax = plt.subplots(figsize=(9, 3.6))
    for j, (name, d, c) in enumerate(
        (
            ("private (exact)", pi_priv, "C0"),
            ("naive", pi_naive, "C3"),
            ("confidential", pi_conf, "0.4"),
        )
    ):
        for k in range(4):
            lo, hi = hdi(d[:, k])
            y = k + (j - 1) * 0.22
            ax.plot([lo, hi], [y, y], color=c, lw=3, label=name if k == 0 else None)
            ax.plot(d[:, k].mean(), y, "o", color=c)
    ax.plot(PI_TRUE, range(4), "k|", ms=16, mew=2, label="true π")
    ax.set_yticks(range(4), CELLS)
    ax.set_xlabel("cell probability (mean and 94 % HDI)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(fig_dir / "contingency_cells.png", dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.6))
    bins = np.linspace(
        min(np.quantile(v, 0.002) for v in lor.values()),
        max(np.quantile(v, 0.998) for v in lor.values()),
        60,
    )
    for (name, v), c in zip(lor.items(), ("C0", "C3", "0.4")):
        ax.hist(v, bins=bins, density=True, histtype="step", lw=2, color=c, label=name)
    ax.axvline(log_odds_ratio(PI_TRUE), color="k", ls=":", label="true log OR")
    ax.set_xlabel("log odds ratio")
    ax.set_ylabel("posterior density")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(fig_dir / "contingency_odds_ratio.png", dpi=90)
    plt.close(fig)
    print(f"figures: {fig_dir / 'contingency_cells.png'}, {fig_dir / 'contingency_odds_ratio.png'}")


if __name__ == "__main__":
    main()
