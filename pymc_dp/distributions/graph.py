"""Graph questions about a PyMC model, answered in one place.

Every step, plan and check that asks which variables read which asks here:

- the records that feed the ``DPObserved`` nodes: `released_records`, `free_records`,
  `nodes_reading`, `releasing`; the latent records whose releases depend on θ: `latent_records`;
- a record's direct parents (the variables its distribution reads without looking through another
  random variable): `direct_parents`, `direct_upstream`; the terms that read θ directly (θ's
  children: the random variables and potentials whose distributions read it): `direct_children`;
- what depends on θ (or on records): `reads`, `depends_on`; which model terms other than the
  releases read the records: `other_readers`;
- everything a graph reads: `upstream`; whether it reads only constants: `is_constant`;
- a variable's shape as sampling sees it, ``dims=`` and ``pm.Data`` lengths included:
  `fixed_shape`; the values of observed variables, read without folding a cast: `value_reader`.

``graphs`` arguments take one variable or an iterable of variables. "Reads" includes the graphs
themselves (as PyTensor's ``ancestors`` does). ``nodes`` arguments are the ``{name: DPNode}``
dictionaries of `pymc_dp.dp_nodes`.
"""

from __future__ import annotations

import weakref

from pytensor.graph.basic import Constant, Variable

from pymc_dp._compat import ancestors

__all__ = [
    "depends_on",
    "direct_children",
    "direct_parents",
    "direct_upstream",
    "fixed_shape",
    "free_records",
    "is_constant",
    "latent_records",
    "names",
    "nodes_reading",
    "other_readers",
    "reads",
    "released_records",
    "releasing",
    "upstream",
    "value_reader",
]


def names(variables) -> str:
    """``'a', 'b'``: the names of ``variables`` as error messages quote them."""
    return ", ".join(repr(v.name) for v in variables)


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


def random_parents(graphs) -> list:
    """The random variables ``graphs`` read without looking through any of them (in traversal
    order, once each): e.g. ``up`` for the upper bound ``up`` or ``up + 1`` of a record's law.
    In PyMC's functional-graph form of a model the model's wrapper of the variable (its value
    attached) is returned."""
    from pymc.model.fgraph import ModelValuedVar
    from pytensor.tensor.random.op import RandomVariable

    found, stack, seen = [], list(_as_list(graphs)), set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if v.owner is not None and isinstance(v.owner.op, RandomVariable | ModelValuedVar):
            found.append(v)
            continue
        if v.owner is not None:
            stack.extend(reversed(v.owner.inputs))
    return list(dict.fromkeys(found))


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


def fixed_shape(var) -> tuple | None:
    """``var``'s shape as ``pm.sample()`` sees it: its static shape, or, when a length is left open
    by ``dims=`` or a ``pm.Data`` length (``type.shape`` holds None), the lengths those hold now
    (PyMC compiles the sampler's functions with them, so they stay fixed while it samples; a step
    built from them is rebuilt by the next ``pm.sample()``). None when a length depends on
    anything else (a random variable). The shape's graph is folded once per variable
    (`_shape_reader`); each call then reads the data it holds as they are now."""
    shape = var.type.shape
    if all(d is not None for d in shape):
        return tuple(int(d) for d in shape)
    try:
        read = _SHAPE_READERS[var]
    except KeyError:
        read, holds_var = _shape_reader(var)
        if not holds_var:  # (a reader holding var would keep it, and its data, alive)
            _SHAPE_READERS[var] = read
    return None if read is None else tuple(int(d) for d in read())


_SHAPE_READERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # var -> `_shape_reader`


def _shape_reader(var):
    """A function of no arguments returning ``var``'s shape from the data it reads now, and
    whether its graph holds ``var`` itself (a ``pm.Data`` variable's own shape). The function is
    None when the shape depends on anything but constants and data (shared variables other than
    random generators: dims lengths, ``pm.Data``), e.g. on a random variable. The shape's graph is
    constant-folded (about 20 ms, once), then compiled without rewrites or C code (Python's
    ``perform`` of a few shape ops); the data are read at each call, so after ``pm.set_data`` it
    gives the new lengths."""
    import numpy as np
    import pytensor
    from pymc.pytensorf import constant_fold
    from pytensor.compile.mode import Mode
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.tensor.random.type import RandomGeneratorType

    (folded,) = constant_fold([var.shape], raise_not_constant=False)
    if not isinstance(folded, Variable):
        value = tuple(np.asarray(folded).tolist())
        return (lambda: value), False
    graph = list(ancestors([folded]))
    for root in graph:
        if root.owner is not None or isinstance(root, Constant):
            continue
        if not isinstance(root, SharedVariable) or isinstance(root.type, RandomGeneratorType):
            return None, False
    read = pytensor.function([], folded, mode=Mode(linker="py", optimizer=None))
    return read, any(v is var for v in graph)


def value_reader(model, rvs):
    """A function of no arguments returning the values of the observed variables ``rvs`` (their
    data, ``pm.Data`` included: read afresh at each call) as flat float64 arrays, one per
    variable. The cast to float64 is NumPy's: a cast compiled into the graph is constant-folded
    by PyTensor one element at a time in Python, about a second per million released values at
    every step's construction (`DirichletHyper`, `TableCells`, the record steps)."""
    import numpy as np
    import pytensor

    fn = pytensor.function([], [model.rvs_to_values[rv] for rv in rvs])

    def read() -> list:
        return [np.asarray(v, dtype=np.float64).reshape(-1) for v in fn()]

    return read


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


def releasing(nodes, records) -> list:
    """The ``DPObserved`` nodes (in node order) that release any of ``records``."""
    records = set(records)
    return [node for node in nodes.values() if records.intersection(node.data)]


def latent_records(model, nodes, theta, *, whole_releases: bool) -> list:
    """The latent records (free, released by ``nodes``, in `released_records` order) that
    depend on ``theta``.

    ``whole_releases=True`` takes every free record of a release whose free records depend on θ
    jointly (a release's records are integrated together, ``PMMH`` / ``MHAAR``);
    ``whole_releases=False`` only the records that depend on θ themselves (``Interweave``, which
    writes those through θ-free noise).
    """
    theta = list(theta)
    if not whole_releases:
        return [d for d in free_records(model, nodes) if depends_on(d, theta)]
    found = []
    for node in nodes.values():
        free = [d for d in node.data if d in model.free_RVs]
        if free and depends_on(free, theta):
            found += [d for d in free if d not in found]
    return found


def other_readers(model, records, *, exclude=(), deterministics: bool = False) -> list:
    """``[(variable, the records it reads)]`` for every random variable and potential of ``model``
    (and deterministic, with ``deterministics=True``) that reads any of ``records``, leaving out
    ``records`` themselves and ``exclude`` (e.g. the releases of the records)."""
    records = list(records)
    skip = set(records) | set(exclude)
    terms = list(model.basic_RVs) + (list(model.deterministics) if deterministics else [])
    out = []
    for var in terms + list(model.potentials):
        if var in skip:
            continue
        hit = reads(var, records)
        if hit:
            out.append((var, hit))
    return out


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


def direct_children(model, variables) -> list:
    """The random variables and potentials of ``model`` (basic RVs in model order, then the
    potentials) whose distributions read any of ``variables`` directly, not through another
    random variable; ``variables`` themselves left out. A potential is its own term: it is a
    child when its graph reads one of ``variables`` without looking through a random variable."""
    variables = _as_list(variables)
    rvs = set(model.basic_RVs)
    out = []
    for var in list(model.basic_RVs) + list(model.potentials):
        if var in variables:
            continue
        above = direct_upstream(model, var.owner.inputs if var in rvs else [var])
        if any(v in above for v in variables):
            out.append(var)
    return out
