r"""Latent count tables released by ``pdp.Cells`` / ``pdp.Marginals``: O(cells) sweeps, independent of N.

Target: $p(c \mid \theta, s) \propto p(c \mid \theta) \prod_m \prod_e \eta_m(s_{me} \mid (A_m c)_e)$
for a table $c$ (any shape, e.g. (G, K) for G areas) and releases $m$ of $A_m c$: the cells
themselves (``Cells``, $A_m = I$) or a margin (``Marginals``: each cell counts in exactly one entry
$e = i_m(k)$ of the margin). The current value of every released entry is kept up to date, so a
move of a cell costs O(number of releases touching it), whatever N and however many cells a margin
sums. The table is

* **independent cells**, $c_k \sim \mathrm{Poisson}(\lambda_k)$,
  $\mathrm{NegativeBinomial}(n_k, p_k)$ (total unknown) or $\mathrm{Binomial}(n_k, p_k)$ (out of
  a known $n_k$ per cell): each cell in turn gets ``reps``
  Metropolis moves $c_k^* = c_k + d$, $d$ uniform on $\{-w, \dots, -1, 1, \dots, w\}$ (symmetric;
  $c_k^* < 0$ and, for the Binomial, $c_k^* > n_k$ rejected), accepted with probability
  $\min\big(1, \frac{p(c_k^*)}{p(c_k)} \prod_m \frac{\eta_m(s_{m i_m(k)} \mid S_m + d)}
  {\eta_m(s_{m i_m(k)} \mid S_m)}\big)$ where $S_m$ is the current value of that entry
  (Poisson: $p(c^*)/p(c) = \lambda^d c!/c^*!$; NegativeBinomial:
  $\frac{\Gamma(c^* + n)\, c!}{\Gamma(c + n)\, c^*!} (1 - p)^d$; Binomial:
  $\big(\frac{p}{1 - p}\big)^d \frac{c!\, (n - c)!}{c^*!\, (n - c^*)!}$);
* **a multinomial table**, each row (last axis) $c_g \sim \mathrm{Multinomial}(N_g, \pi_g)$ (row
  totals public): ``reps``·K pairwise moves per row, each moving $d$ people (uniform on $1..w$)
  from a cell $j$ to a cell $k \ne j$ of the same row (both uniform): the proposal is symmetric,
  the row total stays $N_g$, and the ratio is

  $$\Big(\frac{\pi_k}{\pi_j}\Big)^d \frac{c_j!\, c_k!}{(c_j - d)!\, (c_k + d)!} \prod_m \frac{\eta_m(s_{m i_m(j)} \mid S - d)\, \eta_m(s_{m i_m(k)} \mid S' + d)} {\eta_m(s_{m i_m(j)} \mid S)\, \eta_m(s_{m i_m(k)} \mid S')}$$

  (a release whose entry counts both cells, $i_m(j) = i_m(k)$, does not change);
* **Dirichlet-multinomial rows** (π summed out, `DirichletHyper` and `DirichletCells`): the same
  pair moves with the Pólya-urn ratio (`dm_rows_sweep_streams`), or record moves
  (`dm_records_sweep_streams`): one person's cell proposed from its Pólya-urn conditional,
  accepted on the releases' ratio alone.

Every move is an exact Metropolis–Hastings step (accept iff $\log\alpha \ge -E$, E standard
exponential); a sweep costs $O(\text{cells} \cdot \text{reps} \cdot \text{releases})$ whatever N,
in one numba loop over all areas (no Python loop). The step width w defaults to the noise sd of the
releases (rounded, at least 1). θ (π, λ) is left to PyMC's samplers or ``ConjugateTheta``.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numba
import numpy as np
import pytensor.tensor as pt
from pymc.distributions.transforms import SimplexTransform
from pymc.logprob.utils import replace_rvs_by_values
from pymc.pytensorf import compile as pm_compile
from pymc.step_methods import STEP_METHODS
from pymc.step_methods.compound import Competence
from pytensor.tensor.random import basic as rb

from pymc_dp.distributions.graph import (
    direct_children,
    direct_upstream,
    fixed_shape,
    other_readers,
    value_reader,
)
from pymc_dp.distributions.registry import dp_nodes, model_of
from pymc_dp.mechanisms.base import check_kernel_codes, kernel_logpdf
from pymc_dp.samplers.base import DPStep
from pymc_dp.samplers.streams import (
    exponential,
    index_pair,
    row_seeds,
    seed_states,
    threads,
    uniform,
)

__all__ = [
    "TableCells",
    "independent_cells_sweep",
    "entry_values",
    "table_competence",
]

POISSON_TABLE, MULTINOMIAL_TABLE, NEGBIN_TABLE, BINOMIAL_TABLE = 0, 1, 2, 3


class CellsInfo(NamedTuple):
    """Accepted moves and moves proposed in one sweep."""

    n_accepted: int
    n_proposed: int


@numba.njit(cache=True, inline="always")
def _shift(codes, a, b, r, s, idx, k, d):
    """Σ_m ℓ_m(r_e − (S_e + d)) − ℓ_m(r_e − S_e), e = idx[m, k]: cell k moved by d."""
    out = 0.0
    for m in range(codes.shape[0]):
        e = idx[m, k]
        out += kernel_logpdf(codes[m], a[m], b[m], r[e] - (s[e] + d)) - kernel_logpdf(
            codes[m], a[m], b[m], r[e] - s[e]
        )
    return out


def log_table(top: int) -> np.ndarray:
    """``log i`` for i = 0 … ``top`` (``log 0 = −inf``, never read by the moves)."""
    with np.errstate(divide="ignore"):
        return np.log(np.arange(top + 1, dtype=np.float64))


@numba.njit(cache=True)
def simplex_logits(y):
    """``log π`` up to a constant per row, from PyMC's simplex values ``y`` (rows × (K − 1)):
    ``y`` with ``−Σ y`` appended (PyMC's value is ``log π[:-1] − mean(log π)``), flattened."""
    n_rows, k1 = y.shape
    out = np.empty(n_rows * (k1 + 1))
    for row in range(n_rows):
        tot = 0.0
        base = row * (k1 + 1)
        for j in range(k1):
            out[base + j] = y[row, j]
            tot += y[row, j]
        out[base + k1] = -tot
    return out


@numba.njit(cache=True)
def entry_values(c, idx, size):
    """The released entries' current values: ``S[e] = Σ_{k: idx[m, k] = e} c_k`` (float64)."""
    s = np.zeros(size)
    for m in range(idx.shape[0]):
        for k in range(c.shape[0]):
            s[idx[m, k]] += c[k]
    return s


@numba.njit(cache=True)
def independent_cells_sweep(rng, c, kind, p1, p2, codes, a, b, r, s, idx, width, reps):
    """``reps`` symmetric ±1..±``width`` Metropolis moves per independent cell, in place.

    ``kind``: Poisson (``p1`` = log λ), NegativeBinomial (``p1`` = n, ``p2`` = log(1 − p)) or
    Binomial (``p1`` = log(p / (1 − p)), ``p2`` = n: a move outside 0..n is rejected); ``s`` (the
    released entries' current values) is kept up to date (module doc).
    """
    n_acc = 0
    for k in range(c.shape[0]):
        for _ in range(reps):
            d = 1 + int(rng.random() * width)
            if rng.random() < 0.5:
                d = -d
            old = float(c[k])
            new = old + d
            if new < 0:
                continue
            if kind == NEGBIN_TABLE:
                lr = math.lgamma(new + p1[k]) - math.lgamma(old + p1[k]) + d * p2[k]
            elif kind == BINOMIAL_TABLE:
                if new > p2[k]:
                    continue
                lr = d * p1[k] + math.lgamma(p2[k] - old + 1.0) - math.lgamma(p2[k] - new + 1.0)
            else:
                lr = d * p1[k]
            lr += math.lgamma(old + 1.0) - math.lgamma(new + 1.0)
            lr += _shift(codes, a, b, r, s, idx, k, float(d))
            if lr == lr and (lr >= 0.0 or lr + rng.standard_exponential() >= 0.0):
                c[k] += d
                for m in range(idx.shape[0]):
                    s[idx[m, k]] += d
                n_acc += 1
    return n_acc


@numba.njit(cache=True)
def _multinomial_prior(args, jc, kc, j, k, cj, ck, d):
    """Log ratio of a multinomial row (cell log-probabilities ``log_p[0]`` per cell of the table,
    ``logs[v] = log v!``) when d people move from cell j (count cj) to cell k (count ck)."""
    log_p, logs = args
    lr = d * (log_p[0, k] - log_p[0, j])
    for i in range(d):  # log c_j!/(c_j − d)! − log (c_k + d)!/c_k!
        lr += logs[cj - i] - logs[ck + d - i]
    return lr


@numba.njit(cache=True)
def _dm_prior(args, jc, kc, j, k, cj, ck, d):
    """The same for a Dirichlet-multinomial(N_g, a) row (π summed out, a = ``conc``):
    ``Π_{i<d} (c_k + i + a_k)/(c_k + i + 1) · Π_{i=1..d} (c_j − i + 1)/(c_j − i + a_j)``
    (the multinomial coefficient included; ``lk`` from `dm_log_steps`)."""
    lk, conc = args
    lr = 0.0
    for i in range(d):
        lr += _dm_step(lk, conc, kc, ck + i) - _dm_step(lk, conc, jc, cj - 1 - i)
    return lr


@numba.njit(cache=True)
def _direct(idx):
    """Whether there is one release and its entry of cell k is k (a table released once, cell by
    cell): the row moves then skip ``idx``."""
    if idx.shape[0] != 1:
        return False
    for k in range(idx.shape[1]):
        if idx[0, k] != k:
            return False
    return True


_MULTINOMIAL, _DIRICHLET_MULTINOMIAL = 0, 1  # _row_moves: the row's law


@numba.njit(cache=True)
def _row_moves(
    law, prior_args, states, row, c, n_cols, codes, a, b, r, s, idx, width, reps, direct
):
    """``reps``·K moves of d people between two cells of row ``row`` under the row's law
    (``law``: `_multinomial_prior` or `_dm_prior` of ``prior_args``, a 2-d and a 1-d array) and the
    releases, from that row's stream (`streams`); a function of its own (not inlined), so that the
    parallel loop over rows has one exit. The law is a code, not a function passed in: a numba
    function passed as an argument makes the sweeps uncacheable (compiled again, about 5 s, in
    every process). ``direct``: one release whose entry e of cell k is k (`_direct`): the entries
    are read without ``idx``."""
    n_acc = 0
    base = row * n_cols
    for _ in range(reps * n_cols):
        jc, kc = index_pair(states, row, n_cols)
        j, k = base + jc, base + kc
        if c[j] == 0:  # rejected whatever d: d not drawn
            continue
        d = 1 + int(uniform(states, row) * width) if width > 1 else 1
        if c[j] < d:
            continue
        if law == _MULTINOMIAL:
            lr = _multinomial_prior(prior_args, jc, kc, j, k, c[j], c[k], d)
        else:
            lr = _dm_prior(prior_args, jc, kc, j, k, c[j], c[k], d)
        if direct:
            lr += (
                kernel_logpdf(codes[0], a[0], b[0], r[j] - (s[j] - d))
                - kernel_logpdf(codes[0], a[0], b[0], r[j] - s[j])
                + kernel_logpdf(codes[0], a[0], b[0], r[k] - (s[k] + d))
                - kernel_logpdf(codes[0], a[0], b[0], r[k] - s[k])
            )
        for m in range(0 if direct else idx.shape[0]):
            ej, ek = idx[m, j], idx[m, k]
            if ej != ek:
                lr += (
                    kernel_logpdf(codes[m], a[m], b[m], r[ej] - (s[ej] - d))
                    - kernel_logpdf(codes[m], a[m], b[m], r[ej] - s[ej])
                    + kernel_logpdf(codes[m], a[m], b[m], r[ek] - (s[ek] + d))
                    - kernel_logpdf(codes[m], a[m], b[m], r[ek] - s[ek])
                )
        if lr == lr and (lr >= 0.0 or lr + exponential(states, row) >= 0.0):
            c[j] -= d
            c[k] += d
            if direct:
                s[j] -= d
                s[k] += d
            for m in range(0 if direct else idx.shape[0]):
                s[idx[m, j]] -= d
                s[idx[m, k]] += d
            n_acc += 1
    return n_acc


@numba.njit(cache=True, parallel=True)
def _rows_threads(law, prior_args, states, c, n_cols, codes, a, b, r, s, idx, width, reps, direct):
    n_rows = c.shape[0] // n_cols
    acc = np.zeros(n_rows, dtype=np.int64)
    for row in numba.prange(n_rows):
        acc[row] = _row_moves(
            law, prior_args, states, row, c, n_cols, codes, a, b, r, s, idx, width, reps, direct
        )
    return acc.sum()


@numba.njit(cache=True)
def _rows_serial(law, prior_args, states, c, n_cols, codes, a, b, r, s, idx, width, reps, direct):
    acc = 0
    for row in range(c.shape[0] // n_cols):
        acc += _row_moves(
            law, prior_args, states, row, c, n_cols, codes, a, b, r, s, idx, width, reps, direct
        )
    return acc


def multinomial_rows_sweep_streams(
    seeds, c, log_p, n_cols, codes, a, b, r, s, idx, width, reps, logs, disjoint=True
):
    """``reps``·K pairwise moves of 1..``width`` people between two cells of each multinomial row
    (rows of ``n_cols`` cells, flattened into ``c``; cell log-probabilities ``log_p``; ``logs[i] =
    log i!`` up to the largest row total plus ``width``, `log_table`), in place, ``s`` kept up to
    date (module doc). Row g draws from stream ``seeds[g]`` (`streams`). ``disjoint``: every
    released entry counts cells of one row (`rows_disjoint`), so the rows may run in numba threads
    (`streams.use_threads`; the same seeds give the same table either way); otherwise (a margin
    across rows) the rows run one after the other."""
    if n_cols < 2:
        return 0
    states = seed_states(seeds)
    sweep = _rows_threads if threads() and disjoint else _rows_serial
    prior_args = (np.ascontiguousarray(log_p, dtype=np.float64).reshape(1, -1), logs)
    direct = _direct(idx)
    return int(
        sweep(
            _MULTINOMIAL,
            prior_args,
            states,
            c,
            n_cols,
            codes,
            a,
            b,
            r,
            s,
            idx,
            width,
            reps,
            direct,
        )
    )


_DM_LOOKUP = 32  # dm_rows_sweep_streams: log((v + a_k)/(v + 1)) tabulated for v < this


@numba.njit(cache=True)
def dm_log_steps(conc, n_cols, top):
    """``L[k, v] = log((v + a_k) / (v + 1))`` for v = 0 … top − 1 (``conc`` the K concentrations
    a_k): the log of the Dirichlet-multinomial ratio of one person entering cell k at count v."""
    out = np.empty((n_cols, top))
    for k in range(n_cols):
        for v in range(top):
            out[k, v] = math.log((v + conc[k]) / (v + 1.0))
    return out


@numba.njit(cache=True, inline="always")
def _dm_step(lk, conc, col, v):
    """``log((v + a) / (v + 1))`` of column ``col`` at count v (tabulated or computed)."""
    if v < lk.shape[1]:
        return lk[col, v]
    return math.log((v + conc[col]) / (v + 1.0))


def dm_rows_sweep_streams(
    seeds, c, conc, n_cols, codes, a, b, r, s, idx, width, reps, prepared=None
):
    """``reps``·K pair moves per row of a table whose rows are Dirichlet-multinomial(N_g, ``conc``)
    (π summed out; `_dm_prior`), in place, row g from stream ``seeds[g]``, rows in numba
    threads if `streams.use_threads` (the same draws either way). ``s`` (the released entries'
    current values) is kept up to date; only for releases whose entries count cells of one row
    (`rows_disjoint`). ``prepared``: `sweep_prepared` of these releases, computed once by a
    caller that sweeps them many times. Returns the number of accepted moves."""
    if n_cols < 2:
        return 0
    conc = np.ascontiguousarray(conc, dtype=np.float64)
    lk = dm_log_steps(conc, n_cols, _DM_LOOKUP)
    states = seed_states(seeds)
    sweep = _rows_threads if threads() else _rows_serial
    direct = _direct(idx) if prepared is None else prepared[0]
    args = (states, c, n_cols, codes, a, b, r, s, idx, width, reps, direct)
    return int(sweep(_DIRICHLET_MULTINOMIAL, (lk, conc), *args))


@numba.njit(cache=True)
def alias_table(w):
    """Walker's alias table of the weights ``w`` (Vose's construction, O(K)): a draw is column
    ``t = ⌊K·U⌋`` if ``K·U − t < prob[t]``, else ``alias[t]``."""
    n = w.shape[0]
    prob = np.empty(n)
    alias = np.arange(n)
    tot = 0.0
    for k in range(n):
        tot += w[k]
    small = np.empty(n, dtype=np.int64)
    large = np.empty(n, dtype=np.int64)
    ns = nl = 0
    for k in range(n):
        prob[k] = w[k] * n / tot
        if prob[k] < 1.0:
            small[ns] = k
            ns += 1
        else:
            large[nl] = k
            nl += 1
    while ns > 0 and nl > 0:
        ns -= 1
        lo = small[ns]
        hi = large[nl - 1]
        alias[lo] = hi
        prob[hi] = (prob[hi] + prob[lo]) - 1.0
        if prob[hi] < 1.0:
            nl -= 1
            small[ns] = hi
            ns += 1
    for t in range(nl):  # rounding leftovers: exactly 1
        prob[large[t]] = 1.0
    for t in range(ns):
        prob[small[t]] = 1.0
    return prob, alias


@numba.njit(cache=True, inline="always")
def _urn_cell(persons, i, w, others, last, per_a, prob, alias):
    """Person i's proposed cell from ``w`` = U·(N − 1 + A): another person's cell, probability
    c_k^{−i} / (N − 1 + A) (w < N − 1: person ⌊w⌋, skipping i), or a cell of the concentration,
    a_k / (N − 1 + A) (the alias table at (w − (N − 1))·K/A). Both candidates are computed and
    one kept (no branch to mispredict)."""
    n_cols = prob.shape[0]
    o = min(int(w), last)
    o += 1 if o >= i else 0
    from_others = np.int64(persons[o])
    t = max(w - others, 0.0) * per_a
    col = min(int(t), n_cols - 1)
    from_conc = col if t - col < prob[col] else alias[col]
    return from_others if w < others else from_conc


@numba.njit(cache=True, inline="always")
def _row_persons(c, base, n_cols, n):
    """A record per person of the row at ``base`` (``n`` people): their cells, sorted, in the first
    ``n`` slots of an array of n + 4 (slot n is read, never used, when N = 1). Each cell's first
    four slots are written whatever its count (the next cells overwrite the surplus): a loop over
    the count runs only for counts above four, so the build rarely mispredicts a branch (twice as
    fast at N_g = 4,000, K = 2,016, with counts of about 2)."""
    persons = np.empty(n + 4, dtype=np.int32)
    p = 0
    for k in range(n_cols):
        ck = c[base + k]
        kk = np.int32(k)
        persons[p] = kk
        persons[p + 1] = kk
        persons[p + 2] = kk
        persons[p + 3] = kk
        for t in range(4, ck):
            persons[p + t] = kk
        p += ck
    return persons


@numba.njit(cache=True)
def _record_moves(
    states, row, c, n_cols, prob, alias, big_a, codes, a, b, r, s, n_moves, direct, idx, tab
):
    """``n_moves`` record moves of row ``row`` (π summed out; `dm_records_sweep_streams`), from
    that row's stream."""
    base = row * n_cols
    n = 0
    for k in range(n_cols):
        n += c[base + k]
    if n == 0:
        return 0
    if tab.shape[1] > 0:
        return _record_moves_tabulated(
            states, row, c, n, n_cols, prob, alias, big_a, codes, a, b, r, s, n_moves, tab
        )
    persons = _row_persons(c, base, n_cols, n)
    others = float(n - 1)
    scale = others + big_a
    per_a = n_cols / big_a
    last = max(n - 2, 0)  # o ≤ N − 2 before it skips i
    n_acc = 0
    for _ in range(n_moves):
        i = int(uniform(states, row) * n)
        jc = np.int64(persons[i])
        kc = _urn_cell(persons, i, uniform(states, row) * scale, others, last, per_a, prob, alias)
        if kc == jc:
            continue
        j, k = base + jc, base + kc
        if direct:
            lr = (
                kernel_logpdf(codes[0], a[0], b[0], r[j] - (s[j] - 1.0))
                - kernel_logpdf(codes[0], a[0], b[0], r[j] - s[j])
                + kernel_logpdf(codes[0], a[0], b[0], r[k] - (s[k] + 1.0))
                - kernel_logpdf(codes[0], a[0], b[0], r[k] - s[k])
            )
        else:
            lr = 0.0
            for m in range(idx.shape[0]):
                ej, ek = idx[m, j], idx[m, k]
                if ej != ek:
                    lr += (
                        kernel_logpdf(codes[m], a[m], b[m], r[ej] - (s[ej] - 1.0))
                        - kernel_logpdf(codes[m], a[m], b[m], r[ej] - s[ej])
                        + kernel_logpdf(codes[m], a[m], b[m], r[ek] - (s[ek] + 1.0))
                        - kernel_logpdf(codes[m], a[m], b[m], r[ek] - s[ek])
                    )
        if lr == lr and (lr >= 0.0 or lr + exponential(states, row) >= 0.0):
            c[j] -= 1
            c[k] += 1
            persons[i] = kc
            if direct:
                s[j] -= 1.0
                s[k] += 1.0
            else:
                for m in range(idx.shape[0]):
                    s[idx[m, j]] -= 1.0
                    s[idx[m, k]] += 1.0
            n_acc += 1
    return n_acc


@numba.njit(cache=True)
def _record_moves_tabulated(
    states, row, c, n, n_cols, prob, alias, big_a, codes, a, b, r, s, n_moves, tab
):
    """`_record_moves` for one integer release read cell by cell (``tab`` its density ratios,
    `_ratio_table`; ``n`` the row's people): the same moves and draws, on the row's own copies of what a move reads — the
    release minus the count ``d`` (one integer per cell, instead of the release and the entry's
    value) and the stream's state — written back at the end. About 1.5× faster per move (the
    loads of one integer instead of two floats, no store of the shared state array per draw)."""
    base = row * n_cols
    d = np.empty(n_cols, dtype=np.int64)
    for k in range(n_cols):
        d[k] = np.int64(r[base + k]) - c[base + k]
    persons = _row_persons(c, base, n_cols, n)
    st = states[row : row + 1].copy()
    span = tab.shape[1]
    half = span // 2
    others = float(n - 1)
    scale = others + big_a
    per_a = n_cols / big_a
    last = max(n - 2, 0)
    n_acc = 0
    for _ in range(n_moves):
        i = int(uniform(st, 0) * n)
        jc = np.int64(persons[i])
        kc = _urn_cell(persons, i, uniform(st, 0) * scale, others, last, per_a, prob, alias)
        if kc == jc:
            continue
        dj = d[jc] + half
        dk = d[kc] + half
        if 0 <= dj < span and 0 <= dk < span:
            ratio = tab[0, dj] * tab[1, dk]
        else:  # |release − count| ≥ H: the densities (δ an integer, exact as a float)
            xj, xk = float(d[jc]), float(d[kc])
            ratio = math.exp(
                kernel_logpdf(codes[0], a[0], b[0], xj + 1.0)
                - kernel_logpdf(codes[0], a[0], b[0], xj)
                + kernel_logpdf(codes[0], a[0], b[0], xk - 1.0)
                - kernel_logpdf(codes[0], a[0], b[0], xk)
            )
        moved = np.int64(1) if uniform(st, 0) < ratio else np.int64(0)
        d[jc] += moved
        d[kc] -= moved
        persons[i] = np.int32(kc if moved else jc)
        n_acc += moved
    states[row] = st[0]
    for k in range(n_cols):
        c[base + k] = np.int64(r[base + k]) - d[k]
    if s.shape[0] > 0:  # the entries' values, when the caller keeps them (else never read)
        for k in range(n_cols):
            s[base + k] = float(c[base + k])
    return n_acc


@numba.njit(cache=True, parallel=True)
def _records_threads(
    states, c, n_cols, prob, alias, big_a, codes, a, b, r, s, n_moves, direct, idx, tab
):
    n_rows = c.shape[0] // n_cols
    acc = np.zeros(n_rows, dtype=np.int64)
    for row in numba.prange(n_rows):
        acc[row] = _record_moves(
            states, row, c, n_cols, prob, alias, big_a, codes, a, b, r, s, n_moves, direct, idx, tab
        )
    return acc.sum()


@numba.njit(cache=True)
def _records_serial(
    states, c, n_cols, prob, alias, big_a, codes, a, b, r, s, n_moves, direct, idx, tab
):
    acc = 0
    for row in range(c.shape[0] // n_cols):
        acc += _record_moves(
            states, row, c, n_cols, prob, alias, big_a, codes, a, b, r, s, n_moves, direct, idx, tab
        )
    return acc


def sweep_prepared(codes, a, b, r, idx) -> tuple:
    """What the row sweeps read of the releases alone, O(cells) to compute: whether they are one
    release read cell by cell (`_direct`) and its density-ratio table (`_ratio_table`)."""
    direct = _direct(idx)
    return direct, _ratio_table(codes, a, b, r, direct)


def dm_records_sweep_streams(
    seeds, c, conc, n_cols, codes, a, b, r, s, idx, width, reps, prepared=None
):
    """``reps``·K record moves per row (rounded, at least one; ``reps`` may be a fraction) of a
    table whose rows are Dirichlet-multinomial(N_g, ``conc``) (π summed out), in place; the twin
    of `dm_rows_sweep_streams` with the same arguments (``width`` unused: a record move moves one
    person).

    Each row is read as N_g records (one cell per person, sorted by cell). A move picks a person i
    uniformly and proposes their cell from its prior conditional given the others, k with
    probability (c_k^{−i} + a_k)/(N_g − 1 + A) (A = Σ a_k): the cell of another person, uniform
    among the N_g − 1 others, with probability (N_g − 1)/(N_g − 1 + A), else a cell drawn from
    a_k/A (Walker's alias table, `alias_table`). The proposal is the Pólya-urn conditional, so
    the Metropolis–Hastings ratio is the releases' density ratio alone (Li et al. 2014, the
    Metropolis–Hastings–Walker sampler of LDA). The records' law given the counts is uniform over
    their arrangements and the move treats people alike (uniform i, a proposal that depends on
    the others through their counts), so the counts alone form a Markov chain leaving the
    Dirichlet-multinomial rows times the releases invariant. No move is wasted on an empty
    cell, and the Pólya-urn ratio is never computed. Row g from stream ``seeds[g]``, rows in
    numba threads if `streams.use_threads` (the same draws either way). ``prepared``: as in
    `dm_rows_sweep_streams`. ``s`` may be empty when the moves are tabulated (`sweep_prepared`
    returns a non-empty ratio table): they never read it, and then do not keep it."""
    if n_cols < 2:
        return 0
    conc = np.ascontiguousarray(conc, dtype=np.float64)
    prob, alias = alias_table(conc)
    states = seed_states(seeds)
    sweep = _records_threads if threads() else _records_serial
    direct, tab = sweep_prepared(codes, a, b, r, idx) if prepared is None else prepared
    big_a = float(conc.sum())
    n_moves = max(1, round(reps * n_cols))  # reps may be a fraction (DirichletHyper's rounds)
    args = (states, c, n_cols, prob, alias, big_a, codes, a, b, r, s, n_moves, direct)
    return int(sweep(*args, idx, tab))


_RATIO_HALF = 64  # dm_records_sweep_streams: density ratios tabulated for |release − count| < this
_EXACT = 2.0**52  # ... for integer releases below this in size (release − count exact as int64)


def integer_releases(r) -> bool:
    """Whether every release value is an integer below ``_EXACT`` in size, so that release − count
    and differences of releases are exact as int64 (the tabulated record moves, the column moves'
    groups of `dirichlet_hyper`)."""
    return bool(
        np.all(np.isfinite(r)) and np.all(r == np.rint(r)) and np.abs(r).max(initial=0.0) < _EXACT
    )


def _ratio_table(codes, a, b, r, direct):
    """For one release read cell by cell (``direct``) with integer values: ``tab[0, δ + H] =
    η(δ + 1)/η(δ)`` (a person leaves a cell whose release minus count is δ) and ``tab[1, δ + H]
    = η(δ − 1)/η(δ)`` (a person enters), δ = −H … H; an empty table otherwise (the moves then
    evaluate the densities)."""
    if not direct or not integer_releases(r):
        return np.empty((2, 0))
    return _ratios(codes[0], a[0], b[0], _RATIO_HALF)


@numba.njit(cache=True)
def _ratios(code, a, b, half):
    out = np.empty((2, 2 * half + 1))
    for t in range(2 * half + 1):
        x = float(t - half)
        here = kernel_logpdf(code, a, b, x)
        out[0, t] = math.exp(kernel_logpdf(code, a, b, x + 1.0) - here)
        out[1, t] = math.exp(kernel_logpdf(code, a, b, x - 1.0) - here)
    return out


def rows_disjoint(idx, n_cols) -> bool:
    """Whether every released entry (``idx``: release × cell → entry) counts cells of one row only,
    so that rows can move in parallel."""
    rows = np.arange(idx.shape[1]) // n_cols
    for m in range(idx.shape[0]):
        order = np.argsort(idx[m], kind="stable")
        e, g = idx[m][order], rows[order]
        same = e[1:] == e[:-1]
        if np.any(g[1:][same] != g[:-1][same]):
            return False
    return True


_KINDS = {
    rb.PoissonRV: POISSON_TABLE,
    rb.NegBinomialRV: NEGBIN_TABLE,
    rb.BinomialRV: BINOMIAL_TABLE,
}


def _table_kind(rv):
    op = type(rv.owner.op)
    if op is rb.MultinomialRV:
        return MULTINOMIAL_TABLE
    return _KINDS.get(op)


def _cells_nodes(model, rv):
    return [
        node
        for node in dp_nodes(model).values()
        if rv in node.data and getattr(node.statistic, "latent_table", False)
    ]


def _refusal(model, rv):
    """Why TableCells cannot take ``rv`` (None: it can)."""
    if rv not in model.free_RVs:
        return f"{rv.name!r} is not a free random variable of the model"
    if _table_kind(rv) is None:
        return (
            f"{rv.name!r} is a {type(rv.owner.op).__name__}; TableCells samples a pm.Poisson, "
            "pm.NegativeBinomial or pm.Binomial table, or a pm.Multinomial table (rows on the "
            "last axis)"
        )
    if fixed_shape(rv) is None:
        return (
            f"the shape of {rv.name!r} depends on a random variable ({tuple(rv.type.shape)}); "
            "give it a fixed shape=(...) or dims="
        )
    nodes = _cells_nodes(model, rv)
    if not nodes:
        return f"{rv.name!r} feeds no DPObserved node with statistic=pdp.Cells() or pdp.Marginals()"
    for node in nodes:
        try:
            node.mechanism.compiled_kernel()
        except ValueError:
            return (
                f"the release {node.rv.name!r} is made with {type(node.mechanism).__name__}, which "
                "has no compiled noise kernel for the table's moves"
            )
    readers = other_readers(model, [rv], exclude=[node.rv for node in nodes])
    if readers:
        return (
            f"{readers[0][0].name!r} depends on the table {rv.name!r}; TableCells needs the Cells "
            "releases to be the only terms that do"
        )
    return None


def _check_entries(node, local, size) -> None:
    """ValueError when the table's entries ``local`` in the release of ``node`` (every entry counts
    at least one cell) are not the ``size`` values it holds now (``pm.set_data`` can resize a table
    written with ``dims=`` or a ``pm.Data`` length, and its release, after the node was built)."""
    if local.size and (local.min() < 0 or local.max() + 1 != size):
        raise ValueError(
            f"the release {node.rv.name!r} holds {size} values but the table's cells map to "
            f"{int(local.max()) + 1} entries of it: change the table and its releases together "
            "(pm.set_data with the same coords for both)."
        )


def _width(mech) -> int:
    sd = mech.noise_sd
    return max(1, int(round(sd))) if math.isfinite(sd) else 1


def _entry_maps(model, table):
    """The table's shape (`fixed_shape`: dims and data lengths as they are now) and the cell →
    entry maps of its ``pdp.Cells`` / ``pdp.Marginals`` releases (release × cell; no rows without
    releases); None when a length depends on a random variable."""
    shape = fixed_shape(table)
    if shape is None:
        return None
    maps = [
        np.asarray(nd.statistic.entry_index(shape)).reshape(-1) for nd in _cells_nodes(model, table)
    ]
    size = int(np.prod(shape))
    return shape, (np.stack(maps) if maps else np.empty((0, size), dtype=np.int64))


def cells_only_refusal(model, table):
    """Why a step that moves the table's cells with its parent summed out (`DirichletHyper`,
    `GammaCells`) cannot take it (None: it can): every release of it must be ``pdp.Cells`` (cell
    by cell) and `TableCells` must accept it."""
    found = _entry_maps(model, table)
    if found is None:
        return _refusal(model, table)
    _, idx = found
    cells = np.arange(idx.shape[1])
    if idx.shape[0] == 0 or any(not np.array_equal(row, cells) for row in idx):
        return f"{table.name!r} is not released only cell by cell (pdp.Cells)"
    return _refusal(model, table)


def row_margins_refusal(model, table):
    """Why `DirichletCells` cannot move the table's rows with π summed out (None: it can): every
    release must be ``pdp.Cells`` or ``pdp.Marginals`` whose entries each count cells of one row
    only (`rows_disjoint`: any margin of a single table, margins within the rows of areas), and
    `TableCells` must accept the table."""
    found = _entry_maps(model, table)
    if found is None or found[1].shape[0] == 0:
        return _refusal(model, table)
    shape, idx = found
    if not rows_disjoint(idx, shape[-1]):
        return (
            f"a release of {table.name!r} sums cells of several rows (a margin across areas); "
            "the rows' moves with π summed out need every released entry within one row"
        )
    return _refusal(model, table)


def sole_table_child(model, parent, op, param: int):
    """The latent table ``c`` of distribution ``op`` whose parameter number ``param`` is ``parent``
    itself (same shape, no transform), when it is the only term that depends on ``parent``; None
    otherwise. (`multinomial_table_of`; `gamma_cells` asks it for a Poisson table.)"""
    children = direct_children(model, [parent])
    if len(children) != 1:
        return None
    c = children[0]
    if c not in model.free_RVs or not isinstance(c.owner.op, op):
        return None
    if c.owner.op.dist_params(c.owner)[param] is not parent:
        return None
    if fixed_shape(c) != fixed_shape(parent) or model.rvs_to_transforms.get(c) is not None:
        return None
    return c


def multinomial_table_of(model, pi):
    """The latent ``pm.Multinomial`` table ``c`` (p = π itself, same shape, n fixed) when it is the
    only term that depends on π; None otherwise."""
    c = sole_table_child(model, pi, rb.MultinomialRV, 1)
    if c is None:
        return None
    n = c.owner.op.dist_params(c.owner)[0]
    if any(v in model.free_RVs for v in direct_upstream(model, [n])):
        return None
    return c


def _parent_hints(model, rv, dist, reps) -> dict:
    """ConvergenceWarning advice for the free variables the table's law depends on (moved by
    other steps, e.g. NUTS on a log-linear model): the generic advice speaks of records and of
    record samplers, which a count table has not and which refuse it."""
    from pymc_dp._compat import ancestors

    above = set(ancestors(list(dist)))
    hints = {}
    for parent in model.free_RVs:
        if parent is rv or parent not in above:
            continue
        hints[model.rvs_to_values[parent].name] = (
            f"it sets the law of the count table {rv.name!r}, whose cells TableCells moves "
            f"given it, so {parent.name} moves as fast as the table does given the releases: run "
            f"more draws and tuning, give the table more moves per iteration (step=["
            f"pdp.TableCells([{rv.name}], reps={2 * reps})]), or reparameterise (non-centred)"
        )
    return hints


class TableCells(DPStep):
    """Update a latent count table released by ``pdp.Cells`` / ``pdp.Marginals`` with exact O(cells)
    sweeps.

    ``pm.sample()`` assigns it by itself to a ``pm.Poisson`` / ``pm.NegativeBinomial`` /
    ``pm.Binomial`` table or a
    ``pm.Multinomial`` table (rows on the last axis, any number of areas) that feeds
    ``DPObserved(..., statistic=pdp.Cells() or pdp.Marginals(...), ...)`` nodes and nothing else
    (module docstring for the moves). Every release of the table is read at every move.

    Parameters
    ----------
    vars : list
        The table variables: one, or several (what ``pm.sample()`` gives one step when a model
        holds several such tables), each then moved in turn by its own sweeps, as one
        ``TableCells`` per table would move it (their releases are their own: a release reads
        one table).
    reps : int
        Moves per cell per iteration (independent cells: per cell; Multinomial: ``reps``·K pair
        moves per row).
    width : int, optional
        Largest step (people moved); default: the smallest noise sd of the releases, rounded, at
        least 1.
    start_at_release : bool
        At the first warm-up iteration of each chain, start the table at the one nearest to the
        ``Cells`` releases (their mean, rounded, non-negative, with each Multinomial row's total)
        instead of PyMC's initial point (N·π at the initial π, which can be thousands of people from
        the data and takes long random walks to leave). Only the chain's starting point changes;
        with margins only, PyMC's initial point is kept.
    model : pm.Model, optional

    Sampler stats
    -------------
    ``dp_accept_rate``: fraction of proposed cell moves accepted (over every table).
    """

    name = "table_cells"
    dp_stats = {"dp_accept_rate": (float, [])}

    def __init__(
        self,
        vars,
        *,
        reps: int = 6,
        width=None,
        start_at_release=True,
        model=None,
        rng=None,
        blocked=True,
        initial_point=None,
        compile_kwargs=None,
    ):
        import pymc as pm
        from pymc.util import get_value_vars_from_user_vars

        model = pm.modelcontext(model)
        values = get_value_vars_from_user_vars(vars, model)
        #: one `TableCells` per table when there are several (stepped in turn), else empty
        self._parts = []
        if len(values) > 1:
            self._parts = [
                TableCells(
                    [v],
                    reps=reps,
                    width=width,
                    start_at_release=start_at_release,
                    model=model,
                    rng=rng,
                    compile_kwargs=compile_kwargs,
                )
                for v in values
            ]
            self.vars = list(values)
            self.reps = self._parts[0].reps
            self.parent_hints = {}
            for part in self._parts:
                self.parent_hints.update(part.parent_hints)
            self._init_step(rng)
            return
        rv = model.values_to_rvs[values[0]]
        reason = _refusal(model, rv)
        if reason is not None:
            raise ValueError(f"TableCells cannot update {rv.name!r}: {reason}.")
        if model.rvs_to_transforms.get(rv) is not None:
            raise ValueError(f"TableCells cannot update {rv.name!r}: it has a transform.")
        if not (isinstance(reps, int | np.integer) and reps >= 1):
            raise ValueError(f"reps must be an integer >= 1, got reps={reps!r}.")
        self.vars = list(values)
        self.name_ = values[0].name
        self.kind = _table_kind(rv)
        self.reps = int(reps)
        self.start_at_release = bool(start_at_release)
        self.shape = fixed_shape(rv)
        nodes = _cells_nodes(model, rv)
        kernels = [nd.mechanism.compiled_kernel() for nd in nodes]
        self.codes = check_kernel_codes([k[0] for k in kernels])
        self.a = np.array([k[1] for k in kernels], dtype=np.float64)
        self.b = np.array([k[2] for k in kernels], dtype=np.float64)
        self.width = int(width) if width is not None else min(_width(nd.mechanism) for nd in nodes)
        if self.width < 1:
            raise ValueError(f"width must be an integer >= 1, got width={width!r}.")
        # every cell's entry in every release (flat indices into the concatenated releases), at the
        # table's and releases' shapes of now (dims and pm.Data lengths follow pm.set_data)
        self._releases = value_reader(model, [nd.rv for nd in nodes])
        idx, offset, self.identity = [], 0, []
        for nd, release in zip(nodes, self._releases(), strict=True):
            local = np.asarray(nd.statistic.entry_index(self.shape), dtype=np.int64).reshape(-1)
            _check_entries(nd, local, release.size)
            self.identity.append(np.array_equal(local, np.arange(local.size)))
            idx.append(local + offset)
            offset += release.size
        self.idx = np.ascontiguousarray(np.stack(idx))
        self.n_entries = offset
        #: rows move each from its own stream (in threads: `streams.use_threads`) when no
        #: release mixes rows
        self.parallel_rows = self.kind == MULTINOMIAL_TABLE and rows_disjoint(
            self.idx, self.shape[-1]
        )
        dist = rv.owner.op.dist_params(rv.owner)
        if self.kind == MULTINOMIAL_TABLE:
            graphs = [pt.broadcast_to(dist[1], rv.shape)]
        else:
            graphs = [pt.broadcast_to(p, rv.shape) for p in dist]
        graphs = replace_rvs_by_values(
            [pt.cast(g, "float64") for g in graphs],
            rvs_to_values=model.rvs_to_values,
            rvs_to_transforms=model.rvs_to_transforms,
        )
        self._param = pm_compile(model.value_vars, graphs, on_unused_input="ignore")
        self._totals = None  # a Multinomial's n per row, for the check of a chain's start
        #: totals the releases declare public (Cells/Marginals(total=...)), per node name
        self._declared = {
            nd.rv.name: np.asarray(nd.statistic.total)
            for nd in nodes
            if getattr(nd.statistic, "total", None) is not None
        }
        if self.kind == MULTINOMIAL_TABLE:
            n_rows = replace_rvs_by_values(
                [pt.cast(pt.broadcast_to(dist[0], self.shape[:-1]), "int64").reshape((-1,))],
                rvs_to_values=model.rvs_to_values,
                rvs_to_transforms=model.rvs_to_transforms,
            )
            self._totals = pm_compile(model.value_vars, n_rows, on_unused_input="ignore")
        #: a Multinomial whose p is a simplex-transformed free RV of the table's shape: its log
        #: probabilities come from PyMC's value directly, up to a row constant (`simplex_logits`)
        p_rv = dist[1] if self.kind == MULTINOMIAL_TABLE else None
        self._logits_of = (
            model.rvs_to_values[p_rv].name
            if p_rv is not None
            and p_rv in model.free_RVs
            and isinstance(model.rvs_to_transforms.get(p_rv), SimplexTransform)
            and fixed_shape(p_rv) == self.shape
            else None
        )
        self.input_names = [v.name for v in model.value_vars]
        #: advice for the table's parents, below the steps' own `convergence_hints`
        self.parent_hints = _parent_hints(model, rv, dist, self.reps)
        self._init_step(rng)

    def reseed(self, rng) -> None:
        for part in self._parts:  # one generator, the tables' sweeps drawn from it in turn
            part.rng = rng

    def start_chain(self):
        for part in self._parts:
            part.start_chain()
        self._fresh = True
        self._r = None  # the releases, read once per chain

    def _rows_sweep(self, c, log_p, args):
        seeds = row_seeds(self.rng, c.size // self.shape[-1])
        return multinomial_rows_sweep_streams(
            seeds, c, log_p, self.shape[-1], *args, self._logs(c), self.parallel_rows
        )

    def releases(self) -> np.ndarray:
        """The released values of every node on the table, flattened and concatenated in the order
        ``idx`` indexes them (read from the model once per chain)."""
        if self._r is None:
            self._r = np.concatenate(self._releases())
        return self._r

    def sweep_args(self, s, reps=None) -> tuple:
        """The arguments the compiled sweeps take after the table and its law: kernels (codes,
        a, b), releases, the released entries' current values ``s``, the cell → entry map, the
        step width and the moves per cell (``reps``, default this step's)."""
        reps = self.reps if reps is None else reps
        return (self.codes, self.a, self.b, self.releases(), s, self.idx, self.width, reps)

    def start_table(self, c, par):
        """The table nearest to the ``Cells`` releases (their mean, rounded, ≥ 0, zero where the
        parameter ``par`` is 0; each Multinomial row's total restored by moving the largest
        remainders); ``c`` itself where no release is cell by cell."""
        r = self.releases()
        rows = [r[self.idx[m]] for m in range(len(self.identity)) if self.identity[m]]
        if not rows:  # margins only: nothing to go by cell by cell
            return c
        target = np.maximum(np.mean(rows, axis=0), 0.0)
        target[par.reshape(-1) <= 0] = 0.0
        if self.kind != MULTINOMIAL_TABLE:
            return np.rint(target).astype(np.int64)
        k = self.shape[-1]
        target, c = target.reshape(-1, k), c.reshape(-1, k)
        total, mass = c.sum(axis=1, keepdims=True), target.sum(axis=1, keepdims=True)
        scaled = np.where(mass > 0, target * total / np.where(mass > 0, mass, 1.0), 0.0)
        start = np.floor(scaled).astype(np.int64)
        rest = (total[:, 0] - start.sum(axis=1)).astype(np.int64)
        order = np.argsort(-(scaled - start), axis=1, kind="stable")
        bump = np.arange(k)[None, :] < rest[:, None]  # the `rest` largest remainders of each row
        np.put_along_axis(start, order, np.take_along_axis(start, order, 1) + bump, axis=1)
        keep = mass[:, 0] == 0  # nothing to go by in this row: keep PyMC's start
        start[keep] = c[keep]
        return start.reshape(-1)

    def check_row_totals(self, c, point) -> None:
        """At a chain's start: ValueError when the rows of a Multinomial table ``c`` do not sum to
        their n at ``point``. The moves keep each row's total, so such a chain would never reach a
        table the model allows (e.g. a start made before ``pm.set_data`` changed a ``pm.Data``
        total)."""
        if self._totals is None:
            return
        n = np.asarray(self._totals(*[point[k] for k in self.input_names])[0]).reshape(-1)
        for node, total in self._declared.items():  # n may follow pm.set_data, the release not
            declared = np.broadcast_to(total, n.shape) if total.size in (1, n.size) else None
            if declared is None or not np.array_equal(declared.reshape(-1), n):
                raise ValueError(
                    f"the release {node!r} declares the public total(s) {total.tolist()} of the "
                    f"table {self.name_!r}, but its pm.Multinomial n is now {n.tolist()} (changed "
                    "by pm.set_data after the node was built?). Give the table the n the release "
                    "was made for, or rebuild the model with the new release and its total."
                )
        got = c.reshape(-1, self.shape[-1]).sum(axis=1)
        bad = np.flatnonzero(got != n)
        if bad.size:
            g = int(bad[0])
            raise ValueError(
                f"the start of the Multinomial table {self.name_!r} has rows whose totals differ "
                f"from their n ({bad.size} of {n.size} rows; row {g}: {int(got[g])} against "
                f"n = {int(n[g])}), and the moves keep each row's total: give a start whose rows "
                f"sum to n (initvals={{{self.name_!r}: ...}}), or none."
            )

    def _logs(self, c):
        """`log_table` up to the largest row total plus the width (grown when a total is larger)."""
        top = int(c.reshape(-1, self.shape[-1]).sum(axis=1).max(initial=0)) + self.width
        if getattr(self, "_log_tab", None) is None or self._log_tab.size <= top:
            self._log_tab = log_table(top)
        return self._log_tab

    def thread_work(self) -> int:
        """The cells of its tables (`streams.auto_threads`)."""
        if self._parts:
            return sum(part.thread_work() for part in self._parts)
        return 0 if self.shape is None else int(np.prod(self.shape, dtype=np.int64))

    def step(self, point):
        if self._parts:
            return self._step_parts(point)
        c = np.array(point[self.name_], dtype=np.int64, copy=True).reshape(-1)
        if self._fresh:
            self.check_row_totals(c, point)
        fast = self._logits_of is not None
        start = self._fresh and self.tune and self.start_at_release
        pars = (
            []
            if fast and not start
            else [
                np.asarray(p, dtype=np.float64).reshape(-1)
                for p in self._param(*[point[n] for n in self.input_names])
            ]
        )
        if start:
            c = self.start_table(c, pars[-1] if self.kind != NEGBIN_TABLE else pars[0])
            if self.kind == BINOMIAL_TABLE:  # at most n per cell
                c = np.minimum(c, pars[0].astype(np.int64))
        self._fresh = False
        s = entry_values(c, self.idx, self.n_entries)
        args = self.sweep_args(s)
        with np.errstate(divide="ignore"):
            if fast:  # log π up to a row constant, which the pair moves never see
                y = np.asarray(point[self._logits_of], dtype=np.float64)
                log_p = simplex_logits(np.ascontiguousarray(y.reshape(-1, self.shape[-1] - 1)))
                n_acc = self._rows_sweep(c, log_p, args)
            elif self.kind == MULTINOMIAL_TABLE:
                p = pars[0].reshape(-1, self.shape[-1])
                log_p = np.log(p / p.sum(axis=1, keepdims=True)).reshape(-1)
                n_acc = self._rows_sweep(c, log_p, args)
            elif self.kind == POISSON_TABLE:
                n_acc = independent_cells_sweep(
                    self.rng, c, POISSON_TABLE, np.log(pars[0]), pars[0], *args
                )
            elif self.kind == BINOMIAL_TABLE:  # Binomial(n, p)
                logit = np.log(pars[1]) - np.log1p(-pars[1])
                n_acc = independent_cells_sweep(self.rng, c, BINOMIAL_TABLE, logit, pars[0], *args)
            else:  # NegativeBinomial(n, p)
                n_acc = independent_cells_sweep(
                    self.rng, c, NEGBIN_TABLE, pars[0], np.log1p(-pars[1]), *args
                )
        new = c.reshape(np.shape(point[self.name_])).astype(
            np.asarray(point[self.name_]).dtype, copy=False
        )
        rate = n_acc / (self.reps * c.size) if c.size else 0.0
        return {**point, self.name_: new}, [self.stats(dp_accept_rate=float(rate))]

    def _step_parts(self, point):
        """One iteration of each table's own step in turn; the acceptance rate over all cells."""
        accepted = cells = 0.0
        for part in self._parts:
            part.tune = self.tune
            point, (stats,) = _TABLE_STEP(part, point)
            size = float(np.prod(part.shape, dtype=np.int64))
            accepted += stats["dp_accept_rate"] * size
            cells += size
        rate = accepted / cells if cells else 0.0
        return point, [self.stats(dp_accept_rate=float(rate))]

    @staticmethod
    def competence(var, has_grad=None):
        # a Multinomial table of rows π ~ Dirichlet(α·base) released by Cells only is IDEAL for
        # DirichletHyper too (its cells move there, π summed out); DirichletHyper is registered
        # before TableCells (pymc_dp/__init__.py), so it keeps that table
        verdict = table_competence(var)
        if verdict == Competence.INCOMPATIBLE:
            _warn_unclaimed(var, has_grad)
        return verdict


_TABLE_STEP = TableCells.step.__wrapped__  # one table's iteration, without the chain's guard

_CLAIMING = set()  # tables whose other claimants are being asked (no re-entry)


def _warn_unclaimed(var, has_grad) -> None:
    """Warn when a count table released by ``pdp.Cells`` / ``pdp.Marginals`` goes to PyMC's
    default samplers: TableCells refuses it and no other registered pymc-dp step is ``IDEAL``
    for it (PyMC's Metropolis proposes counts blindly; in a Multinomial table, whose total is
    fixed, most proposals are rejected)."""
    model = model_of(var)
    if model is None or var not in model.free_RVs or not _cells_nodes(model, var):
        return
    reason = _refusal(model, var)
    if reason is None or id(var) in _CLAIMING:
        return
    _CLAIMING.add(id(var))
    try:
        others = [
            cls
            for cls in STEP_METHODS
            if cls.__module__.startswith("pymc_dp.") and cls is not TableCells
        ]
        if any(cls.competence(var, has_grad) == Competence.IDEAL for cls in others):
            return
    finally:
        _CLAIMING.discard(id(var))
    warnings.warn(
        f"pm.sample() leaves the count table {var.name!r}, released by pdp.Cells / "
        f"pdp.Marginals, to PyMC's default samplers because pdp.TableCells cannot take it: "
        f"{reason}. PyMC's Metropolis proposes counts without regard to the table's law (in a "
        "Multinomial table most proposals break the row total and are rejected): expect very "
        "slow mixing (ESS per draw of a few percent on a 3-cell table). Fix the model as the "
        "reason says, or pass step= for the table yourself.",
        UserWarning,
        stacklevel=2,
    )


def table_competence(var) -> Competence:
    """``IDEAL`` for a Poisson / NegativeBinomial / Binomial / Multinomial table that feeds ``pdp.Cells`` or
    ``pdp.Marginals`` releases only."""
    model = model_of(var)
    if model is None or var not in model.free_RVs or not _cells_nodes(model, var):
        return Competence.INCOMPATIBLE
    return Competence.IDEAL if _refusal(model, var) is None else Competence.INCOMPATIBLE
