r"""``DPObserved``: the density of a privatized release given a statistic of latent records.

```text
p(s_{dp} \mid x) = \eta\big(s_{dp} \mid S(x)\big)
```

where ``S`` is a `pymc_dp.statistics` statistic of the latent records ``x`` (a PyMC random
variable, or a tuple of them sharing the record axis 0) and ``η`` the noise density of a
`pymc_dp.mechanisms` mechanism. It is a ``pm.CustomDist`` whose parameter is the statistic
graph, so prior and posterior predictive draws, ``dims`` and ``pm.Data`` releases work as for any
PyMC observed variable. The samplers in `pymc_dp.samplers` find the nodes with
`pymc_dp.distributions.registry.dp_nodes`.

``DPObserved`` follows the pymc-extras distribution style: ``DPObserved(name, data, ...)`` adds the
observed node to the model, ``DPObserved.dist(data, ...)`` returns an unnamed variable for use
without a model (``pm.logp``, ``pm.draw``, composition in ``pm.CustomDist``).

When ``observed`` is a `pymc_dp.release.Release` (or a `pdp.ReleaseData` container
holding one), the node checks it was made the way the model says: the same number of records, the
same statistic (type and parameters) and the same calibrated mechanism; a Release is observed by
one node only. A bare array is accepted as is (a release made elsewhere). The records' support
must lie in the statistic's domain (`pymc_dp.distributions.domain`). What the node knows is
kept on its op (`pymc_dp.distributions.registry`), so copies of the model keep it.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.compile.sharedvalue import SharedVariable

from pymc_dp._checks import check_float64, check_partition
from pymc_dp.distributions.domain import check_domain, check_not_a_table
from pymc_dp.distributions.graph import fixed_shape
from pymc_dp.distributions.registry import NodeSpec, dp_nodes, release_info, set_spec
from pymc_dp.release import Release, bind_mechanism, check_pair

__all__ = ["DPObserved", "DPNode", "dp_nodes"]


@dataclasses.dataclass(frozen=True)
class DPNode:
    """What the samplers need to know about one ``DPObserved`` node."""

    rv: pt.TensorVariable
    data: tuple
    statistic: object
    mechanism: object  # calibrated
    n: int
    dim: int  # entries per record contribution
    shape: tuple  # shape of the release
    release_id: str | None = None  # identity of the Release observed (None: a bare array)
    partition: tuple | None = None  # (key, cell): the disjoint group of people released


def _static_shape(var, what):
    shape = fixed_shape(var)
    if shape is None:
        raise ValueError(
            f"The shape of {what} must be fixed when the model is built (a length that depends "
            "on a random variable is not). Give the record variables a fixed shape=(n, ...) or "
            "dims=."
        )
    return shape


def _observed_value(observed):
    if isinstance(observed, SharedVariable):
        return np.asarray(observed.get_value())
    if isinstance(observed, pt.TensorConstant):
        return np.asarray(observed.data)
    if isinstance(observed, pt.TensorVariable):
        raise TypeError(
            "observed must be the released numbers (array, or pm.Data), got a symbolic "
            f"expression {observed}. Pass the release itself."
        )
    return np.asarray(observed)


def _validate_release(name, value, shape, mechanism):
    if value.dtype.kind not in "biuf":
        raise TypeError(f"observed for {name!r} must be numeric, got dtype {value.dtype}.")
    if not np.all(np.isfinite(value)):
        bad = np.flatnonzero(~np.isfinite(value.ravel()))
        raise ValueError(
            f"observed for {name!r} must be finite, got {value.ravel()[bad[:3]].tolist()} at flat "
            f"position(s) {bad[:3].tolist()}. A release is a published number: drop missing "
            "entries or model them separately (PyMC would silently impute NaN)."
        )
    if value.shape != shape:
        raise ValueError(
            f"observed for {name!r} has shape {value.shape}, but the statistic has shape {shape}. "
            "Pass one released number per entry of the statistic (check the record shape, "
            "Counts(n_categories) or Local)."
        )
    if mechanism.integer and np.any(value != np.rint(value)):
        bad = value[value != np.rint(value)].ravel()[:3].tolist()
        raise ValueError(
            f"{type(mechanism).__name__} releases integers, but observed for {name!r} has "
            f"non-integer values {bad}. Use a continuous mechanism (pdp.Laplace) for real "
            "releases, or pass the integer release."
        )
    if getattr(mechanism, "n_categories", None) is not None:
        k = mechanism.n_categories
        if np.any((value < 0) | (value >= k)):
            raise ValueError(
                f"RandomizedResponse(n_categories={k}) releases categories 0..{k - 1}, got values "
                f"from {value.min()} to {value.max()} in observed for {name!r}. Recode them."
            )


_INT_KINDS = ("int", "uint", "bool")


def _is_int(dtype) -> bool:
    return str(dtype).startswith(_INT_KINDS)


def _integer_by_construction(statistic, data_t, contributions, n) -> bool:
    """Whether every contribution (and the statistic) is an integer whatever the records' values."""
    if not statistic.local and statistic.factor(n) != 1.0:
        return False
    if _is_int(contributions.dtype):
        return True
    bounds = [getattr(statistic, "lower", None), getattr(statistic, "upper", None)]
    integral = all(b is None or float(b) == round(float(b)) for b in bounds)
    owner = contributions.owner
    clip = owner is not None and type(getattr(owner.op, "scalar_op", None)).__name__ == "Clip"
    if clip and integral and _is_int(owner.inputs[0].dtype):
        return True  # fn gives integers (e.g. a cast of floor(x)), clipped to integer bounds
    # integer records through a clamp with integer bounds and no user function stay integers
    if getattr(statistic, "fn", True) is not None or not all(_is_int(d.dtype) for d in data_t):
        return False
    return integral


def _check_integer_mechanism(name, statistic, mech, data_t, contributions, n):
    if not mech.integer or mech.local_only:
        return
    if not _integer_by_construction(statistic, data_t, contributions, n):
        dtypes = sorted({str(d.dtype) for d in data_t})
        raise ValueError(
            f"{type(mech).__name__} releases integers and its density is a pmf on the integers, but "
            f"{name!r} computes {statistic!r} of records of dtype {dtypes}, which is not an integer "
            "by construction (its value would lie between the lattice points the noise lives "
            "on). Model integer records (e.g. pm.Poisson, pm.Binomial, pm.Categorical) with "
            "integer bounds, use pdp.Counts, or use a continuous mechanism such as pdp.Laplace."
        )


def _release_meta(observed):
    """``{statistic, mechanism, n, release_id, partition}`` of a Release or a ``pdp.ReleaseData``
    container, else None (a bare array or a plain ``pm.Data``: nothing to check)."""
    if isinstance(observed, Release):
        if observed._info is None:
            return None
        return {
            "statistic": observed.statistic,
            "mechanism": observed.mechanism,
            "n": observed.n,
            "release_id": observed.release_id,
            "partition": observed.partition_cell,
        }
    return release_info(observed)


def _check_against_release(name, observed, statistic, mech, n, data_names):
    """A ``Release`` must match the node: record count, statistic, calibrated mechanism."""
    meta = _release_meta(observed)
    if meta is None:
        return
    observed = _Meta(**meta)
    if n is not None and observed.n != n:
        raise ValueError(
            f"observed for {name!r} is a Release computed from n={observed.n} records, but the "
            f"model's data {data_names} have n={n} records. The likelihood of a release depends on "
            "the number of records behind it: give the record variable shape=("
            + str(observed.n)
            + ", ...), or pass the release that was made from these records."
        )
    if not statistic.same_as(observed.statistic):
        why = ""
        if repr(statistic) == repr(observed.statistic):  # the difference is in fn
            why = (
                " They print alike: their fn differ in code or in the values they read (fns are "
                "compared by bytecode and closure values; e.g. one reads a NumPy array, the other "
                "a pm.Data container)."
            )
        raise ValueError(
            f"observed for {name!r} is a Release of statistic={observed.statistic!r}, but the node "
            f"says statistic={statistic!r}.{why} Pass statistic=release.statistic (the statistic "
            "the curator computed)."
        )
    if observed.mechanism != mech:
        raise ValueError(
            f"observed for {name!r} is a Release made with mechanism={observed.mechanism!r}, but the "
            f"node calibrates mechanism={mech!r}. Pass mechanism=release.mechanism (the noise the "
            "curator added)."
        )


@dataclasses.dataclass(frozen=True)
class _Meta:
    statistic: object
    mechanism: object
    n: int
    release_id: str | None = None
    partition: tuple | None = None


def _check_unique(model, name, release_id):
    """One release, one node: a second node would count its likelihood (and its ε) twice."""
    if release_id is None:
        return
    for other, node in dp_nodes(model.root).items():
        if node.release_id == release_id:
            raise ValueError(
                f"DPObserved {name!r} observes the same Release as DPObserved {other!r} (release "
                f"id {release_id}): the model would count its likelihood, and its privacy loss, "
                "twice. Observe each release once; to use it in two places, share the record "
                "variable or the node instead."
            )


def _node_partition(name, partition, meta):
    partition = check_partition(partition)
    given = None if meta is None else meta["partition"]
    if partition is not None and given is not None and partition != given:
        raise ValueError(
            f"DPObserved {name!r} got partition={partition!r}, but its Release was made with "
            f"partition={given!r}. Drop partition= (the release states it) or pass the same pair."
        )
    return partition if partition is not None else given


def _as_record_tensors(data, *, in_model: bool):
    data_t = tuple(data) if isinstance(data, tuple | list) else (data,)
    out = []
    for d in data_t:
        if not isinstance(d, pt.TensorVariable):
            if in_model or isinstance(d, pt.Variable):
                raise TypeError(
                    f"data must be the latent record variable(s) of the model, got {d!r}. "
                    "Pass the PyMC random variable holding the confidential records."
                )
            d = pt.as_tensor_variable(np.asarray(d))
        if d.ndim == 0:
            raise ValueError(
                f"data {d.name!r} is a scalar; records live on axis 0. Give it shape=(n, ...)."
            )
        out.append(d)
    return tuple(out)


def _warn_computed_data(model, name, data_t):
    """Warn for ``data`` that is not a random variable of ``model`` (a ``pm.Deterministic`` or an
    expression of the records, a partly observed variable): the node is valid, but pymc-dp's
    record samplers need the record variables themselves, so ``pm.sample()`` leaves the records
    to PyMC's own samplers."""
    from pymc_dp.distributions.graph import direct_upstream

    rvs = model.basic_RVs
    for d in data_t:
        if any(d is v for v in rvs):
            continue
        found = direct_upstream(model, [d])
        sources = [v.name for v in model.free_RVs if v in found]
        if not sources:  # fixed (public) records: nothing to sample
            continue
        label = d.name if d.name else str(d)
        warnings.warn(
            f"DPObserved {name!r}: data {label!r} is not a random variable of the model but is "
            f"computed from {sources}. The release is valid, but pymc-dp's record samplers "
            "(DataAugmentation, Collapsed) take only record variables, so pm.sample() leaves "
            "the records to PyMC's own samplers (exact, one record at a time, slow for many "
            "records). To fix: pass the record variable(s) as data and the computation as the "
            "statistic's fn=, e.g. pdp.Sum(lower, upper, fn=lambda x: 2 * x).",
            UserWarning,
            stacklevel=3,
        )


def _build(data_t, statistic, mechanism):
    """Shapes, calibrated mechanism, parameters and the CustomDist pieces of one release node."""
    check_pair(statistic, mechanism)
    shapes = [_static_shape(d, f"data {d.name!r}") for d in data_t]
    n = shapes[0][0]
    if any(s[0] != n for s in shapes):
        raise ValueError(
            f"All record arrays need the same number of records on axis 0, got "
            f"{[s[0] for s in shapes]} for {[d.name for d in data_t]}."
        )
    if n == 0:
        raise ValueError(
            f"data {[d.name for d in data_t]} hold no records (axis 0 has length 0). A release is a "
            "statistic of at least one record; give the record variable shape=(n, ...) with n >= 1."
        )
    contributions = statistic.contributions(*data_t)
    c_shape = _static_shape(contributions, f"the contributions of {statistic!r}")
    table = getattr(statistic, "latent_table", False)  # Cells/Marginals: the release's own shape
    if not table and (not c_shape or c_shape[0] != n):
        raise ValueError(
            f"{statistic!r} must return one contribution per record (axis 0 of length {n}), "
            f"got shape {c_shape}. Make fn keep the record axis first (act on each record, "
            "e.g. fn=lambda x: x.clip(0, 1), not fn=lambda x: x.sum(): the statistic sums)."
        )
    dim = int(np.prod(c_shape[1:], dtype=int)) if c_shape else 1
    mech = bind_mechanism(statistic, mechanism, n, dim)
    shape = c_shape if statistic.local else c_shape[1:]
    dtype = "int64" if mech.integer else pytensor.config.floatX

    hook = getattr(mech, "dist_params", None)
    if hook is not None:  # density needs more than the statistic (e.g. SmoothLaplace)
        params = tuple(hook(statistic, data_t))
        signature = ",".join(["()"] * len(params)) + "->()"

        def _dist(*args):
            return mech.random_graph(*args[:-1], size=args[-1])

        def _logp(value, *args):
            return mech.logp(value, *args)
    else:
        params, signature = (statistic(*data_t),), "()->()"

        def _dist(s, size):
            return mech.random_graph(s, size=size)

        def _logp(value, s):
            return mech.logp(value, s)

    pieces = dict(dist=_dist, logp=_logp, signature=signature, dtype=dtype, class_name="DPObserved")
    return n, dim, mech, shape, contributions, params, pieces


def _resizable(statistic, given, mech, n, dim) -> bool:
    """Whether the node's density is the same for any record count: the mechanism calibrates
    to the same noise for another n, the statistic's factor does not change with n, and the
    density needs nothing but the statistic. Such a node follows records resized by
    ``pm.set_data(..., coords=)`` (`pymc_dp.distributions.registry`); any other is refused there."""
    if getattr(mech, "dist_params", None) is not None:
        return False
    other = 2 * n + 1
    try:
        same = bind_mechanism(statistic, given, other, dim) == mech
        return bool(same and statistic.factor(other) == statistic.factor(n))
    except (ValueError, TypeError):
        return False


def _check_declared_total(name, statistic, data_t):
    """A ``Cells(total=N)`` release of a ``pm.Multinomial`` table must have the table's ``n``."""
    total = getattr(statistic, "total", None)
    rv = data_t[0]
    if not getattr(statistic, "latent_table", False):
        return
    op_kind = type(rv.owner.op).__name__ if rv.owner is not None else None
    if op_kind not in ("MultinomialRV", "DirichletMultinomialRV"):  # n fixes their totals
        if total is not None:
            kind = op_kind.removesuffix("RV") if op_kind else "fixed"
            raise ValueError(
                f"DPObserved {name!r} releases {statistic!r}, which declares the table's total "
                f"public, but {rv.name!r} is a {kind} table whose total is not fixed by the "
                "model, so the declared total would be ignored. Model a table with a public total "
                "as pm.Multinomial(n=total, p=...), or drop total= when the total is not public."
            )
        return
    n_graph = rv.owner.op.dist_params(rv.owner)[0]
    try:
        n_value = np.asarray(n_graph.eval())
    except Exception:  # noqa: BLE001 - n depends on other variables: nothing fixed to compare
        return
    if n_value.dtype.kind == "f" and np.any(n_value != np.rint(n_value)):
        raise ValueError(
            f"DPObserved {name!r}: the table {rv.name!r} is a pm.Multinomial with non-integer "
            f"n={n_value.tolist()}; PyMC draws its rows with n rounded down, so a table of "
            "another number of people would be sampled. Give n the integer number of people."
        )
    if total is None:
        return
    n = n_value.astype(np.int64)
    shape = fixed_shape(rv)
    if shape is None:
        return
    rows = shape[:-1]
    if np.ndim(total) > 0 and tuple(np.shape(total)) != tuple(rows):
        raise ValueError(
            f"DPObserved {name!r} releases {statistic!r} with {np.size(total)} total(s) of shape "
            f"{np.shape(total)}, but the table {rv.name!r} has shape {tuple(shape)}: one total "
            f"per row needs shape {tuple(rows)}{' (a single table: one number)' if not rows else ''}. "
            "Pass total= with one number per row of the table (or one number for a single table)."
        )
    n = np.broadcast_to(n.reshape(n.shape[-len(rows) :] if rows else ()), rows)
    if not np.array_equal(np.broadcast_to(n, rows), np.broadcast_to(np.asarray(total), rows)):
        raise ValueError(
            f"DPObserved {name!r} releases {statistic!r}, but the table {rv.name!r} is a "
            f"pm.{op_kind.removesuffix('RV')} with n={n.tolist()}. Give the table n=total (the "
            "declared number of people), or pass the statistic the release was made with."
        )


def _start_multinomial_table(model, statistic, data_t):
    """Give a ``pm.Multinomial`` table released by ``Cells``/``Marginals`` (fixed ``n``, no initial
    value of the user's) the most even table of each row as its initial value.

    PyMC's own start for a Multinomial (``round(n·p)`` with the rounding error put on one cell)
    fails ("Negative value in computed support_point") when many cells are small, as in tables
    of thousands of cells. Any table with the right totals is a valid start; the count sampler
    (`pymc_dp.samplers.cells.TableCells`) moves it to the releases at its first iteration.
    """
    rv = data_t[0]
    if (
        not getattr(statistic, "latent_table", False)
        or rv.owner is None
        or type(rv.owner.op).__name__ != "MultinomialRV"
        or rv not in model.free_RVs
        or model.rvs_to_initial_values.get(rv) is not None
    ):
        return
    shape = fixed_shape(rv)
    if shape is None:
        return
    k = shape[-1]
    n_graph = rv.owner.op.dist_params(rv.owner)[0]
    try:
        np.broadcast_to(np.asarray(n_graph.eval(), dtype=np.int64), shape[:-1])
    except Exception:  # noqa: BLE001 - n depends on other variables: PyMC's start stays
        return
    # a graph of n, not its value now: the start follows pm.set_data of a pm.Data total
    n = pt.broadcast_to(pt.cast(n_graph, "int64"), shape[:-1])[..., None]
    start = n // k + pt.lt(pt.arange(k), n % k)
    model.set_initval(rv, pt.cast(start, rv.dtype))


@dataclasses.dataclass(frozen=True)
class _NodeCheck:
    """The checks a new value of a ``pdp.ReleaseData`` container must pass for one node."""

    name: str
    statistic: object
    mechanism: object
    n: int | None  # None: a resizable node (its records' count is checked when it samples)
    data_names: tuple
    shape: tuple

    def __call__(self, release):
        value = np.asarray(release)
        _ValueCheck(self.name, self.statistic, self.mechanism, self.n is None, self.shape)(value)
        _check_against_release(
            self.name, release, self.statistic, self.mechanism, self.n, list(self.data_names)
        )


@dataclasses.dataclass(frozen=True)
class _ValueCheck:
    """The checks new numbers in a plain ``pm.Data`` release container must pass for one node
    (`release_data.watch_plain`): those of the release at construction; a resizable node's local
    release may change its record count."""

    name: str
    statistic: object
    mechanism: object
    resizable: bool
    shape: tuple

    def __call__(self, value):
        shape = self.shape
        if self.resizable and self.statistic.local and value.ndim:  # one entry per record
            shape = (value.shape[0], *shape[1:])
        _validate_release(self.name, value, shape, self.mechanism)


class DPObserved:
    """A privatized release of ``statistic(data)`` (pymc-extras style distribution).

    ``DPObserved(name, data, *, statistic, mechanism, observed, dims=None)`` adds the observed node
    to the model and registers it for the samplers; ``DPObserved.dist(data, *, statistic,
    mechanism)`` returns an unnamed variable.

    Parameters
    ----------
    name : str
    data : TensorVariable or tuple of TensorVariable
        The latent confidential records, record axis 0 (several arrays share it).
    statistic : pymc_dp statistic
        ``pdp.Sum``, ``pdp.Mean``, ``pdp.Counts``, ``pdp.RecordSum`` or ``pdp.Local``; for a
        latent count table (``data`` is the table: any shape, e.g. (G, K) areas),
        ``pdp.Cells`` (every cell) or ``pdp.Marginals`` (sums over chosen axes).
    mechanism : pymc_dp mechanism
        Calibrated here from the statistic's sensitivity when given ``epsilon``. Integer mechanisms
        (``DiscreteLaplace``, ``DiscreteGaussian``) need a statistic that is an integer by
        construction (integer records, integer bounds, no ``fn``; ``Counts``; ``Local`` of integers).
    observed : array_like, Release, pdp.ReleaseData or pm.Data
        The released values, shape of the statistic. A `pymc_dp.release.Release` is
        checked against the node (record count, statistic, calibrated mechanism), and so is the
        Release held by a `pdp.ReleaseData` container, again at every ``pm.set_data``. A bare
        array or a plain ``pm.Data`` carries no metadata and is taken as is. One Release may be
        observed by one node of a model only (a second would count it twice).
    dims : optional
        PyMC dims of the release.
    partition : tuple (key, cell), optional
        The disjoint group of people behind the release (e.g. ``("age_band", "30-39")``), when
        the Release does not state it: ``pdp.privacy_spent`` composes the nodes of different
        cells of one key in parallel (docs/privacy.md).

    Returns
    -------
    TensorVariable
        The observed random variable.
    """

    def __new__(
        cls, name, data, *, statistic, mechanism, observed, dims=None, partition=None, model=None
    ):
        check_float64("pdp.DPObserved")
        model = pm.modelcontext(model)
        data_t = _as_record_tensors(data, in_model=True)
        _warn_computed_data(model, name, data_t)
        n, dim, mech, shape, contributions, params, pieces = _build(data_t, statistic, mechanism)
        value = _observed_value(observed)
        _validate_release(name, value, shape, mech)
        _check_integer_mechanism(name, statistic, mech, data_t, contributions, n)
        check_not_a_table(name, statistic, data_t)
        check_domain(name, statistic, mech, data_t)
        _check_declared_total(name, statistic, data_t)
        _start_multinomial_table(model, statistic, data_t)
        data_names = [d.name for d in data_t]
        _check_against_release(name, observed, statistic, mech, n, data_names)
        meta = _release_meta(observed)
        release_id = None if meta is None else meta["release_id"]
        _check_unique(model, name, release_id)
        partition = _node_partition(name, partition, meta)
        if not isinstance(observed, SharedVariable | pt.TensorVariable):
            observed = value.astype(pieces["dtype"])
        rv = pm.CustomDist(name, *params, observed=observed, dims=dims, **pieces)
        is_container = release_info(observed) is not None
        resizable = _resizable(statistic, mechanism, mech, n, dim)
        set_spec(
            model,
            rv,
            NodeSpec(
                statistic=statistic,
                mechanism=mech,
                n=n,
                dim=dim,
                shape=shape,
                data=data_t,
                data_names=tuple(data_names),
                release_id=None if is_container else release_id,
                partition=partition,
                resizable=resizable,
            ),
        )
        if is_container:  # pm.set_data on it re-checks the new release against this node
            from pymc_dp.distributions.release_data import watch

            n_check = None if resizable else n
            watch(observed, _NodeCheck(rv.name, statistic, mech, n_check, tuple(data_names), shape))
        elif isinstance(observed, SharedVariable):  # a plain pm.Data: its new numbers checked
            from pymc_dp.distributions.release_data import watch_plain

            watch_plain(observed, _ValueCheck(rv.name, statistic, mech, resizable, shape))
        return rv

    @classmethod
    def dist(cls, data, *, statistic, mechanism, **kwargs):
        """An unnamed release variable of ``statistic(data)`` (no model needed).

        ``data`` may be PyTensor variables or fixed NumPy records. The variable is not registered
        for the samplers; use ``DPObserved(name, ...)`` inside a model for that.
        """
        data_t = _as_record_tensors(data, in_model=False)
        n, _, mech, _, contributions, params, pieces = _build(data_t, statistic, mechanism)
        _check_integer_mechanism("DPObserved.dist", statistic, mech, data_t, contributions, n)
        return pm.CustomDist.dist(*params, **pieces, **kwargs)
