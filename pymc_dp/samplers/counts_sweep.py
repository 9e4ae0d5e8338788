r"""Record-wise data augmentation for categorical records released as noisy counts, O(1) per record.

Seed 003, Algorithm 1 (`pymc_dp.samplers.augmentation`) for records $x_i \in \{0, \dots,
K-1\}$ released only through ``Counts`` histograms $c_k = \#\{i : x_i = k\}$ (one or several
``DPObserved`` nodes, each with its own mechanism). The target is the same,
$p(\theta, x \mid s) \propto p(\theta) \prod_i f(x_i \mid \theta) \prod_m \prod_k
\eta_m(s_{mk} \mid c_k)$, and so is the move: propose $x_i^* \sim f(\cdot \mid \theta)$, accept
with probability $\min(1, \prod_m \eta_m(s_m \mid c^*) / \eta_m(s_m \mid c))$. Moving record
$i$ from cell $j$ to cell $k \ne j$ changes only $c_j \to c_j - 1$ and
$c_k \to c_k + 1$, so the ratio reads four noise densities per node:

$$\log\alpha_i = \sum_m \big[\ell_m(s_{mj} - c_j + 1) - \ell_m(s_{mj} - c_j) + \ell_m(s_{mk} - c_k - 1) - \ell_m(s_{mk} - c_k)\big],$$

with $\ell_m$ the log noise density of node $m$ (``kernel_logpdf``); $k = j$ is
always accepted (nothing changes). The generic sweep carries the one-hot contributions, an
$(n, K)$ array, and reads all $K$ coordinates per record; this one carries the count
vector ($O(K)$ memory, $O(1)$ per record), with the same accept rule
``log α + E ≥ 0``, $E$ standard exponential (drawn only when $\log\alpha < 0$). A category outside a node's ``0..n_categories-1``
is counted in no cell of that node (as the ``Counts`` graph does).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from pymc_dp.mechanisms.base import check_kernel_codes, kernel_logpdf
from pymc_dp.samplers.fast_draws import CATEGORICAL, categorical_table, guided_draw
from pymc_dp.statistics.additive import Counts

__all__ = ["CountsSweep", "counts_sweep", "categorical_counts_sweep", "CountsInfo"]


class CountsInfo(NamedTuple):
    """Accepted record moves and the smallest acceptance probability of one sweep."""

    n_accepted: int
    min_accept_prob: float


@numba.njit(cache=True, inline="always")
def _cell(codes, a, b, kcat, r, cell, count, delta):
    """Σ_m [ℓ_m(r_m[cell] - count - delta) - ℓ_m(r_m[cell] - count)] over nodes counting ``cell``."""
    out = 0.0
    for m in range(codes.shape[0]):
        if 0 <= cell < kcat[m]:
            z = r[m, cell] - count
            out += kernel_logpdf(codes[m], a[m], b[m], z - delta) - kernel_logpdf(
                codes[m], a[m], b[m], z
            )
    return out


@numba.njit(cache=True, inline="always")
def _one(code, a, b, kc, r, j, k, cj, ck):
    """log α of moving a record from cell ``j`` (count ``cj``) to ``k ≠ j`` (count ``ck``), one node."""
    lr = 0.0
    if 0 <= j < kc:
        z = r[j] - cj
        lr += kernel_logpdf(code, a, b, z + 1.0) - kernel_logpdf(code, a, b, z)
    if 0 <= k < kc:
        z = r[k] - ck
        lr += kernel_logpdf(code, a, b, z - 1.0) - kernel_logpdf(code, a, b, z)
    return lr


@numba.njit(cache=True)
def _sweep_one(rng, x, prop, cum, guide, counts, offset, code, a, b, kc, r):
    """The sweep for a single node (the hot case; scalars in registers). ``prop`` empty: proposals
    drawn from ``cum``/``guide``. The log-uniform is ``-E``, E standard exponential, drawn only
    when ``log α < 0``."""
    n_acc, min_lr = 0, 0.0
    drawn = prop.shape[0] == 0
    for i in range(x.shape[0]):
        if drawn:
            k = guided_draw(cum, guide, rng.random())
        else:
            k = prop[i]
        j = x[i]
        if j == k:
            n_acc += 1
            continue
        cj, ck = counts[j - offset], counts[k - offset]
        lr = _one(code, a, b, kc, r, j, k, cj, ck)
        if lr != lr:
            lr = -np.inf
        if lr < min_lr:
            min_lr = lr
        if lr >= 0.0 or lr + rng.standard_exponential() >= 0.0:
            n_acc += 1
            x[i] = k
            counts[j - offset] = cj - 1
            counts[k - offset] = ck + 1
    return n_acc, min_lr


@numba.njit(cache=True)
def _sweep(rng, x, prop, cum, guide, counts, offset, codes, a, b, kcat, r):
    """`_sweep_one` for several nodes."""
    if codes.shape[0] == 1:
        return _sweep_one(
            rng,
            x,
            prop,
            cum,
            guide,
            counts,
            offset,
            codes[0],
            a[0],
            b[0],
            kcat[0],
            np.ascontiguousarray(r[0]),
        )
    n_acc, min_lr = 0, 0.0
    drawn = prop.shape[0] == 0
    for i in range(x.shape[0]):
        if drawn:
            k = guided_draw(cum, guide, rng.random())
        else:
            k = prop[i]
        j = x[i]
        if j == k:
            n_acc += 1
            continue
        cj, ck = counts[j - offset], counts[k - offset]
        lr = _cell(codes, a, b, kcat, r, j, cj, -1.0) + _cell(codes, a, b, kcat, r, k, ck, 1.0)
        if lr != lr:
            lr = -np.inf
        if lr < min_lr:
            min_lr = lr
        if lr >= 0.0 or lr + rng.standard_exponential() >= 0.0:
            n_acc += 1
            x[i] = k
            counts[j - offset] = cj - 1
            counts[k - offset] = ck + 1
    return n_acc, min_lr


@numba.njit(cache=True)
def _count(x, offset, size):
    counts = np.zeros(size, dtype=np.int64)
    for i in range(x.shape[0]):
        counts[x[i] - offset] += 1
    return counts


@numba.njit(cache=True)
def counts_sweep(rng, x, prop, counts, offset, codes, a, b, kcat, r):
    """One pass of Algorithm 1 over categorical records, in place; returns ``(n_acc, min log α)``.

    ``x``/``prop`` (n,) int64 current and proposed categories; ``counts`` (C,) int64 counts of
    ``x - offset`` (every category of ``x`` and ``prop`` in ``offset..offset+C-1``); per node m:
    kernel ``codes[m]``, ``a[m]``, ``b[m]``, ``kcat[m]`` cells and its release ``r[m, :kcat[m]]``.
    Accept iff ``log α_i ≥ -E_i`` (a NaN ratio rejects). ``x`` and ``counts`` follow the moves.
    """
    return _sweep(
        rng, x, prop, np.ones(1), np.zeros(1, dtype=np.int64), counts, offset, codes, a, b, kcat, r
    )


@numba.njit(cache=True)
def categorical_counts_sweep(rng, x, cum, guide, counts, codes, a, b, kcat, r):
    """`counts_sweep` with the proposals drawn in the loop from one shared categorical
    (cumulative sums ``cum`` and guide table of `pymc_dp.samplers.fast_draws.categorical_table`),
    categories ``0..K-1``: one uniform, O(1) expected comparisons and at most one exponential per
    record."""
    return _sweep(rng, x, np.zeros(0, dtype=np.int64), cum, guide, counts, 0, codes, a, b, kcat, r)


class CountsSweep:
    """The count-vector sweep for one record block, or ``None`` from `build` if not eligible.

    Eligible: one integer record variable with one category per record (1-d), feeding only
    ``Counts`` releases (no local release, no other statistic). Categorical records whose
    probabilities are shared by all records (``p`` of shape ``(K,)``) and drawn by the fast route
    get their proposals inside the sweep (`categorical_counts_sweep`); others take one joint
    proposal from the block (`counts_sweep`).
    """

    @classmethod
    def build(cls, block):
        if len(block.record_rvs) != 1 or block.local_nodes:
            return None
        rv = block.record_rvs[0]
        if rv.ndim != 1 or not rv.dtype.startswith(("int", "uint")):
            return None
        if not all(type(node.statistic) is Counts for node in block.additive_nodes):
            return None
        return cls(block)

    def __init__(self, block):
        nodes = block.additive_nodes
        self.block = block
        self.kcat = np.array([node.statistic.n_categories for node in nodes], dtype=np.int64)
        kernels = [node.mechanism.compiled_kernel() for node in nodes]
        self.codes = check_kernel_codes([k[0] for k in kernels])
        self.a = np.array([k[1] for k in kernels], dtype=np.float64)
        self.b = np.array([k[2] for k in kernels], dtype=np.float64)
        fast = block._fast
        self.shared_categorical = fast is not None and fast.families[0][0] == CATEGORICAL

    def releases(self, flat):
        """The flat additive releases (``RecordBlock.releases()[0]``) as a padded (M, max K) array."""
        r = np.zeros((self.kcat.size, int(self.kcat.max())))
        start = 0
        for m, k in enumerate(self.kcat):
            r[m, :k] = flat[start : start + k]
            start += k
        return r

    def _shared_p(self, point):
        """The categorical probabilities if one row is shared by all records, else None."""
        if not self.shared_categorical:
            return None
        ((p,),) = self.block._fast.params(point)
        if p.ndim == 1 or p.size == p.shape[-1]:
            return np.ascontiguousarray(p.reshape(-1))
        return None

    def draws_in_sweep(self, point) -> bool:
        """Whether the proposals at ``point`` are drawn inside the sweep (one shared categorical)."""
        return self._shared_p(point) is not None

    def kernel(self, rng, point, r):
        """One sweep from ``point``: ``(x_new, CountsInfo)`` (the point is not modified)."""
        name = self.block.value_names[0]
        x = np.array(point[name], dtype=np.int64, copy=True).reshape(-1)
        p = self._shared_p(point)
        if p is not None:
            cum, guide = np.empty(p.size), np.empty(p.size, dtype=np.int64)
            if not categorical_table(p, cum, guide):
                raise ValueError(
                    f"The conditional prior of the records {name!r} has invalid parameters at this "
                    "point (needs p >= 0, finite, with a positive sum); cannot propose records."
                )
            size = max(p.size, int(self.kcat.max()))
            if x.size and (x.min() < 0 or x.max() >= p.size):
                raise ValueError(
                    f"The records {name!r} hold categories outside 0..{p.size - 1} at this point; "
                    "start them inside the support of their Categorical."
                )
            counts = _count(x, 0, size)
            n_acc, min_lr = categorical_counts_sweep(
                rng, x, cum, guide, counts, self.codes, self.a, self.b, self.kcat, r
            )
        else:
            (prop,) = self.block.propose(point, reuse=True)
            prop = np.asarray(prop, dtype=np.int64).reshape(-1)
            lo = min(int(x.min()), int(prop.min()), 0) if x.size else 0
            hi = max(int(x.max()), int(prop.max()), int(self.kcat.max()) - 1) if x.size else 0
            counts = _count(x, lo, hi - lo + 1)
            n_acc, min_lr = counts_sweep(
                rng, x, prop, counts, lo, self.codes, self.a, self.b, self.kcat, r
            )
        return x, CountsInfo(int(n_acc), float(np.exp(min_lr)))
