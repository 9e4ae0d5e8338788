r"""The curator's side: compute a statistic of confidential data, add calibrated noise, and keep
what the analyst needs to use the result as a :class:`Release`.

Neighbouring relation
---------------------
Every statistic of :mod:`pymc_dp.statistics` declares its sensitivity for **replace-one**
neighbours (bounded DP: two datasets of the same public size ``n`` differing in one record), and
every mechanism is calibrated to that sensitivity. A release is therefore ε-DP (or (ε, δ)-DP)
under replace-one; :attr:`Release.neighbouring` says so and :meth:`Release.dp_event` expresses it
as a ``dp_accounting`` event whose sensitivity unit is the replace-one sensitivity (see
:mod:`pymc_dp.accounting.spent` for how such events compose).
"""

from __future__ import annotations

import numbers
import uuid

import numpy as np

from pymc_dp._checks import check_partition

__all__ = ["release", "bind_mechanism", "Release", "check_rng"]


def check_rng(rng):
    """Check ``rng``: ``None`` (returned as is: the mechanism's secure sampler), an int seed (a new
    ``np.random.Generator``) or a ``np.random.Generator``."""
    if rng is None or isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"rng must be a non-negative int seed, got rng={rng!r}. Pass e.g. rng=1.")
        return np.random.default_rng(int(rng))
    raise TypeError(
        f"rng must be None, an int seed or a numpy.random.Generator, got rng={rng!r} "
        f"(type {type(rng).__name__}). Pass e.g. rng=np.random.default_rng(1), or leave rng=None "
        "for a real publication."
    )


def bind_mechanism(statistic, mechanism, n: int, dim: int):
    """Calibrate ``mechanism`` to ``statistic`` and check that the pair is usable.

    Refuses an explicit ``sensitivity=`` smaller than what the statistic's declared bounds give:
    the noise would be too small for the privacy claimed.
    """
    from pymc_dp.mechanisms.base import Mechanism
    from pymc_dp.statistics.additive import Statistic

    if not isinstance(statistic, Statistic):
        raise TypeError(
            f"statistic must be a pymc_dp statistic (pdp.Sum, pdp.Mean, ...), got {statistic!r}."
        )
    if not isinstance(mechanism, Mechanism):
        raise TypeError(
            f"mechanism must be a pymc_dp mechanism (pdp.Laplace, pdp.Gaussian, ...), got {mechanism!r}."
        )
    if mechanism.local_only and not statistic.local:
        raise ValueError(
            f"{type(mechanism).__name__} randomizes one record at a time, but statistic={statistic!r} "
            "aggregates records. Use statistic=pdp.Local()."
        )
    given = getattr(mechanism, "sensitivity", None)
    norm = getattr(mechanism, "norm", None)
    if given is not None and norm:
        declared = statistic.sensitivity(norm, n=n, dim=dim)
        if declared is not None and float(given) < float(declared) * (1.0 - 1e-12):
            raise ValueError(
                f"{type(mechanism).__name__}(sensitivity={given!r}) is below the L{norm} sensitivity "
                f"{declared!r} that {statistic!r} has for n={n} records (dim={dim}): the noise "
                "would be too small for the privacy claimed. Drop sensitivity= to calibrate from "
                f"the bounds, or pass sensitivity >= {declared!r}."
            )
    return mechanism.bind(statistic, n=n, dim=dim)


class Release(np.ndarray):
    """A privatized value together with how it was made.

    It is a NumPy array (``np.asarray``, ``float``, indexing, arithmetic and ``observed=`` work as
    for the bare value; results of arithmetic and indexing are plain arrays, since they are no
    longer the release) carrying:

    Attributes
    ----------
    statistic : pymc_dp statistic
        What was computed from the records.
    mechanism : pymc_dp mechanism
        The mechanism, calibrated to the statistic (``mechanism.sensitivity`` is set).
    n : int
        Number of records (public under replace-one).
    dim : int
        Entries of one record's contribution (what the sensitivity was computed for).
    neighbouring : str
        ``"replace-one"``: the relation under which :meth:`dp_event` holds.
    """

    def __new__(cls, value, *, statistic, mechanism, n: int, dim: int):
        obj = np.asarray(value).view(cls)
        obj._info = (statistic, mechanism, int(n), int(dim))
        return obj

    def __array_finalize__(self, obj):
        self._info = getattr(obj, "_info", None)

    # ufuncs and indexing give plain arrays: ``2 * release`` is not the release any more
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(np.asarray(x) if isinstance(x, Release) else x for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(x) if isinstance(x, Release) else x for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __getitem__(self, key):
        return np.asarray(self)[key]

    def __iter__(self):
        return iter(np.asarray(self))

    def __reduce__(self):
        fn, args, state = super().__reduce__()
        return fn, args, (state, self._info)

    def __setstate__(self, state):
        base, info = state
        super().__setstate__(base)
        self._info = info

    def __repr__(self):
        return (f"Release({np.asarray(self)!r}, statistic={self.statistic!r}, "
                f"mechanism={self.mechanism!r}, n={self.n})")

    def _get(self, i):
        if self._info is None:
            raise AttributeError("this array lost its release metadata (it is a derived array).")
        return self._info[i]

    @property
    def statistic(self):
        return self._get(0)

    @property
    def mechanism(self):
        return self._get(1)

    @property
    def n(self) -> int:
        return self._get(2)

    @property
    def dim(self) -> int:
        return self._get(3)

    @property
    def neighbouring(self) -> str:
        return getattr(self.statistic, "neighbouring", "replace-one")

    @property
    def partition_cell(self):
        """``(key, cell)`` given as ``release(..., partition=...)``: the disjoint group of people
        released (None: not stated). Not ``partition``, which is NumPy's in-place method."""
        return self._identity("partition")

    @property
    def release_id(self):
        """Identity of this release, kept by pickles: accounting counts a release once."""
        return self._identity("release_id")

    def _identity(self, key):
        info = self._info
        return (info if isinstance(info, dict) else dict(zip(_INFO_KEYS, info or ()))).get(key)

    @property
    def value(self) -> np.ndarray:
        """The released numbers as a plain array."""
        return np.asarray(self)

    def dp_event(self):
        """The release's privacy as a ``dp_accounting`` event (replace-one, sensitivity units)."""
        return self.mechanism.dp_event()


def _check_records(data, statistic):
    """Refuse records that would give a meaningless or non-private release."""
    for i, d in enumerate(data):
        name = "data" if len(data) == 1 else f"data[{i}]"
        if d.dtype.kind not in "biuf":
            raise TypeError(
                f"{name} must be numeric records, got dtype {d.dtype}. Convert the records to "
                "numbers (category codes as integers) before releasing."
            )
        if d.ndim == 0 or d.shape[0] == 0:
            raise ValueError(
                f"{name} must hold at least one record on axis 0, got shape {d.shape}. A statistic "
                "of no records has nothing to release; pass the records as an array of shape (n, ...)."
            )
        if d.dtype.kind == "f" and not np.all(np.isfinite(d)):
            bad = np.argwhere(~np.isfinite(d))[0]
            raise ValueError(
                f"{name} must be finite, got {float(d[tuple(bad)])!r} at index {tuple(int(b) for b in bad)}. "
                "NaN or inf records make the release NaN or unbounded: drop or impute them (with a "
                "rule that does not look at other records) before releasing."
            )
    hook = getattr(statistic, "check_records", None)
    if hook is not None:
        hook(*data)


def _check_integer(statistic, mech, data, value):
    """Integer mechanisms never round: the statistic and every contribution must be integers."""
    name = type(mech).__name__
    fix = (
        "Release integer records with integer bounds (e.g. pdp.Sum(lower=0, upper=5) of counts, "
        "pdp.Counts), or use a continuous mechanism such as pdp.Laplace."
    )
    n = data[0].shape[0]
    if not statistic.local and statistic.factor(n) != 1.0:
        raise ValueError(
            f"{name} adds integer noise, but {statistic!r} scales the sum of the records by "
            f"{statistic.factor(n)!r}, so it is not an integer statistic. Release the sum "
            "(pdp.Sum) and divide after the noise, or use a continuous mechanism such as pdp.Laplace."
        )
    v = np.asarray(value, dtype=float)
    if np.any(v != np.rint(v)):
        bad = v[v != np.rint(v)].ravel()[:3].tolist()
        raise ValueError(
            f"{name} adds integer noise, so the statistic must be integer-valued, but "
            f"{statistic!r} of data is {bad} (not an integer); it would be rounded silently. {fix}"
        )
    import pytensor.tensor as pt

    tensors = [pt.as_tensor_variable(d) for d in data]
    t = np.asarray(statistic.contributions(*tensors).eval(), dtype=float)
    if np.any(t != np.rint(t)):
        bad = t[t != np.rint(t)].ravel()[:3].tolist()
        raise ValueError(
            f"{name} adds integer noise, so every record's contribution must be an integer, but "
            f"{statistic!r} gives contributions {bad}; a non-integer contribution can move the "
            f"statistic off the lattice the noise is calibrated for. {fix}"
        )


def release(data, statistic, mechanism, rng=None, *, partition=None) -> Release:
    """Release ``mechanism(statistic(data))``.

    Parameters
    ----------
    data : array_like or tuple of array_like
        Confidential records, record axis first (a tuple for statistics of several arrays). Must be
        finite and non-empty.
    statistic : pymc_dp statistic
    mechanism : pymc_dp mechanism
        Calibrated here from the statistic's sensitivity when given ``epsilon``. An explicit
        ``sensitivity=`` below the statistic's declared one is refused. Integer mechanisms
        (``mechanism.integer``) refuse a statistic or contributions that are not integers.
    rng : numpy.random.Generator or int, optional
        Source of the noise for simulations, tests and reproducible examples. Only ``rng=None``
        (noise from the mechanism's secure sampler, seeded by the operating system) is fit for a
        real publication.
    partition : tuple (key, cell), optional
        The disjoint group of people ``data`` holds when the dataset is split by a public
        attribute (e.g. ``("age_band", "30-39")``): `pymc_dp.privacy_spent` composes releases of
        different cells of one key in parallel (docs/privacy.md, "Partitions").

    Returns
    -------
    Release
        The privatized value (integer for integer mechanisms), an array that also carries the
        statistic, the calibrated mechanism, ``n`` and ``dp_event()``.
    """
    data = tuple(np.asarray(d) for d in (data if isinstance(data, tuple) else (data,)))
    rng = check_rng(rng)
    _check_records(data, statistic)
    n = data[0].shape[0]
    for d in data[1:]:
        if d.shape[0] != n:
            raise ValueError(
                f"All record arrays need the same number of records on axis 0, got "
                f"{[d.shape[0] for d in data]}. Align the arrays record by record."
            )
    value = statistic.evaluate(*data)
    dim = _per_record_dim(statistic, value, n)
    mech = bind_mechanism(statistic, mechanism, n, dim)
    if mech.integer and mech.local_only:
        k = getattr(mech, "n_categories", None)
        if k is not None and (np.any(value < 0) or np.any(value >= k) or np.any(value != np.rint(value))):
            raise ValueError(
                f"{type(mech).__name__}(n_categories={k}) needs records in 0..{k - 1}, got values "
                f"from {value.min()} to {value.max()}. Recode the categories."
            )
    elif mech.integer:
        _check_integer(statistic, mech, data, value)
    hook = getattr(mech, "sample_records", None)
    if hook is not None:  # noise depends on the records themselves (e.g. SmoothLaplace)
        out = hook(statistic, data, rng)
    else:
        out = mech.sample(value, rng)
    # partition=(key, cell): the group of people the data hold (parallel composition, docs/privacy.md)
    partition = check_partition(partition)
    return _identified(Release(out, statistic=statistic, mechanism=mech, n=n, dim=dim), partition)


_INFO_KEYS = ("statistic", "mechanism", "n", "dim", "partition", "release_id")


def _identified(out, partition):
    """``out`` with its partition and a new identity in its metadata (see `Release.release_id`)."""
    extra = {"partition": partition, "release_id": uuid.uuid4().hex}
    info = out._info
    out._info = {**info, **extra} if isinstance(info, dict) else tuple(info) + tuple(extra.values())
    return out


def _per_record_dim(statistic, value, n):
    if statistic.local:
        return int(np.prod(value.shape[1:], dtype=int)) if value.ndim > 1 else 1
    return int(np.prod(value.shape, dtype=int)) if value.ndim else 1
