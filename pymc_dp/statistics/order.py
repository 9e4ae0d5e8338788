r"""Order statistics of clamped records: ``Median`` and ``Max`` (seed 001, §5.4).

Both release one rank of the sorted, clamped per-record values
:math:`s_i = \mathrm{clip}(\mathrm{fn}(x_i), \mathrm{lower}, \mathrm{upper})`. They are *not*
record-additive (``record_additive = False``, ``local = False``): the value depends on all records at
once, so :class:`pymc_dp.DataAugmentation` refuses them; use :class:`pymc_dp.MHAAR` (z-space).

Their global sensitivity is the whole range ``upper - lower``, which is why they are released with
:class:`pymc_dp.SmoothLaplace`, whose noise is scaled by the β-smooth sensitivity (Nissim,
Raskhodnikova and Smith 2007). For the rank-``m`` order statistic of the values shifted to
:math:`[0, \Lambda]`, :math:`\Lambda = \mathrm{upper} - \mathrm{lower}`, sorted
:math:`s_{(1)} \le \dots \le s_{(n)}` and padded with :math:`s_{(i)} = 0` for :math:`i < 1`,
:math:`s_{(i)} = \Lambda` for :math:`i > n`,

.. math:: S^*_\beta(x) = \max_{k=0,\dots,n} e^{-k\beta}
          \max_{t=0,\dots,k+1} \big(s_{(m+t)} - s_{(m+t-k-1)}\big),

which gives seed 001's median formula for :math:`m = \lceil n/2 \rceil` and its maximum formula
:math:`b_k = \max\{\Lambda - s_{(n-k)},\, s_{(n)} - s_{(n-k-1)}\}` for :math:`m = n`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pymc_dp._checks import check_bounds
from pymc_dp.statistics.additive import Statistic, _apply_fn, _n_records

__all__ = ["Median", "Max", "order_smooth_sensitivity"]


def _index_tables(n: int, m: int):
    """Index matrices ``(hi, lo)`` of shape ``(n+1, n+2)`` into the padded sorted values."""
    k = np.arange(n + 1)[:, None]
    t = np.arange(n + 2)[None, :]
    pad = n + 2
    hi = m + t - 1 + pad  # 1-indexed rank m+t -> position in the padded array
    lo = m + t - k - 2 + pad
    masked = t > k + 1
    lo = np.where(masked, hi, lo)  # difference 0 where t > k+1 (b_k >= 0 anyway)
    return hi.astype(np.int64), lo.astype(np.int64)


def order_smooth_sensitivity(values, m: int, width: float, beta: float, xp=np):
    r"""β-smooth sensitivity of the rank-``m`` order statistic (module docstring formula).

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
        return _order_smooth_sensitivity_np(np.asarray(values, dtype=float), m, width, beta)
    n = _static_len(values)
    hi, lo = _index_tables(n, m)
    dtype = "float64"
    zeros = xp.zeros(n + 2, dtype=dtype)
    tops = xp.zeros(n + 2, dtype=dtype) + width
    padded = xp.concatenate([zeros, xp.cast(xp.sort(values), dtype), tops])
    b = (padded[hi] - padded[lo]).max(axis=1)
    return (b * np.exp(-beta * np.arange(n + 1))).max()


def _order_smooth_sensitivity_np(values, m, width, beta, max_entries=2_000_000):
    """NumPy form of :func:`order_smooth_sensitivity`, batched over leading rows in memory-bounded
    blocks (each block indexes ``(rows, n+1, n+2)`` entries)."""
    batch = values.reshape(-1, values.shape[-1])
    B, n = batch.shape
    hi, lo = _index_tables(n, m)
    decay = np.exp(-beta * np.arange(n + 1))
    out = np.empty(B)
    step = max(1, max_entries // ((n + 1) * (n + 2)))
    for a in range(0, B, step):
        blk = np.sort(batch[a : a + step], axis=1)
        pad = np.concatenate(
            [np.zeros((len(blk), n + 2)), blk, np.full((len(blk), n + 2), float(width))], axis=1
        )
        b = (pad[:, hi] - pad[:, lo]).max(axis=2)
        out[a : a + step] = (b * decay).max(axis=1)
    return out.reshape(values.shape[:-1]) if values.ndim > 1 else out[0]


def _static_len(values):
    n = values.type.shape[0]
    if n is None:
        raise ValueError(
            "Median/Max need a fixed number of records to compute the smooth sensitivity. Give "
            "the record variable an explicit shape=(n,)."
        )
    return int(n)


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
        self.lower, self.upper = check_bounds(lower, upper, owner=name)
        if fn is not None and not callable(fn):
            raise TypeError(f"fn must be callable on PyTensor tensors, got fn={fn!r}.")
        self.fn = fn

    def params(self):
        return {"lower": self.lower, "upper": self.upper, "fn": self.fn}

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
