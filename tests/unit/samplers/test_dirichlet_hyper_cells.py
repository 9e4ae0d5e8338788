"""The cell moves of a Multinomial table with its rows' π summed out (`DirichletHyper` with the
table among its variables, issue 18 item 4): each row Dirichlet-multinomial(N_g, α·base) times the
releases' densities. The numba sweeps (pair moves `cells.dm_rows_sweep_streams`, record moves
`cells.dm_records_sweep_streams`) against PyMC's own
``pm.DirichletMultinomial`` logp on every table of two small rows (enumerated), with a control
that the check fails on a wrong concentration; and pm.sample()'s assignment of the table."""

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.mechanisms.base import check_kernel_codes
from pymc_dp.samplers import cells
from pymc_dp.samplers.cells import (
    _direct,
    alias_table,
    dm_records_sweep_streams,
    dm_rows_sweep_streams,
    entry_values,
)
from pymc_dp.samplers.streams import row_seeds
from tests.support.mc import assert_mc_close
from tests.support.tables import compositions

N, K = np.array([4, 3]), 3
CONC = np.array([0.7, 1.9, 0.4])
MECHS = [pdp.DiscreteGaussian(sigma=1.2), pdp.DiscreteLaplace(scale=0.9)]
R = [np.array([[3, 0, 1], [0, 2, 2]]), np.array([[2, 1, -1], [1, 1, 3]])]


def _exact(conc, n_rel=2):
    """Each row's probability of each of its tables (enumerated), from PyMC's logp, under the
    first ``n_rel`` releases."""
    out = []
    for g in range(2):
        tabs = np.array(list(compositions(int(N[g]), K)))
        lp = pm.logp(pm.DirichletMultinomial.dist(n=int(N[g]), a=conc), tabs).eval()
        for mech, r in zip(MECHS[:n_rel], R[:n_rel], strict=True):
            lp = lp + mech.logpdf(r[g][None, :], tabs).sum(axis=-1)
        w = np.exp(lp - lp.max())
        out.append((tabs, w / w.sum()))
    return out


def _kernels(n_rel):
    kernels = [m.compiled_kernel() for m in MECHS[:n_rel]]
    codes = check_kernel_codes([k[0] for k in kernels])
    a = np.array([k[1] for k in kernels], dtype=np.float64)
    b = np.array([k[2] for k in kernels], dtype=np.float64)
    return codes, a, b


def _chain(seed, n_iter, width, n_rel=2, sweep=dm_rows_sweep_streams):
    codes, a, b = _kernels(n_rel)
    size = 2 * K
    idx = np.stack([np.arange(size), np.arange(size) + size][:n_rel]).astype(np.int64)
    assert _direct(idx) == (n_rel == 1)  # one release cell by cell: the moves skip idx
    r = np.concatenate([x.reshape(-1) for x in R[:n_rel]]).astype(np.float64)
    c = np.array([N[0], 0, 0, 0, N[1], 0], dtype=np.int64)
    s = entry_values(c, idx, n_rel * size)
    rng = np.random.default_rng(seed)
    out = np.empty((n_iter, size), dtype=np.int64)
    for i in range(n_iter):
        sweep(row_seeds(rng, 2), c, CONC, K, codes, a, b, r, s, idx, width, 1)
        out[i] = c
    np.testing.assert_array_equal(s, entry_values(c, idx, n_rel * size))  # kept up to date
    return out


def _indicators(draws, exact):
    """(chain, draw, tables of both rows): 1 where the row is at that table."""
    cols = []
    for g, (tabs, _) in enumerate(exact):
        row = draws[..., g * K : (g + 1) * K]
        cols.append(np.all(row[..., None, :] == tabs, axis=-1).astype(float))
    return np.concatenate(cols, axis=-1)


@pytest.mark.parametrize("width, n_rel", [(1, 2), (2, 2), (2, 1)])
def test_dm_cell_moves_match_dirichlet_multinomial_logp(width, n_rel):
    """Every table's frequency (those of probability > 0.002) within 4 MCSE of its enumerated
    probability (2 chains × 30,000 sweeps); the same draws against the tables' probabilities at a concentration 3× larger
    fail (the check can fail). ``n_rel = 1``: one release, cell by cell (the moves' direct path)."""
    draws = np.stack([_chain(seed, 30_000, width, n_rel) for seed in (1, 2)])
    assert np.all(draws.reshape(2, -1, 2, K).sum(axis=-1) == N)
    exact = _exact(CONC, n_rel)
    p = np.concatenate([q for _, q in exact])
    seen = p > 2e-3  # tables expected at least ~100 times (rarer ones have no usable MCSE)
    ind = _indicators(draws, exact)[..., seen]
    assert_mc_close(ind, p[seen], label=f"DM cells, width {width}")
    wrong = np.concatenate([q for _, q in _exact(3.0 * CONC, n_rel)])
    with pytest.raises(AssertionError):
        assert_mc_close(ind, wrong[seen], label="control")


@pytest.mark.parametrize("n_rel, half", [(2, 64), (1, 64), (1, 1)])
def test_dm_record_moves_match_dirichlet_multinomial_logp(n_rel, half, monkeypatch):
    """The record moves (`cells.dm_records_sweep_streams`: a person's cell proposed from its
    Pólya-urn conditional, accepted on the releases alone) against the same enumeration: every
    table's frequency within 4 MCSE (2 chains × 30,000 sweeps of K moves per row); the control at
    a 3× concentration fails. One release, cell by cell, with integer values: the density
    ratios come from a table of |release − count| < ``half`` (`cells._ratio_table`), computed
    beyond it (``half = 1``: most moves). Checked by hand: with the proposal's Hastings ratio broken (cells
    proposed ∝ c_k^{−i} + 2·a_k, the ratio left as it is) this test fails (z down to −38)."""
    monkeypatch.setattr(cells, "_RATIO_HALF", half)
    assert cells._ratio_table(*_kernels(n_rel), R[0].astype(float), n_rel == 1).shape == (
        (2, 2 * half + 1) if n_rel == 1 else (2, 0)
    )
    draws = np.stack([_chain(seed, 30_000, 1, n_rel, dm_records_sweep_streams) for seed in (3, 4)])
    assert np.all(draws.reshape(2, -1, 2, K).sum(axis=-1) == N)
    exact = _exact(CONC, n_rel)
    p = np.concatenate([q for _, q in exact])
    seen = p > 2e-3
    ind = _indicators(draws, exact)[..., seen]
    assert_mc_close(ind, p[seen], label="DM records")
    wrong = np.concatenate([q for _, q in _exact(3.0 * CONC, n_rel)])
    with pytest.raises(AssertionError):
        assert_mc_close(ind, wrong[seen], label="control")


def test_tabulated_record_moves_draw_the_same_without_the_entries():
    """The tabulated record moves never read the released entries' values ``s``: passed empty
    (`DirichletHyper` does, saving their computation each iteration), the same draws from the
    same seeds, and the empty array is left alone; passed full, it is kept up to date."""
    codes, a, b = _kernels(1)
    idx = np.arange(2 * K, dtype=np.int64)[None, :]
    r = R[0].reshape(-1).astype(np.float64)
    prepared = cells.sweep_prepared(codes, a, b, r, idx)
    assert prepared[1].size > 0  # tabulated
    start = np.array([N[0], 0, 0, 0, N[1], 0], dtype=np.int64)
    tables = []
    for s in (entry_values(start, idx, 2 * K), np.empty(0)):
        c, rng = start.copy(), np.random.default_rng(5)
        for _ in range(50):
            seeds = row_seeds(rng, 2)
            dm_records_sweep_streams(seeds, c, CONC, K, codes, a, b, r, s, idx, 1, 2, prepared)
        if s.size:
            np.testing.assert_array_equal(s, c)
        tables.append(c)
    np.testing.assert_array_equal(tables[0], tables[1])
    assert not np.array_equal(tables[0], start)


def test_alias_table_draws_each_column_with_its_weight():
    """Walker's alias table: the probability of each column, summed over the K strips exactly
    (strip t gives t with prob[t] and alias[t] with 1 − prob[t]), equals w / Σ w, zeros included."""
    w = np.array([0.0, 3.0, 1e-9, 0.5, 2.5, 7.0, 0.25])
    prob, alias = alias_table(w)
    got = np.zeros(w.size)
    for t in range(w.size):
        got[t] += prob[t] / w.size
        got[alias[t]] += (1.0 - prob[t]) / w.size
    np.testing.assert_allclose(got, w / w.sum(), rtol=1e-12, atol=1e-15)


def _model(extra_release=None):
    g, k = 3, 4
    with pm.Model() as model:
        base = pm.Dirichlet("base", np.ones(k))
        alpha = pm.LogNormal("alpha", 1.0, 1.0)
        pi = pm.Dirichlet("pi", alpha * base, shape=(g, k))
        c = pm.Multinomial("c", n=5, p=pi, shape=(g, k))
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.ones((g, k), dtype=np.int64),
        )
        if extra_release is not None:
            pdp.DPObserved(
                "cols",
                c,
                statistic=pdp.Marginals((1,), shape=(g, k)),
                mechanism=pdp.DiscreteGaussian(sigma=2.0),
                observed=np.full(k, 4),
            )
    return model


def _assigned(model):
    from pymc.sampling.mcmc import assign_step_methods

    _, selected = assign_step_methods(model)
    return {cls.__name__: sorted(v.name for v in vs) for cls, vs in selected.items()}


def test_pm_sample_gives_the_table_to_dirichlet_hyper_only_with_cells_releases():
    """With ``pdp.Cells`` releases only, pm.sample() gives α, base, π and the table to one
    DirichletHyper; with a margin over areas released too, the table goes to TableCells."""
    assert _assigned(_model()) == {
        "DirichletHyper": ["alpha_log__", "base_simplex__", "c", "pi_simplex__"]
    }
    assert _assigned(_model(extra_release=True)) == {
        "DirichletHyper": ["alpha_log__", "base_simplex__", "pi_simplex__"],
        "TableCells": ["c"],
    }


def test_table_alone_or_with_margins_is_refused_with_the_fix():
    model = _model()
    with model, pytest.raises(ValueError, match=r"DirichletHyper\(\[alpha, base, pi, c\]\)"):
        pdp.DirichletHyper([model["c"]])
    model = _model(extra_release=True)
    with model, pytest.raises(ValueError, match="not released only cell by cell"):
        pdp.DirichletHyper([model["alpha"], model["base"], model["pi"], model["c"]])
    model = _model()
    with model, pytest.raises(ValueError, match="cells must be an integer >= 1"):
        pdp.DirichletHyper([model["alpha"], model["base"], model["pi"], model["c"]], cells=0)
    with model, pytest.raises(ValueError, match="moves must be 'pairs'.*got moves='cells'"):
        pdp.DirichletHyper([model["alpha"], model["base"], model["pi"], model["c"]], moves="cells")
    for kw in ({"rounds": 0}, {"rounds": True}, {"rounds": 1.5}, {"moves": "pairs", "rounds": 3}):
        with model, pytest.raises(ValueError, match="rounds must be an integer >= 1"):
            pdp.DirichletHyper([model["alpha"], model["base"], model["pi"], model["c"]], **kw)


@pytest.mark.parametrize("k", [6, 7])
def test_column_pairs_match_the_smaller_half_with_the_larger(k):
    """Each column pair joins a column of the half with the smaller released column totals with
    one of the other half, in an order drawn from the chain's generator (never from the state);
    with K odd one column, drawn uniformly, sits out."""
    g = 3
    rel = np.tile(np.arange(k)[::-1] * 3, (g, 1))  # column totals decrease with the index
    with pm.Model():
        base = pm.Dirichlet("base", np.ones(k))
        alpha = pm.LogNormal("alpha", 1.0, 1.0)
        pi = pm.Dirichlet("pi", alpha * base, shape=(g, k))
        c = pm.Multinomial("c", n=12, p=pi, shape=(g, k))
        pdp.DPObserved(
            "s", c, statistic=pdp.Cells(), mechanism=pdp.DiscreteGaussian(sigma=2.0), observed=rel
        )
        step = pdp.DirichletHyper([alpha, base, pi, c], rng=np.random.default_rng(1))
    assert step.columns
    seen, out = set(), set()
    for _ in range(40):
        order = step._column_order()
        assert sorted(order.tolist()) == list(range(k))
        pairs = order[: 2 * (k // 2)].reshape(-1, 2)
        sits = sorted(set(range(k)) - set(pairs.ravel().tolist()))
        rank = np.argsort(rel.sum(axis=0), kind="stable").tolist()
        low = {c for c in rank if c not in sits}
        low = set(sorted(low, key=rank.index)[: k // 2])
        assert all((a in low) != (b in low) for a, b in pairs.tolist())
        seen.update(map(tuple, pairs.tolist()))
        out.update(sits)
    assert len(seen) > k  # random pairs, not one fixed matching
    assert len(out) == (k if k % 2 else 0)


@pytest.mark.parametrize("rounds, moves", [(3, "records"), (2, "pairs")])
def test_rounds_condition_each_update_on_the_current_state(rounds, moves, monkeypatch):
    """With ``rounds``, each (base, α) update between two rounds of cell moves reads the table as
    the previous round left it (its count tails), and the next round moves the cells given the
    (α, base) that update drew: the iteration is a composition of exact conditional moves. A
    version that counted the iteration's first table, or moved the cells with the α of the
    iteration's start, fails here."""
    from pymc_dp.samplers import dirichlet_hyper as dh

    model = _model()
    with model:
        step = pdp.DirichletHyper(
            [model["alpha"], model["base"], model["pi"], model["c"]],
            cells=4,
            rounds=rounds,
            moves=moves,
            rng=np.random.default_rng(2),
        )
    log = []
    move, sweeps = dh.DirichletHyper._move_cells, dh._Hyper.sweeps

    def moved(self, table, conc, start):
        log.append(("cells", np.array(conc)))
        out = move(self, table, conc, start)
        log.append(("table", table.copy()))
        return out

    def swept(self, n, *stats):
        log.append(("stats", n, [np.array(x) for x in stats[:2]]))
        out = sweeps(self, n, *stats)
        log.append(("drawn", self.a * self.b))
        return out

    monkeypatch.setattr(dh.DirichletHyper, "_move_cells", moved)
    monkeypatch.setattr(dh._Hyper, "sweeps", swept)
    step.start_chain()
    point = model.initial_point(0)
    for _ in range(3):
        point, _ = step.step(point)
    log = log[2 * rounds :]  # the first warm-up iteration leaves (α, base) as they are
    assert [e[0] for e in log].count("cells") == 2 * rounds
    last_table, last_drawn = None, None
    for entry in log:
        if entry[0] == "table":
            last_table = entry[1]
        elif entry[0] == "drawn":
            last_drawn = entry[1]
        elif entry[0] == "stats" and entry[1] == 1:
            want = dh.count_tails(last_table.reshape(-1, 4))
            np.testing.assert_array_equal(entry[2][0], want[0])
            np.testing.assert_array_equal(entry[2][1], want[1])
        elif entry[0] == "cells" and last_drawn is not None:
            np.testing.assert_allclose(entry[1], last_drawn, rtol=1e-12)
