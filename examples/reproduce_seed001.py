"""Reproduce seed 001's sampler experiments with pymc-dp (Table 3, Table 4, Figure 7).

* Table 3 (§5.3): integrated autocorrelation time (IAC) of θ for PMMH (Algorithm 5 in the seed's
  numbering of §4.2.1) vs MHAAR (u-space, Algorithm 6) on the CLT latent statistic,
  X ~ N(0, θ), s(x) = |x|, Laplace mechanism, ε = 5, for N ∈ {2, 5, 10, 20, 50, 100} particles.
* Table 4 (§5.4): MSE of the posterior mean of θ with the median vs the maximum of |x_i|, released with
  SmoothLaplace(ε = 5, δ = 1/n²), sampled with MHAAR in z-space (Algorithm 7).
* Figure 7 (§5.2): MSE of the posterior mean of θ for s(x) = |x| vs s(x) = x² under the Laplace
  mechanism across ε (PMMH on the CLT latent statistic).

Common setting: θ* = 2, n = 100, A = 10 (records clipped to [-A, A]).

Usage::

    python examples/reproduce_seed001.py --smoke    # tiny settings, < 1 min
    python examples/reproduce_seed001.py            # small settings, a few minutes
    python examples/reproduce_seed001.py --full --refresh   # the seed's settings (hours)
    python examples/reproduce_seed001.py --only table3
    python examples/reproduce_seed001.py --workers 4    # the tables' cells on 4 Dask processes

Writes ``SEED001_RESULTS.md`` under ``examples/output/`` (``--outdir``, or ``--out`` for a file);
``--refresh`` rewrites the committed ``examples/SEED001_RESULTS.md``, keeping any commentary below
the marker line. Ends with one posterior (MHAAR through ``pm.sample``, 2 chains) summarised with
mean, sd, 94 % HDI and ESS.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

from _report import outputs, parser, quiet_blas_warning, summary

quiet_blas_warning()

import arviz as az
import numpy as np
import pymc as pm

import pymc_dp as pdp

MARKER = "<!-- commentary below is kept when the script rewrites this file -->"
THETA_STAR, N_RECORDS, A = 2.0, 100, 10.0
SEED_TABLE3 = {
    2: (44.03, 17.99),
    5: (28.19, 17.10),
    10: (21.11, 16.13),
    20: (18.16, 15.44),
    50: (15.32, 13.78),
    100: (16.42, 15.86),
}
SEED_TABLE4 = {"median": 0.391, "max": 22.64}


def confidential(rng, n=N_RECORDS, theta=THETA_STAR):
    return np.clip(rng.normal(0.0, math.sqrt(theta), size=n), -A, A)


def drive(model, step, y, iters, burn, seed, var="th", start=None):
    """Run ``step`` (built once per model) on the release ``y``: ``burn`` warm-up iterations (proposal
    tuning on), then ``iters`` kept, from ``start`` (natural scale) or the model's initial point.
    Returns the draws of ``var`` on its natural scale."""
    pm.set_data({"y": y}, model=model)
    step.set_rng(np.random.default_rng(seed))
    point = model.initial_point(random_seed=seed)
    if start is not None:
        rv = model[var]
        tr = model.rvs_to_transforms.get(rv)
        value = model.rvs_to_values[rv].name
        point[value] = np.asarray(
            tr.forward(start, *rv.owner.inputs).eval() if tr else start, float
        )
    (graph,) = model.replace_rvs_by_values([model[var]])
    natural = model.compile_fn(
        graph, inputs=model.value_vars, point_fn=True, on_unused_input="ignore"
    )
    out = np.empty(iters)
    step.tune = True
    for _ in range(burn):
        point, _ = step.step(point)
    step.tune = False
    for i in range(iters):
        point, _ = step.step(point)
        out[i] = natural(point)
    return out


def iac(draws):
    return len(draws) / float(az.ess(np.asarray(draws)[None, :]))


def clt_model(a, eps, prior="flat"):
    """X ~ N(0, θ), s(x) = |x|^a, CLT latent statistic released with Laplace(ε); release in pm.Data."""
    with pm.Model() as model:
        th = pm.HalfFlat("th") if prior == "flat" else pm.Uniform("th", 0.0, 20.0)
        y = pm.Data("y", 0.0)
        mu, var = pdp.normal_variance_moments(th, a=a)
        pdp.CLTRelease(
            "s",
            mu,
            var,
            N_RECORDS,
            mechanism=pdp.Laplace(epsilon=eps),
            sensitivity=A**a / N_RECORDS,
            observed=y,
        )
    return model


def abs_power_release(x, a, eps, rng):
    stat = pdp.Mean(lower=0.0, upper=A**a, fn=lambda v: abs(v) ** a)
    return float(pdp.release(x, statistic=stat, mechanism=pdp.Laplace(epsilon=eps), rng=rng))


# ------------------------------------------------------------------------------------------------
def _grid(fn, units, workers):
    """``[fn(unit) for unit in units]``, in this process (``workers`` 0) or on a local Dask cluster
    of ``workers`` processes. Every cell is seeded by its own arguments (its release and its seed),
    so the tables are the same whatever the number of workers."""
    return pdp.runner.map_units(
        lambda unit, _rng: fn(unit), units, n_workers=workers, progressbar=workers > 0
    )


def _t3_cell(unit):
    """Mean IAC of one sampler with N particles over the releases (model and step built once per
    worker)."""
    N, name, scale, iters, releases = unit
    Step = {"pmmh": pdp.PMMH, "mhaar": pdp.MHAAR}[name]

    def make():
        model = clt_model(1, 5.0)
        with model:
            return model, Step([model["th"]], n_particles=N, proposal_scale=scale)

    model, step = pdp.runner.worker_cache(("seed001-t3", N, name, scale), make)
    return float(
        np.mean(
            [
                iac(drive(model, step, y, iters, 0, seed=1000 * N + r)[iters // 4 :])
                for r, y in enumerate(releases)
            ]
        )
    )


def table3(cfg, rng, workers=0):
    releases = tuple(
        abs_power_release(confidential(rng), 1, 5.0, rng) for _ in range(cfg["t3_reps"])
    )
    units = [
        (N, name, cfg["t3_scale"], cfg["t3_iters"], releases)
        for N in cfg["particles"]
        for name in ("pmmh", "mhaar")
    ]
    res = dict(zip([u[:2] for u in units], _grid(_t3_cell, units, workers), strict=True))
    rows = [(N, res[(N, "pmmh")], res[(N, "mhaar")]) for N in cfg["particles"]]
    for N, a, b in rows:
        print(f"table3 N={N}: PMMH {a:.2f}  MHAAR {b:.2f}", flush=True)
    return rows


def _t4_release(which):
    """(statistic, mechanism) of Table 4's release of the median or the max of |x|."""
    mech = pdp.SmoothLaplace(epsilon=5.0, delta=1.0 / N_RECORDS**2)
    return {"median": pdp.Median, "max": pdp.Max}[which](0.0, A, fn=abs), mech


def _t4_model(which, n_particles):
    n = N_RECORDS
    stat, mech = _t4_release(which)
    with pm.Model() as model:
        th = pm.Uniform("th", 0.0, 20.0)
        pm.Data("y", 0.0)
        x = pm.Normal("x", 0.0, pm.math.sqrt(th), shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=model["y"])
        step = pdp.MHAAR([th], n_particles=n_particles, proposal_scale=0.3)
    return model, step


def _t4_cell(unit):
    """Squared error of the posterior mean of θ from one release (MHAAR z-space)."""
    which, n_particles, iters, m, y = unit
    model, step = pdp.runner.worker_cache(
        ("seed001-t4", which, n_particles), lambda: _t4_model(which, n_particles)
    )
    d = drive(model, step, y, iters, iters // 4, seed=m)
    return float((d.mean() - THETA_STAR) ** 2)


def table4(cfg, rng, workers=0):
    units = []
    for which in ("median", "max"):
        stat, mech = _t4_release(which)
        for m in range(cfg["t4_M"]):
            y = float(pdp.release(confidential(rng), statistic=stat, mechanism=mech, rng=rng))
            units.append((which, cfg["t4_N"], cfg["t4_iters"], m, y))
    errs = _grid(_t4_cell, units, workers)
    out = {}
    for which in ("median", "max"):
        e = [err for u, err in zip(units, errs, strict=True) if u[0] == which]
        out[which] = (float(np.mean(e)), float(np.std(e) / math.sqrt(len(e))))
        print(f"table4 {which}: MSE {out[which][0]:.3f} ± {out[which][1]:.3f}", flush=True)
    return out


def _f7_cell(unit):
    """Squared error of the posterior mean of θ from one release (PMMH, CLT latent statistic)."""
    eps, a, n_particles, iters, m, y = unit

    def make():
        model = clt_model(a, eps, prior="uniform")
        with model:
            return model, pdp.PMMH([model["th"]], n_particles=n_particles)

    model, step = pdp.runner.worker_cache(("seed001-f7", eps, a, n_particles), make)
    # start at the moment estimate (E|X| = sqrt(2θ/π), E X² = θ), not at θ*
    guess = math.pi * y**2 / 2 if a == 1 else y
    d = drive(model, step, y, iters, iters // 4, seed=m, start=float(np.clip(guess, 0.1, 19.0)))
    return float((d.mean() - THETA_STAR) ** 2)


def figure7(cfg, rng, workers=0):
    units = [
        (eps, a, cfg["f7_N"], cfg["f7_iters"], m, abs_power_release(confidential(rng), a, eps, rng))
        for eps in cfg["epsilons"]
        for a in (1, 2)
        for m in range(cfg["f7_M"])
    ]
    errs = _grid(_f7_cell, units, workers)
    rows = []
    for eps in cfg["epsilons"]:
        mse = {
            a: float(np.mean([e for u, e in zip(units, errs, strict=True) if u[:2] == (eps, a)]))
            for a in (1, 2)
        }
        rows.append((eps, mse[1], mse[2]))
        print(f"figure7 eps={eps}: |x| {mse[1]:.4f}  x^2 {mse[2]:.4f}", flush=True)
    return rows


# ------------------------------------------------------------------------------------------------
def illustrate(rng, draws):
    """One posterior of θ from one release (s(x) = |x|, Laplace ε = 5), MHAAR through pm.sample."""
    model = clt_model(1, 5.0, prior="uniform")
    y = abs_power_release(confidential(rng), 1, 5.0, rng)
    with model:
        pm.set_data({"y": y})
        idata = pm.sample(
            draws=draws,
            tune=draws,
            chains=2,
            cores=1,
            progressbar=False,
            step=[pdp.MHAAR([model["th"]], n_particles=10)],
            random_seed=int(rng.integers(2**31)),
            compute_convergence_checks=False,
        )
    return summary(
        idata,
        ["th"],
        title=f"\nPosterior of θ (θ* = {THETA_STAR}) from one release "
        f"{y:.3f} of mean |x| (Laplace ε = 5), MHAAR N = 10, 2 chains × {draws}:",
    )


def main(argv=None):
    p = parser(__doc__, results="examples/SEED001_RESULTS.md")
    p.add_argument("--full", action="store_true", help="the seed's settings (long)")
    p.add_argument("--only", choices=["table3", "table4", "figure7"], action="append")
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument(
        "--workers",
        type=int,
        default=0,
        help="run the tables' cells on a local Dask cluster of this many processes "
        "(pdp.runner.map_units; default 0: in this process); the results do not change",
    )
    p.add_argument(
        "--out",
        default=None,
        help="results file (default SEED001_RESULTS.md in the "
        "output folder; with --refresh, examples/SEED001_RESULTS.md)",
    )
    args = p.parse_args(argv)
    if args.out is None:  # only --refresh overwrites the recorded results
        results_dir, _ = outputs(args)
        args.out = str(results_dir / "SEED001_RESULTS.md")
    small = dict(
        particles=[2, 5, 10, 20, 50, 100],
        t3_reps=2,
        t3_iters=4000,
        t3_scale=0.15,
        t4_M=10,
        t4_N=10,
        t4_iters=1500,
        epsilons=[0.5, 1.0, 2.0, 5.0, 10.0],
        f7_M=20,
        f7_N=50,
        f7_iters=1500,
    )
    full = dict(
        small, t3_reps=5, t3_iters=50000, t4_M=100, t4_iters=10000, f7_M=100, f7_iters=10000
    )
    smoke = dict(
        small,
        particles=[2, 10],
        t3_reps=1,
        t3_iters=300,
        t4_M=2,
        t4_iters=200,
        epsilons=[1.0],
        f7_M=2,
        f7_iters=200,
    )
    cfg = full if args.full else smoke if args.smoke else small
    which = args.only or ["table3", "table4", "figure7"]
    rng = np.random.default_rng(args.seed)
    command = "python examples/reproduce_seed001.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    t0 = time.time()
    lines = [
        "# Seed 001 reproductions (pymc-dp)",
        "",
        f"Command: `{command.strip()}`  ",
        f"Settings: `{cfg}`, seed {args.seed}; PyMC {pm.__version__}. "
        f"θ* = {THETA_STAR}, n = {N_RECORDS}, A = {A}.",
        "",
    ]
    if "table3" in which:
        rows = table3(cfg, rng, args.workers)
        lines += [
            "## Table 3: IAC of θ, PMMH vs MHAAR (u-space), s(x)=|x|, Laplace, ε=5",
            "",
            "Same random walk on log θ (sd " + str(cfg["t3_scale"]) + ", no tuning), flat prior, "
            f"{cfg['t3_iters']} iterations (first quarter dropped), IAC = draws / ESS averaged "
            f"over {cfg['t3_reps']} releases.",
            "",
            "| N | PMMH (ours) | MHAAR (ours) | PMMH (seed) | MHAAR (seed) |",
            "|---|---|---|---|---|",
        ]
        for N, a, b in rows:
            sa, sb = SEED_TABLE3.get(N, (float("nan"),) * 2)
            lines.append(f"| {N} | {a:.2f} | {b:.2f} | {sa} | {sb} |")
        lines.append("")
    if "table4" in which:
        res = table4(cfg, rng, args.workers)
        lines += [
            "## Table 4: MSE of E[θ | s_dp], median vs max of |x|, SmoothLaplace(ε=5, δ=1/n²)",
            "",
            f"MHAAR z-space (Algorithm 7), N = {cfg['t4_N']} particles, {cfg['t4_iters']} "
            f"iterations, prior Uniform(0, 20), M = {cfg['t4_M']} releases (± is the MC standard "
            "error over releases).",
            "",
            "| statistic | MSE (ours) | MSE (seed) |",
            "|---|---|---|",
        ]
        for k in ("median", "max"):
            lines.append(f"| {k} | {res[k][0]:.3f} ± {res[k][1]:.3f} | {SEED_TABLE4[k]} |")
        lines.append("")
    if "figure7" in which:
        rows = figure7(cfg, rng, args.workers)
        lines += [
            "## Figure 7: MSE of E[θ | s_dp], s(x)=|x| vs s(x)=x², Laplace mechanism",
            "",
            f"PMMH on the CLT latent statistic, N = {cfg['f7_N']}, {cfg['f7_iters']} iterations "
            "(first quarter warm-up), started at the moment estimate of θ from the release, "
            f"prior Uniform(0, 20), M = {cfg['f7_M']} releases per ε. Seed (Figure 7, plotted, "
            "no table): |x| has the smaller MSE and the larger Fisher information.",
            "",
            "| ε | MSE s=|x| | MSE s=x² | smaller |",
            "|---|---|---|---|",
        ]
        for eps, m1, m2 in rows:
            lines.append(f"| {eps} | {m1:.4f} | {m2:.4f} | {'abs' if m1 < m2 else 'square'} |")
        lines.append("")
    lines.append(f"Total time: {time.time() - t0:.0f} s.")
    lines += ["", "```", illustrate(rng, 300 if args.smoke else 1000).strip("\n"), "```"]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    old = out.read_text() if out.exists() else ""
    tail = MARKER + old.split(MARKER, 1)[1] if MARKER in old else MARKER + "\n"
    out.write_text("\n".join(lines) + "\n\n" + tail)
    print("\n".join(lines[:-4]))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
