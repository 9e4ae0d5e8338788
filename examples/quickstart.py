"""Quickstart: inference from a privatized count and a privatized mean with pymc-dp.

A hospital holds the records of n patients and publishes two numbers under differential privacy:
the number with a condition (Laplace noise, epsilon = 0.5) and the mean length of stay clamped to
[0, 20] days (Laplace noise, epsilon = 1). An analyst writes the confidential-data model in PyMC,
adds one ``pdp.DPObserved`` node per release and calls plain ``pm.sample()``: importing ``pymc_dp``
lets PyMC pick ``pdp.Collapsed`` for ``p`` and the Bernoulli records (the latent count summed out
exactly, the records then drawn given ``p``), ``pdp.DataAugmentation`` for the stays and
``pdp.SufficientTheta`` for ``mean_stay`` (slice sampling from the stays' sufficient statistics n, Σx,
Σ log x), as printed by PyMC.

We print the private posterior next to the posterior an analyst with the confidential data would get
and, for the count, next to the exact private posterior (by enumeration of the latent count).

Compile time (building the samplers: PyTensor compiles the model's log density, its gradient and the
record proposals to C, or numba on PyMC 6) and sampling time are reported separately; the first run
compiles, later runs reuse PyTensor's cache. PyMC's progress bar shows the sampling.

Run: ``make demo`` (or ``python examples/quickstart.py``; ``--smoke`` for a few-second check).
Output: ``examples/output/quickstart_trace.png``.
"""

from __future__ import annotations

import math
import sys
import time

from _report import outputs, parser, quiet_blas_warning, summary

quiet_blas_warning()  # see _report.quiet_blas_warning: harmless here, NumPy's BLAS is used instead

import arviz as az  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from scipy import special, stats  # noqa: E402

import pymc_dp as pdp  # noqa: E402


def exact_private_count_posterior(s, n, a, b, scale):
    """Mean and sd of p | s for p ~ Beta(a, b), k ~ Bin(n, p), s = k + Laplace(scale)."""
    k = np.arange(n + 1)
    logw = (
        special.gammaln(n + 1)
        - special.gammaln(k + 1)
        - special.gammaln(n - k + 1)
        + special.betaln(a + k, b + n - k)
        - np.abs(s - k) / scale
    )
    w = np.exp(logw - logw.max())
    w /= w.sum()
    m1 = np.sum(w * (a + k) / (a + b + n))
    m2 = np.sum(w * (a + k) * (a + k + 1) / ((a + b + n) * (a + b + n + 1)))
    return m1, np.sqrt(m2 - m1**2)


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--n", type=int, default=None, help="patients (default 300; --smoke 100)")
    p.add_argument(
        "--draws",
        type=int,
        default=None,
        help="draws per chain after as many tuning steps (default 1000; --smoke 200)",
    )
    p.add_argument("--no-progressbar", action="store_true", help="hide PyMC's progress bar")
    args = p.parse_args(argv)
    out_dir, fig_dir = outputs(args)
    seed = args.seed
    n = args.n or (100 if args.smoke else 300)
    draws = args.draws or (200 if args.smoke else 1000)
    rng = np.random.default_rng(seed)
    # --- the curator: confidential data and two releases ---------------------------------------
    condition = rng.binomial(1, 0.12, size=n)
    stay = rng.gamma(shape=2.0, scale=2.5, size=n)  # days
    count_stat, count_mech = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=0.5)
    stay_stat, stay_mech = pdp.Mean(lower=0, upper=20), pdp.Laplace(epsilon=1.0)
    s_count = pdp.release(condition, count_stat, count_mech, rng=rng)
    s_stay = pdp.release(stay, stay_stat, stay_mech, rng=rng)
    print(f"confidential: {condition.sum()} with the condition, mean stay {stay.mean():.3f} days")
    print(
        f"released:     count {float(s_count):.2f} (eps=0.5), mean stay {float(s_stay):.3f} (eps=1)\n"
    )

    # --- the analyst: PyMC model of the confidential data + one DPObserved per release ----------
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        mean_stay = pm.Gamma("mean_stay", alpha=2.0, beta=0.4)
        has_condition = pm.Bernoulli("has_condition", p, shape=n)
        length_of_stay = pm.Gamma("length_of_stay", alpha=2.0, beta=2.0 / mean_stay, shape=n)
        pdp.DPObserved(
            "count", has_condition, statistic=count_stat, mechanism=count_mech, observed=s_count
        )
        pdp.DPObserved(
            "stay", length_of_stay, statistic=stay_stat, mechanism=stay_mech, observed=s_stay
        )
        t0 = time.perf_counter()
        idata = pm.sample(
            draws=draws,
            tune=draws,
            chains=2,
            cores=1,
            random_seed=seed,
            progressbar=not args.no_progressbar,
        )  # pymc-dp's steps picked by PyMC
        t_total = time.perf_counter() - t0
        sys.stderr.flush()
    t_sample = float(idata.sample_stats.attrs.get("sampling_time", t_total))
    print(f"compile time (building the samplers PyMC picked): {t_total - t_sample:.1f} s")
    print(
        f"sampling time (2 chains x ({draws} tuning + {draws} kept) iterations): {t_sample:.1f} s\n"
    )
    summary(
        idata,
        ["p", "mean_stay"],
        title="Private posterior (pm.sample(): Collapsed[p], SufficientTheta[mean_stay], DataAugmentation):",
    )

    # --- comparisons -----------------------------------------------------------------------------
    k = condition.sum()
    nonpriv = stats.beta(1 + k, 1 + n - k)
    scale = pdp.dp_nodes(model)["count"].mechanism.noise_scale  # Δ/ε, calibrated from the bounds
    ex_mean, ex_sd = exact_private_count_posterior(float(s_count), n, 1.0, 1.0, scale)
    post = np.asarray(idata.posterior["p"]).ravel()
    stay_post = np.asarray(idata.posterior["mean_stay"]).ravel()
    # non-private: the same model with the confidential stays observed (1-d quadrature in m)
    m = np.linspace(2.0, 10.0, 20_001)
    logpost = stats.gamma.logpdf(m, 2.0, scale=1 / 0.4) + stats.gamma.logpdf(
        stay[:, None], 2.0, scale=m[None, :] / 2.0
    ).sum(axis=0)
    w = np.exp(logpost - logpost.max())
    w /= w.sum()
    np_mean = np.sum(w * m)
    np_sd = np.sqrt(np.sum(w * m**2) - np_mean**2)
    print("\n               mean     sd")
    print(f"p  private   {post.mean():.4f} {post.std():.4f}   (pm.sample())")
    print(f"p  exact     {ex_mean:.4f} {ex_sd:.4f}   (enumeration of the latent count)")
    print(f"p  no noise  {nonpriv.mean():.4f} {nonpriv.std():.4f}   (confidential data)")
    print(f"mean_stay private   {stay_post.mean():.3f} {stay_post.std():.3f}")
    print(f"mean_stay no noise  {np_mean:.3f} {np_sd:.3f}")
    sample_stats = idata["sample_stats"]
    acc = np.asarray(sample_stats["dp_accept_rate"])
    min_acc = float(np.asarray(sample_stats["dp_min_accept"]).min())
    imh = np.asarray(sample_stats["dp_accept"], dtype=float)
    print(
        f"\nCollapsed[p]: independence-proposal acceptance {np.nanmean(imh):.3f} (the count's records "
        "are drawn exactly given p)"
    )
    print(
        f"stay records (DataAugmentation): acceptance rate mean {acc.mean():.3f}, smallest per-record "
        f"probability {min_acc:.3f}; Ju et al. (2022) Prop. 3.1 bound e^-eps = e^-1 = {math.exp(-1.0):.3f}"
    )

    az.plot_trace(idata, var_names=["p", "mean_stay"])
    plt.tight_layout()
    path = fig_dir / "quickstart_trace.png"
    plt.savefig(path, dpi=80)
    print(f"trace plot: {path}")


if __name__ == "__main__":
    main()
