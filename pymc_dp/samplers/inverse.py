r"""Records as functions of uniforms, and small finite supports (seed 001, Algorithms 7–8).

z-space MHAAR writes each record as `x = F_\theta^{-1}(z)` with θ-free uniforms `z`.
For continuous records this is PyMC's ``icdf``. For integer records (Bernoulli, Categorical,
Binomial, Poisson, Geometric, DiscreteUniform, ...) it is the *generalised* inverse

```text
F_\theta^{-}(z) = \min\{k \in \mathbb Z : F_\theta(k) \ge z\},
```

computed here from PyMC's ``logcdf`` by an exponential search for a bracket followed by bisection
(vectorised over particles and records: O(log k) compiled calls). If `z \sim U(0, 1)` then
`F_\theta^{-}(z) \sim f(\cdot \mid \theta)`, and the uniform behind a given record is
`z \sim U(F_\theta(x - 1), F_\theta(x))` (uniform within the atom).

`RecordInverse` assembles these maps for every record variable of a latent block (the
z-space of MHAAR: continuous records through PyMC's ``icdf``/``logcdf``, integer ones through
`SupportInverse` or `DiscreteInverse`). `finite_support` lists the values of a record with a small known support (Bernoulli,
Categorical, Binomial with a fixed n, DiscreteUniform with fixed bounds), over which local
likelihoods are summed exactly.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.logprob.utils import replace_rvs_by_values
from pymc.pytensorf import compile as pm_compile
from pytensor.graph.replace import vectorize_graph

from pymc_dp.distributions.graph import depends_on, draws_randomly, names

__all__ = ["RecordInverse", "DiscreteInverse", "SupportInverse", "finite_support"]

_MAX_DOUBLINGS = 62


class DiscreteInverse:
    """Generalised inverse CDF of one integer record variable, batched over a leading particle axis.

    Parameters
    ----------
    model : pm.Model
    rv : TensorVariable
        The integer record RV (its parents are replaced by their value variables).
    others_v, others_t : dict
        ``rvs_to_values`` / ``rvs_to_transforms`` of the non-record variables.
    """

    def __init__(self, model, rv, others_v, others_t):
        k = pt.tensor(f"{rv.name}_k", dtype="int64", shape=rv.type.shape)
        logcdf = pm.logcdf(rv, k)  # NotImplementedError if PyMC has none
        (logcdf,) = replace_rvs_by_values(
            [logcdf], rvs_to_values=others_v, rvs_to_transforms=others_t
        )
        if draws_randomly([logcdf]):  # derived from a clone (pm.CustomDist(dist=...))
            raise NotImplementedError("its CDF is derived from a copy of the model's graph")
        kb = pt.tensor(f"{rv.name}_kb", dtype="int64", shape=(None, *rv.type.shape))
        batched = vectorize_graph(pt.cast(logcdf, "float64"), replace={k: kb})
        self._logcdf = pm_compile(model.value_vars + [kb], batched, on_unused_input="ignore")
        self.name = rv.name

    def cdf(self, args, k) -> np.ndarray:
        """`F_\\theta(k)` for integer ``k`` of shape ``(M, *record shape)``."""
        return np.exp(np.asarray(self._logcdf(*args, np.asarray(k, dtype=np.int64)), dtype=float))

    def icdf(self, args, z) -> np.ndarray:
        r"""``min{k : F(k) >= z}`` elementwise for uniforms ``z`` of shape ``(M, *record shape)``."""
        z = np.maximum(np.asarray(z, dtype=float), np.finfo(float).tiny)
        lo = np.full(z.shape, -1, dtype=np.int64)  # invariant: F(lo) < z
        hi = np.zeros(z.shape, dtype=np.int64)  # invariant: F(hi) >= z
        for _ in range(_MAX_DOUBLINGS):
            below = self.cdf(args, lo) >= z
            if not below.any():
                break
            lo = np.where(below, 2 * lo, lo)
        for _ in range(_MAX_DOUBLINGS):
            short = self.cdf(args, hi) < z
            if not short.any():
                break
            hi = np.where(short, 2 * hi + 1, hi)
        else:
            raise ValueError(
                f"The generalised inverse CDF of the records {self.name!r} found no k with "
                "F(k) >= z below 2^62: the record distribution's logcdf never reaches 1 (check its "
                "parameters)."
            )
        lo = np.minimum(lo, hi - 1)
        while np.any(hi - lo > 1):
            mid = lo + (hi - lo) // 2
            ok = self.cdf(args, mid) >= z
            hi = np.where(ok, mid, hi)
            lo = np.where(ok, lo, mid)
        return hi


class SupportInverse:
    r"""Generalised inverse CDF of an integer record with a small finite ``support``, from its pmf.

    The CDF is the cumulative sum of `f(v_k \mid \theta)` over the sorted support (PyMC's
    ``logcdf`` is not used: e.g. its DiscreteUniform CDF is 0 at the lower bound).
    """

    def __init__(self, model, rv, others_v, others_t, support):
        v = pt.tensor(f"{rv.name}_v", dtype=rv.dtype, shape=rv.type.shape)
        logp = pm.logp(rv, v)
        (logp,) = replace_rvs_by_values([logp], rvs_to_values=others_v, rvs_to_transforms=others_t)
        if draws_randomly([logp]):  # derived from a clone (pm.CustomDist(dist=...))
            raise ValueError(
                f"z-space needs the pmf of the records {rv.name!r} given θ, but PyMC derives it "
                "from a copy of the model's graph (pm.CustomDist(dist=...)) whose parameters "
                "cannot be fixed. Use space='u' or PMMH."
            )
        vb = pt.tensor(f"{rv.name}_vb", dtype=rv.dtype, shape=(None, *rv.type.shape))
        batched = vectorize_graph(pt.cast(logp, "float64"), replace={v: vb})
        self._logp = pm_compile(model.value_vars + [vb], batched, on_unused_input="ignore")
        self.support = np.asarray(support)
        self._shape = None
        self.name = rv.name

    def _table(self, args, shape):
        vals = np.broadcast_to(
            self.support.reshape((-1,) + (1,) * len(shape)), (self.support.size, *shape)
        )
        pmf = np.exp(np.asarray(self._logp(*args, np.ascontiguousarray(vals)), dtype=float))
        return np.cumsum(pmf, axis=0)  # (K, *shape)

    def cdf(self, args, k) -> np.ndarray:
        """`F_\theta(k)` for integer ``k`` of shape ``(M, *record shape)``."""
        k = np.asarray(k)
        table = self._table(args, k.shape[1:])
        idx = np.searchsorted(self.support, k, side="right")  # support values <= k
        padded = np.concatenate([np.zeros((1, *table.shape[1:])), table])
        return np.take_along_axis(padded[None], idx[:, None], axis=1)[:, 0]

    def icdf(self, args, z) -> np.ndarray:
        """``min{v in support : F(v) >= z}`` elementwise for ``z`` of shape ``(M, *record shape)``."""
        z = np.asarray(z, dtype=float)
        table = self._table(args, z.shape[1:])
        idx = (table[None] < z[:, None]).sum(axis=1)
        return self.support[np.minimum(idx, self.support.size - 1)]


def _constant(var, model):
    """``var``'s value if it depends on no random variable of the model, else None."""
    if depends_on(var, model.basic_RVs):
        return None
    try:
        return np.asarray(var.eval())
    except Exception:  # noqa: BLE001  # pragma: no cover - not evaluable without inputs
        return None


def finite_support(rv, model, max_support: int):
    """The sorted integer support of the record ``rv`` if small and known, else ``None``.

    Known: Bernoulli; Categorical (``p`` of static length); Binomial with ``n`` not random;
    DiscreteUniform with bounds not random. At most ``max_support`` values.
    """
    if rv.owner is None or not str(rv.dtype).startswith(("int", "uint", "bool")):
        return None
    op = rv.owner.op
    kind = type(op).__name__
    try:
        params = op.dist_params(rv.owner)
    except Exception:  # noqa: BLE001  # pragma: no cover - not a RandomVariable
        return None
    values = None
    if kind == "BernoulliRV":
        values = np.arange(2)
    elif kind == "CategoricalRV":
        k = params[0].type.shape[-1]
        values = None if k is None else np.arange(int(k))
    elif kind == "BinomialRV":
        n = _constant(params[0], model)
        values = None if n is None else np.arange(int(np.max(n)) + 1)
    elif kind == "DiscreteUniformRV":
        lower, upper = _constant(params[0], model), _constant(params[1], model)
        if lower is not None and upper is not None:
            values = np.arange(int(np.min(lower)), int(np.max(upper)) + 1)
    if values is None or values.size > max_support:
        return None
    return values.astype(rv.dtype)


class RecordInverse:
    r"""The z-space maps of a latent block: `x = F_\theta^{-1}(z)` and the uniforms behind ``x``.

    Per record variable: a `SupportInverse` (small finite support), a
    `DiscreteInverse` (other integer records), or PyMC's ``icdf`` compiled in value space
    (transform applied) and ``logcdf`` for continuous records. ``args`` of the methods are the
    values of ``model.value_vars`` in order (the latent block's inputs).

    Parameters
    ----------
    model : pm.Model
    record_rvs : list
        The record variables, none depending on another (θ-free uniforms map each one alone).
    value_names : list of str
        Their value variables' names (keys of a point).
    owner : str
        Sampler name for messages.
    max_support : int
        Largest finite support enumerated by `SupportInverse`.
    """

    def __init__(self, model, record_rvs, value_names, *, owner="MHAAR", max_support=64):
        self.model, self.record_rvs, self.value_names = model, list(record_rvs), list(value_names)
        records = set(record_rvs)
        others_v = {rv: v for rv, v in model.rvs_to_values.items() if rv not in records}
        others_t = {
            rv: t
            for rv, t in model.rvs_to_transforms.items()
            if rv not in records and t is not None
        }
        recs = self.record_rvs
        linked = [o for o in recs for r in recs if o is not r and depends_on(o, [r])]
        if linked:
            raise ValueError(
                f"{owner} z-space (seed 001 Algorithms 7-8) maps θ-free uniforms through each "
                f"record's icdf, but {names(linked)} depends on another "
                "record variable. Use space='u' or pdp.PMMH for records drawn jointly."
            )
        self.kinds = []  # per record RV: a DiscreteInverse / SupportInverse, or None (PyMC icdf)
        zs, xs = [], []
        for rv in recs:
            if str(rv.dtype).startswith(("int", "uint", "bool")):
                support = finite_support(rv, model, max_support)
                if support is not None:
                    self.kinds.append(SupportInverse(model, rv, others_v, others_t, support))
                    continue
                try:
                    self.kinds.append(DiscreteInverse(model, rv, others_v, others_t))
                except NotImplementedError as err:
                    raise ValueError(
                        f"{owner} z-space needs the CDF of the integer records {rv.name!r} "
                        f"({rv.owner.op}), which PyMC lacks ({err}). Use space='u' or PMMH."
                    ) from None
                continue
            self.kinds.append(None)
            z = pt.tensor(f"{rv.name}_z", dtype="float64", shape=(None, *rv.type.shape))
            try:
                x = pm.icdf(rv, z)
            except NotImplementedError as err:
                raise ValueError(
                    f"{owner} z-space (x = F_θ^-1(z), seed 001 Algorithm 7) needs PyMC's icdf "
                    f"of the records, which {rv.name!r} ({rv.owner.op}) lacks ({err}). Use "
                    "space='u' or PMMH."
                ) from None
            (x,) = replace_rvs_by_values([x], rvs_to_values=others_v, rvs_to_transforms=others_t)
            if draws_randomly([x]):  # derived from a clone of the graph: θ would be redrawn
                raise ValueError(
                    f"{owner} z-space (x = F_θ^-1(z), seed 001 Algorithm 7) needs PyMC's icdf "
                    f"of the records given θ, but PyMC derives the icdf of {rv.name!r} "
                    f"({rv.owner.op}) from a copy of the model's graph (pm.CustomDist(dist=...)) "
                    "whose parameters cannot be fixed. Use space='u' or PMMH."
                )
            tr = model.rvs_to_transforms.get(rv)
            if tr is not None:
                x = tr.forward(x, *rv.owner.inputs)
                (x,) = replace_rvs_by_values(
                    [x], rvs_to_values=others_v, rvs_to_transforms=others_t
                )
            zs.append(z)
            xs.append(pt.cast(x, rv.dtype))
        self._icdf = pm_compile(model.value_vars + zs, xs, on_unused_input="ignore") if zs else None
        self._cdf = None

    def icdf(self, args, zs):
        """Records (value space) for uniforms ``zs`` (one (N, n, ...) array per record RV)."""
        cont = [z for z, kind in zip(zs, self.kinds) if kind is None]
        cont_x = iter(self._icdf(*args, *cont) if cont else [])
        out = []
        for rv, z, kind in zip(self.record_rvs, zs, self.kinds):
            x = next(cont_x) if kind is None else kind.icdf(args, z)
            out.append(np.asarray(x).astype(rv.dtype, copy=False))
        return out

    def z_of(self, args, point, rng):
        """Uniforms generating the records in ``point``: F_θ(x) for continuous records, uniform on
        (F_θ(x-1), F_θ(x)] (within the atom) for integer ones."""
        zs = []
        for name, kind in zip(self.value_names, self.kinds):
            x = np.asarray(point[name])
            if kind is None:
                zs.append(None)
                continue
            hi = kind.cdf(args, x[None])[0]
            lo = kind.cdf(args, x[None] - 1)[0]
            zs.append(lo + (hi - lo) * rng.random(x.shape))
        if any(z is None for z in zs):
            vals = iter(self._continuous_cdf()(*args))
            zs = [np.exp(np.asarray(next(vals), dtype=float)) if z is None else z for z in zs]
        return zs

    def _continuous_cdf(self):
        if self._cdf is None:
            model = self.model
            rvs = [rv for rv, kind in zip(self.record_rvs, self.kinds) if kind is None]
            graphs = [pm.logcdf(rv, rv) for rv in rvs]
            graphs = replace_rvs_by_values(
                graphs, rvs_to_values=model.rvs_to_values, rvs_to_transforms=model.rvs_to_transforms
            )
            self._cdf = pm_compile(model.value_vars, graphs, on_unused_input="ignore")
        return self._cdf
