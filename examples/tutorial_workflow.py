"""Tutorial: the curator → analyst workflow.

**The curator** (a hospital) holds one confidential dataset of n patients: age, whether they smoke,
and which of three clinics they attend. It publishes three statistics of that *same* dataset, each
with its own mechanism and budget:

| release | statistic | mechanism | neighbouring relation |
|---|---|---|---|
| number of smokers | `pdp.Sum(lower=0, upper=1)` | `pdp.Laplace(epsilon=0.5)` | replace one record |
| mean age | `pdp.Mean(lower=18, upper=90)` (ages clamped to [18, 90]) | `pdp.Gaussian(epsilon=0.5, delta=1e-6)` | replace one record |
| patients per clinic | `pdp.Counts(3)` | `pdp.Laplace(epsilon=0.3)` | replace one record |

Because all three describe the same people, their privacy losses **compose**: the curator reports
the total (ε, δ) computed by `dp_accounting` through `pdp.privacy_spent`.

**The analyst** sees only the three noisy numbers (and the public bounds and mechanisms). She
writes a PyMC model of the confidential records — smoker ~ Bernoulli(p), age ~ Normal(μ, 15)
(the spread of ages is taken from a public survey: a released mean says next to nothing about it),
clinic ~ Categorical(π) — adds one `pdp.DPObserved` per release, and samples: `pdp.DataAugmentation`
updates the latent records (Ju et al. 2022, seed 003) and, for the parameters, `pm.sample` adds
the steps it assigns by itself (`pdp.ConjugateTheta` here: each prior is conjugate to its records,
so θ | records is an exact draw from sufficient statistics). The posterior is exact
given the releases. Look at the ESS column: `mu_age` mixes slowest, because given the latent ages
μ is known to within 15/√n while the release leaves it uncertain by several times that, so each
Gibbs round moves it a little (the usual price of data augmentation); run longer chains when the
ESS is short of your needs.

**The check**: posterior predictive draws of *new* releases (new records from the posterior of the
parameters, then new noise) should cover the observed releases; the figure shows them with the
observed value and its posterior predictive p-value.

Run: `python examples/tutorial_workflow.py` (`--smoke` for a quick check). Figure:
`workflow_ppc.png` in `examples/output/`.
"""

from __future__ import annotations

from _report import outputs, parser, quiet_blas_warning, summary

quiet_blas_warning()

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_dp as pdp  # noqa: E402

DELTA = 1e-6


def curator(rng, n):
    """The confidential dataset and the three releases (with the objects that describe them)."""
    smoker = rng.binomial(1, 0.22, size=n)
    age = rng.normal(52.0, 14.0, size=n)
    clinic = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    spec = {
        "n_smokers": (smoker, pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=0.5)),
        "mean_age": (age, pdp.Mean(lower=18, upper=90), pdp.Gaussian(epsilon=0.5, delta=DELTA)),
        "clinic_counts": (clinic, pdp.Counts(3), pdp.Laplace(epsilon=0.3)),
    }
    releases = {k: pdp.release(data, stat, mech, rng=rng) for k, (data, stat, mech) in spec.items()}
    truth = {
        "n_smokers": smoker.sum(),
        "mean_age": np.clip(age, 18, 90).mean(),
        "clinic_counts": np.bincount(clinic, minlength=3),
    }
    return spec, releases, truth


def compose(releases, model):
    """Total (ε, δ) of the three releases, composed by dp_accounting: from the ``Release`` objects
    (what the curator reports) and, as a check, from the model's ``DPObserved`` nodes."""
    eps = pdp.privacy_spent(list(releases.values()), delta=DELTA)
    from_model = pdp.privacy_spent(model, delta=DELTA)
    assert abs(float(eps) - float(from_model)) < 1e-9, (eps, from_model)
    return eps, f"pdp.privacy_spent(list of releases, delta={DELTA:g}) (the model gives the same)"


def main(argv=None):
    p = parser(__doc__)
    p.add_argument("--n", type=int, default=None, help="patients (default 400; --smoke 150)")
    p.add_argument(
        "--draws", type=int, default=None, help="draws per chain (default 1000; --smoke 200)"
    )
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    _, fig_dir = outputs(args)
    n = args.n or (150 if args.smoke else 400)
    draws = args.draws or (200 if args.smoke else 1000)
    rng = np.random.default_rng(args.seed)

    # --- curator ------------------------------------------------------------------------------------
    spec, releases, truth = curator(rng, n)
    print(f"{n} patients. Releases (confidential value in brackets):")
    for k, r in releases.items():
        print(f"  {k:<14} {np.round(np.asarray(r, dtype=float), 2)}   [{np.round(truth[k], 2)}]")

    # --- analyst ------------------------------------------------------------------------------------
    with pm.Model() as model:
        p_smoke = pm.Beta("p_smoke", 1, 1)
        mu_age = pm.Normal("mu_age", 50, 20)
        sd_age = 15.0  # public knowledge; the mean alone does not identify the spread
        pi_clinic = pm.Dirichlet("pi_clinic", np.ones(3))
        smoker = pm.Bernoulli("smoker", p_smoke, shape=n)
        age = pm.Normal("age", mu_age, sd_age, shape=n)
        clinic = pm.Categorical("clinic", pi_clinic, shape=n)
        for name, rv in (("n_smokers", smoker), ("mean_age", age), ("clinic_counts", clinic)):
            _, stat, mech = spec[name]
            pdp.DPObserved(name, rv, statistic=stat, mechanism=mech, observed=releases[name])
        idata = pm.sample(
            step=[
                pdp.DataAugmentation([smoker]),
                pdp.DataAugmentation([age]),
                pdp.DataAugmentation([clinic]),
            ],
            draws=draws,
            tune=draws,
            chains=2,
            cores=1,
            random_seed=args.seed,
            progressbar=False,
            compute_convergence_checks=False,
        )

    eps, how = compose(releases, model)
    print(
        f"\nTotal privacy loss of the three releases: ε = {eps:.3f} at δ = {DELTA:g}\n  via {how}"
    )
    print(
        "  (pure-DP parts alone: 0.5 + 0.3 = 0.8 by basic composition; the Gaussian adds the rest)\n"
    )

    summary(
        idata,
        ["p_smoke", "mu_age", "pi_clinic"],
        title="Posterior (DataAugmentation for the records + ConjugateTheta, 2 chains):",
    )

    # --- posterior predictive check: new records from the posterior, then new noise -------------------
    with model:
        ppc = pm.sample_posterior_predictive(
            idata,
            var_names=["smoker", "age", "clinic", "n_smokers", "mean_age", "clinic_counts"],
            random_seed=args.seed + 1,
            progressbar=False,
        )
    pp = ppc["posterior_predictive"]
    panels = [("n_smokers", None), ("mean_age", None)] + [("clinic_counts", j) for j in range(3)]
    fig, axes = plt.subplots(1, len(panels), figsize=(14, 2.8))
    print(
        "\nposterior predictive check (p-value = share of replicated releases ≥ the observed one):"
    )
    for ax, (name, j) in zip(axes, panels):
        rep = np.asarray(pp[name]).reshape(-1, *np.shape(releases[name]))
        obs = (
            float(np.asarray(releases[name], dtype=float))
            if j is None
            else float(releases[name][j])
        )
        rep = rep if j is None else rep[:, j]
        pval = float(np.mean(rep >= obs))
        label = name if j is None else f"{name}[{j}]"
        print(
            f"  {label:<17} observed {obs:8.2f}   replicated mean {rep.mean():8.2f} sd {rep.std():6.2f}"
            f"   p = {pval:.2f}"
        )
        ax.hist(rep, bins=40, color="C0", alpha=0.7)
        ax.axvline(obs, color="k", lw=2)
        ax.set_title(f"{label}\np = {pval:.2f}", fontsize=9)
        ax.set_yticks([])
    fig.suptitle("replicated releases (histogram) vs the observed release (line)", fontsize=10)
    fig.tight_layout()
    fig.savefig(fig_dir / "workflow_ppc.png", dpi=90)
    plt.close(fig)
    print(f"figure: {fig_dir / 'workflow_ppc.png'}")


if __name__ == "__main__":
    main()
