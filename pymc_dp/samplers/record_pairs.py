r"""Pair moves of records that keep their sum (``DataAugmentation(pairs=...)``).

When a release pins its statistic tightly against one record (the noise's sd below the spread of
one record's contribution: a large ε, tight bounds, few records), the record-wise moves of
Algorithm 1 accept only proposals whose contribution lies within about the noise of the current
one, so the records crawl: at n = 8 exponential records, ``Sum(0, 2)``, ``Laplace(ε = 60)`` the
records' ESS/draw was 0.001 and λ's ESS overstated (over 12 chains the chains' means spread 2–2.6
times their ESS-based MCSEs). A pair move proposes, for the records i ≠ j of a
random pairing,

```text
x_i' = x_i + δ,   x_j' = x_j − δ      (natural space; δ ~ N(0, h²), or uniform on ±1 … ±m for
                                        integer records)
```

which keeps x_i + x_j, hence a ``Sum`` / ``Mean`` of records inside their bounds, and accepts with

```text
min(1, f(x_i' | θ) f(x_j' | θ) η(s | S(x')) / (f(x_i | θ) f(x_j | θ) η(s | S(x)))):
```

a Metropolis move with a symmetric proposal ((x_i, x_j, δ) ↦ (x_i + δ, x_j − δ, −δ) is an
involution with unit Jacobian), exact for any record-additive statistic since the releases' ratio is
computed from the contributions, for integer records and for continuous records with a density
(`pair_refusal`). f is the records' own PyMC density: ``model.logp`` without the Jacobian at the
proposal's value (its forward transform), which reads θ through the model's values. Disjoint pairs touch disjoint records, so one compiled call gives the records' log
densities and contributions at every proposal and one numba pass accepts them in turn, carrying the
releases' totals: O(n) per sweep. h (m) starts at the records' prior spread (drawn at a chain's
first sweep from the chain's generator) and is tuned towards an acceptance of `TARGET_ACCEPT`
during warm-up only (frozen after: the chain's kernel is fixed).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import SymbolicRandomVariable
from pymc.logprob.utils import replace_rvs_by_values
from pymc.pytensorf import compile as pm_compile
from pytensor.graph.replace import graph_replace
from pytensor.tensor.random.op import RandomVariable

from pymc_dp.distributions.graph import draws_randomly
from pymc_dp.mechanisms.base import kernel_logpdf

__all__ = ["RecordPairs", "PAIR_RATIO", "TARGET_ACCEPT", "pair_refusal"]

#: ``pairs="auto"`` runs the pair moves when some released coordinate's noise sd is below this
#: many times the sd of one record's (scaled) contribution under the records' prior at θ₀
PAIR_RATIO = 1.0
#: the pair moves' acceptance rate that warm-up tunes h (m) towards
TARGET_ACCEPT = 0.3


def pair_refusal(block, counts) -> str | None:
    """Why the records of ``block`` cannot take pair moves (None: they can); ``counts`` the
    group's `CountsSweep` (None when it has none). Continuous records
    must have a density: a law with atoms (``pm.Censored``, the hurdles, a mixture with a
    ``DiracDelta``) would compare a point mass with a density, which no continuous δ can undo, so
    only PyMC's plain random variables are taken (not its symbolic ones: censored, mixtures,
    truncations, ``pm.CustomDist``); integer records (all atoms, δ integer) take any law."""
    if counts is not None:
        return "categorical records released as Counts (their count vector is moved instead)"
    if len(block.record_rvs) != 1:
        return f"a record of {len(block.record_rvs)} variables (pairs move one variable)"
    rv = block.record_rvs[0]
    if rv.ndim != 1 or getattr(rv.owner.op, "ndim_supp", 0) != 0:
        return f"{rv.name!r} is not one scalar per record (shape {rv.type.shape})"
    if getattr(rv.owner.op, "name", None) == "categorical":
        return f"{rv.name!r} is categorical (its labels have no order to shift along)"
    if not (rv.dtype.startswith("float") or rv.dtype.startswith("int")):
        return f"{rv.name!r} has dtype {rv.dtype}"
    op = rv.owner.op
    if rv.dtype.startswith("float") and (
        not isinstance(op, RandomVariable)
        or isinstance(op, SymbolicRandomVariable)
        or getattr(op, "name", None) == "diracdelta"
    ):
        return (
            f"{rv.name!r} is a continuous record of {type(op).__name__}, a law pymc-dp cannot "
            "check for point masses (censored, hurdle, mixture, truncated, CustomDist): pairs "
            "are taken only by records with a plain density"
        )
    if block.local_nodes:
        return "records with local releases (a pair's sum is not what they release)"
    if block.n < 2:
        return "a single record"
    return None


@numba.njit(cache=True)
def pair_sweep_core(
    order, lp_cur, lp_prop, t_cur, t_prop, codes, a, b, c, r, e, accepted
):  # pragma: no cover - numba
    """Accept the pairs (order[2p], order[2p + 1]) in turn, in place: pair p is accepted iff
    ``log α_p + e_p ≥ 0`` (``e`` standard exponentials; a NaN ratio rejects), α_p the records'
    density ratio times the releases' ratio at the running totals. Accepted rows of ``t_cur``
    take the proposal's and are flagged in ``accepted``. Returns the number accepted."""
    n_pairs = order.shape[0] // 2
    d_add = t_cur.shape[1]
    total = np.zeros(d_add)
    for i in range(t_cur.shape[0]):
        for d in range(d_add):
            total[d] += t_cur[i, d]
    cur = np.empty(d_add)
    new = np.empty(d_add)
    for d in range(d_add):
        cur[d] = kernel_logpdf(codes[d], a[d], b[d], r[d] - c[d] * total[d])
    n_acc = 0
    for p in range(n_pairs):
        i, j = order[2 * p], order[2 * p + 1]
        lr = lp_prop[i] + lp_prop[j] - lp_cur[i] - lp_cur[j]
        for d in range(d_add):
            moved = total[d] + (t_prop[i, d] - t_cur[i, d]) + (t_prop[j, d] - t_cur[j, d])
            new[d] = kernel_logpdf(codes[d], a[d], b[d], r[d] - c[d] * moved)
            lr += new[d] - cur[d]
        if lr == lr and lr + e[p] >= 0.0:
            n_acc += 1
            accepted[i] = True
            accepted[j] = True
            for d in range(d_add):
                total[d] += (t_prop[i, d] - t_cur[i, d]) + (t_prop[j, d] - t_cur[j, d])
                t_cur[i, d] = t_prop[i, d]
                t_cur[j, d] = t_prop[j, d]
                cur[d] = new[d]
    return n_acc


class RecordPairs:
    """The pair moves of one record group (module docstring).

    Parameters
    ----------
    block : RecordBlock
        One record variable of shape (n,) (`pair_refusal` is None).
    """

    def __init__(self, block):
        model = block.model
        rv = block.record_rvs[0]
        self.name = block.value_names[0]
        self.n = block.n
        self.integer = rv.dtype.startswith("int")
        self.h0 = self.h = None  # set at a chain's first sweep (`set_spread`)
        self._block = block
        self._tuned = 0
        xn = pt.vector("x_natural", dtype=rv.dtype, shape=(block.n,))
        others_v = {k: v for k, v in model.rvs_to_values.items() if k is not rv}
        others_t = {k: t for k, t in model.rvs_to_transforms.items() if k is not rv}
        # the records' value at natural records xn (the forward transform), PyMC's own log density
        # of the records there without the Jacobian (= their density at xn: model.logp, which
        # reads θ through the model's values, also where a CustomDist's graph holds clones of it),
        # and their contributions at xn
        val_var = model.rvs_to_values[rv]
        tr = model.rvs_to_transforms.get(rv)
        value = tr.forward(xn, *rv.owner.inputs) if tr is not None else xn
        value = pt.cast(value, val_var.dtype)
        (value,) = replace_rvs_by_values(
            [value], rvs_to_values=others_v, rvs_to_transforms=others_t
        )
        lp = model.logp(vars=[rv], jacobian=False, sum=False)[0]
        lp = pt.cast(pt.reshape(graph_replace(lp, {val_var: value}, strict=False), (-1,)), "f8")
        contrib = []
        for node in block.additive_nodes:
            t = node.statistic.contributions(*node.data)
            contrib.append(pt.cast(pt.reshape(t, (block.n, node.dim)), "float64"))
        (add,) = graph_replace([pt.concatenate(contrib, axis=1)], {rv: xn}, strict=False)
        (add,) = replace_rvs_by_values([add], rvs_to_values=others_v, rvs_to_transforms=others_t)
        if draws_randomly([lp, add, value]):
            raise ValueError(
                f"DataAugmentation's pair moves: the log density of {rv.name!r} at proposed "
                "records would draw its parameters afresh (a graph PyMC derived from a clone). "
                "Pass pairs=False."
            )
        inputs = [v for v in model.value_vars if v is not val_var]
        self._input_names = [v.name for v in inputs]
        self._eval = pm_compile(inputs + [xn], [lp, add, value], on_unused_input="ignore")
        (natural,) = replace_rvs_by_values(
            [rv], rvs_to_values=model.rvs_to_values, rvs_to_transforms=model.rvs_to_transforms
        )
        self._natural = pm_compile(model.value_vars, natural, on_unused_input="ignore")
        self._value_names = [v.name for v in model.value_vars]

    def set_spread(self, point, draws=8) -> float:
        """The starting h (m = max(1, round(h)) for integer records): the records' prior sd at θ
        of ``point`` (natural units), from ``draws`` proposals of the record block (from the
        step's generator, which the block draws from once the step is seeded: construction
        randomness never sets the kernel); returns it."""
        block = self._block
        work, x = dict(point), []
        for _ in range(draws):
            work.update(zip(block.value_names, block.propose(point)))
            x.append(np.asarray(self._natural(*[work[n] for n in self._value_names]), "f8"))
        spread = float(np.sqrt(np.mean(np.var(np.stack(x), axis=0, ddof=1))))
        self.h0 = self.h = spread if np.isfinite(spread) and spread > 0 else 1.0
        return self.h0

    def start_chain(self) -> None:
        self.h0 = self.h = None
        self._tuned = 0

    def terms(self, point, x):
        """The records' log densities, additive contributions and values at natural records ``x``."""
        lp, add, value = self._eval(*[point[n] for n in self._input_names], x)
        return np.asarray(lp, dtype=np.float64), np.ascontiguousarray(add), value

    def sweep(self, rng, point, t_cur, table, add_r, tune):
        """One sweep of pair moves at ``point`` (the records' current contributions ``t_cur``, not
        modified). Returns ``(new value of the records, new contributions, accepted pairs,
        pairs)``."""
        if self.h is None:  # a chain's first sweep: the records' prior spread at its θ
            self.set_spread(point)
        x = np.asarray(self._natural(*[point[n] for n in self._value_names]))
        order = rng.permutation(self.n).astype(np.int64)
        n_pairs = self.n // 2
        if self.integer:
            m = max(1, int(round(self.h)))
            step = rng.integers(1, m + 1, size=n_pairs) * (2 * rng.integers(0, 2, size=n_pairs) - 1)
        else:
            step = rng.normal(0.0, self.h, size=n_pairs)
        prop = x.copy()
        prop[order[0 : 2 * n_pairs : 2]] += step.astype(x.dtype)
        prop[order[1 : 2 * n_pairs : 2]] -= step.astype(x.dtype)
        lp_cur, _, _ = self.terms(point, x)
        lp_prop, t_prop, v_prop = self.terms(point, prop)
        t_new = np.array(t_cur, dtype=np.float64, copy=True)
        accepted = np.zeros(self.n, dtype=np.bool_)
        with np.errstate(invalid="ignore"):
            n_acc = int(
                pair_sweep_core(
                    order,
                    lp_cur,
                    lp_prop,
                    t_new,
                    t_prop,
                    table.codes,
                    table.a,
                    table.b,
                    table.c,
                    add_r,
                    rng.standard_exponential(n_pairs),
                    accepted,
                )
            )
        cur = np.asarray(point[self.name])
        value = np.where(accepted, np.asarray(v_prop, dtype=cur.dtype), cur)
        if tune:  # towards TARGET_ACCEPT, in steps that shrink (warm-up only)
            self._tuned += 1
            rate = n_acc / max(n_pairs, 1)
            self.h *= math.exp((rate - TARGET_ACCEPT) / math.sqrt(self._tuned))
        return value, t_new, n_acc, n_pairs
