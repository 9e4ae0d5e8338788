r"""The curator's side: compute a statistic of confidential data, add calibrated noise, and keep
what the analyst needs to use the result as a `Release`.

Neighbouring relation
---------------------
Every statistic of `pymc_dp.statistics` declares its sensitivity for **replace-one**
neighbours (bounded DP: two datasets of the same public size ``n`` differing in one record), and
every mechanism is calibrated to that sensitivity. A release is therefore ε-DP (or (ε, δ)-DP)
under replace-one; `Release.neighbouring` says so and `Release.dp_event` expresses it
as a ``dp_accounting`` event whose sensitivity unit is the replace-one sensitivity (see
`pymc_dp.accounting.spent` for how such events compose).
"""

from __future__ import annotations

import uuid

import numpy as np

from pymc_dp._checks import check_noise_rng, check_partition

__all__ = ["release", "bind_mechanism", "Release"]


def check_pair(statistic, mechanism) -> None:
    """Refuse a statistic or mechanism that is not an instance of ours, naming the mistake: a
    class for an instance (``statistic=pdp.Sum``), or the two given in swapped places."""
    from pymc_dp.mechanisms.base import Mechanism
    from pymc_dp.statistics.additive import Statistic

    if isinstance(statistic, Mechanism) and isinstance(mechanism, Statistic):
        raise TypeError(
            f"statistic and mechanism are swapped: statistic={statistic!r} is a mechanism and "
            f"mechanism={mechanism!r} a statistic. The statistic comes first: "
            "pdp.release(data, statistic, mechanism)."
        )
    for value, base, what, example in (
        (
            statistic,
            Statistic,
            "statistic",
            "pdp.Sum(lower, upper), pdp.Counts(n_categories), pdp.Cells()",
        ),
        (
            mechanism,
            Mechanism,
            "mechanism",
            "pdp.Laplace(epsilon=1.0), pdp.DiscreteGaussian(sigma=3.0)",
        ),
    ):
        if isinstance(value, type) and issubclass(value, base):
            raise TypeError(
                f"{what} must be a {what} object, got the class {value.__name__}. Create one "
                f"with its arguments, e.g. {what}=pdp.{value.__name__}(...) ({example})."
            )
        if not isinstance(value, base):
            raise TypeError(f"{what} must be a pymc_dp {what} ({example}), got {value!r}.")


def bind_mechanism(statistic, mechanism, n: int, dim: int):
    """Calibrate ``mechanism`` to ``statistic`` and check that the pair is usable.

    Refuses an explicit ``sensitivity=`` smaller than what the statistic's declared bounds give:
    the noise would be too small for the privacy claimed.
    """
    check_pair(statistic, mechanism)
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


#: ndarray methods that return a new array: on a Release they return a plain ndarray
_PLAIN_METHODS = (
    "astype",
    "take",
    "copy",
    "reshape",
    "ravel",
    "flatten",
    "squeeze",
    "transpose",
    "swapaxes",
    "repeat",
    "view",
    "round",
    "compress",
    "diagonal",
    "choose",
    "conj",
    "conjugate",
    "clip",
    "cumsum",
    "cumprod",
    "dot",
    "__copy__",
    "__deepcopy__",
    "__array__",
)
#: ndarray methods that change values in place: refused on a Release
_INPLACE_METHODS = ("sort", "partition", "fill", "put", "itemset", "resize", "setfield")


def _plain(x):
    """``x`` with every Release (also inside lists, tuples and dicts) replaced by a plain ndarray."""
    if isinstance(x, Release):
        return np.ndarray.view(x, np.ndarray)
    if isinstance(x, list | tuple):
        return type(x)(_plain(v) for v in x)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


def _read_only_error(what: str) -> ValueError:
    return ValueError(
        f"A Release is read-only ({what}): changed values would keep privacy metadata that no "
        "longer describes them. Work on a plain copy, np.array(release), which is no longer the "
        "release."
    )


def _plain_method(name):
    def method(self, *args, **kwargs):
        return getattr(np.ndarray.view(self, np.ndarray), name)(*_plain(args), **_plain(kwargs))

    method.__name__ = name
    method.__doc__ = f"``ndarray.{name}`` on the values; returns a plain ndarray (not a Release)."
    return method


def _inplace_method(name):
    def method(self, *args, **kwargs):
        raise _read_only_error(f"{name}() changes values in place")

    method.__name__ = name
    return method


class Release(np.ndarray):
    """A privatized value together with how it was made.

    It is a read-only NumPy array (``np.asarray``, ``float``, indexing, arithmetic and
    ``observed=`` work as for the bare value) carrying the metadata below.

    Immutability
    ------------
    The values cannot change and the metadata cannot outlive them: writing (``r[0] = 1``,
    ``r += 1``, ``r.sort()``, ``r.fill(0)``) raises, and every operation that makes a new array —
    indexing and slicing, ufuncs and arithmetic, NumPy functions (``np.sort``, ``np.roll``,
    ``np.take``, ...), and methods (``astype``, ``take``, ``byteswap``, ``copy``, ``reshape``, ...)
    — returns a plain ``ndarray``, which is no longer the release. Only the object returned by
    `release` (and its pickled copies) is a ``Release``; ``DPObserved`` checks it against the
    model and ``privacy_spent`` accounts for it.

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
        ``"replace-one"``: the relation under which `dp_event` holds.
    """

    def __new__(cls, value, *, statistic, mechanism, n: int, dim: int, **extra):
        obj = np.array(value, copy=True).view(cls)
        np.ndarray.setflags(obj, write=False)
        obj._info = {
            "statistic": statistic,
            "mechanism": mechanism,
            "n": int(n),
            "dim": int(dim),
            **extra,
        }
        return obj

    def __array_finalize__(self, obj):
        # any array NumPy derives from a Release is not the release: no metadata
        self._info = None

    # NumPy entry points: plain arrays in, plain arrays out; writing into a Release is refused
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out", ())
        if any(isinstance(o, Release) for o in (out if isinstance(out, tuple) else (out,))):
            raise _read_only_error(f"in-place {ufunc.__name__}")
        return getattr(ufunc, method)(*_plain(inputs), **_plain(kwargs))

    def __array_function__(self, func, types, args, kwargs):
        out = kwargs.get("out")
        if isinstance(out, Release):
            raise _read_only_error(f"out= of {func.__name__}")
        return func(*_plain(args), **_plain(kwargs))

    def __getitem__(self, key):
        return np.ndarray.view(self, np.ndarray)[_plain(key)]

    def __setitem__(self, key, value):
        raise _read_only_error("item assignment")

    def __iter__(self):
        return iter(np.ndarray.view(self, np.ndarray))

    def setflags(self, write=None, align=None, uic=None):
        if write:
            raise _read_only_error("setflags(write=True)")
        return np.ndarray.setflags(self, write=write, align=align, uic=uic)

    def byteswap(self, inplace=False):
        """Byte-swapped values as a plain ndarray; ``inplace=True`` is refused."""
        if inplace:
            raise _read_only_error("byteswap(inplace=True)")
        return np.ndarray.view(self, np.ndarray).byteswap()

    @property
    def T(self):
        return np.ndarray.view(self, np.ndarray).T

    @property
    def mT(self):
        return np.ndarray.view(self, np.ndarray).mT

    @property
    def real(self):
        return np.ndarray.view(self, np.ndarray).real

    @property
    def imag(self):
        return np.ndarray.view(self, np.ndarray).imag

    @property
    def flat(self):
        return np.ndarray.view(self, np.ndarray).flat

    def __reduce__(self):
        fn, args, state = super().__reduce__()
        return fn, args, (state, self._info)

    def __setstate__(self, state):
        base, info = state
        super().__setstate__(base)
        np.ndarray.setflags(self, write=False)
        if isinstance(info, tuple):  # pickled by an older version
            info = dict(zip(("statistic", "mechanism", "n", "dim"), info, strict=False))
        self._info = info

    def __repr__(self):
        return (
            f"Release({np.ndarray.view(self, np.ndarray)!r}, statistic={self.statistic!r}, "
            f"mechanism={self.mechanism!r}, n={self.n})"
        )

    def _get(self, key):
        if self._info is None:
            raise AttributeError("this array lost its release metadata (it is a derived array).")
        return self._info[key]

    @property
    def statistic(self):
        return self._get("statistic")

    @property
    def mechanism(self):
        return self._get("mechanism")

    @property
    def n(self) -> int:
        return self._get("n")

    @property
    def dim(self) -> int:
        return self._get("dim")

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
        """The released numbers as a plain (read-only) array."""
        return np.ndarray.view(self, np.ndarray)

    def dp_event(self):
        """The release's privacy as a ``dp_accounting`` event (replace-one, sensitivity units)."""
        return self.mechanism.dp_event()


for _name in _PLAIN_METHODS:
    setattr(Release, _name, _plain_method(_name))
for _name in _INPLACE_METHODS:
    setattr(Release, _name, _inplace_method(_name))
del _name


#: a release, its statistic and its noise stay below this magnitude (float64 overflows at ~2^1024)
MAX_MAGNITUDE = 2.0**1000


def _check_records(data, statistic):
    """Refuse records that would give a meaningless or non-private release.

    Messages name the argument and the rule, never a value, an index or a count computed from the
    records (they may be logged or shown to others).
    """
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
            raise ValueError(
                f"{name} must be finite, but it holds NaN or inf values. NaN or inf records make "
                "the release NaN or unbounded: drop or impute them (with a rule that does not look "
                "at other records) before releasing."
            )
        if d.dtype.kind == "u" and d.dtype.itemsize >= 8 and np.any(d > np.iinfo(np.int64).max):
            raise ValueError(
                f"{name} has dtype {d.dtype} with values beyond the int64 range, in which "
                "statistics are computed exactly. Recode the records into a smaller range."
            )
    hook = getattr(statistic, "check_records", None)
    if hook is not None:
        hook(*data)
    record_wise = getattr(statistic, "check_record_wise", None)
    if record_wise is not None:
        record_wise(*data)


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
        raise ValueError(
            f"{name} adds integer noise, so the statistic must be integer-valued, but {statistic!r} "
            f"of data is not an integer; it would be rounded silently. {fix}"
        )
    if not statistic.contributions_are_integers(*data):
        raise ValueError(
            f"{name} adds integer noise, so every record's contribution must be an integer, but "
            f"{statistic!r} gives non-integer contributions for some records; a non-integer "
            f"contribution can move the statistic off the lattice the noise is calibrated for. {fix}"
        )


def _check_guarantee(statistic, mech, n: int):
    """Refuse a release whose mechanism has no privacy guarantee for this statistic."""
    if mech.norm and getattr(mech, "sensitivity", None) is None:
        raise ValueError(
            f"{mech!r} on {statistic!r} has no sensitivity, so the release would have no privacy "
            f"guarantee. Declare bounds, e.g. pdp.{type(statistic).__name__}(lower=..., "
            "upper=...) (records are clamped to them; choose them without looking at the data), "
            f"or pass the statistic's L{mech.norm} sensitivity to the mechanism, e.g. "
            f"pdp.{type(mech).__name__}(..., sensitivity=...)."
        )


def _check_magnitude(statistic, mech, n: int):
    """Refuse, from public quantities only, a release that could overflow float64."""
    bound = statistic.magnitude_bound(n)
    radius = mech.noise_radius(statistic)
    if bound is None or radius is None:
        return
    if not bound + radius < MAX_MAGNITUDE:
        raise ValueError(
            f"{statistic!r} of n={n} records with {mech!r} can reach {bound + radius:.3g} in "
            f"magnitude (statistic up to {bound:.3g}, noise up to {radius:.3g} with probability "
            f"above 1 - e^-1000), beyond the {MAX_MAGNITUDE:.3g} float64 handles: the release "
            "could be inf. Declare narrower bounds (or rescale the records, e.g. to other units)."
        )


def release(data, statistic, mechanism, rng=None, *, partition=None) -> Release:
    """Release ``mechanism(statistic(data))``.

    Parameters
    ----------
    data : array_like or tuple of array_like
        Confidential records, record axis first (a tuple for statistics of several arrays). Must be
        finite and non-empty. Statistics are computed in float64 (float records) or int64
        (integer records), whatever the records' dtype.
    statistic : pymc_dp statistic
    mechanism : pymc_dp mechanism
        Calibrated here from the statistic's sensitivity when given ``epsilon``. An explicit
        ``sensitivity=`` below the statistic's declared one is refused, and so is a mechanism
        left without a sensitivity (a noise scale on a statistic without bounds: no guarantee).
        Integer mechanisms (``mechanism.integer``) refuse a statistic or contributions that are
        not integers.
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
        The privatized value (integer for integer mechanisms), a read-only array that also carries
        the statistic, the calibrated mechanism, ``n`` and ``dp_event()``.

    Raises
    ------
    ValueError, TypeError
        For bad records, statistics or mechanisms. Messages name the argument and the rule, never
        a value computed from the records.
    """
    check_pair(statistic, mechanism)
    data = tuple(np.asarray(d) for d in (data if isinstance(data, tuple) else (data,)))
    rng = check_noise_rng(rng, owner="release")
    _check_records(data, statistic)
    from pymc_dp.statistics.additive import _exact_dtype

    data = tuple(_exact_dtype(d) for d in data)
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
    _check_guarantee(statistic, mech, n)
    _check_magnitude(statistic, mech, n)
    if not np.all(np.isfinite(np.asarray(value, dtype=float))):
        raise ValueError(
            f"{statistic!r} of data is not finite (a record's contribution overflowed). Clamp "
            "inside fn, or declare bounds that keep every contribution finite."
        )
    if mech.integer and mech.local_only:
        k = getattr(mech, "n_categories", None)
        if k is not None and (
            np.any(value < 0) or np.any(value >= k) or np.any(value != np.rint(value))
        ):
            raise ValueError(
                f"{type(mech).__name__}(n_categories={k}) needs every record's category in "
                f"0..{k - 1}, and some records are outside it. Recode the categories (or raise "
                "n_categories to the number of categories that exist)."
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
