r"""Order statistics of clamped records: ``Median`` and ``Max`` (seed 001, §5.4).

Both release one rank of the sorted, clamped per-record values
`s_i = \mathrm{clip}(\mathrm{fn}(x_i), \mathrm{lower}, \mathrm{upper})`. They are *not*
record-additive (``record_additive = False``, ``local = False``): the value depends on all records at
once, so `pymc_dp.DataAugmentation` refuses them; use `pymc_dp.MHAAR` (z-space).

Their global sensitivity is the whole range ``upper - lower``, which is why they are released with
`pymc_dp.SmoothLaplace`, whose noise is scaled by the β-smooth sensitivity (Nissim,
Raskhodnikova and Smith 2007). For the rank-``m`` order statistic of the values shifted to
`[0, \Lambda]`, `\Lambda = \mathrm{upper} - \mathrm{lower}`, sorted
`s_{(1)} \le \dots \le s_{(n)}` and padded with `s_{(i)} = 0` for `i < 1`,
`s_{(i)} = \Lambda` for `i > n`,

```text
S^*_\beta(x) = \max_{k=0,\dots,n} e^{-k\beta}
\max_{t=0,\dots,k+1} \big(s_{(m+t)} - s_{(m+t-k-1)}\big),
```

which gives seed 001's median formula for `m = \lceil n/2 \rceil` and its maximum formula
`b_k = \max\{\Lambda - s_{(n-k)},\, s_{(n)} - s_{(n-k-1)}\}` for `m = n`.
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from pymc_dp._checks import check_bounds
from pymc_dp.statistics.additive import (
    Statistic,
    _apply_fn,
    _check_bound_type,
    _check_width,
    _n_records,
)

__all__ = ["Median", "Max", "order_smooth_sensitivity", "SmoothSensitivity"]


@numba.njit(cache=True)
def _smooth_sorted(padded, m, decay):
    """``(S*, i*, j*)`` over the padded sorted values ``padded[0] = 0``, ``padded[1..n]``,
    ``padded[n+1] = Λ`` (module docstring): the max of ``(s_i - s_j) e^{-β(i-j-1)}`` over
    ``0 <= j <= m <= i <= n+1``, with the maximising pair (0, 0 when the max is 0).

    Divide and conquer on the rows ``i``: the rightmost maximising ``j`` is non-decreasing in
    ``i`` (``log(s_i - s_j)`` is a Monge array for sorted ``s``, the β-terms are linear), so each
    row is scanned only between its neighbours' maximisers: O(n log n) time, O(log n) extra memory.
    """
    n2 = padded.shape[0]  # n + 2
    best, bi, bj = 0.0, 0, 0
    # explicit stack of (row_lo, row_hi, col_lo, col_hi)
    stack = np.empty((64, 4), dtype=np.int64)
    top = 0
    stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = m, n2 - 1, 0, m
    top = 1
    while top > 0:
        top -= 1
        ilo, ihi, jlo, jhi = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
        if ilo > ihi:
            continue
        i = (ilo + ihi) // 2
        arg, val = jlo, -1.0
        for j in range(jlo, jhi + 1):
            k = i - j - 1
            v = (padded[i] - padded[j]) * decay[k] if k >= 0 else 0.0
            if v >= val:
                val, arg = v, j
        if val > best:
            best, bi, bj = val, i, arg
        if top + 2 > stack.shape[0]:  # pragma: no cover - depth is log2(n) + 1
            bigger = np.empty((2 * stack.shape[0], 4), dtype=np.int64)
            bigger[:top] = stack[:top]
            stack = bigger
        stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = ilo, i - 1, jlo, arg
        stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2], stack[top + 1, 3] = (
            i + 1,
            ihi,
            arg,
            jhi,
        )
        top += 2
    return best, bi, bj


@numba.njit(cache=True)
def _smooth_rows(sorted_rows, m, width, decay):
    """S* of each row of already sorted values (B, n)."""
    B, n = sorted_rows.shape
    out = np.empty(B)
    padded = np.empty(n + 2)
    padded[0], padded[n + 1] = 0.0, width
    for b in range(B):
        padded[1 : n + 1] = sorted_rows[b]
        out[b] = _smooth_sorted(padded, m, decay)[0]
    return out


#: ``S*_β ≥ Λ e^{-nβ} > 0`` for bounded data (the pair of padding values at distance n), but
#: ``e^{-nβ}`` underflows to 0 in float64 once ``nβ > 745``; the computed value is floored at
#: ``Λ · 2^-1022``, above every term lost to underflow. A constant is β-smooth and the maximum of
#: β-smooth bounds is β-smooth, so the floored value is still a β-smooth upper bound on the
#: local sensitivity (Nissim, Raskhodnikova and Smith 2007, Definition 2.1): never 0.
FLOOR = 2.0**-1022


def _decay(n: int, beta: float) -> np.ndarray:
    return np.exp(-beta * np.arange(n + 1))


def order_smooth_sensitivity(values, m: int, width: float, beta: float, xp=np):
    r"""β-smooth sensitivity of the rank-``m`` order statistic (module docstring formula).

    Memory is linear in ``n`` (sorted values, their padding and the decay factors ``e^{-kβ}``);
    time O(n log n) (`_smooth_sorted`). The result is at least ``width · FLOOR`` (see `FLOOR`).

    Parameters
    ----------
    values : array (n,) or, with NumPy, (B, n)
        Per-record values already shifted into ``[0, width]`` (NumPy or PyTensor); with NumPy a
        leading batch axis gives one sensitivity per row (B databases of n records).
    m : int
        1-indexed rank (``(n+1)//2`` median, ``n`` maximum).
    width : float
        ``Λ``, the length of the value range.
    beta : float
        Smoothing parameter β > 0.
    xp : module
        ``numpy`` or ``pytensor.tensor``.
    """
    if xp is np:
        values = np.asarray(values, dtype=float)
        batch = values.reshape(-1, values.shape[-1])
        n = batch.shape[1]
        out = _smooth_rows(np.sort(batch, axis=1), int(m), float(width), _decay(n, float(beta)))
        out = np.maximum(out, float(width) * FLOOR)
        return out.reshape(values.shape[:-1]) if values.ndim > 1 else out[0]
    return SmoothSensitivity(int(m), float(width), float(beta))(xp.cast(values, "float64"))


class SmoothSensitivity(Op):
    """PyTensor Op: ``values (n,) -> S*_β`` of the rank-``m`` order statistic (O(n) memory).

    Its gradient is the subgradient of the maximising pair: ``e^{-kβ}`` at the record ranked
    ``i*`` and ``-e^{-kβ}`` at the record ranked ``j*`` (padding positions carry none).
    """

    __props__ = ("m", "width", "beta")

    def __init__(self, m: int, width: float, beta: float):
        self.m, self.width, self.beta = int(m), float(width), float(beta)

    def make_node(self, values):
        import pytensor.tensor as pt

        values = pt.as_tensor_variable(values)
        return Apply(self, [values], [pt.dscalar()])

    def perform(self, node, inputs, outputs):
        (values,) = inputs
        outputs[0][0] = np.asarray(order_smooth_sensitivity(values, self.m, self.width, self.beta))

    def grad(self, inputs, output_grads):
        return [output_grads[0] * SmoothSensitivityGrad(self.m, self.width, self.beta)(inputs[0])]


def _register_numba():
    """Compile `SmoothSensitivity` natively under PyTensor's numba linker (PyMC 6's default),
    instead of running its Python ``perform`` in object mode."""
    try:
        from pytensor.link.numba.dispatch.basic import (
            register_funcify_default_op_cache_key,
        )
    except ImportError:  # PyTensor 2.x: the C linker is the default; perform is used
        return

    @register_funcify_default_op_cache_key(SmoothSensitivity)
    def _funcify(op, node, **kwargs):
        m, width, beta = op.m, op.width, op.beta
        floor = width * FLOOR

        @numba.njit
        def smooth_sensitivity(values):
            n = values.shape[0]
            padded = np.empty(n + 2)
            padded[0], padded[n + 1] = 0.0, width
            padded[1 : n + 1] = np.sort(values)
            decay = np.exp(-beta * np.arange(n + 1))
            return np.asarray(max(_smooth_sorted(padded, m, decay)[0], floor))

        return smooth_sensitivity

    @register_funcify_default_op_cache_key(SmoothSensitivityGrad)
    def _funcify_grad(op, node, **kwargs):
        m, width, beta = op.m, op.width, op.beta
        floor = width * FLOOR

        @numba.njit
        def smooth_sensitivity_grad(values):
            n = values.shape[0]
            order = np.argsort(values, kind="mergesort")
            padded = np.empty(n + 2)
            padded[0], padded[n + 1] = 0.0, width
            padded[1 : n + 1] = values[order]
            decay = np.exp(-beta * np.arange(n + 1))
            best, i, j = _smooth_sorted(padded, m, decay)
            grad = np.zeros(n)
            if i - j - 1 >= 0 and best > floor:
                if 1 <= i <= n:
                    grad[order[i - 1]] += decay[i - j - 1]
                if 1 <= j <= n:
                    grad[order[j - 1]] -= decay[i - j - 1]
            return grad

        return smooth_sensitivity_grad


class SmoothSensitivityGrad(Op):
    """Gradient of `SmoothSensitivity` with respect to the values (see there)."""

    __props__ = ("m", "width", "beta")

    def __init__(self, m: int, width: float, beta: float):
        self.m, self.width, self.beta = int(m), float(width), float(beta)

    def make_node(self, values):
        import pytensor.tensor as pt

        values = pt.as_tensor_variable(values)
        return Apply(self, [values], [pt.dvector()])

    def perform(self, node, inputs, outputs):
        values = np.asarray(inputs[0], dtype=float)
        n = values.shape[0]
        order = np.argsort(values, kind="mergesort")
        padded = np.concatenate([[0.0], values[order], [self.width]])
        decay = _decay(n, self.beta)
        best, i, j = _smooth_sorted(padded, self.m, decay)
        grad = np.zeros(n)
        if i - j - 1 >= 0 and best > self.width * FLOOR:  # the floor is a constant
            if 1 <= i <= n:
                grad[order[i - 1]] += decay[i - j - 1]
            if 1 <= j <= n:
                grad[order[j - 1]] -= decay[i - j - 1]
        outputs[0][0] = grad

    def grad(self, inputs, output_grads):
        from pytensor.gradient import grad_not_implemented

        return [grad_not_implemented(self, 0, inputs[0])]


class _Order(Statistic):
    record_additive = False
    local = False

    def __init__(self, lower, upper, fn: Callable | None = None):
        name = type(self).__name__
        if lower is None or upper is None:
            raise ValueError(
                f"{name} needs declared bounds lower and upper, got lower={lower!r}, "
                f"upper={upper!r}. Its smooth sensitivity is computed on records clamped to "
                f"[lower, upper]; declare them, e.g. pdp.{name}(lower=0, upper=10)."
            )
        _check_bound_type(lower, "lower", name)
        _check_bound_type(upper, "upper", name)
        self.lower, self.upper = check_bounds(lower, upper, owner=name)
        _check_width(self.lower, self.upper, name)
        if fn is not None and not callable(fn):
            raise TypeError(f"fn must be callable on PyTensor tensors, got fn={fn!r}.")
        self.fn = fn

    def params(self):
        return {"lower": self.lower, "upper": self.upper, "fn": self.fn}

    def magnitude_bound(self, n):
        return max(abs(self.lower), abs(self.upper))

    @property
    def width(self) -> float:
        return self.upper - self.lower

    def rank(self, n: int) -> int:
        raise NotImplementedError

    def contributions(self, *data):
        """Clamped per-record values ``clip(fn(xᵢ), lower, upper)``, shape ``(n,)`` (PyTensor)."""
        import pytensor.tensor as pt

        self._check_data(data)
        t = pt.as_tensor_variable(_apply_fn(self.fn, data, type(self).__name__))
        if t.ndim != 1:
            raise ValueError(
                f"{type(self).__name__} needs one value per record (shape (n,)), got ndim={t.ndim}. "
                "Pass fn=... mapping each record to a scalar, or release each column separately."
            )
        return pt.clip(pt.cast(t, "float64"), self.lower, self.upper)

    def __call__(self, *data):
        import pytensor.tensor as pt

        t = self.contributions(*data)
        n = _n_records(data)
        return pt.sort(t)[self.rank(n) - 1]

    def smooth_sensitivity(self, *data, beta: float):
        """β-smooth sensitivity of the statistic of the records ``data`` (PyTensor graph)."""
        import pytensor.tensor as pt

        t = self.contributions(*data) - self.lower
        n = _n_records(data)
        return order_smooth_sensitivity(t, self.rank(n), self.width, beta, xp=pt)

    def smooth_sensitivity_np(self, values, beta: float):
        """β-smooth sensitivity from already computed per-record values (NumPy): a float for
        ``values`` of shape ``(n,)``, an array of B for ``(B, n)`` (B databases)."""
        v = np.clip(np.asarray(values, dtype=float), self.lower, self.upper) - self.lower
        out = order_smooth_sensitivity(v, self.rank(v.shape[-1]), self.width, beta)
        return float(out) if v.ndim == 1 else out

    def sensitivity(self, norm, *, n, dim):
        """Global sensitivity: the whole range (why SmoothLaplace is the mechanism to use)."""
        return self.width * (dim if norm == 1 else np.sqrt(dim))

    def __repr__(self):
        fn = "" if self.fn is None else ", fn=..."
        return f"{type(self).__name__}(lower={self.lower!r}, upper={self.upper!r}{fn})"


class Median(_Order):
    """Lower median ``s_(⌈n/2⌉)`` of the clamped values ``clip(fn(xᵢ), lower, upper)``."""

    def rank(self, n):
        return (n + 1) // 2


class Max(_Order):
    """Maximum ``s_(n)`` of the clamped values ``clip(fn(xᵢ), lower, upper)``."""

    def rank(self, n):
        return n


_register_numba()
