r"""Simulation-based calibration (Talts et al. 2018) of `DirichletCells` (slow tier): a (G, K)
Multinomial table of areas under ``π_g ~ Dirichlet(a)``, a fixed, released cell by cell, the step
``pm.sample()`` assigns to π and c (the cells with π summed out, then π | c).

Protocol (as ``test_sbc_areas.py``): one step, built once; per replication π* ~ Dirichlet(a), c*
and the release (discrete Gaussian noise drawn with the replication's generator) are simulated and
enter the model by ``pm.set_data``; the chain starts at (π*, c*) — a draw from the joint posterior
— and runs ``WARM`` discarded iterations and ``L`` draws thinned by ``THIN``. The ranks of π*₀₀
and π*₁₂ among the draws are uniform on 0..L if the kernel leaves the posterior invariant;
Pearson's χ² on ``BINS`` bins at ``ALPHA`` = 0.001 per statistic. Seeds fixed.

Stated power: ``test_sbc_dirichlet_cells_catches_a_shifted_prior`` simulates π* from Dirichlet(a)
with a's first entry tripled while the model keeps a, and requires π₀₀'s ranks to be found
non-uniform (p < ALPHA). Measured with these seeds (2026-11-28): π₀₀ p = 0.55, π₁₂ p = 0.78;
the control p = 7e-15; about 12 s for both. One seed only: the false-alarm rate and the power over
seeds were not measured."""

import time

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.sbc import rank_test

pytestmark = pytest.mark.slow

G, K, N, SIGMA = 2, 3, 5, 1.0
A = np.array([0.8, 1.5, 2.0])
R, L, WARM, THIN, BINS, ALPHA = 150, 7, 4, 2, 8, 1e-3


def _model():
    mech = pdp.DiscreteGaussian(sigma=SIGMA)
    with pm.Model() as model:
        obs = pm.Data("obs", np.zeros((G, K), dtype="int64"))
        pi = pm.Dirichlet("pi", A, shape=(G, K))
        c = pm.Multinomial("c", n=N, p=pi, shape=(G, K))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=obs)
    return model, mech


def _simplex(x):
    lx = np.log(x)
    return lx[..., :-1] - lx.mean(axis=-1, keepdims=True)


def _pi_of(y):
    ext = np.concatenate([y, -np.sum(y, axis=-1, keepdims=True)], axis=-1)
    e = np.exp(ext - ext.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def sbc_ranks(seed=2027, scale=1.0):
    model, mech = _model()
    rng = np.random.default_rng(seed)
    with model:
        step = pdp.DirichletCells([model["pi"], model["c"]])
    step.set_rng(np.random.default_rng(seed + 1))
    step.stop_tuning()
    a_sim = A * np.array([scale, 1.0, 1.0])
    ranks = np.empty((R, 2), dtype=int)
    for r in range(R):
        pi = np.maximum(rng.dirichlet(a_sim, size=G), 1e-300)
        pi /= pi.sum(axis=1, keepdims=True)
        c = rng.multinomial(N, pi)
        release = np.asarray(pdp.release(c, pdp.Cells(), mech, rng=rng), dtype="int64")
        pm.set_data({"obs": release}, model=model)
        step.start_chain()  # read the new release
        step.tune = False
        point = {"pi_simplex__": _simplex(pi), "c": c.astype("int64")}
        draws = []
        for i in range(WARM + L * THIN):
            point, _ = step.step(point)
            if i >= WARM and (i - WARM) % THIN == THIN - 1:
                p = _pi_of(point["pi_simplex__"])
                draws.append((p[0, 0], p[1, 2]))
        draws = np.array(draws)
        ranks[r] = (np.sum(draws[:, 0] < pi[0, 0]), np.sum(draws[:, 1] < pi[1, 2]))
    return ranks


def _p_value(ranks):
    return rank_test(ranks, L, BINS)


def test_sbc_dirichlet_cells_ranks_uniform():
    t0 = time.perf_counter()
    ranks = sbc_ranks()
    (c0, p0), (c1, p1) = _p_value(ranks[:, 0]), _p_value(ranks[:, 1])
    print(
        f"\n[sbc] DirichletCells: π00 bins {c0.tolist()} p = {p0:.3f}; π12 bins {c1.tolist()} "
        f"p = {p1:.3f} ({time.perf_counter() - t0:.1f} s)"
    )
    assert p0 > ALPHA and p1 > ALPHA, (c0, p0, c1, p1)


def test_sbc_dirichlet_cells_catches_a_shifted_prior():
    """Control: π* from Dirichlet(3·a₀, a₁, a₂) while the model keeps a: π₀₀'s ranks must be found
    non-uniform."""
    ranks = sbc_ranks(scale=3.0)
    counts, p_value = _p_value(ranks[:, 0])
    print(f"\n[sbc] DirichletCells, shifted prior: bins {counts.tolist()} χ² p = {p_value:.2e}")
    assert p_value < ALPHA, (counts, p_value)
