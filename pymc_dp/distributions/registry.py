"""What pymc-dp knows about a PyMC model, read back from the model's own graph.

``DPObserved`` stores what it knows about a release node (statistic, calibrated mechanism, ``n``,
the names of its record variables, the release's identity and partition) as a `NodeSpec` on
the class of the node's ``CustomDist`` op (a class PyMC creates for each node). Every copy of the
model keeps that op — ``pm.model.fgraph.clone_model``, ``pm.do``, ``pm.observe``, ``marginalize``,
cloudpickle — so `dp_nodes` finds the nodes of any copy by walking its observed variables,
and the samplers, ``privacy_spent`` and ``pm.sample()``'s step assignment see the same releases on
the copy as on the original. Nested models (``pm.Model("sub")`` inside another) are covered: a
node belongs to its sub-model and to every model above it.

``pm.sample()``'s step assignment asks `model_of` which model a record variable belongs to
(PyMC hands a step's ``competence`` the variable only): the model context, else a model seen
before by `dp_nodes` (held weakly).
"""

from __future__ import annotations

import dataclasses
import warnings
import weakref

import pymc as pm

from pymc_dp._checks import model_context

__all__ = [
    "NodeSpec",
    "dp_nodes",
    "get_extra",
    "model_of",
    "node_spec",
    "release_info",
    "set_extra",
    "set_nodes",
    "set_spec",
]

_EXTRA: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {key: value}
_SEEN: weakref.WeakSet = weakref.WeakSet()  # models dp_nodes has read (found by model_of)


@dataclasses.dataclass(frozen=True)
class NodeSpec:
    """What ``DPObserved`` knows about one node, kept on its op class (so on every copy).

    ``data`` are the record tensors the node was built from; a copy of the model resolves them by
    ``data_names`` (its own variables of those names), and keeps unnamed constants as they are.
    """

    statistic: object
    mechanism: object  # calibrated
    n: int
    dim: int
    shape: tuple
    data: tuple
    data_names: tuple
    release_id: str | None = None
    partition: tuple | None = None
    resizable: bool = False  # exact for any record count (see `_node`)


def set_spec(model, rv, spec: NodeSpec) -> None:
    """Attach ``spec`` to the op class of the ``DPObserved`` variable ``rv`` (one class per node)
    and remember ``model`` and the models above it for `model_of`."""
    type(rv.owner.op)._pdp_spec = spec
    while model is not None:
        _SEEN.add(model)
        model = model.parent


def node_spec(rv) -> NodeSpec | None:
    """The `NodeSpec` of ``rv`` if it is a ``DPObserved`` node, else None."""
    owner = getattr(rv, "owner", None)
    return None if owner is None else getattr(type(owner.op), "_pdp_spec", None)


def release_info(observed) -> dict | None:
    """Release metadata carried by a ``pdp.ReleaseData`` container (None for anything else)."""
    return getattr(getattr(observed, "tag", None), "pdp_release", None)


def _resolve(model, spec):
    out = []
    for tensor, name in zip(spec.data, spec.data_names):
        found = model.named_vars.get(name) if name is not None else None
        out.append(tensor if found is None else found)
    return tuple(out)


def _node(model, rv, spec):
    from pymc_dp.distributions.dp_observed import DPNode

    rid, part = spec.release_id, spec.partition
    info = release_info(model.rvs_to_values.get(rv))
    if info is not None:  # a ReleaseData container: the release it holds now
        rid, part = info["release_id"], info["partition"] if part is None else part
    data = _resolve(model, spec)
    n, shape = _records_now(rv, spec, data, info)
    return DPNode(
        rv=rv,
        data=data,
        statistic=spec.statistic,
        mechanism=spec.mechanism,
        n=n,
        dim=spec.dim,
        shape=shape,
        release_id=rid,
        partition=part,
    )


def _records_now(rv, spec, data, info):
    """The node's record count and release shape as ``pm.sample()`` sees them now.

    Records written with ``dims=`` or a ``pm.Data`` length can be resized by ``pm.set_data(...,
    coords=)`` after the node was built. A node whose noise and scale do not depend on the record
    count (``spec.resizable``: ``Sum``, ``Counts``, ``Local``, ...) follows the new count; one
    whose do (``Mean``: sensitivity and factor 1/n) is refused by name, since its density in the
    model's graph was calibrated for the old count. A count table (``Cells``) reads its sizes in
    its own steps.
    """
    from pymc_dp.distributions.graph import fixed_shape

    n, shape = spec.n, spec.shape
    if getattr(spec.statistic, "latent_table", False):
        return n, shape
    now = fixed_shape(data[0])
    if now is not None and now and now[0] != n:
        names = list(spec.data_names)
        if not spec.resizable:
            raise ValueError(
                f"the records {names} of DPObserved {rv.name!r} now hold {now[0]} records (resized "
                f"by model.set_dim or pm.set_data after the node was built for n={n}), but {spec.statistic!r} "
                f"under {spec.mechanism!r} was calibrated for n={n}: its noise or its scale "
                "depends on the number of records, and the model's density of the release keeps "
                "the old calibration. Build the model again for the new records (a function "
                "that builds the model from the data), or release a statistic whose calibration "
                "does not depend on n (e.g. pdp.Sum instead of pdp.Mean)."
            )
        n = now[0]
        if spec.statistic.local:
            shape = (n, *shape[1:])
    if info is not None and info.get("n") is not None and int(info["n"]) != n:
        raise ValueError(
            f"DPObserved {rv.name!r} observes a Release computed from n={info['n']} records, but "
            f"its records {list(spec.data_names)} now hold n={n} records. Set the release made "
            "from these records (pdp.set_release), or resize the records to the release's n "
            "(pm.set_data(..., coords=))."
        )
    return n, shape


def dp_nodes(model=None) -> dict:
    """The ``DPObserved`` nodes of ``model`` and of its sub-models (full name → ``DPNode``)."""
    model = model_context(model, owner="pdp.dp_nodes")
    _SEEN.add(model)
    nodes = {}
    for rv in list(model.observed_RVs) + list(model.free_RVs):
        spec = node_spec(rv)
        if spec is not None:
            nodes[rv.name] = _node(model, rv, spec)
    return nodes


def set_nodes(model, nodes: dict) -> None:
    """Make ``model`` (a rewritten copy of another model) known to `model_of`.

    The nodes themselves are read from the copy's graph (the ops it kept); ``nodes`` must be
    among them: a node that is not in the graph cannot be kept by a name.
    """
    found = dp_nodes(model)
    missing = sorted(set(nodes) - set(found))
    if missing:
        raise ValueError(
            f"set_nodes got nodes {missing} that are not DPObserved variables of the model; the "
            "nodes of a model are read from its graph. Keep the DPObserved variables in the copy."
        )


def model_of(var):
    """The model whose variables include ``var`` (None if unknown).

    The model context wins when it holds ``var``; otherwise the models seen by `dp_nodes`
    (every model ``DPObserved`` was called in, and copies read since) are searched. A record
    variable of a ``DPObserved`` node whose model is unknown (a copy sampled with
    ``pm.sample(model=copy)`` outside ``with copy:``) gets a warning, not a silent default.
    """
    try:
        model = pm.modelcontext(None)
    except TypeError:
        model = None
    if model is not None and var in model.basic_RVs:
        return model
    for candidate in list(_SEEN):
        if var in candidate.basic_RVs:
            return candidate
    if getattr(var, "name", None) and any(_same_records(var, s) for s in _live_specs()):
        warnings.warn(
            f"{var.name!r} has the name of the records of a DPObserved node, but its model is not "
            "known to pymc-dp (a copy made by clone_model, pm.do or pm.observe and sampled with "
            "pm.sample(model=copy) outside a model context), so pm.sample() leaves it to PyMC's "
            "default samplers. Sample inside `with copy: pm.sample()`, or call "
            "pdp.dp_nodes(copy) once before pm.sample(model=copy).",
            UserWarning,
            stacklevel=3,
        )
    return None


def _same_records(var, spec):
    """Whether ``var`` looks like a copy of one of the record variables of ``spec``."""
    for data, name in zip(spec.data, spec.data_names):
        if (
            name == var.name
            and data.type == var.type
            and data.owner is not None
            and var.owner is not None
            and type(data.owner.op) is type(var.owner.op)
        ):
            return True
    return False


def _live_specs():
    for model in list(_SEEN):
        for rv in model.observed_RVs:
            spec = node_spec(rv)
            if spec is not None:
                yield spec


def set_extra(model, key: str, value) -> None:
    """Attach package data to ``model`` (e.g. what ``marginalize`` needs to recover records)."""
    _EXTRA.setdefault(model, {})[key] = value


def get_extra(model, key: str, default=None):
    return _EXTRA.get(model, {}).get(key, default)
