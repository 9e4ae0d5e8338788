r"""Simulation-based calibration (Talts et al. 2018) of the many-areas route (issue 18 item 4, slow
tier): the steps ``pm.sample()`` assigns by itself to a (G, K) Multinomial table of areas under
``π_g ~ Dirichlet(α·base)`` released cell by cell — one ``DirichletHyper(α, base, π, c)`` (π
summed out: the cells' moves, the column pairs, (α, base), then π), and the earlier pair
``DirichletHyper(α, base, π)`` + ``TableCells(c)`` (``step=`` given; what a table with margins
over areas gets).

Protocol (as ``test_sbc_routes.py``): the kernel is built once, tuned on one data set and then
fixed; per replication (α*, base*) ~ prior, π*, c* and the release (discrete Gaussian noise drawn
with the replication's generator) are simulated and enter the model by ``pm.set_data``; the chain
starts at (α*, base*, π*, c*) — a draw from the joint posterior — and runs ``WARM`` discarded
iterations and ``L`` draws thinned by ``THIN``. The ranks of log α* and base*₀ among the draws are
uniform on 0..L if the kernel leaves the posterior invariant; Pearson's χ² on ``BINS`` bins at
``ALPHA`` = 0.001 per statistic. Seeds fixed.

Stated power: ``test_sbc_areas_catches_a_shifted_prior`` runs the same check with α* drawn from a
prior shifted by 1.4 sd of log α (the model keeps the unshifted one) and requires log α's ranks to
be found non-uniform (p < ALPHA). Measured with these seeds (2026-11-27, load ~5): the control is
caught with p = 7e-23 and the exact route gives p = 0.53 (log α) and 0.83 (base₀); each test runs
in about 12 s. One seed only: the false-alarm rate and the power over seeds were not measured."""

import time

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.sbc import rank_test

pytestmark = pytest.mark.slow

G, K, N, SIGMA = 3, 3, 6, 1.0
MU, SD = np.log(3.0), 0.7
R, L, WARM, THIN, BINS, ALPHA = 100, 7, 10, 4, 8, 1e-3


def _model():
    mech = pdp.DiscreteGaussian(sigma=SIGMA)
    with pm.Model() as model:
        obs = pm.Data("obs", np.zeros((G, K), dtype="int64"))
        base = pm.Dirichlet("base", np.ones(K))
        alpha = pm.LogNormal("alpha", MU, SD)
        pi = pm.Dirichlet("pi", alpha * base, shape=(G, K))
        c = pm.Multinomial("c", n=np.full(G, N), p=pi, shape=(G, K))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=obs)
    return model, mech


def _simplex(x):
    lx = np.log(x)
    return lx[..., :-1] - lx.mean(axis=-1, keepdims=True)


def _simulate(rng, mech, shift=0.0):
    alpha = np.exp(rng.normal(MU + shift, SD))
    base = rng.dirichlet(np.ones(K))
    pi = rng.dirichlet(alpha * base, size=G)
    pi = np.maximum(pi, 1e-300)
    pi /= pi.sum(axis=1, keepdims=True)
    c = rng.multinomial(N, pi)
    release = np.asarray(pdp.release(c, pdp.Cells(), mech, rng=rng), dtype="int64")
    values = {
        "alpha_log__": np.log(alpha),
        "base_simplex__": _simplex(base),
        "pi_simplex__": _simplex(pi),
        "c": c,
    }
    return alpha, base, values, release


def _base0(y):
    ext = np.append(y, -np.sum(y))
    e = np.exp(ext - ext.max())
    return e[0] / e.sum()


def sbc_ranks(seed=2026, shift=0.0, route="default"):
    model, mech = _model()
    rng = np.random.default_rng(seed)
    _, _, values, release = _simulate(rng, mech)
    pm.set_data({"obs": release}, model=model)
    with model:
        if route == "default":  # what pm.sample() assigns by itself
            steps = [pdp.DirichletHyper([model[n] for n in ("alpha", "base", "pi", "c")])]
            assert steps[0].columns and steps[0]._table_step is not None
        else:
            steps = [
                pdp.DirichletHyper([model["alpha"], model["base"], model["pi"]]),
                pdp.TableCells([model["c"]]),
            ]
    for i, step in enumerate(steps):
        step.set_rng(np.random.default_rng(seed + 1 + i))
    dtypes = {v.name: v.dtype for v in model.value_vars}

    def point_of(vals):
        return {n: np.asarray(vals[n], dtype=dtypes[n]) for n in dtypes}

    point = point_of(values)
    for _ in range(300):  # tune once on one data set, then keep the kernel fixed
        for step in steps:
            point, _ = step.step(point)
    for step in steps:
        step.stop_tuning()
    ranks = np.empty((R, 2), dtype=int)
    for r in range(R):
        alpha, base, values, release = _simulate(rng, mech, shift)
        pm.set_data({"obs": release}, model=model)
        for step in steps:
            step.start_chain()  # forget the last data set (TableCells reads the release again)
            step.tune = False
        point = point_of(values)
        draws = []
        for i in range(WARM + L * THIN):
            for step in steps:
                point, _ = step.step(point)
            if i >= WARM and (i - WARM) % THIN == THIN - 1:
                draws.append((float(point["alpha_log__"]), _base0(point["base_simplex__"])))
        draws = np.array(draws)
        ranks[r] = (np.sum(draws[:, 0] < np.log(alpha)), np.sum(draws[:, 1] < base[0]))
    return ranks


def _p_value(ranks):
    return rank_test(ranks, L, BINS)


@pytest.mark.parametrize("route", ["default", "with_table_cells"])
def test_sbc_areas_route_ranks_uniform(route):
    t0 = time.perf_counter()
    ranks = sbc_ranks(route=route)
    (ca, pa), (cb, pb) = _p_value(ranks[:, 0]), _p_value(ranks[:, 1])
    print(
        f"\n[sbc] areas ({route}): log α bins {ca.tolist()} p = {pa:.3f}; base₀ bins {cb.tolist()} "
        f"p = {pb:.3f} ({time.perf_counter() - t0:.1f} s)"
    )
    assert pa > ALPHA and pb > ALPHA, (ca, pa, cb, pb)


def test_sbc_areas_catches_a_shifted_prior():
    """Control: α* drawn from LogNormal(log 3 + 1, 0.7) while the model keeps LogNormal(log 3,
    0.7): log α's ranks must be found non-uniform."""
    ranks = sbc_ranks(shift=1.0)
    counts, p_value = _p_value(ranks[:, 0])
    print(f"\n[sbc] areas, shifted prior: bins {counts.tolist()} χ² p = {p_value:.2e}")
    assert p_value < ALPHA, (counts, p_value)
