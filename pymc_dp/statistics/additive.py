"""Record-additive statistics: ``S(x) = c · Σᵢ t(xᵢ)`` (seed 003, Assumption 2).

Each statistic maps the records (PyTensor tensors with the record axis first) to per-record
contributions ``t(xᵢ)`` of shape ``(n, *shape)``; the statistic is ``factor(n)`` times their sum
(``Local``: the contributions themselves, one release per record). Sensitivities are for
replace-one neighbours and come from declared bounds: a record moves each of the ``dim`` entries of
its contribution by at most ``upper - lower``.

Neighbouring relation (``Statistic.neighbouring``)
--------------------------------------------------
Every statistic here is calibrated for **replace-one** neighbours: ``n`` is public and one record is
replaced by any other. For ``Sum`` and ``Counts`` the add/remove-one sensitivity is different
(``Sum``: ``dim · max(|lower|, |upper|)``, which can exceed ``upper - lower``; ``Counts``: L1 = 1
instead of 2); ``Mean`` needs ``n`` public and has no add/remove sensitivity without a noisy count.
``Local`` releases one value per record; replacing a record changes only its own release.
"""

from __future__ import annotations

import math
import numbers
import weakref
from collections.abc import Callable

import numpy as np

from pymc_dp._checks import check_bounds, check_positive

__all__ = ["Statistic", "Sum", "Mean", "Counts", "RecordSum", "Local"]


class Statistic:
    """Base class of statistics. Subclasses implement `contributions`."""

    record_additive = True
    local = False
    #: the neighbouring relation its sensitivity is computed for
    neighbouring = "replace-one"

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
        """The statistic of NumPy records (for ``release``), computed in float64 for float records
        and int64 for integer records whatever their dtype (a float32 sum of many records rounds
        by more than the sensitivity)."""
        return evaluate_graph(self, *data, owner=(self, "statistic"))

    def contributions_np(self, *data):
        """Per-record contributions of NumPy records (float64 / int64), shape ``(n, *shape)``."""
        return evaluate_graph(self.contributions, *data, owner=(self, "contributions"))

    def magnitude_bound(self, n: int) -> float | None:
        """A public bound on ``|S(x)|`` for ``n`` records (from the declared bounds), or None."""
        return None

    def contributions_are_integers(self, *data) -> bool:
        """Whether every record's contribution is an integer (integer mechanisms need it)."""
        t = np.asarray(self.contributions_np(*data), dtype=float)
        return bool(np.all(t == np.rint(t)))

    def sensitivity(self, norm: int, *, n: int, dim: int) -> float | None:
        """L``norm`` sensitivity for ``n`` records and ``dim`` entries per contribution."""
        return None

    def entries_changed(self, dim: int) -> int:
        """The most entries of the release one neighbour changes (its L0 sensitivity): a record
        changes its whole contribution, ``dim`` entries. Mechanisms whose privacy loss does not
        add up over entries like an L1 norm (``Staircase``) need 1."""
        return dim

    def _check_data(self, data):
        if len(data) == 0:
            raise TypeError(f"{self!r} needs the records, got none.")

    def params(self) -> dict:
        """What defines the statistic (compared by ``DPObserved`` against a ``Release``)."""
        return {}

    def check_records(self, *data):
        """Refuse NumPy records outside the statistic's domain (``release`` calls it)."""

    def check_record_wise(self, *data):
        """Refuse a user ``fn`` whose contribution of one record reads other records.

        Every sensitivity here assumes that replacing one record changes its own contribution
        only. A function such as ``x / x.max()`` or ``x - x.mean()`` breaks that (one record
        moves every contribution: a declared sensitivity of 1 with a true one of 98 was
        accepted), and record-wise samplers would be wrong for it too. Records of ``data`` are
        replaced, one at a time, by other records of ``data`` (the first, last, middle, largest
        and smallest records, each by its two neighbours: values of the records' own domain),
        and the contributions of every other record must stay as they were. ``fn`` may read
        per-record constants (covariates, group indicators of length n): the data keep their
        length. Statistics without ``fn`` contribute ``clip(xᵢ)`` and are not checked.
        """
        fn = getattr(self, "fn", None)
        if fn is None or not data:
            return
        arrays = [np.array(_exact_dtype(np.asarray(d))) for d in data]
        n = arrays[0].shape[0]
        if n < 2 or any(a.ndim == 0 or a.shape[0] != n for a in arrays):
            return  # (record arrays of different lengths are refused by their own check)
        full = np.asarray(self.contributions_np(*arrays), dtype=float)
        key = arrays[0].reshape(n, -1).astype(float).sum(axis=1)
        top, bottom = int(np.argmax(key)), int(np.argmin(key))
        # (records to replace, the record each takes the value of): single records by their
        # neighbours, then every record tied at the largest (smallest) value by the smallest
        # (largest), so that a maximum held by several records changes too
        probes = [
            (np.array([j]), k)
            for j in sorted({0, n - 1, n // 2, top, bottom})
            for k in ((j + 1) % n, (j - 1) % n)
        ]
        probes += [
            (np.flatnonzero(key == key[top]), bottom),
            (np.flatnonzero(key == key[bottom]), top),
        ]
        for rows, k in probes:
            if rows.size == n:
                continue  # every record replaced: nothing left to compare
            moved = [a.copy() for a in arrays]
            for a, m in zip(arrays, moved):
                m[rows] = a[k]
            out = np.asarray(self.contributions_np(*moved), dtype=float)
            others = np.ones(n, dtype=bool)
            others[rows] = False
            if out.shape != full.shape or not np.allclose(
                out[others], full[others], rtol=1e-9, atol=1e-12, equal_nan=True
            ):
                raise ValueError(
                    f"fn of {self!r} does not compute each record's contribution from that "
                    "record alone: replacing records changed the contributions of others "
                    "(e.g. fn divides by a maximum or subtracts a mean over the records). "
                    "Replacing one record would then move every contribution, and the "
                    "sensitivity, which counts one record's own contribution, would not "
                    "hold. Write fn element-wise along the record axis (per-record constants "
                    "of length n are fine), with any constant it needs chosen without looking "
                    "at the data."
                )

    def same_as(self, other) -> bool:
        """Whether ``other`` is the same statistic (type and defining parameters)."""
        if type(self) is not type(other):
            return False
        a, b = self.params(), other.params()
        return a.keys() == b.keys() and all(_same_param(a[k], b[k]) for k in a)


#: compiled evaluations per statistic (weak keys: the cache dies with the statistic)
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def evaluate_graph(build, *data, owner=None) -> np.ndarray:
    """``build(*tensors)`` evaluated on NumPy records, passed as inputs of a compiled function
    (never as graph constants: constant-folding a 10^7-record constant takes minutes). Records
    are cast to float64 (floats) or int64 (integers) first. With ``owner=(statistic, tag)`` the
    compiled function is reused for records of the same dtypes and shapes."""
    import pytensor
    import pytensor.tensor as pt

    arrays = [_exact_dtype(np.asarray(d)) for d in data]
    key = tuple((a.dtype.str, a.shape) for a in arrays)
    cache = None
    if owner is not None:
        try:
            cache = _COMPILED.setdefault(owner[0], {})
        except TypeError:  # an unhashable statistic: no cache
            cache = None
        key = (owner[1], key)
        if cache is not None and key in cache:
            return np.asarray(cache[key](*arrays))
    tensors = [pt.tensor(dtype=a.dtype, shape=a.shape[:1] + (None,) * (a.ndim - 1)) for a in arrays]
    fn = pytensor.function(tensors, build(*tensors), on_unused_input="ignore")
    if cache is not None:
        cache[key] = fn
    return np.asarray(fn(*arrays))


def _exact_dtype(d: np.ndarray) -> np.ndarray:
    """Records in the dtype statistics are computed in: float64 for floats, int64 for integers.

    A float32 sum of 2^24 + 2 records can move by 2.0 when one record moves by 1.0 (rounding),
    beyond the sensitivity the noise is calibrated for; float64 keeps it within rounding of
    ``n · 2^-53`` relative.
    """
    if d.dtype.kind == "f":
        return d.astype(np.float64, copy=False)
    if d.dtype.kind in "iu":
        return d.astype(np.int64, copy=False)
    return d


def _check_bound_type(value, name: str, owner: str):
    """A declared bound is a real number: refuse bools (``float(True)`` is 1.0) and strings."""
    if value is None:
        return
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{owner} bound {name} must be a real number or None, got {name}={value!r} (type "
            f"{type(value).__name__}). Pass the number itself, e.g. {owner}(lower=0, upper=1)."
        )


def _check_width(lower, upper, owner: str):
    """``upper - lower`` (the sensitivity's unit) must be a finite float64."""
    if lower is not None and not math.isfinite(upper - lower):
        raise ValueError(
            f"{owner} bounds are too far apart: upper - lower overflows float64 for "
            f"lower={lower!r}, upper={upper!r}, so the sensitivity would be inf. Declare narrower "
            "bounds (or rescale the records, e.g. to other units)."
        )


def _same_param(a, b) -> bool:
    if a is b:
        return True
    if callable(a) and callable(b):
        ca, cb = getattr(a, "__code__", None), getattr(b, "__code__", None)
        if ca is None or cb is None:
            return False
        cells = [tuple(c.cell_contents for c in (f.__closure__ or ())) for f in (a, b)]
        try:
            same_cells = all(x is y or bool(np.all(x == y)) for x, y in zip(*cells, strict=True))
        except (TypeError, ValueError):
            same_cells = False
        return ca.co_code == cb.co_code and ca.co_consts == cb.co_consts and same_cells
    try:
        return bool(np.all(a == b))
    except (TypeError, ValueError):
        return False


def _n_records(data):
    static = getattr(getattr(data[0], "type", None), "shape", (None,))
    if static and static[0] is not None:
        return int(static[0])
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
        _check_bound_type(lower, "lower", type(self).__name__)
        _check_bound_type(upper, "upper", type(self).__name__)
        self.lower, self.upper = check_bounds(lower, upper, owner=type(self).__name__)
        _check_width(self.lower, self.upper, type(self).__name__)
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

    def params(self):
        return {"lower": self.lower, "upper": self.upper, "fn": self.fn}

    def contributions_are_integers(self, *data):
        integral_bounds = self.lower is None or (
            self.lower == round(self.lower) and self.upper == round(self.upper)
        )
        if (
            self.fn is None
            and integral_bounds
            and all(np.asarray(d).dtype.kind in "biu" for d in data)
        ):
            return True  # clip of integer records to integer bounds, without evaluating
        return super().contributions_are_integers(*data)

    def _entry_bound(self):
        return None if self.lower is None else max(abs(self.lower), abs(self.upper))

    def magnitude_bound(self, n):
        b = self._entry_bound()
        if b is None:
            return None
        return b if self.local else b * n * self.factor(n)

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
        _check_n(n, self)
        return 1.0 / n

    def sensitivity(self, norm, *, n, dim):
        _check_n(n, self)
        s = self._range_sensitivity(norm, dim)
        return None if s is None else s / n


def _check_n(n, owner):
    if n < 1:
        raise ValueError(
            f"{owner!r} is a mean and needs at least one record, got n={n}. Pass non-empty data "
            "(records on axis 0)."
        )


class Local(_Bounded):
    """One release per record: ``clip(fn(xᵢ), lower, upper)`` for each ``i`` (local DP).

    Its sensitivity is that of one record's value (the neighbouring input is the record itself).
    """

    local = True

    def sensitivity(self, norm, *, n, dim):
        return self._range_sensitivity(norm, dim)


class Counts(Statistic):
    """Histogram of integer categories ``0..n_categories-1``: ``Σᵢ onehot(xᵢ)``.

    Replace-one sensitivity (what mechanisms are calibrated to): L1 = 2, L2 = √2 (a record moves
    from one cell to another). Under add/remove-one it would be L1 = L2 = 1. Codes outside
    ``0..n_categories-1`` are refused by `pymc_dp.release`, never dropped.
    """

    def __init__(self, n_categories: int):
        if isinstance(n_categories, bool | np.bool_) or not (
            isinstance(n_categories, (int, np.integer)) and n_categories >= 2
        ):
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

    def __call__(self, *data):
        """The histogram as a PyTensor graph: ``bincount``-style, O(n + K) memory (the per-record
        one-hot rows of `contributions` are never formed). Codes outside ``0..K-1`` count
        nowhere, as in the one-hot sum."""
        import pytensor.tensor as pt

        self.contributions(*data)  # the checks only; the graph is not used
        x = pt.as_tensor_variable(data[0])
        k = self.n_categories
        inside = pt.cast(pt.and_(pt.ge(x, 0), pt.lt(x, k)), "int64")
        zeros = pt.zeros((k,), dtype="int64")
        return pt.inc_subtensor(zeros[pt.clip(pt.cast(x, "int64"), 0, k - 1)], inside)

    def evaluate(self, *data):
        """The histogram of NumPy records by ``np.bincount`` (O(n + K))."""
        x = np.asarray(data[0])
        if x.ndim != 1 or x.dtype.kind not in "biu":
            import pytensor.tensor as pt

            self.contributions(pt.as_tensor_variable(x))  # raises the graph's message
        x = x.astype(np.int64)
        x = x[(x >= 0) & (x < self.n_categories)]  # outside codes count nowhere, as in the graph
        return np.bincount(x, minlength=self.n_categories).astype(np.int64)

    def magnitude_bound(self, n):
        return float(n)

    def contributions_are_integers(self, *data):
        return True  # one-hot rows of 0/1, never formed

    def sensitivity(self, norm, *, n, dim):
        return 2.0 if norm == 1 else math.sqrt(2.0)

    def entries_changed(self, dim):
        return min(2, dim)  # a record moves from one category to another

    def params(self):
        return {"n_categories": self.n_categories}

    def check_records(self, *data):
        x = np.asarray(data[0])
        k = self.n_categories
        if x.dtype.kind not in "biu":
            raise TypeError(
                f"Counts needs integer category codes 0..{k - 1}, got records of dtype {x.dtype}. "
                "Cast the data with .astype(int)."
            )
        if np.any((x < 0) | (x >= k)):
            raise ValueError(
                f"Counts(n_categories={k}) needs every record's category code in 0..{k - 1}, and "
                "some records are outside it; they would be dropped from the histogram silently. "
                "Recode them, or declare the number of categories that exist (from the codebook, "
                "not from the data) as n_categories."
            )

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
            self._sens = {
                int(k): check_positive(v, name=f"sensitivity[{k}]") for k, v in sensitivity.items()
            }
        else:
            s = check_positive(
                sensitivity,
                name="sensitivity",
                fix="Give how far one replaced record can move the statistic (its L1 norm).",
            )
            self._sens = {1: s, 2: s}

    def contributions(self, *data):
        import pytensor.tensor as pt

        self._check_data(data)
        return pt.as_tensor_variable(self.fn(*data))

    def sensitivity(self, norm, *, n, dim):
        return self._sens.get(norm)

    def params(self):
        return {"fn": self.fn, "sensitivity": dict(self._sens)}

    def __repr__(self):
        return f"RecordSum(fn=..., sensitivity={self._sens})"
