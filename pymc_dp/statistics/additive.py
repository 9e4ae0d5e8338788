"""Record-additive statistics: ``S(x) = c · Σᵢ t(xᵢ)`` (seed 003, Assumption 2).

Each statistic maps the records (PyTensor tensors with the record axis first) to per-record
contributions ``t(xᵢ)`` of shape ``(n, *shape)``; the statistic is ``factor(n)`` times their sum
(``Local``: the contributions themselves, one release per record). Sensitivities are for
replace-one neighbours and come from declared bounds: a record moves each of the ``dim`` entries of
its contribution by at most ``upper - lower``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from pymc_dp._checks import check_bounds, check_positive

__all__ = ["Statistic", "Sum", "Mean", "Counts", "RecordSum", "Local"]


class Statistic:
    """Base class of statistics. Subclasses implement :meth:`contributions`."""

    record_additive = True
    local = False

    def contributions(self, *data):
        """Per-record contributions ``t(xᵢ)``, shape ``(n, *shape)`` (PyTensor)."""
        raise NotImplementedError

    def factor(self, n: int) -> float:
        """``c`` in ``S = c Σ t(xᵢ)``."""
        return 1.0

    def __call__(self, *data):
        """The statistic as a PyTensor graph of the records."""
        t = self.contributions(*data)
        if self.local:
            return t
        total = t.sum(axis=0)
        c = self.factor(_n_records(data))
        return total if c == 1.0 else total * c

    def evaluate(self, *data):
        """The statistic of NumPy records (for ``release``)."""
        import pytensor.tensor as pt

        tensors = [pt.as_tensor_variable(np.asarray(d)) for d in data]
        return np.asarray(self(*tensors).eval())

    def sensitivity(self, norm: int, *, n: int, dim: int) -> float | None:
        """L``norm`` sensitivity for ``n`` records and ``dim`` entries per contribution."""
        return None

    def _check_data(self, data):
        if len(data) == 0:
            raise TypeError(f"{self!r} needs the records, got none.")


def _n_records(data):
    n = data[0].shape[0]
    try:
        return int(n) if not hasattr(n, "eval") else int(n.eval())
    except Exception as err:  # pragma: no cover - symbolic record count
        raise ValueError(
            "The number of records (axis 0 of the data) must be fixed, got a symbolic length. "
            "Give the record RV an explicit shape=(n, ...)."
        ) from err


def _apply_fn(fn, data, owner):
    if fn is not None:
        return fn(*data)
    if len(data) != 1:
        raise TypeError(
            f"{owner} got {len(data)} record arrays and no fn to combine them. "
            f"Pass fn=lambda *records: ... returning one value per record."
        )
    return data[0]


class _Bounded(Statistic):
    def __init__(self, lower=None, upper=None, fn: Callable | None = None):
        self.lower, self.upper = check_bounds(lower, upper, owner=type(self).__name__)
        if fn is not None and not callable(fn):
            raise TypeError(f"fn must be callable on PyTensor tensors, got fn={fn!r}.")
        self.fn = fn

    def contributions(self, *data):
        import pytensor.tensor as pt

        self._check_data(data)
        t = pt.as_tensor_variable(_apply_fn(self.fn, data, type(self).__name__))
        if self.lower is not None:
            t = pt.clip(t, self.lower, self.upper)
        return t

    def _range_sensitivity(self, norm, dim):
        if self.lower is None:
            return None
        width = self.upper - self.lower
        return dim * width if norm == 1 else math.sqrt(dim) * width

    def __repr__(self):
        fn = "" if self.fn is None else ", fn=..."
        return f"{type(self).__name__}(lower={self.lower!r}, upper={self.upper!r}{fn})"


class Sum(_Bounded):
    """``Σᵢ clip(fn(xᵢ), lower, upper)``; L1 sensitivity ``dim (upper - lower)``."""

    def sensitivity(self, norm, *, n, dim):
        return self._range_sensitivity(norm, dim)


class Mean(_Bounded):
    """``(1/n) Σᵢ clip(fn(xᵢ), lower, upper)``; L1 sensitivity ``dim (upper - lower) / n``."""

    def factor(self, n):
        return 1.0 / n

    def sensitivity(self, norm, *, n, dim):
        s = self._range_sensitivity(norm, dim)
        return None if s is None else s / n


class Local(_Bounded):
    """One release per record: ``clip(fn(xᵢ), lower, upper)`` for each ``i`` (local DP).

    Its sensitivity is that of one record's value (the neighbouring input is the record itself).
    """

    local = True

    def sensitivity(self, norm, *, n, dim):
        return self._range_sensitivity(norm, dim)


class Counts(Statistic):
    """Histogram of integer categories ``0..n_categories-1``: ``Σᵢ onehot(xᵢ)``.

    Replace-one sensitivity: L1 = 2, L2 = √2.
    """

    def __init__(self, n_categories: int):
        if not (isinstance(n_categories, (int, np.integer)) and n_categories >= 2):
            raise ValueError(
                f"n_categories must be an integer >= 2, got n_categories={n_categories!r}. "
                "Give the number of categories the records take."
            )
        self.n_categories = int(n_categories)

    def contributions(self, *data):
        import pytensor.tensor as pt

        self._check_data(data)
        if len(data) != 1:
            raise TypeError(f"Counts takes one categorical record array, got {len(data)}.")
        x = pt.as_tensor_variable(data[0])
        if not (x.dtype.startswith("int") or x.dtype.startswith("uint") or x.dtype == "bool"):
            raise TypeError(
                f"Counts needs integer category codes 0..{self.n_categories - 1}, got records of "
                f"dtype {x.dtype}. Use a Categorical/Bernoulli record variable, or cast the data "
                "with .astype(int)."
            )
        if x.ndim != 1:
            raise ValueError(
                f"Counts needs one category per record (a 1-d record array), got ndim={x.ndim}. "
                "Release each column separately."
            )
        return pt.cast(pt.eq(x[:, None], pt.arange(self.n_categories)[None, :]), "int64")

    def sensitivity(self, norm, *, n, dim):
        return 2.0 if norm == 1 else math.sqrt(2.0)

    def __repr__(self):
        return f"Counts(n_categories={self.n_categories})"


class RecordSum(Statistic):
    """``Σᵢ fn(xᵢ)`` for any per-record function with a declared sensitivity.

    Parameters
    ----------
    fn : callable
        PyTensor function of the record arrays returning shape ``(n, *shape)``. Clamp inside it.
    sensitivity : float or dict
        A float bounds both the L1 and L2 sensitivity; ``{1: l1, 2: l2}`` gives each.
    """

    def __init__(self, fn: Callable, sensitivity):
        if not callable(fn):
            raise TypeError(f"RecordSum needs a callable fn, got fn={fn!r}.")
        self.fn = fn
        if isinstance(sensitivity, dict):
            self._sens = {int(k): check_positive(v, name=f"sensitivity[{k}]") for k, v in sensitivity.items()}
        else:
            s = check_positive(
                sensitivity, name="sensitivity",
                fix="Give how far one replaced record can move the statistic (its L1 norm).",
            )
            self._sens = {1: s, 2: s}

    def contributions(self, *data):
        import pytensor.tensor as pt

        self._check_data(data)
        return pt.as_tensor_variable(self.fn(*data))

    def sensitivity(self, norm, *, n, dim):
        return self._sens.get(norm)

    def __repr__(self):
        return f"RecordSum(fn=..., sensitivity={self._sens})"
