"""Benchmark (not a test): θ effective samples per second of every route on the issue-11 models.

For each model and route: ``pm.sample`` with 2 chains, ``cores=1``; θ's bulk ESS (ArviZ; the
smallest over θ's coordinates) divided by PyMC's ``sampling_time`` (warm-up + draws, after every
function is compiled). Compilation (step construction + PyMC's own compile) is reported apart.

Routes (those available on this checkout):

* ``DA + NUTS`` — ``pdp.DataAugmentation`` on the records, ``pm.NUTS`` on θ;
* ``pm.sample() default`` — no ``step=``: what ``pm.sample()`` picks (``pdp.Collapsed`` for cheap
  collapsible discrete records and their θ; DataAugmentation, ConjugateTheta, Interweave, NUTS
  otherwise);
* ``Collapsed`` — ``pdp.Collapsed([θ, records])`` asked for explicitly;
* ``DA + NUTS + Interweave`` / ``DA + Interweave`` — plus/instead of NUTS, the non-centred θ-move;
* ``DA + ConjugateTheta`` (``+ Interweave``) — θ | records drawn from sufficient statistics;
* ``PMMH`` / ``MHAAR`` — exact-approximate θ-moves integrating the records (10 particles);
* ``plain PyMC (Potential)`` — the joint model with the mechanism's log density as a
  ``pm.Potential``, PyMC's default steps (NUTS on continuous records, Gibbs/Metropolis on discrete);
* ``collapsed NUTS`` — ``pdp.marginalize(model)`` if this checkout has it;
* ``Counts + discrete Gaussian`` model only if ``pdp.DiscreteGaussian`` exists.

Run: ``python benchmarks/bench_mixing.py [--quick]``; writes ``benchmarks/MIXING_RESULTS.md`` and
``benchmarks/mixing.png``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import sys
import time

import arviz as az
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import xarray as xr

HERE = pathlib.Path(__file__).parent
MARKER = "<!-- commentary: kept by reruns -->"
sys.path.insert(0, str(HERE.parent))  # this checkout's pymc_dp, not an installed one

import pymc_dp as pdp
from pymc_dp.release import bind_mechanism


# ---------------------------------------------------------------------------------------------
# models: build(n, eps, seed, potential) -> (model, theta name, record names)
# ---------------------------------------------------------------------------------------------
def _release_node(name, data, stat, mech, release, potential, n):
    """A DPObserved node, or the same density as a pm.Potential (for plain PyMC)."""
    if not potential:
        pdp.DPObserved(name, data, statistic=stat, mechanism=mech, observed=release)
        return
    data_t = data if isinstance(data, tuple) else (data,)
    value = stat(*data_t)
    dim = int(np.prod(np.shape(np.asarray(release))[1 if stat.local else 0 :], dtype=int)) or 1
    bound = bind_mechanism(stat, mech, n, dim)
    pm.Potential(name, bound.logp(pt.as_tensor(np.asarray(release, dtype=float)), value).sum())


def beta_bernoulli(n, eps, seed, potential=False):
    rng = np.random.default_rng(seed)
    stat, mech = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=eps)
    s = float(pdp.release(rng.binomial(1, 0.3, n), stat, mech, rng=rng))
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=n)
        _release_node("s", x, stat, mech, s, potential, n)
    return model, "p", ["x"]


def rr_table(n, eps, seed, potential=False):
    """2×2 table (4 cells) of categorical records under 4-ary randomized response."""
    rng = np.random.default_rng(seed)
    mech = pdp.RandomizedResponse(epsilon=eps, n_categories=4)
    r = pdp.release(rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1]), pdp.Local(), mech, rng=rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(4))
        x = pm.Categorical("x", pi, shape=n)
        if potential:
            keep, other = mech.kernel_params()
            pm.Potential("r", pt.switch(pt.eq(x, np.asarray(r)), keep, other).sum())
        else:
            pdp.DPObserved("r", x, statistic=pdp.Local(), mechanism=mech, observed=r)
    return model, "pi", ["x"]


def poisson_counts(n, eps, seed, potential=False):
    rng = np.random.default_rng(seed)
    stat, mech = pdp.Sum(lower=0, upper=10), pdp.DiscreteLaplace(epsilon=eps)
    s = int(pdp.release(rng.poisson(3.0, n), stat, mech, rng=rng))
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 0.5)
        x = pm.Poisson("x", lam, shape=n)
        _release_node("s", x, stat, mech, s, potential, n)
    return model, "lam", ["x"]


def counts_discrete_gaussian(n, eps, seed, potential=False):
    rng = np.random.default_rng(seed)
    stat, mech = pdp.Counts(3), pdp.DiscreteGaussian(sigma=2.0 / eps)
    s = pdp.release(rng.choice(3, size=n, p=[0.5, 0.3, 0.2]), stat, mech, rng=rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(3))
        x = pm.Categorical("x", pi, shape=n)
        _release_node("c", x, stat, mech, s, potential, n)
    return model, "pi", ["x"]


def clamped_normal(n, eps, seed, potential=False):
    rng = np.random.default_rng(seed)
    stat, mech = pdp.Sum(lower=-2.0, upper=4.0), pdp.Laplace(epsilon=eps)
    s = float(pdp.release(rng.normal(1.0, 1.0, n), stat, mech, rng=rng))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 3)
        x = pm.Normal("x", mu, 1.0, shape=n)
        _release_node("s", x, stat, mech, s, potential, n)
    return model, "mu", ["x"]


P, A, B = 2, -10.0, 10.0
M, COV, SIGMA, BETA = (
    np.array([1.0, -1.0]),
    np.array([[4.0, 1.0], [1.0, 4.0]]),
    2.0,
    np.array([1.0, 2.0, -1.0]),
)


def _contributions(x0, y):
    def norm(v):
        return (2.0 * pt.clip(v, A, B) - A - B) / (B - A)

    xt = pt.concatenate([pt.ones((x0.shape[0], 1)), norm(x0)], axis=1)
    yt = norm(y)
    cols = [xt * yt[:, None], (yt**2)[:, None]]
    cols += [
        (xt[:, j] * xt[:, k])[:, None]
        for j in range(P + 1)
        for k in range(j, P + 1)
        if (j, k) != (0, 0)
    ]
    return pt.concatenate(cols, axis=1)


def regression(n, eps, seed, potential=False):
    """examples/linear_regression.py: 9 clamped, normalised sufficient statistics + Laplace."""
    rng = np.random.default_rng(seed)
    x0 = rng.multivariate_normal(M, COV, size=n)
    yv = BETA[0] + x0 @ BETA[1:] + rng.normal(0, SIGMA, size=n)
    stat = pdp.RecordSum(_contributions, sensitivity={1: float(P**2 + 4 * P + 3)})
    mech = pdp.Laplace(epsilon=eps)
    s = pdp.release((x0, yv), stat, mech, rng=rng)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 2.0, shape=P + 1)
        x0_ = pm.MvNormal("x0", M, COV, shape=(n, P))
        y = pm.Normal("y", beta[0] + x0_ @ beta[1:], SIGMA, shape=n)
        _release_node("s", (x0_, y), stat, mech, s, potential, n)
    return model, "beta", ["x0", "y"]


# ---------------------------------------------------------------------------------------------
# routes: steps(model, theta, records) -> list of steps (None: PyMC's defaults)
# ---------------------------------------------------------------------------------------------
def _da(m, recs):
    """The centred record sweep alone: the routes name their θ-moves (no automatic interweaving)."""
    return pdp.DataAugmentation([m[r] for r in recs], interweave=False)


ROUTES = {
    "DA + NUTS": lambda m, th, recs: [_da(m, recs), pm.NUTS([m[th]])],
    "pm.sample() default": "default",
    "Collapsed": lambda m, th, recs: [pdp.Collapsed([m[th], *[m[r] for r in recs]])],
    "DA + NUTS + Interweave": lambda m, th, recs: [
        _da(m, recs),
        pm.NUTS([m[th]]),
        pdp.Interweave([m[th]]),
    ],
    "DA + Interweave": lambda m, th, recs: [_da(m, recs), pdp.Interweave([m[th]])],
    "DA + ConjugateTheta": lambda m, th, recs: [_da(m, recs), pdp.ConjugateTheta([m[th]])],
    "DA + ConjugateTheta + Interweave": lambda m, th, recs: [
        _da(m, recs),
        pdp.ConjugateTheta([m[th]]),
        pdp.Interweave([m[th]]),
    ],
    "PMMH": lambda m, th, recs: [pdp.PMMH([m[th]], n_particles=10)],
    "MHAAR": lambda m, th, recs: [pdp.MHAAR([m[th]], n_particles=10)],
    "plain PyMC (Potential)": None,
    "collapsed NUTS": "marginalize",
}


def cases(quick):
    """(label, build, n, eps, routes)."""
    discrete = [
        "pm.sample() default",
        "DA + NUTS",
        "DA + ConjugateTheta",
        "PMMH",
        "MHAAR",
        "plain PyMC (Potential)",
        "collapsed NUTS",
    ]
    out = [
        ("Beta–Bernoulli sum + Laplace", beta_bernoulli, 100, 1.0, discrete),
        (
            "randomized-response 2×2 table",
            rr_table,
            400,
            1.0,
            [
                "pm.sample() default",
                "DA + NUTS",
                "DA + ConjugateTheta",
                "MHAAR",
                "plain PyMC (Potential)",
                "collapsed NUTS",
            ],
        ),
        ("Poisson counts + DiscreteLaplace", poisson_counts, 100, 1.0, discrete),
        (
            "Poisson counts + DiscreteLaplace",
            poisson_counts,
            500,
            1.0,
            ["pm.sample() default", "DA + NUTS", "DA + ConjugateTheta", "collapsed NUTS"],
        ),
    ]
    if hasattr(pdp, "DiscreteGaussian"):
        out.append(
            (
                "Counts + discrete Gaussian",
                counts_discrete_gaussian,
                200,
                1.0,
                [
                    "pm.sample() default",
                    "Collapsed",
                    "DA + NUTS",
                    "DA + ConjugateTheta",
                    "plain PyMC (Potential)",
                    "collapsed NUTS",
                ],
            )
        )
    cont = [
        "pm.sample() default",
        "DA + NUTS",
        "DA + NUTS + Interweave",
        "DA + Interweave",
        "DA + ConjugateTheta",
        "DA + ConjugateTheta + Interweave",
    ]
    small = cont + ["PMMH", "MHAAR", "plain PyMC (Potential)"]
    grid = (
        [(50, 0.1), (1000, 0.05), (1000, 1.0), (100_000, 1.0)]
        if quick
        else [(n, e) for n in (100, 1000, 10_000, 100_000, 1_000_000) for e in (0.05, 0.1, 1.0)]
        + [(50, 0.1)]
    )
    for n, eps in grid:
        routes = small if n <= 1000 else cont
        if n >= 1_000_000:
            routes = [
                "pm.sample() default",
                "DA + NUTS",
                "DA + ConjugateTheta",
                "DA + ConjugateTheta + Interweave",
            ]
        out.append((f"clamped normal mean + Laplace, ε={eps}", clamped_normal, n, eps, routes))
    reg = [
        "pm.sample() default",
        "DA + NUTS",
        "DA + NUTS + Interweave",
        "DA + Interweave",
        "DA + ConjugateTheta",
        "DA + ConjugateTheta + Interweave",
    ]
    if not quick:  # NUTS on the joint model took 526 s of sampling here under load: full run only
        reg.append("plain PyMC (Potential)")
    out.append(
        ("regression, 9 Laplace-noised sufficient statistics, ε=1", regression, 50, 1.0, reg)
    )
    return out


# ---------------------------------------------------------------------------------------------
def bulk_ess(idata, var):
    d = np.asarray(idata.posterior[var], dtype=float)
    d = d.reshape(d.shape[0], d.shape[1], -1)
    return min(
        float(az.ess(xr.Dataset({"q": (("chain", "draw"), d[..., k])}), method="bulk")["q"])
        for k in range(d.shape[2])
    )


def run(build, n, eps, route, draws, tune, seed=1):
    spec = ROUTES[route]
    if spec == "marginalize" and not hasattr(pdp, "marginalize"):
        return None
    model, theta, recs = build(n, eps, seed, potential=spec is None)
    t0 = time.perf_counter()
    with model:
        steps = None
        if spec == "marginalize":
            model = pdp.marginalize(model)
        elif spec not in (None, "default"):
            steps = spec(model, theta, recs)
    with model:
        idata = pm.sample(
            step=steps,
            draws=draws,
            tune=tune,
            chains=2,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    wall = time.perf_counter() - t0
    sampling = float(idata.sample_stats.attrs.get("sampling_time", wall))
    ess = bulk_ess(idata, theta)
    return dict(
        ess=ess,
        per_draw=ess / (2 * draws),
        sampling=sampling,
        compile=wall - sampling,
        rate=ess / sampling,
    )


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(dict.fromkeys(f"{r[0]}, n={r[1]:,}" for r in rows))
    routes = list(dict.fromkeys(r[2] for r in rows))
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(labels) + 1.5))
    markers = "osD^v<>ph*"
    for j, route in enumerate(routes):
        ys, xs = [], []
        for r in rows:
            if r[2] == route and r[3]["rate"] > 0:
                ys.append(labels.index(f"{r[0]}, n={r[1]:,}") + (j - len(routes) / 2) * 0.06)
                xs.append(r[3]["rate"])
        ax.scatter(xs, ys, marker=markers[j % len(markers)], label=route, s=30)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("θ bulk ESS per second of sampling (2 chains, after compilation)")
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and draws")
    parser.add_argument("--only", default=None, help="substring of the model labels to run")
    parser.add_argument(
        "--routes", default=None, help="comma-separated route names to run (default all)"
    )
    parser.add_argument(
        "--out", default=str(HERE / "MIXING_RESULTS.md"), help="results file (plot next to it)"
    )
    args = parser.parse_args()
    draws, tune = (500, 300) if args.quick else (1000, 500)
    load = os.getloadavg()
    rows, lines = [], []
    for label, build, n, eps, routes in cases(args.quick):
        if args.only and args.only not in label:
            continue
        for route in routes:
            if args.routes and route not in args.routes.split(","):
                continue
            d = draws if n <= 10_000 else max(200, draws // 2)
            try:
                res = run(build, n, eps, route, d, min(tune, d))
            except Exception as err:  # noqa: BLE001 - a route that refuses the model: say so in the table
                print(f"{label} n={n} {route}: {type(err).__name__}: {err}"[:300], flush=True)
                lines.append(
                    f"| {label} | {n:,} | {route} | — | — | — | — | — | refused ({type(err).__name__}) |"
                )
                continue
            if res is None:
                continue
            rows.append((label, n, route, res))
            lines.append(
                f"| {label} | {n:,} | {route} | {d} | {res['ess']:.0f} | {res['per_draw']:.3f} | "
                f"{res['sampling']:.1f} | {res['rate']:.1f} | {res['compile']:.0f} |"
            )
            print(lines[-1], flush=True)
    load_end = os.getloadavg()
    head = [
        "# θ mixing: ESS per second of every route (issue 11)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()}, Python "
        f"{platform.python_version()}, PyMC {pm.__version__}, PyTensor {pytensor.__version__}, "
        f"ArviZ {az.__version__}. Command: `python benchmarks/bench_mixing.py{' --quick' if args.quick else ''}"
        f"{' --only ' + repr(args.only) if args.only else ''}"
        f"{' --routes ' + repr(args.routes) if args.routes else ''}`. "
        f"Load average (1/5/15 min) at start {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}, at end "
        f"{load_end[0]:.1f}/{load_end[1]:.1f}/{load_end[2]:.1f}: the machine was shared, so seconds are "
        "noisy (ratios within a row group less so).",
        "",
        "2 chains, `cores=1`; ESS = ArviZ bulk ESS of θ (smallest over θ's coordinates); sampling s = "
        "PyMC's `sampling_time` (warm-up + draws, compiled functions); compile s = the rest of the wall "
        "time (step construction, PyMC's compile). ESS/draw over the kept draws of both chains.",
        "",
        "| model | n | route | draws/chain | ESS(θ) | ESS/draw | sampling s | ESS/s | compile s |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    out = pathlib.Path(args.out)
    keep = ""  # reruns keep the hand-written commentary below the marker
    if out.exists() and MARKER in out.read_text():
        keep = out.read_text().split(MARKER, 1)[1]
    out.write_text("\n".join(head + lines) + "\n\n" + MARKER + keep)
    if rows:
        plot(
            rows,
            out.with_name("mixing.png" if out.name == "MIXING_RESULTS.md" else out.stem + ".png"),
        )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
