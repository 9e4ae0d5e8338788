r"""The law of one latent record: which discrete distribution, its parameters, its support.

A collapsed likelihood needs the per-record probability mass function ``f(x | θ)`` over a finite
support, as a PyTensor graph of θ. `record_law` reads it off the record variable of a PyMC
model: the distribution (Bernoulli, Categorical, Binomial, Poisson, DiscreteUniform, Geometric), its
parameters (graphs of θ, checked to be the same for every record: records iid given θ, record axis
0), and its support. NegativeBinomial records are read in PyMC's ``(n, p)`` form (``mu, alpha``
become ``n = alpha, p = alpha / (mu + alpha)``). Infinite supports (Poisson, Geometric,
NegativeBinomial) are cut at ``K`` with the tail mass
``P(X ≥ K | θ)`` lumped into the last cell (exact when every statistic clamps at ``K``); see
`log_pmf`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pymc as pm
import pytensor.tensor as pt

__all__ = ["RecordLaw", "draw_tail", "finite_support", "log_pmf", "nb_shape", "record_law"]

#: a bound of a record's law that depends on discrete parameters is enumerated over at most this
#: many joint values of theirs (its extreme gives the support the collapsed likelihood covers)
MAX_BOUND_VALUES = 64

#: op name -> (PyMC distribution, parameter names, finite support?)
_KNOWN = {
    "bernoulli": (pm.Bernoulli, ("p",), True),
    "categorical": (pm.Categorical, ("p",), True),
    "binomial": (pm.Binomial, ("n", "p"), True),
    "discrete_uniform": (pm.DiscreteUniform, ("lower", "upper"), True),
    "poisson": (pm.Poisson, ("mu",), False),
    "geometric": (pm.Geometric, ("p",), False),
    "negative_binomial": (pm.NegativeBinomial, ("n", "p"), False),
}

#: parameters read as float64 (the others are integer bounds and trial counts, read as constants)
_CONTINUOUS = ("p", "mu")
#: laws whose every parameter is read as float64 (NegativeBinomial's n is a real dispersion)
_ALL_CONTINUOUS = ("negative_binomial",)


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
    #: some parameters differ between records (a covariate, per-record trials): ``params`` then
    #: holds those as (n,) graphs (categorical p: (n, K)), and ``log_pmf`` gives (n, support)
    per_record: bool = False

    @property
    def finite(self) -> bool:
        return self.high is not None


def finite_support(rv):
    """The support of a scalar discrete random variable with a finite support whose bounds are
    constants (Bernoulli, Categorical with a static number of categories, Binomial with a constant
    n, DiscreteUniform with constant bounds) as an int64 array, else None."""
    from pytensor.tensor.exceptions import NotScalarConstantError

    from pymc.model.fgraph import ModelValuedVar

    from pymc_dp.distributions.graph import is_constant

    if rv.owner is not None and isinstance(rv.owner.op, ModelValuedVar):
        rv = rv.owner.inputs[0]  # PyMC's functional-graph form: the wrapped variable
    op = getattr(rv.owner, "op", None) if rv.owner is not None else None
    kind = getattr(op, "name", None)
    if kind not in ("bernoulli", "categorical", "binomial", "discrete_uniform") or rv.ndim != 0:
        return None
    params = op.dist_params(rv.owner)

    def const(p):
        try:
            return int(pt.get_underlying_scalar_constant_value(p))
        except NotScalarConstantError:
            pass
        if not is_constant(p):
            return None
        value = np.asarray(p.eval())
        return int(value.reshape(())) if value.size == 1 else None

    if kind == "bernoulli":
        return np.arange(2, dtype=np.int64)
    if kind == "categorical":
        k = params[0].type.shape[-1]
        return None if k is None else np.arange(k, dtype=np.int64)
    if kind == "binomial":
        n = const(params[0])
        return None if n is None else np.arange(n + 1, dtype=np.int64)
    low, high = const(params[0]), const(params[1])
    if low is None or high is None or high < low:
        return None
    return np.arange(low, high + 1, dtype=np.int64)


def _constant(var, what, name, extreme=max):
    """The value of the bound ``var`` of record variable ``name``: a constant, or, when it reads
    discrete random variables with a finite support (a parameter θ of the model, e.g.
    ``x ~ DiscreteUniform(0, up)``), its ``extreme`` over their joint support: the collapsed
    likelihood then covers every value θ can take (the pmf is 0 beyond θ's own bound). A bound
    that reads any other random variable is refused (evaluating it would draw that variable)."""
    import itertools

    from pytensor.graph.replace import graph_replace
    from pytensor.tensor.exceptions import NotScalarConstantError

    from pymc_dp.distributions.graph import random_parents

    try:
        return int(pt.get_underlying_scalar_constant_value(var))
    except NotScalarConstantError:
        pass
    parents = random_parents([var])
    supports = [finite_support(p) for p in parents]
    if any(s is None for s in supports) or np.prod([len(s) for s in supports]) > MAX_BOUND_VALUES:
        bad = [p.name for p, s in zip(parents, supports) if s is None] or [p.name for p in parents]
        raise ValueError(
            f"The {what} of record variable {name!r} depends on {bad}, which are not discrete "
            f"parameters with a finite support of at most {MAX_BOUND_VALUES} joint values "
            "(Bernoulli, Categorical, Binomial or DiscreteUniform with constant bounds), so the "
            f"records' support cannot be enumerated. Use a fixed {what}."
        )
    values = []
    try:
        for combo in itertools.product(*supports):
            fixed = graph_replace(
                var,
                {p: pt.constant(v, dtype=p.dtype) for p, v in zip(parents, combo)},
                strict=False,
            )
            values.append(np.asarray(fixed.eval()))
    except Exception as err:
        raise ValueError(
            f"The {what} of record variable {name!r} must be a constant to enumerate its support, "
            f"got a graph {var}. Use a fixed {what}."
        ) from err
    if any(v.size != 1 for v in values):
        raise ValueError(
            f"The {what} of record variable {name!r} must be one number, got {values}."
        )
    return int(extreme(int(v.reshape(())) for v in values))


def record_law(rv, n: int | None = None, *, per_record: bool = False) -> RecordLaw:
    """Read the law of the record variable ``rv`` (records iid on axis 0, or, with
    ``per_record=True``, independent with parameters that may differ between records).

    Raises
    ------
    ValueError / TypeError
        Continuous or unsupported distributions, several entries per record, or parameters that
        differ between records (unless ``per_record``).
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
    core, varies = [], False
    for pname, p in zip(_KNOWN[kind][1], params):
        ndim_core = 1 if kind == "categorical" and pname == "p" else 0
        batch = p.type.shape[: p.ndim - ndim_core]
        continuous = pname in _CONTINUOUS or kind in _ALL_CONTINUOUS
        if any(b != 1 for b in batch):
            if not per_record:
                raise ValueError(
                    f"Record variable {name!r} has parameter {pname} of shape "
                    f"{tuple(p.type.shape)}: the records are not identically distributed given θ. "
                    f"Collapsed likelihoods of sums and counts need iid records (one {pname} "
                    "shared by all records; records with their own parameters are summed out "
                    "under local releases only); use pdp.DataAugmentation otherwise."
                )
            varies = True  # one value per record: (n,) (categorical p: (n, K))
            p = pt.cast(p, "float64") if continuous else p
            core.append(pt.broadcast_to(p, (int(n),) + tuple(p.shape[p.ndim - ndim_core :])))
            continue
        for _ in batch:
            p = p[0]
        # probabilities and rates in float64 whatever the model's dtype (int8 `pm.Poisson("x", 3)`,
        # float32 arrays): `n * mu` of a sum's law must not overflow or round
        core.append(pt.cast(p, "float64") if continuous else p)
    low, high, k = 0, None, None
    if kind == "bernoulli":
        high = 1
    elif kind == "categorical":
        k = core[0].type.shape[-1]
        if k is None:
            raise ValueError(
                f"The number of categories of {name!r} must be known when the model is built, "
                "but its probabilities p have no fixed length (e.g. a Dirichlet whose "
                "concentration is a pm.Data container). Give the length: pm.Data(..., shape=(K,)) "
                "for the concentration, or pytensor.tensor.specify_shape(p, (K,)) as the "
                "records' p."
            )
        high = k - 1
    elif kind == "binomial":
        high = _bound(core[0], "number of trials n", name)
    elif kind == "discrete_uniform":
        low = _bound(core[0], "lower bound", name, extreme=min)
        high = _bound(core[1], "upper bound", name)
    elif kind == "geometric":
        low = 1
    return RecordLaw(
        name=name,
        kind=kind,
        params=tuple(core),
        n=int(n),
        low=low,
        high=high,
        n_categories=k,
        per_record=varies,
    )


def _bound(var, what, name, extreme=max):
    """`_constant` of a bound, or of one bound per record (its ``extreme``: the support covers
    every record's, and each record's pmf is 0 beyond its own)."""
    if var.ndim == 0:
        return _constant(var, what, name, extreme=extreme)
    from pymc_dp.distributions.graph import is_constant

    if not is_constant(var):
        raise ValueError(
            f"The {what} of record variable {name!r} differs between records and depends on "
            f"random variables, so the records' support cannot be enumerated. Use a fixed {what}."
        )
    return int(extreme(np.asarray(var.eval()).reshape(-1)))


def nb_shape(law: RecordLaw, params):
    """``(r, p)`` with ``X − low ~ NegativeBinomial(r, p)`` for a Geometric (r = 1) or
    NegativeBinomial record law (graphs or numbers): the sum of n iid records is then
    ``n·low + NegativeBinomial(n·r, p)``."""
    if law.kind == "geometric":
        return 1.0, params[0]
    if law.kind == "negative_binomial":
        return params[0], params[1]
    raise ValueError(f"{law.kind} records have no negative-binomial form.")  # pragma: no cover


def _dist(law: RecordLaw, params=None):
    cls, names, _ = _KNOWN[law.kind]
    params = law.params if params is None else params
    if law.per_record:  # a support axis after the record axis: (n, 1) against (support,)
        params = [
            p[:, None] if p.ndim == (2 if law.kind == "categorical" and name == "p" else 1) else p
            for name, p in zip(names, params)
        ]
    return cls.dist(**dict(zip(names, params)))


def log_pmf(law: RecordLaw, support: np.ndarray, *, tail: bool, params=None):
    """``log f(x | θ)`` at the integer ``support`` (PyTensor graph of the parameters): shape
    (support,), or (n, support) for a law whose parameters differ between records.

    With ``tail=True`` the last entry is ``log P(X ≥ support[-1] | θ)`` (the lumped tail).
    """
    dist = _dist(law, params)
    values = pt.as_tensor_variable(np.asarray(support, dtype="int64"))
    logf = pm.logp(dist, values)
    if law.per_record:
        logf = pt.broadcast_to(logf, (law.n, len(support)))
    if tail:
        last = int(support[-1])
        log_tail = pt.log1mexp(pm.logcdf(dist, last - 1)) if last > law.low else pt.zeros(())
        if law.per_record:
            log_tail = pt.broadcast_to(log_tail, (law.n, 1))[:, 0]
            logf = pt.set_subtensor(logf[:, -1], log_tail)
        else:
            logf = pt.set_subtensor(logf[-1], log_tail)
    return logf


def draw_tail(kind: str, params: tuple, start: int, size: int, rng: np.random.Generator):
    """Draws of ``X | X ≥ start`` for an infinite-support record law (inverse survival function)."""
    from scipy import stats

    u = rng.random(size)
    # parameters: numbers, or one per drawn record (records with their own parameters)
    params = [np.asarray(p, dtype=np.float64) for p in params]
    if kind == "poisson":
        law = stats.poisson(params[0])
    elif kind == "geometric":
        law = stats.geom(params[0])
    elif kind == "negative_binomial":
        law = stats.nbinom(params[0], params[1])
    else:  # pragma: no cover - finite laws have no tail
        raise ValueError(f"{kind} has a finite support.")
    sf = law.sf(start - 1)
    x = law.isf(u * sf)
    return np.maximum(np.asarray(x, dtype=np.int64), start)
