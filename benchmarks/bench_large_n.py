"""Large n (issue 11.3): what one iteration of ``pm.sample()`` costs at n = 10⁵, and θ ESS/s.

Model: the clamped normal mean of ``bench_auto_assign.py`` (mu ~ N(0, 3), x_i ~ N(mu, 1), Sum on
[-2, 4] + Laplace, ε = 1). Part 1 times the pieces of one ``DataAugmentation`` step (proposal draw,
contributions, compiled sweep) and of ``ConjugateTheta``, with the fast proposals and with the
graph's. Part 2 runs ``pm.sample`` (2 chains, ``cores=1``, 300 + 300 draws, seed 3, as
``bench_auto_assign.py``) for the default assignment (DataAugmentation + ConjugateTheta), the
default with ``var_names=["mu"]`` (the trace keeps θ only), DataAugmentation with graph proposals +
ConjugateTheta, and DataAugmentation + NUTS, side by side; θ bulk ESS over ``sampling_time``.

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_large_n.py [--n 100000]``.
Not a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
import pymc as pm

import pymc_dp as pdp
from benchmarks.bench_auto_assign import bulk_ess, clamped


def per_call_ms(fn, repeats):
    fn()
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t0) / repeats * 1e3


def breakdown(n, fast, repeats=100):
    from pymc_dp.samplers.augmentation import AugmentationState, augmentation_kernel

    model, _ = clamped(n, 1.0)()
    with model:
        da = pdp.DataAugmentation([model["x"]], fast_proposals=fast, rng=np.random.default_rng(0))
        ct = pdp.ConjugateTheta([model["mu"]])
    point = model.initial_point(random_seed=0)
    for _ in range(3):
        point, _ = da.step(point)
        point, _ = ct.step(point)
    group = da.groups[0]
    block = group.block
    props = block.propose(point, reuse=fast)
    prop_point = {**point, **dict(zip(block.value_names, props))}
    t_cur, l_cur = block.contributions(point)
    t_prop, l_prop = block.contributions(prop_point)
    add_r, loc_r = block.releases()
    state = AugmentationState(t_cur, l_cur, [np.asarray(point["x"])])
    out = {
        "propose": per_call_ms(lambda: block.propose(point, reuse=fast), repeats),
        "contributions ×2": 2 * per_call_ms(lambda: block.contributions(prop_point), repeats),
        "kernel (exponentials + sweep + new records)": per_call_ms(
            lambda: augmentation_kernel(
                da.rng,
                state,
                proposal=(t_prop, l_prop, props),
                add_table=group.add_table,
                add_r=add_r,
                loc_table=group.loc_table,
                loc_r=loc_r,
            ),
            repeats,
        ),
        "DataAugmentation.step": per_call_ms(lambda: da.step(point), repeats),
        "ConjugateTheta.step": per_call_ms(lambda: ct.step(point), repeats),
    }
    rows = np.empty((repeats, n))  # what PyMC's NDArray trace does per draw: write into fresh pages
    t0 = time.perf_counter()
    for k in range(repeats):
        rows[k] = point["x"]
    out["trace write of x into fresh memory (PyMC)"] = (time.perf_counter() - t0) / repeats * 1e3
    return out


def ess_rate(n, label, steps, var_names=None, draws=300):
    model, names = clamped(n, 1.0)()
    with model:
        step = steps(model)
        kw = {} if var_names is None else {"var_names": var_names}
        idata = pm.sample(
            step=step,
            draws=draws,
            tune=draws,
            chains=2,
            cores=1,
            random_seed=3,
            progressbar=False,
            compute_convergence_checks=False,
            **kw,
        )
    ess = bulk_ess(idata, names)
    t = float(idata.sample_stats.attrs["sampling_time"])
    per_iter = t / (4 * draws) * 1e3
    return f"| {label} | {ess / (2 * draws):.3f} | {t:.2f} | {per_iter:.2f} | {ess / t:.1f} |"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    n = args.n
    print(
        f"pymc_dp from {pdp.__file__}; PyMC {pm.__version__}; {platform.machine()}; "
        f"load {os.getloadavg()}"
    )
    for fast in (True, False):
        print(f"\n### one iteration at n = {n:,}, fast_proposals={fast} (ms per call)\n")
        for k, v in breakdown(n, fast).items():
            print(f"- {k}: {v:.3f}")
    print(f"\n### θ ESS/s at n = {n:,} (2 chains × 300 + 300, cores=1)\n")
    print("| route | θ ESS/draw | sampling s | ms / iteration | θ ESS/s |")
    print("|---|---|---|---|---|")
    routes = [
        ("pm.sample() default: DataAugmentation + ConjugateTheta", lambda m: None, None),
        ("same, var_names=['mu'] (trace without the records)", lambda m: None, ["mu"]),
        (
            "DataAugmentation(fast_proposals=False) + ConjugateTheta",
            lambda m: [
                pdp.DataAugmentation([m["x"]], fast_proposals=False),
                pdp.ConjugateTheta([m["mu"]]),
            ],
            None,
        ),
        (
            "DataAugmentation + NUTS",
            lambda m: [pdp.DataAugmentation([m["x"]]), pm.NUTS([m["mu"]])],
            None,
        ),
    ]
    for label, steps, var_names in routes:
        print(ess_rate(n, label, steps, var_names), flush=True)
    print(f"\nload at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
