"""Benchmark: noisy count tables (issue 18): categorical records and the tract table, before/after.

1. **µs per record update** of one ``DataAugmentation.step`` (proposals included) for categorical
   records released as ``Counts`` with ``DiscreteGaussian(sigma=3.18)``, N = 10⁵ records,
   K = 16 and K = 2,016 cells (π fixed at a Dirichlet draw).
2. **ConjugateTheta** on the Dirichlet parent π (N = 4,000, K = 2,016): ms per draw.
3. **ms per iteration of a tract table**: N = 4,000 people, K = 2,016 cells, π ~ Dirichlet(1),
   ``DiscreteGaussian(sigma=3.18)``, ``pm.sample()`` default (what it assigns by itself), one chain:
   CPU time between the first and the last call of ``pm.sample``'s per-draw callback (compilation
   and step assignment excluded; the copy of the N records into the trace included).
4. **Latent count table** (``pdp.Cells``, no records): N = 10⁶ people, K = 2,016 cells, π ~
   Dirichlet(1), ``pm.sample()`` default, 2 chains: CPU ms per iteration and ESS/draw of π.

Times are CPU time of this process (``time.process_time``): the machine's 2 cores are shared, and
wall time would count other jobs. "before" runs the same measurements with an older checkout of
the package (``--before PATH``: a checkout of main, e.g. ``git worktree add /tmp/before main``),
in a separate process, in the same run.

5. **Many areas in one node** (``--areas 1000x2016``, run on its own): a (G, K) table of noisy
   counts with a hierarchical Dirichlet prior over areas: iterations/s and ESS/draw of the
   hyperparameters (`areas_mixing`); the section is appended to ``TABLES_RESULTS.md``.

Run: ``.venv/bin/python benchmarks/bench_tables.py [--before PATH] [--quick]``; writes
``benchmarks/TABLES_RESULTS.md``; ``... --areas 1000x2016 [--areas-tune T --areas-draws D
--areas-reps R]`` adds the many-areas section.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
SIGMA = 3.18


def _release(counts, rng):
    import pymc_dp as pdp

    return pdp.DiscreteGaussian(sigma=SIGMA).sample(counts, rng=rng)


def record_updates(k, n, steps, seed=0):
    """CPU µs per record update of DataAugmentation on Categorical records + Counts(k)."""
    import numpy as np
    import pymc as pm

    import pymc_dp as pdp

    rng = np.random.default_rng(seed)
    pi = rng.dirichlet(np.ones(k))
    x0 = rng.choice(k, n, p=pi)
    obs = _release(np.bincount(x0, minlength=k), rng)
    with pm.Model() as model:
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved(
            "c",
            x,
            statistic=pdp.Counts(k),
            mechanism=pdp.DiscreteGaussian(sigma=SIGMA),
            observed=obs,
        )
        step = pdp.DataAugmentation([x], rng=np.random.default_rng(1))
    point = model.initial_point(random_seed=0)
    point, _ = step.step(point)  # compile / warm up
    t = time.process_time()
    for _ in range(steps):
        point, (stats,) = step.step(point)
    return (time.process_time() - t) / steps / n * 1e6, float(stats["dp_accept_rate"])


def tract_model(n, k, seed=0):
    import numpy as np
    import pymc as pm

    import pymc_dp as pdp

    rng = np.random.default_rng(seed)
    x0 = rng.choice(k, n, p=rng.dirichlet(np.ones(k)))
    obs = _release(np.bincount(x0, minlength=k), rng)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(k))
        x = pm.Categorical("x", pi, shape=n)
        pdp.DPObserved(
            "c",
            x,
            statistic=pdp.Counts(k),
            mechanism=pdp.DiscreteGaussian(sigma=SIGMA),
            observed=obs,
        )
    return model


def conjugate_ms(n, k, steps):
    import numpy as np

    import pymc_dp as pdp

    model = tract_model(n, k)
    with model:
        step = pdp.ConjugateTheta([model["pi"]], rng=np.random.default_rng(2))
    point = model.initial_point(random_seed=0)
    point["x"] = np.random.default_rng(3).integers(0, k, n)
    step.step(point)
    t = time.process_time()
    for _ in range(steps):
        step.step(point)
    return (time.process_time() - t) / steps * 1e3


def tract_iteration_ms(n, k, tune, draws):
    """CPU ms per ``pm.sample()`` iteration: process time between the first and the last call of
    ``pm.sample``'s per-draw callback (compilation and step assignment excluded)."""
    import pymc as pm
    from pymc.sampling.mcmc import assign_step_methods

    model = tract_model(n, k)
    stamps = []
    with model:
        pm.sample(
            tune=tune,
            draws=draws,
            chains=1,
            cores=1,
            random_seed=4,
            progressbar=False,
            compute_convergence_checks=False,
            callback=lambda **_: stamps.append(time.process_time()),
        )
    _, selected = assign_step_methods(model, None, methods=pm.STEP_METHODS)
    steps = sorted(
        f"{cls.__name__}({', '.join(sorted(v.name for v in vs))})" for cls, vs in selected.items()
    )
    return (stamps[-1] - stamps[0]) / (len(stamps) - 1) * 1e3, steps


def _parent_mixing(n, k, tune, draws, parent, pair):
    """A latent table of N people in K cells (pdp.Cells, DiscreteGaussian(SIGMA)) under a parent
    built by ``parent(n, k)`` inside the model (returns the parent's name and variable and the
    table variable): CPU ms per iteration and ESS/draw of the parent, with ``pm.sample()``'s own
    steps or (``pair``) ConjugateTheta on the parent + TableCells on the table passed."""
    import arviz as az
    import numpy as np
    import pymc as pm

    import pymc_dp as pdp

    rng = np.random.default_rng(0)
    table = rng.multinomial(n, rng.dirichlet(np.ones(k)))
    rel = pdp.release(table, pdp.Cells(), pdp.DiscreteGaussian(sigma=SIGMA), rng=rng)
    with pm.Model():
        name, theta, c = parent(n, k)
        pdp.DPObserved(
            "s", c, statistic=pdp.Cells(), mechanism=pdp.DiscreteGaussian(sigma=SIGMA), observed=rel
        )
        start = time.process_time()
        step = [pdp.ConjugateTheta([theta]), pdp.TableCells([c])] if pair else None
        idata = pm.sample(
            tune=tune,
            draws=draws,
            chains=2,
            cores=1,
            step=step,
            random_seed=5,
            progressbar=False,
            compute_convergence_checks=False,
        )
    cpu = time.process_time() - start
    ess = np.asarray(az.ess(idata, var_names=[name])[name]) / (2 * draws)
    small = table < 20
    return {
        "route": ("passed: " if pair else "`pm.sample()` default: ")
        + idata.sample_stats.attrs.get("pymc_dp_steps", "?"),
        "ms": cpu / (2 * (tune + draws)) * 1e3,
        "ess_median": float(np.median(ess)),
        "ess_p5": float(np.percentile(ess, 5)),
        "ess_min": float(ess.min()),
        "frac_03": float(np.mean(ess >= 0.3)),
        "ess_small_median": float(np.median(ess[small])),
        "n_small": int(small.sum()),
    }


def _mixing_row(t) -> str:
    """One results row of `_parent_mixing`."""
    return (
        f"| {t['route']} | {t['ms']:.2f} | {t['ess_median']:.2f} | {t['ess_p5']:.2f} | "
        f"{t['ess_min']:.3f} | {100 * t['frac_03']:.1f} % | {t['ess_small_median']:.2f} "
        f"({t['n_small']} cells) |"
    )


def table_mixing(n, k, tune, draws, gibbs=False):
    """Latent Multinomial table under π ~ Dirichlet(1): CPU ms per iteration and ESS/draw of π.
    ``gibbs``: the pair ConjugateTheta (π | c) + TableCells (c | π) passed explicitly instead of
    ``pm.sample()``'s own choice (DirichletCells: the cells with π summed out)."""
    import numpy as np
    import pymc as pm

    def parent(n, k):
        pi = pm.Dirichlet("pi", np.ones(k))
        return "pi", pi, pm.Multinomial("c", n=n, p=pi)

    return _parent_mixing(n, k, tune, draws, parent, gibbs)


def gamma_mixing(n, k, tune, draws, pair=False):
    """Independent Poisson cells under Gamma(½, ½/m) rates (m = N/K, the census tutorial's prior),
    the table of `table_mixing`: CPU ms per iteration and ESS/draw of λ. ``pair``: ConjugateTheta
    (λ | c) + TableCells (c | λ) passed explicitly instead of ``pm.sample()``'s own choice
    (GammaCells: the cells with λ summed out)."""
    import pymc as pm

    def parent(n, k):
        lam = pm.Gamma("lam", 0.5, 0.5 / (n / k), shape=k)
        return "lam", lam, pm.Poisson("c", lam, shape=k)

    return _parent_mixing(n, k, tune, draws, parent, pair)


def _areas_model(g, k, rng, release=True):
    """The many-areas model and its release CPU seconds (``release=False``: the noise is drawn with
    NumPy, for the G-independence of compile time only; OpenDP's per-count draw takes minutes)."""
    import numpy as np
    import pymc as pm

    import pymc_dp as pdp

    n = np.full(g, 4000)
    base0 = rng.dirichlet(np.ones(k))
    pi0 = rng.dirichlet(float(k) * base0, size=g)
    table = rng.multinomial(n, pi0)
    t = time.process_time()
    if release:
        rel = pdp.release(table, pdp.Cells(), pdp.DiscreteGaussian(sigma=SIGMA), rng=rng)
    else:
        rel = table + np.rint(rng.normal(0.0, SIGMA, table.shape)).astype(np.int64)
    release_s = time.process_time() - t
    with pm.Model() as model:
        base = pm.Dirichlet("base", np.ones(k))
        alpha = pm.LogNormal("alpha", np.log(k), 1.5)
        pi = pm.Dirichlet("pi", alpha * base, shape=(g, k))
        c = pm.Multinomial("c", n=n, p=pi, shape=(g, k))
        pdp.DPObserved(
            "s", c, statistic=pdp.Cells(), mechanism=pdp.DiscreteGaussian(sigma=SIGMA), observed=rel
        )
    return model, release_s


def _setup_seconds(g, k, seed):
    """CPU s from ``pm.sample()``'s call to its first draw (step assignment, compilation, initial
    point, one iteration), 2 iterations, on a model of G areas."""
    import numpy as np
    import pymc as pm

    model, _ = _areas_model(g, k, np.random.default_rng(seed), release=False)
    stamps = []
    t = time.process_time()
    with model:
        pm.sample(
            tune=1,
            draws=1,
            chains=1,
            cores=1,
            var_names=["alpha"],
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
            callback=lambda **_: stamps.append(time.process_time()),
        )
    return stamps[0] - t


def _step_breakdown(model, reps, iters=5):
    """CPU ms per call of each step ``pm.sample()`` assigns (steps alone, after 3 warm iterations)."""
    import numpy as np
    from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers

    import pymc_dp as pdp

    with model:
        given = [] if reps is None else [pdp.TableCells([model["c"]], reps=reps)]
        given_vars = [model.rvs_to_values[model["c"]]] if given else []
        _, selected = assign_step_methods(model, given)
        selected = {cls: [v for v in vs if v not in given_vars] for cls, vs in selected.items()}
        step = instantiate_steppers(model, given, {c: v for c, v in selected.items() if v})
    methods = step if isinstance(step, list) else getattr(step, "methods", [step])
    point = model.initial_point(0)
    for m in methods:
        m.set_rng(np.random.default_rng(1))
    ms = {type(m).__name__: 0.0 for m in methods}
    for it in range(3 + iters):
        for m in methods:
            t = time.process_time()
            point, _ = m.step(point)
            if it >= 3:
                ms[type(m).__name__] += (time.process_time() - t) * 1e3 / iters
    return ms


def areas_mixing(g, k, tune, draws, reps, seed=0, opendp=True):
    """(G, K) table of G areas in one node (issue 18 item 4): π_g ~ Dirichlet(α·base), base ~
    Dirichlet(1), α ~ LogNormal(log K, 1.5), c_g ~ Multinomial(4,000, π_g), ``pdp.Cells()`` under
    ``DiscreteGaussian(3.18)``. ``pm.sample()`` with no ``step=`` and no ``initvals`` (it assigns
    DirichletHyper (α, base, π, c) by itself), ``var_names=["alpha", "base"]`` (the
    (G, K) latents c and π would be 32 MB per draw), one chain; CPU seconds for the release, the
    build, pm.sample's set-up (G = 10 and G) and per iteration; ESS/draw of α and base; CPU ms per
    step (as pm.sample() assigns them). ``reps``: None passes no step at all; an integer passes
    ``step=[pdp.TableCells([c], reps=reps)]`` and lets pm.sample() assign the rest."""
    import arviz as az
    import numpy as np
    import pymc as pm

    import pymc_dp as pdp
    from pymc_dp.samplers import streams

    rng = np.random.default_rng(seed)
    t = time.process_time()
    model, release_s = _areas_model(g, k, rng, release=opendp)
    build_s = time.process_time() - t - release_s
    stamps, walls = [], []
    t = time.process_time()
    with model:
        # reps=None: nothing passed (TableCells' default reps); else only TableCells(c, reps) is
        # passed and pm.sample() assigns the rest
        step = None if reps is None else [pdp.TableCells([model["c"]], reps=reps)]
        idata = pm.sample(
            tune=tune,
            draws=draws,
            chains=1,
            cores=1,
            step=step,
            var_names=["alpha", "base"],  # the (G, K) latents stay out of the trace
            random_seed=6,
            progressbar=False,
            compute_convergence_checks=False,
            callback=lambda **_: (
                stamps.append(time.process_time()),
                walls.append(time.perf_counter()),
            ),
        )
    per_it = (stamps[-1] - stamps[0]) / (len(stamps) - 1)
    wall_per_it = (walls[-1] - walls[0]) / (len(walls) - 1)
    ess = az.ess(idata, var_names=["alpha", "base"])
    ess_base = np.asarray(ess["base"]) / draws
    return {
        "g": g,
        "k": k,
        "reps": reps,
        "tune": tune,
        "draws": draws,
        "release_s": release_s,
        "opendp": opendp,
        "build_s": build_s,
        "setup_s": stamps[0] - t - per_it,
        "setup_s_g10": _setup_seconds(10, k, seed),
        "it_per_s": 1.0 / per_it,
        "wall_it_per_s": 1.0 / wall_per_it,
        "threads": streams.threads(),
        "ess_alpha": float(ess["alpha"]) / draws,
        "ess_base_median": float(np.median(ess_base)),
        "ess_base_min": float(ess_base.min()),
        "alpha_mean": float(idata.posterior["alpha"].mean()),
        "step_ms": _step_breakdown(model, reps),
    }


def areas_section(rows):
    lines = [
        "## Many areas in one node (issue 18 item 4)",
        "",
        "A (G, K) table of noisy counts in one `DPObserved` with `pdp.Cells()`: π_g ~ Dirichlet(α·base), "
        "base ~ Dirichlet(1), α ~ LogNormal(log K, 1.5), c_g ~ Multinomial(4,000, π_g), "
        "`DiscreteGaussian(3.18)`. `pm.sample()` with no `step=` and no `initvals` (it assigns "
        "DirichletHyper(α, base, π, c) by itself; before h/areas2: DirichletHyper(α, base, π) and "
        "TableCells(c)), "
        '`var_names=["alpha", "base"]` (c and π are 2 × G·K numbers per draw), one chain '
        "(`benchmarks/bench_tables.py --areas GxK`). CPU time of the measuring process; the release is "
        "the curator's side (OpenDP's discrete Gaussian, per count). Set-up: CPU s from the call of "
        "`pm.sample()` to its first draw (step assignment, compilation, initial point), at G = 10 "
        "and at G. CPU ms per step: each step alone on the same model, 5 iterations. iterations/s: "
        "CPU time / wall-clock (`--areas-threads`: numba threads on, `streams.use_threads`).",
        "",
        "| G | K | noisy counts | step= passed | iterations (warm-up + draws) | release CPU s | build CPU s "
        "| set-up CPU s, G = 10 / G | iterations/s | ESS/draw α | ESS/draw base: median | min "
        "| posterior mean α (true K) | CPU ms per step |",
        "|---:|---:|---:|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for a in rows:
        steps = ", ".join(f"{name} {ms:.0f}" for name, ms in a["step_ms"].items())
        passed = "nothing" if a["reps"] is None else f"`TableCells([c], reps={a['reps']})`"
        lines.append(
            f"| {a['g']:,} | {a['k']:,} | {a['g'] * a['k']:,} "
            f"| {passed} "
            f"| {a['tune']} + {a['draws']} "
            f"| {a['release_s']:.1f}{'' if a['opendp'] else ' (NumPy noise)'} | {a['build_s']:.1f} | {a['setup_s_g10']:.1f} / {a['setup_s']:.1f} "
            f"| {a['it_per_s']:.2f} / {a['wall_it_per_s']:.2f}{' (threads)' if a['threads'] else ''} "
            f"| {a['ess_alpha']:.2f} "
            f"| {a['ess_base_median']:.2f} | {a['ess_base_min']:.3f} | {a['alpha_mean']:.1f} | {steps} |"
        )
    return lines


def areas_main(args):
    """Only the many-areas rows: appended to TABLES_RESULTS.md (replacing an earlier such section)."""
    rows = []
    for spec in args.areas:
        g, k = (int(v) for v in spec.split("x"))
        rows.append(
            areas_mixing(
                g,
                k,
                args.areas_tune,
                args.areas_draws,
                args.areas_reps,
                opendp=not args.areas_numpy_noise,
            )
        )
        print(rows[-1], flush=True)
    load = os.getloadavg()
    path = HERE / "TABLES_RESULTS.md"
    text = path.read_text() if path.exists() else ""
    text = text.split("## Many areas in one node")[0].rstrip() + "\n\n"
    section = areas_section(rows) + [
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load average at end "
        f"{load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} (2 cores shared with other jobs).",
    ]
    path.write_text(text + "\n".join(section) + "\n")
    print("\n".join(section))


def worker(args):
    out = {"code": os.path.dirname(__import__("pymc_dp").__file__)}
    for k, steps in [(16, args.steps16), (2016, args.steps2016)]:
        us, acc = record_updates(k, args.n, steps)
        out[f"us_per_record_k{k}"] = us
        out[f"accept_k{k}"] = acc
    out["conjugate_ms"] = conjugate_ms(4000, 2016, args.conj_steps)
    out["tract_ms"], out["tract_steps"] = tract_iteration_ms(4000, 2016, args.tune, args.draws)
    if args.table:
        out["table"] = table_mixing(10**6, 2016, 300, 1000)
        out["table_gibbs"] = table_mixing(10**6, 2016, 300, 1000, gibbs=True)
        out["gamma"] = gamma_mixing(10**6, 2016, 300, 1000)
        out["gamma_pair"] = gamma_mixing(10**6, 2016, 300, 1000, pair=True)
    print("RESULT " + json.dumps(out))


def spawn(code_root, args, extra):
    env = dict(os.environ, PYTHONPATH=str(code_root))
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", *extra]
    proc = subprocess.run(
        cmd, env=env, cwd=str(code_root), capture_output=True, text=True, check=False
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"worker on {code_root} failed:\n{proc.stderr[-3000:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--before",
        type=pathlib.Path,
        default=None,
        help="checkout of the older package to compare with (e.g. main)",
    )
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--steps16", type=int, default=20)
    parser.add_argument("--steps2016", type=int, default=20)
    parser.add_argument("--conj-steps", type=int, default=20)
    parser.add_argument("--tune", type=int, default=100)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--table", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument(
        "--areas",
        nargs="+",
        default=None,
        help="only the many-areas rows, e.g. --areas 1000x2016 1000x16",
    )
    parser.add_argument("--areas-tune", type=int, default=100)
    parser.add_argument("--areas-draws", type=int, default=200)
    parser.add_argument(
        "--areas-reps",
        type=int,
        default=None,
        help="pass step=[pdp.TableCells([c], reps=R)] (pm.sample() assigns the rest); default: no step",
    )
    parser.add_argument(
        "--areas-numpy-noise",
        action="store_true",
        help="simulate the release's noise with NumPy (rounded normal) instead of OpenDP's discrete "
        "Gaussian: the curator's side only (minutes of CPU at 2 million counts); the sampler is the same",
    )
    parser.add_argument(
        "--areas-threads",
        action="store_true",
        help="run the many-areas steps' row loops in numba threads (streams.use_threads(True))",
    )
    args = parser.parse_args()
    if args.areas_threads:
        from pymc_dp.samplers import streams

        streams.use_threads(True)
    if args.areas:
        return areas_main(args)
    if args.worker:
        return worker(args)
    quick = [
        "--steps16",
        "5",
        "--steps2016",
        "5",
        "--conj-steps",
        "5",
        "--tune",
        "20",
        "--draws",
        "40",
    ]
    load0, start = os.getloadavg(), time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    after = spawn(HERE.parent, args, quick if args.quick else [])
    # the old code is slow (one-hot contributions, O(N·K)): few repetitions
    before = None
    if args.before is not None:
        before = spawn(
            args.before,
            args,
            [
                "--steps16",
                "3",
                "--steps2016",
                "1",
                "--conj-steps",
                "5",
                "--tune",
                "10",
                "--draws",
                "20",
                "--table",
                "0",
            ],
        )
    load1, end = os.getloadavg(), time.strftime("%H:%M", time.gmtime())
    import numpy
    import pymc

    def cell(res, key, fmt):
        return "—" if res is None else fmt.format(res[key])

    rows = [
        ("µs per record update, K = 16, N = 10⁵", "us_per_record_k16", "{:.4f}"),
        ("µs per record update, K = 2,016, N = 10⁵", "us_per_record_k2016", "{:.4f}"),
        ("ConjugateTheta draw of π, K = 2,016, N = 4,000 (ms)", "conjugate_ms", "{:.2f}"),
        ("tract table, `pm.sample()` default, ms per iteration", "tract_ms", "{:.1f}"),
    ]
    lines = [
        "# Noisy tables benchmark (issue 18)",
        "",
        f"Machine: {platform.machine()}, {platform.system()}, Python {platform.python_version()}, "
        f"PyMC {pymc.__version__}, numpy {numpy.__version__}. Command: `python benchmarks/bench_tables.py"
        f"{' --quick' if args.quick else ''}{' --before ' + str(args.before) if args.before else ''}`. "
        f"Run {start}–{end} UTC; load average at start {load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f}, "
        f"at end {load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f} (2 cores shared with other jobs). "
        "Times are CPU time of the measuring process (see the script's docstring).",
        "",
        "| measurement | before | after |",
        "|---|---:|---:|",
    ]
    for label, key, fmt in rows:
        lines.append(f"| {label} | {cell(before, key, fmt)} | {cell(after, key, fmt)} |")
    lines += [
        "",
        f"after: code {after['code']}; acceptance rate of record moves K = 16: "
        f"{after['accept_k16']:.2f}, K = 2,016: {after['accept_k2016']:.2f}; "
        f"steps assigned by `pm.sample()`: {', '.join(after['tract_steps']) or 'n/a'}.",
    ]
    if before is not None:
        lines.append(f"before: code {before['code']} (fewer repetitions: the old route is slow).")
    lines += [
        "",
        "## Latent count table (`pdp.Cells`), N = 10⁶ people, K = 2,016 cells, σ = 3.18",
        "",
        "`π ~ Dirichlet(1)`, `c ~ Multinomial(N, π)`, `DPObserved(c, statistic=pdp.Cells(), "
        "mechanism=DiscreteGaussian(3.18))`, 2 chains × (300 warm-up + 1,000 draws), the same data "
        "and seed for both routes: `pm.sample()`'s default (DirichletCells: the cells with π summed "
        "out, then π | c) and the earlier default passed explicitly (ConjugateTheta on π, TableCells "
        "on c). No records: the old route would need 10⁶ latent records.",
        "",
        "| route | CPU ms per iteration | ESS/draw of π: median | 5th percentile | min | cells with "
        "ESS/draw ≥ 0.3 | median over cells with < 20 people |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [_mixing_row(after[key]) for key in ("table", "table_gibbs")]
    lines += [
        "",
        "## Poisson cells under Gamma rates (`pdp.Cells`), the same table",
        "",
        "`λ ~ Gamma(½, ½/m)` with m = N/K (the census tutorial's prior), `c ~ Poisson(λ)`, the same "
        "release, 2 chains × (300 warm-up + 1,000 draws): `pm.sample()`'s default (GammaCells: the "
        "cells with λ summed out, then λ | c) and the earlier default passed explicitly "
        "(ConjugateTheta on λ, TableCells on c).",
        "",
        "| route | CPU ms per iteration | ESS/draw of λ: median | 5th percentile | min | cells with "
        "ESS/draw ≥ 0.3 | median over cells with < 20 people |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [_mixing_row(after[key]) for key in ("gamma", "gamma_pair")]
    path = HERE / "TABLES_RESULTS.md"
    # keep the many-areas section (written by --areas, run on its own)
    old = path.read_text() if path.exists() else ""
    areas = (
        old[old.index("## Many areas in one node") :] if "## Many areas in one node" in old else ""
    )
    path.write_text("\n".join(lines) + "\n" + ("\n" + areas if areas else ""))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
