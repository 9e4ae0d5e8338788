"""DirichletHyper's refusals and pm.sample()'s assignment for rows π_g ~ Dirichlet(α·base), and the
initial value DPObserved gives a Multinomial table (issue 18 item 4). Exactness: the conditional
against PyMC's joint logp in ``test_conditionals_vs_logp.py``, the whole default route against
quadrature in ``tests/statistical/samplers/test_table_areas.py``."""

import numpy as np
import pymc as pm
import pytensor
import pytest
from pymc.sampling.mcmc import assign_step_methods
from pytensor.compile.mode import Mode

import pymc_dp as pdp

G, K = 3, 4


@pytest.fixture(autouse=True)
def _fast_compile():
    """Python linker, no graph rewrites: the same checks, a fraction of the build time."""
    with pytensor.config.change_flags(mode=Mode(linker="py", optimizer=None)):
        yield


MECH = pdp.DiscreteGaussian(sigma=2.0)


def _model(alpha_shape=(), base_dist="dirichlet", extra=False, n=5):
    noisy = np.ones((G, K), dtype=np.int64)
    with pm.Model() as model:
        if base_dist == "dirichlet":
            base = pm.Dirichlet("base", np.ones(K))
        else:
            base = pm.HalfNormal("base", 1.0, shape=K)
        alpha = pm.LogNormal("alpha", 1.0, 1.0, shape=alpha_shape)
        pi = pm.Dirichlet("pi", alpha * base, shape=(G, K))
        if extra:
            pm.Normal("other", alpha.sum(), 1.0, observed=0.3)
        c = pm.Multinomial("c", n=n, p=pi, shape=(G, K))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=MECH, observed=noisy)
    return model


def _assigned(model):
    _, selected = assign_step_methods(model)
    return {cls.__name__: sorted(v.name for v in vs) for cls, vs in selected.items()}


def test_pm_sample_assigns_dirichlet_hyper():
    assert _assigned(_model())["DirichletHyper"] == [
        "alpha_log__",
        "base_simplex__",
        "c",
        "pi_simplex__",
    ]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"alpha_shape": (K,)}, "must be a continuous scalar"),
        ({"base_dist": "halfnormal"}, "needs the mean"),
        ({"extra": True}, "only through one pm.Dirichlet child"),
    ],
    ids=["vector alpha", "base not Dirichlet", "another term reads alpha"],
)
def test_refusals_name_the_problem_and_leave_pm_sample_alone(kwargs, message):
    model = _model(**kwargs)
    with model, pytest.raises(ValueError, match=message):
        pdp.DirichletHyper([model["alpha"], model["base"]])
    assert "DirichletHyper" not in _assigned(model)


def test_concentration_must_be_alpha_times_base():
    with pm.Model() as model:
        base = pm.Dirichlet("base", np.ones(K))
        alpha = pm.LogNormal("alpha", 1.0, 1.0)
        pi = pm.Dirichlet("pi", alpha * base**2, shape=(G, K))
        c = pm.Multinomial("c", n=5, p=pi, shape=(G, K))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=MECH, observed=np.ones((G, K)))
        with pytest.raises(ValueError, match="is not alpha \\* base"):
            pdp.DirichletHyper([alpha, base])
    assert "DirichletHyper" not in _assigned(model)


def test_needs_alpha_and_base():
    model = _model()
    with model, pytest.raises(ValueError, match="vars=\\[alpha, base\\]"):
        pdp.DirichletHyper([model["alpha"]])


def test_multinomial_table_starts_even_where_pymc_support_point_fails():
    """Many small cells: PyMC's round(n·π) start raises; DPObserved's even table is valid."""
    k, n = 200, np.array([150, 7])
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(k), shape=(2, k))
        c = pm.Multinomial("c", n=n, p=pi, shape=(2, k))
        pdp.DPObserved(
            "s", c, statistic=pdp.Cells(), mechanism=MECH, observed=np.zeros((2, k), dtype=int)
        )
    start = model.initial_point(0)["c"]
    np.testing.assert_array_equal(start.sum(axis=1), n)
    assert start.min() >= 0 and start.max() - start.min() <= 1
    with pm.Model() as mine:  # an initial value of the user's is kept
        pi = pm.Dirichlet("pi", np.ones(3))
        c = pm.Multinomial("c", n=4, p=pi, initval=np.array([4, 0, 0]))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=MECH, observed=np.zeros(3, int))
    np.testing.assert_array_equal(mine.initial_point(0)["c"], [4, 0, 0])


def test_column_moves_only_on_a_table_released_cell_by_cell():
    """``columns``: on by default with ``Cells`` releases; off (None) or refused (True, naming the
    reason) when a margin over areas is released; a value other than None/True/False is refused."""
    model = _model()
    with model:
        assert pdp.DirichletHyper([model["alpha"], model["base"]]).columns
        assert not pdp.DirichletHyper([model["alpha"], model["base"]], columns=False).columns
        with pytest.raises(ValueError, match="columns must be None \\(auto\\), True or False"):
            pdp.DirichletHyper([model["alpha"], model["base"]], columns="yes")
    with pm.Model():
        base = pm.Dirichlet("base", np.ones(K))
        alpha = pm.LogNormal("alpha", 1.0, 1.0)
        pi = pm.Dirichlet("pi", alpha * base, shape=(G, K))
        c = pm.Multinomial("c", n=5, p=pi, shape=(G, K))
        pdp.DPObserved(
            "cols",
            c,
            statistic=pdp.Marginals((1,), shape=(G, K)),
            mechanism=MECH,
            observed=np.full(K, 4),
        )
        assert not pdp.DirichletHyper([alpha, base]).columns
        with pytest.raises(ValueError, match="not released only cell by cell"):
            pdp.DirichletHyper([alpha, base], columns=True)


def test_lgamma_ratio_is_exact_where_two_lgammas_cancel():
    """log Γ(a + n) − log Γ(a) for the α terms with π summed out: at large a the difference of two
    lgamma values is rounding noise (±1e17 at a = 1e31), which let a slice on α step out to
    α ~ 1e300 and stay there; the products of (a + i) are the exact values."""
    from pymc_dp.samplers.dirichlet_hyper import lgamma_ratio

    for a in [0.3, 2.5, 9_999.0, 1e4, 3.7e5, 1e12, 1e31, 1e300]:
        for n in [0, 1, 2, 7, 40]:
            exact = float(np.sum(np.log(a + np.arange(n)))) if n else 0.0
            assert abs(lgamma_ratio(a, float(n)) - exact) <= 1e-10 * max(1.0, abs(exact)), (a, n)
    assert abs(lgamma_ratio(12.0, 4000.0) - (_lg(4012.0) - _lg(12.0))) < 1e-9
    assert abs(lgamma_ratio(2e4, 4000.0) - (_lg(24000.0) - _lg(2e4))) < 1e-8 * _lg(24000.0)


def _lg(x):
    from scipy.special import gammaln

    return float(gammaln(x))


def test_count_tails_by_column_equals_count_tails():
    """`count_tails` of the row-major table is #{g: c_gk ≥ v} for v = 1 … max_g c_gk, column by
    column (counted here in NumPy); the tails the column moves take from their copy by column
    (serial and in threads), and those counted in row blocks (threads), equal it (random tables
    with zero columns, zero rows and one large count)."""
    from pymc_dp.samplers.dirichlet_hyper import (
        _count_tails_blocks,
        count_tails,
        count_tails_by_column,
        count_tails_by_column_threads,
    )

    rng = np.random.default_rng(3)
    for g, k in ((1, 2), (5, 7), (40, 3)):
        c = rng.poisson(rng.exponential(2.0, size=k), size=(g, k)).astype(np.int64)
        c[:, 0] = 0
        c[-1] = 0
        c[0, -1] = 37
        want = count_tails(c)
        tops = c.max(axis=0)
        np.testing.assert_array_equal(want[0], np.concatenate([[0], np.cumsum(tops)]))
        direct = [(c[:, j, None] >= np.arange(1, tops[j] + 1)).sum(axis=0) for j in range(k)]
        np.testing.assert_array_equal(want[1], np.concatenate(direct).astype(float))
        cols = np.ascontiguousarray(c.T).reshape(-1)
        for by_column in (count_tails_by_column, count_tails_by_column_threads):
            got = by_column(cols, g, k)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
        for blocks in range(1, g + 1):  # the threads' twin, rows in any number of blocks
            got = _count_tails_blocks(c, blocks)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])


def _kernel_arrays(mech):
    """The column moves' noise kernels (codes, a, b) of one release under ``mech``."""
    code, ka, kb = mech.compiled_kernel()
    return np.array([code]), np.array([ka]), np.array([kb])


@pytest.mark.parametrize("threaded", [False, True])
def test_column_moves_on_an_int32_copy_draw_the_same(threaded):
    """``column_pair_sweep(narrow=True)`` (the copy by column held as int32: what
    `DirichletHyper` passes when every row total is below 2³¹) moves the table, base and evals
    exactly as the int64 copy, and counts the same tails: on a table with counts above 2¹⁵ (a
    narrower copy would wrap them) and a zero column, serial and in threads."""
    from pymc_dp.samplers import streams
    from pymc_dp.samplers.dirichlet_hyper import (
        column_pair_sweep,
        log_factorials,
        releases_by_column,
    )

    rng = np.random.default_rng(5)
    g, k = 9, 6
    c = rng.poisson(3.0, size=(g, k)).astype(np.int64)
    c[:, 2] = 0
    c[0, 1], c[3, 4] = 40_000, 70_000
    noisy = c + np.rint(rng.normal(0.0, 2.0, size=c.shape))
    kernel = _kernel_arrays(pdp.DiscreteGaussian(sigma=2.0))
    r_cols = releases_by_column(noisy.reshape(1, -1), k)
    logs = log_factorials(int(c.sum(axis=1).max()))
    order = rng.permutation(k).astype(np.int64)
    beta, b0 = np.full(k, 1.3), rng.dirichlet(np.ones(k))
    seeds = rng.integers(0, 2**63, size=k // 2, dtype=np.uint64)
    out = []
    streams.use_threads(threaded)
    try:
        for narrow in (False, True):
            table, b = c.reshape(-1).copy(), b0.copy()
            res = column_pair_sweep(
                seeds, table, k, b, 4.0, beta, *kernel, r_cols, logs, order, True, True, narrow
            )
            out.append((table, b, res))
    finally:
        streams.use_threads(None)
    (t64, b64, (n64, o64, tails64)), (t32, b32, (n32, o32, tails32)) = out
    assert t32.dtype == np.int64 and not np.array_equal(t64, c.reshape(-1))  # the table moved
    np.testing.assert_array_equal(t32, t64)
    np.testing.assert_array_equal(b32, b64)
    assert n32 == n64
    np.testing.assert_array_equal(o32, o64)
    np.testing.assert_array_equal(tails32, tails64)


@pytest.mark.parametrize("alpha", [3.0, 0.3])
def test_base_pair_move_keeps_its_target(alpha):
    """The base pair move given the table (`pair_sweep_marginal`: y = b_0 / (b_0 + b_1) by slice
    sampling, shrinkage from the whole segment) against quadrature of p(y | table) ∝
    y^(β_0 − 1) (1 − y)^(β_1 − 1) Π_g Γ(αy + c_g0)Γ(α(1 − y) + c_g1)/(Γ(αy)Γ(α(1 − y))) in NumPy:
    y's mean and the probabilities of its first three quartile bins within 4 MCSE over 2 chains ×
    4,000 moves, with a strong (α = 3) and a weak (α = 0.3) concentration; the control (the
    target of a table with one more person in each row's first cell) fails. No test read this
    move alone before. Checked by hand: with the two priors' β swapped in the move it fails; so
    did a version slicing in a transformed coordinate without its Jacobian."""
    from scipy.special import gammaln

    from pymc_dp.samplers.dirichlet_hyper import count_tails, pair_sweep_marginal
    from tests.support.mc import assert_mc_close

    rng = np.random.default_rng(4)
    table = rng.poisson([1.5, 0.4], size=(30, 2)).astype(np.int64)
    beta = np.array([1.2, 0.8])
    ys = (np.arange(4000) + 0.5) / 4000

    def law(c):
        a0, a1 = alpha * ys[:, None], alpha * (1.0 - ys[:, None])
        lf = (beta[0] - 1.0) * np.log(ys) + (beta[1] - 1.0) * np.log1p(-ys)
        lf += (gammaln(a0 + c[:, 0]) - gammaln(a0) + gammaln(a1 + c[:, 1]) - gammaln(a1)).sum(1)
        w = np.exp(lf - lf.max())
        return w / w.sum()

    w = law(table)
    cuts = ys[np.searchsorted(np.cumsum(w), [0.25, 0.5, 0.75])]
    edges = list(zip([-np.inf, *cuts[:2]], cuts))

    def expected(q):
        return np.array([(q * ys).sum(), *[q[(ys >= lo) & (ys < hi)].sum() for lo, hi in edges]])

    offsets, tails = count_tails(table)
    order = np.array([0, 1], dtype=np.int64)
    runs = []
    for seed in (1, 2):
        gen, b = np.random.default_rng(seed), np.array([0.5, 0.5])
        y = np.empty(4000)
        for i in range(y.size):
            seeds = gen.integers(0, 2**63, size=1, dtype=np.uint64)
            pair_sweep_marginal(seeds, b, alpha, offsets, tails, beta, order)
            y[i] = b[0] / (b[0] + b[1])
        runs.append(y[100:])
    y = np.stack(runs)
    draws = np.stack([y, *[(y >= lo) & (y < hi) for lo, hi in edges]], axis=-1).astype(float)
    assert_mc_close(draws, expected(w), label="base pair move")
    with pytest.raises(AssertionError):
        assert_mc_close(draws, expected(law(table + [1, 0])), label="control")


def _column_chain(seed, n_moves, c, alpha, beta, kernel, r_cols, logs):
    """(x = b_0 / (b_0 + b_1), column 0's total) after each of ``n_moves`` column moves of the
    pair (0, 1) of a two-column table (`column_pair_sweep`, rows grouped by key), from b = (0.5,
    0.5)."""
    from pymc_dp.samplers.dirichlet_hyper import column_pair_sweep

    rng = np.random.default_rng(seed)
    c, b = c.copy(), np.array([0.5, 0.5])
    order = np.array([0, 1], dtype=np.int64)
    out = np.empty((n_moves, 2))
    for i in range(n_moves):
        seeds = rng.integers(0, 2**63, size=1, dtype=np.uint64)
        column_pair_sweep(seeds, c, 2, b, alpha, beta, *kernel, r_cols, logs, order, True)
        out[i] = b[0] / (b[0] + b[1]), c[0::2].sum()
    return out


def test_column_move_with_grouped_rows_keeps_its_target():
    """The column move on many rows that share their key (t, r_0 − r_1 + t), so that their terms
    are summed once per group and their splits drawn from the group's weights
    (`dirichlet_hyper._column_groups`): over 2 chains × 2,500 moves, x's mean, the probabilities
    of the first three quartile bins of f and column 0's mean total within 4 MCSE, f and each
    row's split law given x by quadrature in NumPy (the Dirichlet-multinomial pair and the
    mechanism's own ``logpdf``); the control (column 0's releases one higher) fails. Checked by
    hand: f with each group counted once, or rows grouped by t alone, fail it."""
    from scipy.special import gammaln

    from pymc_dp.samplers.dirichlet_hyper import (
        _column_groups,
        keyed_releases,
        log_factorials,
        releases_by_column,
    )
    from tests.support.mc import assert_mc_close

    rng = np.random.default_rng(11)
    g, alpha, beta = 60, 6.0, np.array([1.0, 1.5])
    n = rng.integers(2, 6, size=g)
    first = rng.binomial(n, rng.beta(alpha * 0.35, alpha * 0.65, size=g))
    table = np.stack([first, n - first], axis=1)
    mech = pdp.DiscreteGaussian(sigma=1.5)
    noisy = np.clip(table + np.rint(rng.normal(0.0, 1.5, size=table.shape)), -1, 4)
    kernel = _kernel_arrays(mech)
    r_cols = releases_by_column(noisy.reshape(1, -1), 2)
    assert keyed_releases(kernel[0], kernel[1], r_cols)
    logs = log_factorials(int(n.max()))
    cols = np.ascontiguousarray(table.T).reshape(-1).astype(np.int64)
    scratch = [np.empty(g, dtype=np.int64) for _ in range(5)]
    groups = _column_groups(cols, 1, g, 0, 1, r_cols, True, *scratch)
    assert groups <= g - 20  # rows do share their keys here (32 groups of 60 rows)

    flat = table.reshape(-1).astype(np.int64)
    xs = (np.arange(2000) + 0.5) / 2000

    def moments(rel):  # f on the grid and (E[x], E[column 0's total]) under the releases rel
        """Here in NumPy, with the mechanism's own ``logpdf``: row g's split v of its total t
        given x has weight Γ(a_0 + v)Γ(a_1 + t − v)/(v!(t − v)!) η(r_g0 − v)η(r_g1 − (t − v))
        (a_0 = αx, a_1 = α(1 − x): the Dirichlet-multinomial pair), and f(x) ∝ x^(β_0 − 1)
        (1 − x)^(β_1 − 1) Π_g Σ_v weight / (Γ(a_0)Γ(a_1))."""
        aj, ak = alpha * xs[:, None], alpha * (1.0 - xs[:, None])
        lf = (beta[0] - 1.0) * np.log(xs) + (beta[1] - 1.0) * np.log1p(-xs)
        total = np.zeros_like(xs)
        for i in range(g):
            t = n[i]
            v = np.arange(t + 1)
            lw = (
                gammaln(aj + v)
                + gammaln(ak + t - v)
                - gammaln(v + 1)
                - gammaln(t - v + 1)
                + mech.logpdf(rel[i, 0], v)
                + mech.logpdf(rel[i, 1], t - v)
            )
            top = lw.max(axis=1, keepdims=True)
            p = np.exp(lw - top)
            lf += top[:, 0] + np.log(p.sum(axis=1)) - gammaln(aj[:, 0]) - gammaln(ak[:, 0])
            total += (p * v).sum(axis=1) / p.sum(axis=1)
        w = np.exp(lf - lf.max())
        w /= w.sum()
        return w, np.array([(w * xs).sum(), (w * total).sum()])

    w, mean_moments = moments(noisy)
    cuts = xs[np.searchsorted(np.cumsum(w), [0.25, 0.5, 0.75])]
    edges = list(zip([-np.inf, *cuts[:2]], cuts))

    def expected(q, mm):
        return np.array([mm[0], *[q[(xs >= lo) & (xs < hi)].sum() for lo, hi in edges], mm[1]])

    runs = np.stack(
        [_column_chain(s, 2500, flat, alpha, beta, kernel, r_cols, logs)[200:] for s in (1, 2)]
    )
    x = runs[..., 0]
    draws = np.stack([x, *[(x >= lo) & (x < hi) for lo, hi in edges], runs[..., 1]], axis=-1)
    assert_mc_close(draws.astype(float), expected(w, mean_moments), label="column move")
    wrong_w, wrong_mm = moments(noisy + [1.0, 0.0])
    with pytest.raises(AssertionError):
        assert_mc_close(draws.astype(float), expected(wrong_w, wrong_mm), label="control")


def test_column_log_f_with_groups_of_one_total_out_of_float_range():
    """`column_pair_log_f` (the column move's f) against f in log space by NumPy, on rows of one
    pair total t = 700 whose groups (`_column_groups`, ordered by total and size:
    `_sort_groups`) need both paths of `_column_log_f`: the group released (700, 0) has its sum
    at x = 0.05 near 0.05⁷⁰⁰, out of float range (its log-space fallback), the next group of the
    same total does not, and reads its split weights (`_split_weights`) after the fallback used
    their array as scratch. Also rows of other totals, some zero. Checked by hand: with the split
    weights computed once for all totals it fails."""
    from scipy.special import gammaln, logsumexp

    from pymc_dp.samplers.dirichlet_hyper import (
        column_pair_log_f,
        keyed_releases,
        log_factorials,
        releases_by_column,
    )

    mech = pdp.DiscreteGaussian(sigma=1.5)
    # rows: (c_0, c_1) and their releases; the first row alone in its group, the next two share one
    table = np.array([[700, 0], [35, 665], [35, 665], [3, 4], [0, 0], [1, 0]], dtype=np.int64)
    noisy = np.array([[700, 0], [35, 665], [35, 665], [2, 5], [1, -1], [0, 2]], dtype=np.float64)
    kernel = _kernel_arrays(mech)
    r_cols = releases_by_column(noisy.reshape(1, -1), 2)
    assert keyed_releases(kernel[0], kernel[1], r_cols)
    logs = log_factorials(int(table.sum(axis=1).max()))
    alpha, b, beta = 2.0e4, np.array([0.5, 0.5]), np.array([1.2, 0.8])
    xs = np.array([0.5, 0.05, 0.3, 0.95])
    got = column_pair_log_f(
        table.reshape(-1), 2, 0, 1, alpha, b, beta, *kernel, r_cols, logs, xs, True
    )

    def reference(x):
        aj, ak = alpha * x, alpha * (1.0 - x)
        out = (beta[0] - 1.0) * np.log(x) + (beta[1] - 1.0) * np.log1p(-x)
        for (c0, c1), (r0, r1) in zip(table, noisy):
            t = c0 + c1
            v = np.arange(t + 1)
            out += logsumexp(
                gammaln(aj + v)
                - gammaln(aj)
                + gammaln(ak + t - v)
                - gammaln(ak)
                - gammaln(v + 1)
                - gammaln(t - v + 1)
                + mech.logpdf(r0, v)
                + mech.logpdf(r1, t - v)
            )
        return out

    ref = np.array([reference(x) for x in xs])
    np.testing.assert_allclose(got[1:] - got[0], ref[1:] - ref[0], rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("top", [12, 100_000])
def test_sort_groups_orders_by_total_and_keeps_each_rows_group(top):
    """`_sort_groups` (by counting, and by merge sort when the largest total dwarfs the number of
    groups): the groups ordered by (t, min(rows, 8)), stable, each row still in a group of its own
    total and members (the same rows together), rows without a group left out."""
    from pymc_dp.samplers.dirichlet_hyper import _RUNS, _sort_groups

    rng = np.random.default_rng(top)
    n_rows, n_groups = 60, 25
    gid = rng.integers(-1, n_groups, size=n_rows)
    gid[:n_groups] = np.arange(n_groups)  # every group has a row
    gt = np.zeros(n_rows, dtype=np.int64)
    gt[:n_groups] = rng.integers(1, top, size=n_groups)
    gt[3] = gt[7] = gt[11]  # ties in t
    gcnt = np.zeros(n_rows, dtype=np.int64)
    gcnt[:n_groups] = np.bincount(gid[gid >= 0], minlength=n_groups)
    grep = np.zeros(n_rows, dtype=np.int64)
    grep[:n_groups] = np.arange(n_groups)
    before = {g: (gt[u], frozenset(np.flatnonzero(gid == u))) for g, u in enumerate(gid) if u >= 0}
    key = gt[:n_groups] * (_RUNS + 1) + np.minimum(gcnt[:n_groups], _RUNS)
    want = np.argsort(key, kind="stable")
    new_gid = gid.copy()
    _sort_groups(n_groups, gt, grep, gcnt, new_gid)
    np.testing.assert_array_equal(grep[:n_groups], want)  # grep[u] = u before: the old labels
    np.testing.assert_array_equal(new_gid < 0, gid < 0)
    for g, u in enumerate(new_gid):
        if u >= 0:
            members = frozenset(np.flatnonzero(new_gid == u))
            assert (gt[u], members) == before[g] and gcnt[u] == len(members)
