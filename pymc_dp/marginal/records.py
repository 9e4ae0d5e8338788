r"""The law of one latent record: which discrete distribution, its parameters, its support.

A collapsed likelihood needs the per-record probability mass function ``f(x | θ)`` over a finite
support, as a PyTensor graph of θ. `record_law` reads it off the record variable of a PyMC
model: the distribution (Bernoulli, Categorical, Binomial, Poisson, DiscreteUniform, Geometric), its
parameters (graphs of θ, checked to be the same for every record: records iid given θ, record axis
0), and its support. Infinite supports (Poisson, Geometric) are cut at ``K`` with the tail mass
``P(X ≥ K | θ)`` lumped into the last cell (exact when every statistic clamps at ``K``); see
`log_pmf`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pymc as pm
import pytensor.tensor as pt

__all__ = ["RecordLaw", "draw_tail", "log_pmf", "record_law"]

#: op name -> (PyMC distribution, parameter names, finite support?)
_KNOWN = {
    "bernoulli": (pm.Bernoulli, ("p",), True),
    "categorical": (pm.Categorical, ("p",), True),
    "binomial": (pm.Binomial, ("n", "p"), True),
    "discrete_uniform": (pm.DiscreteUniform, ("lower", "upper"), True),
    "poisson": (pm.Poisson, ("mu",), False),
    "geometric": (pm.Geometric, ("p",), False),
}

#: parameters read as float64 (the others are integer bounds and trial counts, read as constants)
_CONTINUOUS = ("p", "mu")


@dataclasses.dataclass(frozen=True)
class RecordLaw:
    """One record variable's law: ``kind``, scalar parameter graphs and support facts."""

    name: str
    kind: str
    params: tuple  # per-record (core) parameter graphs of θ
    n: int  # number of records
    low: int  # smallest support point
    high: int | None  # largest support point (None: infinite support)
    n_categories: int | None = None

    @property
    def finite(self) -> bool:
        return self.high is not None


def _constant(var, what, name):
    from pytensor.tensor.exceptions import NotScalarConstantError

    try:
        return int(pt.get_underlying_scalar_constant_value(var))
    except NotScalarConstantError:
        pass
    try:
        value = np.asarray(var.eval())
    except Exception as err:
        raise ValueError(
            f"The {what} of record variable {name!r} must be a constant to enumerate its support, "
            f"got a graph {var}. Use a fixed {what}."
        ) from err
    if value.size != 1:
        raise ValueError(f"The {what} of record variable {name!r} must be one number, got {value}.")
    return int(value.reshape(()))


def record_law(rv, n: int | None = None) -> RecordLaw:
    """Read the law of the record variable ``rv`` (records iid on axis 0).

    Raises
    ------
    ValueError / TypeError
        Continuous or unsupported distributions, several entries per record, or parameters that
        differ between records.
    """
    name = rv.name
    node = rv.owner
    op = getattr(node, "op", None) if node is not None else None
    kind = getattr(op, "name", None)
    if kind not in _KNOWN:
        dist = type(op).__name__ if op is not None else type(rv).__name__
        if rv.dtype.startswith("float"):
            raise TypeError(
                f"Record variable {name!r} is continuous ({dist}); collapsed likelihoods need "
                "discrete records with an enumerable support. Sample the records with "
                "pdp.DataAugmentation instead."
            )
        if kind == "multinomial":
            raise TypeError(
                f"Record variable {name!r} is a latent count table ({dist}); collapsed "
                f"likelihoods support records of {sorted(_KNOWN)}. A table released by "
                "pdp.Cells / pdp.Marginals is sampled cell by cell by pdp.TableCells, which "
                "pm.sample() picks by itself."
            )
        raise TypeError(
            f"Record variable {name!r} has distribution {dist}; collapsed likelihoods support "
            f"{sorted(_KNOWN)}. Sample the records with pdp.DataAugmentation instead."
        )
    if rv.ndim != 1:
        raise ValueError(
            f"Record variable {name!r} has shape {tuple(rv.type.shape)}; collapsed likelihoods need "
            "one scalar (or category) per record, shape (n,)."
        )
    if n is None:
        n = rv.type.shape[0]
    if n is None:
        n = int(rv.shape[0].eval())
    params = op.dist_params(node)
    core = []
    for pname, p in zip(_KNOWN[kind][1], params):
        ndim_core = 1 if kind == "categorical" and pname == "p" else 0
        batch = p.type.shape[: p.ndim - ndim_core]
        if any(b != 1 for b in batch):
            raise ValueError(
                f"Record variable {name!r} has parameter {pname} of shape {tuple(p.type.shape)}: the "
                "records are not identically distributed given θ. Collapsed likelihoods need iid "
                f"records (one {pname} shared by all records); use pdp.DataAugmentation otherwise."
            )
        for _ in batch:
            p = p[0]
        # probabilities and rates in float64 whatever the model's dtype (int8 `pm.Poisson("x", 3)`,
        # float32 arrays): `n * mu` of a sum's law must not overflow or round
        core.append(pt.cast(p, "float64") if pname in _CONTINUOUS else p)
    low, high, k = 0, None, None
    if kind == "bernoulli":
        high = 1
    elif kind == "categorical":
        k = core[0].type.shape[-1]
        if k is None:
            raise ValueError(
                f"The number of categories of {name!r} must be fixed (static shape of p)."
            )
        high = k - 1
    elif kind == "binomial":
        high = _constant(core[0], "number of trials n", name)
    elif kind == "discrete_uniform":
        low = _constant(core[0], "lower bound", name)
        high = _constant(core[1], "upper bound", name)
    elif kind == "geometric":
        low = 1
    return RecordLaw(
        name=name, kind=kind, params=tuple(core), n=int(n), low=low, high=high, n_categories=k
    )


def _dist(law: RecordLaw, params=None):
    cls, names, _ = _KNOWN[law.kind]
    params = law.params if params is None else params
    return cls.dist(**dict(zip(names, params)))


def log_pmf(law: RecordLaw, support: np.ndarray, *, tail: bool, params=None):
    """``log f(x | θ)`` at the integer ``support`` (PyTensor graph of the parameters).

    With ``tail=True`` the last entry is ``log P(X ≥ support[-1] | θ)`` (the lumped tail).
    """
    dist = _dist(law, params)
    values = pt.as_tensor_variable(np.asarray(support, dtype="int64"))
    logf = pm.logp(dist, values)
    if tail:
        last = int(support[-1])
        log_tail = pt.log1mexp(pm.logcdf(dist, last - 1)) if last > law.low else pt.zeros(())
        logf = pt.set_subtensor(logf[-1], log_tail)
    return logf


def draw_tail(kind: str, params: tuple, start: int, size: int, rng: np.random.Generator):
    """Draws of ``X | X ≥ start`` for an infinite-support record law (inverse survival function)."""
    from scipy import stats

    u = rng.random(size)
    if kind == "poisson":
        law = stats.poisson(float(params[0]))
    elif kind == "geometric":
        law = stats.geom(float(params[0]))
    else:  # pragma: no cover - finite laws have no tail
        raise ValueError(f"{kind} has a finite support.")
    sf = law.sf(start - 1)
    x = law.isf(u * sf)
    return np.maximum(np.asarray(x, dtype=np.int64), start)
