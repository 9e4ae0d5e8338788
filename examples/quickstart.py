"""Quickstart: inference from a privatized count and a privatized mean with pymc-dp.

A hospital holds the records of n patients and publishes two numbers under differential privacy:
the number with a condition (Laplace noise, epsilon = 0.5) and the mean length of stay clamped to
[0, 20] days (Laplace noise, epsilon = 1). An analyst writes the confidential-data model in PyMC,
adds one ``pdp.DPObserved`` node per release and samples the latent records with
``pdp.DataAugmentation`` while NUTS samples the parameters.

We print the private posterior next to the posterior an analyst with the confidential data would get
and, for the count, next to the exact private posterior (by enumeration of the latent count).

Run: ``make demo`` (or ``python examples/quickstart.py``). Output: ``examples/output/quickstart_trace.png``.
"""

from __future__ import annotations

import pathlib
import time

import arviz as az
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from scipy import special, stats  # noqa: E402

import pymc_dp as pdp  # noqa: E402

OUT = pathlib.Path(__file__).parent / "output"


def exact_private_count_posterior(s, n, a, b, scale):
    """Mean and sd of p | s for p ~ Beta(a, b), k ~ Bin(n, p), s = k + Laplace(scale)."""
    k = np.arange(n + 1)
    logw = (special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
            + special.betaln(a + k, b + n - k) - np.abs(s - k) / scale)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    m1 = np.sum(w * (a + k) / (a + b + n))
    m2 = np.sum(w * (a + k) * (a + k + 1) / ((a + b + n) * (a + b + n + 1)))
    return m1, np.sqrt(m2 - m1**2)


def main(seed: int = 2026) -> None:
    rng = np.random.default_rng(seed)
    n = 300
    # --- the curator: confidential data and two releases ---------------------------------------
    condition = rng.binomial(1, 0.12, size=n)
    stay = rng.gamma(shape=2.0, scale=2.5, size=n)  # days
    count_stat, count_mech = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=0.5)
    stay_stat, stay_mech = pdp.Mean(lower=0, upper=20), pdp.Laplace(epsilon=1.0)
    s_count = pdp.release(condition, count_stat, count_mech, rng=rng)
    s_stay = pdp.release(stay, stay_stat, stay_mech, rng=rng)
    print(f"confidential: {condition.sum()} with the condition, mean stay {stay.mean():.3f} days")
    print(f"released:     count {float(s_count):.2f} (eps=0.5), mean stay {float(s_stay):.3f} (eps=1)\n")

    # --- the analyst: PyMC model of the confidential data + one DPObserved per release ----------
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        mean_stay = pm.Gamma("mean_stay", alpha=2.0, beta=0.4)
        has_condition = pm.Bernoulli("has_condition", p, shape=n)
        length_of_stay = pm.Gamma("length_of_stay", alpha=2.0, beta=2.0 / mean_stay, shape=n)
        pdp.DPObserved("count", has_condition, statistic=count_stat, mechanism=count_mech, observed=s_count)
        pdp.DPObserved("stay", length_of_stay, statistic=stay_stat, mechanism=stay_mech, observed=s_stay)
        t0 = time.perf_counter()
        idata = pm.sample(
            step=[pdp.DataAugmentation([has_condition]), pdp.DataAugmentation([length_of_stay])],
            draws=1000, tune=1000, chains=2, cores=1, random_seed=seed, progressbar=False,
        )
        elapsed = time.perf_counter() - t0

    summary = az.summary(idata, var_names=["p", "mean_stay"], kind="stats")
    diag = az.summary(idata, var_names=["p", "mean_stay"], kind="diagnostics")
    print(f"Private posterior (DataAugmentation + NUTS, 2 chains x 1000 draws, {elapsed:.1f} s):")
    print(summary)
    print(diag)

    # --- comparisons -----------------------------------------------------------------------------
    k = condition.sum()
    nonpriv = stats.beta(1 + k, 1 + n - k)
    scale = pdp.dp_nodes(model)["count"].mechanism.b  # Δ/ε, calibrated from the bounds
    ex_mean, ex_sd = exact_private_count_posterior(float(s_count), n, 1.0, 1.0, scale)
    post = np.asarray(idata.posterior["p"]).ravel()
    stay_post = np.asarray(idata.posterior["mean_stay"]).ravel()
    # non-private: the same model with the confidential stays observed (1-d quadrature in m)
    m = np.linspace(2.0, 10.0, 20_001)
    logpost = stats.gamma.logpdf(m, 2.0, scale=1 / 0.4) + stats.gamma.logpdf(
        stay[:, None], 2.0, scale=m[None, :] / 2.0).sum(axis=0)
    w = np.exp(logpost - logpost.max())
    w /= w.sum()
    np_mean = np.sum(w * m)
    np_sd = np.sqrt(np.sum(w * m**2) - np_mean**2)
    print("\n               mean     sd")
    print(f"p  private   {post.mean():.4f} {post.std():.4f}   (DataAugmentation)")
    print(f"p  exact     {ex_mean:.4f} {ex_sd:.4f}   (enumeration of the latent count)")
    print(f"p  no noise  {nonpriv.mean():.4f} {nonpriv.std():.4f}   (confidential data)")
    print(f"mean_stay private   {stay_post.mean():.3f} {stay_post.std():.3f}")
    print(f"mean_stay no noise  {np_mean:.3f} {np_sd:.3f}")
    acc = np.asarray(idata.sample_stats["dp_accept_rate"])
    print(f"\nrecord acceptance rate: {acc.mean():.3f} (Prop. 3.1 lower bound per record: e^-eps)")

    OUT.mkdir(exist_ok=True)
    az.plot_trace(idata, var_names=["p", "mean_stay"])
    plt.tight_layout()
    plt.savefig(OUT / "quickstart_trace.png", dpi=80)
    print(f"trace plot: {OUT / 'quickstart_trace.png'}")


if __name__ == "__main__":
    main()
