"""Graph questions about a PyMC model, answered in one place.

Every step, plan and check that asks which variables read which asks here:

- the records that feed the ``DPObserved`` nodes: `released_records`, `free_records`,
  `nodes_reading`;
- a record's direct parents (the variables its distribution reads without looking through another
  random variable): `direct_parents`, `direct_upstream`;
- what depends on θ (or on records): `reads`, `depends_on`;
- everything a graph reads: `upstream`; whether it reads only constants: `is_constant`.

``graphs`` arguments take one variable or an iterable of variables. "Reads" includes the graphs
themselves (as PyTensor's ``ancestors`` does). ``nodes`` arguments are the ``{name: DPNode}``
dictionaries of `pymc_dp.dp_nodes`.
"""

from __future__ import annotations

from pytensor.graph.basic import Constant, Variable

from pymc_dp._compat import ancestors

__all__ = [
    "depends_on",
    "direct_parents",
    "direct_upstream",
    "free_records",
    "is_constant",
    "nodes_reading",
    "reads",
    "released_records",
    "upstream",
]


def _as_list(graphs) -> list:
    return [graphs] if isinstance(graphs, Variable) else list(graphs)


def upstream(graphs, *, blockers=None):
    """Every variable ``graphs`` read, the graphs included; the walk stops at ``blockers``
    (which are included when reached). A set-like view in PyTensor's traversal order (so that
    what is built from it, e.g. a list of random generators to reseed, has a fixed order)."""
    blockers = None if blockers is None else list(blockers)
    return dict.fromkeys(ancestors(_as_list(graphs), blockers=blockers)).keys()


def direct_upstream(model, graphs):
    """What ``graphs`` read without looking through any random variable of ``model``."""
    return upstream(graphs, blockers=model.basic_RVs)


def reads(graphs, variables) -> list:
    """The members of ``variables`` (in their order) that ``graphs`` read."""
    found = upstream(graphs)
    return [v for v in variables if v in found]


def depends_on(graphs, variables) -> bool:
    """Whether ``graphs`` read any of ``variables``."""
    found = upstream(graphs)
    return any(v in found for v in variables)


def draws_randomly(graphs) -> bool:
    """Whether ``graphs`` read a random generator: a graph PyMC derived (``pm.icdf``, ``pm.logcdf``,
    ``pm.logp``) from a clone of a ``pm.CustomDist(dist=...)`` keeps clones of its parents that
    replacing the model's variables by their values cannot reach, so it would draw them afresh."""
    from pytensor.tensor.random.type import RandomGeneratorType

    return any(isinstance(v.type, RandomGeneratorType) for v in upstream(graphs))


def is_constant(var) -> bool:
    """Whether every root of ``var``'s graph is a constant (its value is fixed in the graph)."""
    return all(isinstance(a, Constant) for a in ancestors([var]) if a.owner is None)


def released_records(nodes) -> list:
    """The record variables the ``DPObserved`` ``nodes`` release, once each, in node order."""
    return list(dict.fromkeys(d for node in nodes.values() for d in node.data))


def free_records(model, nodes) -> list:
    """The released records that are free variables of ``model`` (the latent records)."""
    return [d for d in released_records(nodes) if d in model.free_RVs]


def nodes_reading(nodes, var) -> dict:
    """The ``DPObserved`` nodes (name → node) that release ``var`` among their records."""
    return {name: node for name, node in nodes.items() if var in node.data}


def direct_parents(model, rvs, *, continuous: bool = False) -> list:
    """The free variables of ``model`` (in model order, ``rvs`` excluded) that the distributions
    of ``rvs`` read directly, not through another random variable; ``continuous=True`` keeps the
    floating-point ones (θ of a record)."""
    rvs = _as_list(rvs)
    found = direct_upstream(model, [i for r in rvs for i in r.owner.inputs])
    return [
        v
        for v in model.free_RVs
        if v in found and v not in rvs and (not continuous or v.dtype.startswith("float"))
    ]
