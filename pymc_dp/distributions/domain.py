"""Do the records' values lie in the statistic's domain? Checked when a ``DPObserved`` node is built.

``pdp.Counts(K)`` counts the codes ``0..K-1`` and ``pdp.RandomizedResponse(n_categories=K)``
randomizes a code in ``0..K-1``. A record outside that range would be dropped silently (a count)
or given a density that means nothing (randomized response of a real number), so the model's
records must be integers whose support lies inside it. The support is read from the records'
PyMC distribution:

| records | support |
|---|---|
| ``pm.Bernoulli`` | 0, 1 |
| ``pm.Categorical(p)`` | 0 .. len(p) − 1 |
| ``pm.Binomial(n, ·)``, ``pm.BetaBinomial(·, ·, n)`` | 0 .. max n (n fixed) |
| ``pm.DiscreteUniform(lower, upper)`` | lower .. upper (fixed) |
| ``pm.Poisson``, ``pm.NegativeBinomial``, ``pm.Geometric`` | unbounded above |
| fixed records (a constant) | their values |
| a real-valued variable | not a code |

Other integer distributions (``pm.CustomDist``, mixtures) have no support pymc-dp can read and are
accepted as they are. The statistic's own clamp (``Local(lower, upper)``) narrows the support.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

__all__ = ["check_domain", "record_support"]

_BOUNDED_ABOVE_BY_N = {"binomial": 0, "beta_binomial": 0}  # op name -> index of n in the params
_UNBOUNDED = {"poisson": 0, "negative_binomial": 0, "geometric": 1}  # op name -> lowest value


def _constant(var):
    """The value of ``var`` when it is fixed in the graph (a constant), else None."""
    if isinstance(var, pt.TensorConstant):
        return np.asarray(var.data)
    try:
        from pymc_dp.distributions.graph import is_constant

        if is_constant(var):
            return np.asarray(var.eval())
    except Exception:  # noqa: BLE001 - not evaluable: not fixed
        return None
    return None


def _params(node):
    op = node.op
    return list(op.dist_params(node)) if hasattr(op, "dist_params") else list(node.inputs[2:])


def record_support(var):
    """``(low, high)`` of the values ``var`` can take (``high`` None: unbounded), ``"real"`` for a
    real-valued variable, or None when the support cannot be read (see the module table)."""
    if not str(var.dtype).startswith(("int", "uint", "bool")):
        return "real"
    fixed = _constant(var)
    if fixed is not None:
        return (int(fixed.min()), int(fixed.max())) if fixed.size else None
    node = var.owner
    name = getattr(getattr(node, "op", None), "name", None)
    if name is None:
        return None
    if name == "bernoulli":
        return (0, 1)
    if name == "categorical":
        k = _params(node)[0].type.shape[-1]
        if k is None:
            try:
                k = int(_params(node)[0].shape[-1].eval())
            except Exception:  # noqa: BLE001 - symbolic length: unknown support
                return None
        return (0, int(k) - 1)
    if name in _BOUNDED_ABOVE_BY_N:
        n = _constant(_params(node)[_BOUNDED_ABOVE_BY_N[name]])
        return (0, None if n is None else int(np.max(n)))
    if name == "discrete_uniform":
        lo, hi = (_constant(p) for p in _params(node)[:2])
        if lo is None or hi is None:
            return None
        return (int(np.min(lo)), int(np.max(hi)))
    if name in _UNBOUNDED:
        return (_UNBOUNDED[name], None)
    return None


def _domain(statistic, mechanism):
    """``K`` when the node needs codes ``0..K-1`` (Counts(K), randomized response), else None."""
    k = getattr(statistic, "n_categories", None)
    if k is None and statistic.local:
        k = getattr(mechanism, "n_categories", None)
    return None if k is None else int(k)


_TABLES = ("multinomial", "dirichlet_multinomial")  # a draw is a table of counts over cells


#: records that are one category code per person (a table statistic would read codes as counts;
#: a Bernoulli "code" is a count of 0 or 1 people, so Bernoulli cells are a table)
_CODES = ("categorical",)


def check_not_a_table(name, statistic, data_t) -> None:
    """Refuse a record statistic of a single count table (a 1-D ``pm.Multinomial`` or
    ``pm.DirichletMultinomial``): its axis 0 holds the table's cells, not records, so e.g.
    ``Counts(K)`` would read each cell's count as one person's category code. And the converse:
    a table statistic (``Cells`` / ``Marginals``) of category codes, which it would read as the
    counts of cells."""
    if getattr(statistic, "latent_table", False):
        for d in data_t:
            op_name = getattr(getattr(d.owner, "op", None), "name", None)
            if op_name in _CODES:
                raise ValueError(
                    f"DPObserved {name!r}: {d.name!r} holds {op_name} records (one category code "
                    f"per person), but {statistic!r} reads its entries as the counts of a table's "
                    "cells (a code of 2 would count as 2 people). Release the records' counts "
                    "with statistic=pdp.Counts(K); or model the table of counts itself "
                    "(pm.Multinomial(n=N, p=...)) and release it with pdp.Cells()."
                )
        return
    for d in data_t:
        node = d.owner
        op_name = getattr(getattr(node, "op", None), "name", None)
        if op_name in _TABLES and d.ndim == 1:
            raise ValueError(
                f"DPObserved {name!r}: {d.name!r} is a {type(node.op).__name__.removesuffix('RV')} "
                f"count table (one draw: its entries are the counts of its cells, not records), "
                f"but {statistic!r} reads axis 0 as records (e.g. each count as one person's "
                "category). Release the table with statistic=pdp.Cells() (every cell) or "
                "pdp.Marginals(keep) (a margin); for records, model one categorical code per "
                "person (pm.Categorical) and release pdp.Counts(K)."
            )


def check_domain(name, statistic, mechanism, data_t) -> None:
    """Refuse records whose support is not inside the codes ``0..K-1`` the node needs."""
    k = _domain(statistic, mechanism)
    if k is None or getattr(statistic, "fn", None) is not None:
        return
    if statistic.local:
        what, bigger = f"{type(mechanism).__name__}(n_categories={k})", "n_categories={}"
    else:
        what, bigger = repr(statistic), type(statistic).__name__ + "({})"
    for d in data_t:
        support = record_support(d)
        if support is None:
            continue
        label = d.name or "the fixed records"
        if support == "real":
            raise ValueError(
                f"DPObserved {name!r}: {what} needs integer category codes 0..{k - 1}, but the "
                f"records {label!r} are real-valued (dtype {d.dtype}); its density would be "
                "meaningless for them. Model the records as categories (pm.Categorical, "
                "pm.Bernoulli) or release a real statistic (pdp.Sum, pdp.Mean with pdp.Laplace)."
            )
        lo, hi = support
        lower, upper = getattr(statistic, "lower", None), getattr(statistic, "upper", None)
        lo = lo if lower is None else max(lo, int(np.ceil(lower)))
        if upper is not None:
            hi = int(np.floor(upper)) if hi is None else min(hi, int(np.floor(upper)))
        if lo >= 0 and hi is not None and hi <= k - 1:
            continue
        op_name = getattr(getattr(d.owner, "op", None), "name", None)
        if hi is None and op_name in _BOUNDED_ABOVE_BY_N:
            raise ValueError(
                f"DPObserved {name!r}: {what} takes category codes 0..{k - 1}, but the records "
                f"{label!r} are {op_name} draws whose n is not a constant (a pm.Data container or "
                "a random variable can change it), so their codes are not known to stay inside "
                f"0..{k - 1}: codes above would be {'dropped from the counts' if not statistic.local else 'given a meaningless density'} silently. "
                "Give n as a constant (a number or NumPy array) at most "
                f"{k - 1}, or build the model again when n changes."
            )
        shown = f"{lo}..{'inf' if hi is None else hi}"
        lost = "dropped from the counts" if not statistic.local else "given a meaningless density"
        fix = (
            f"Use {bigger.format(hi + 1)} to cover every code the records take, or model"
            if lo >= 0 and hi is not None
            else "Model"
        )
        raise ValueError(
            f"DPObserved {name!r}: {what} takes category codes 0..{k - 1}, but the records "
            f"{label!r} take values {shown}; codes outside 0..{k - 1} would be {lost} silently. "
            f"{fix} the records with a support inside 0..{k - 1} (e.g. pm.Categorical with p of "
            f"length {k})."
        )
