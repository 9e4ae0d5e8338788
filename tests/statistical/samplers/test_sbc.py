r"""Simulation-based calibration (Talts et al. 2018) of the analyst's samplers (slow tier).

For each replication r: θ* ~ prior, records x* ~ f(·|θ*), release s ~ mechanism(S(x*)) (OpenDP,
through :func:`pymc_dp.release`); then the sampler's own kernel (the step's ``step``, as
``pm.sample`` calls it) is run from (θ*, x*) — a draw from the joint posterior given s, so the chain
is stationary from the start — for ``WARM`` discarded iterations and ``L`` draws thinned by
``THIN`` (fewer for a sampler whose draws are nearly independent: ``WARM_THIN``). If the sampler
is exact, the rank of θ* among the L draws is uniform on 0..L (up to the draws' remaining
autocorrelation, reduced by thinning). Ranks are binned into ``BINS`` bins and
tested by Pearson's χ² (BINS − 1 d.o.f.) at a false-alarm rate of ``ALPHA`` = 0.001 per case
(≈ 1.2 % for the 12 cases together). Seeds fixed.
"""

import time

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_dp as pdp
from tests.support.sbc import bernoulli_local, bernoulli_sum, normal_local, normal_sum

pytestmark = pytest.mark.slow

R, L, THIN, WARM, BINS, ALPHA = 100, 7, 15, 45, 8, 1e-3
#: (WARM, THIN) per sampler where the kernel's draws are nearly independent. DataAugmentation +
#: Slice: θ's autocorrelation (3–6 data sets × 600–1200 iterations from (θ*, x*), tuned kernel)
#: was −0.03 at lag 1 and within ±0.06 at lags 2–15 on both models, so thinning by 2 gives draws
#: as independent as thinning by 15; PMMH and MHAAR keep (45, 15) (lag-15 autocorrelation 0.0–0.3).
#: R, L and BINS are the same for every sampler and as in test_sbc_routes.py, whose
#: test_sbc_catches_a_shifted_prior is the stated power of this protocol (a shifted-prior control
#: caught at p < ALPHA in 11 of 12 seeds, thinning as WARM_THIN's (4, 2); its module docstring).
WARM_THIN = {"DataAugmentation": (4, 2)}


def _da(model, th):
    return pm.CompoundStep([pdp.DataAugmentation(), pm.Slice([model[th]])])


SAMPLERS = {
    "DataAugmentation": _da,
    "PMMH": lambda model, th: pdp.PMMH([model[th]], n_particles=10),
    "MHAAR-u": lambda model, th: pdp.MHAAR([model[th]], n_particles=10, space="u"),
    "MHAAR-z": lambda model, th: pdp.MHAAR([model[th]], n_particles=10, space="z"),
    "MHAAR-local": lambda model, th: pdp.MHAAR([model[th]], n_particles=10, space="local"),
}
CASES = [
    ("DataAugmentation", bernoulli_sum),
    ("DataAugmentation", normal_sum),
    ("PMMH", bernoulli_sum),
    ("PMMH", normal_sum),
    ("PMMH", bernoulli_local),
    ("PMMH", normal_local),
    ("MHAAR-u", bernoulli_sum),
    ("MHAAR-u", normal_sum),
    ("MHAAR-z", bernoulli_sum),
    ("MHAAR-z", normal_sum),
    ("MHAAR-local", bernoulli_local),
    ("MHAAR-local", normal_local),
]


def _tuned(model, make_step, th, simulate, seed):
    """Build the step and tune its proposal once, on one simulated data set (then keep it fixed)."""
    rng = np.random.default_rng(seed)
    with model:
        step = make_step(model, th)
    _, values, release = simulate(rng)
    pm.set_data({"obs": release}, model=model)
    point = model.initial_point(random_seed=0)
    point.update({k: np.asarray(v, dtype=point[k].dtype) for k, v in values.items()})
    for method in getattr(step, "methods", [step]):
        if hasattr(method, "set_rng"):
            method.set_rng(np.random.default_rng(seed + 1))
    for _ in range(300):
        point, _ = step.step(point)
    step.stop_tuning()
    return step


def sbc_ranks(sampler, make_model, seed=2024):
    model, simulate, th = make_model()
    step = _tuned(model, SAMPLERS[sampler], th, simulate, seed)
    value_name = model.rvs_to_values[model[th]].name
    warm, thin = WARM_THIN.get(sampler, (WARM, THIN))
    rng = np.random.default_rng(seed + 2)
    ranks = np.empty(R, dtype=int)
    for r in range(R):
        theta, values, release = simulate(rng)
        pm.set_data({"obs": release}, model=model)
        for method in getattr(step, "methods", [step]):
            if hasattr(method, "start_chain"):
                method.start_chain()  # forget state of the last data set, keep the tuned scale fixed
        point = model.initial_point(random_seed=0)
        point.update({k: np.asarray(v, dtype=point[k].dtype) for k, v in values.items()})
        draws = []
        for i in range(warm + L * thin):
            point, _ = step.step(point)
            if i >= warm and (i - warm) % thin == thin - 1:
                draws.append(float(np.asarray(point[value_name])))
        ranks[r] = int(np.sum(np.asarray(draws) < (special.logit(theta) if th == "p" else theta)))
    return ranks


@pytest.mark.parametrize("sampler, make_model", CASES, ids=[f"{s}-{m.__name__}" for s, m in CASES])
def test_sbc_ranks_uniform(sampler, make_model):
    t0 = time.perf_counter()
    ranks = sbc_ranks(sampler, make_model)
    counts = np.bincount(ranks * BINS // (L + 1), minlength=BINS)
    p_value = stats.chisquare(counts).pvalue
    print(
        f"\n[sbc] {sampler} {make_model.__name__}: bins {counts.tolist()} χ² p = {p_value:.3f} "
        f"({time.perf_counter() - t0:.0f} s)"
    )
    assert p_value > ALPHA, (counts, p_value)
