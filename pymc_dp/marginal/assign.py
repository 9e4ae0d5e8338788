"""When ``pm.sample()`` gives discrete records to `pymc_dp.Collapsed`: its competence.

A record variable goes to ``Collapsed`` (with its direct continuous parents) when
`pymc_dp.marginal.collapsed_plans` accepts it and one Collapsed iteration is estimated at
most `MAX_ITERATION_SECONDS` (`iteration_seconds`); beyond, DataAugmentation's O(n)
sweep is faster and keeps the records. The rule lives here, below the step, so that the samplers
package never imports the marginal one.
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np

from pymc.step_methods.compound import Competence

from pymc_dp.distributions.graph import direct_parents, released_records, upstream
from pymc_dp.distributions.registry import dp_nodes
from pymc_dp.marginal.collapsed import collapsed_plans, marginalize
from pymc_dp.marginal.plan import CostModel
from pymc_dp.samplers.assign import COLLAPSED, cached_verdict

__all__ = [
    "MAX_ITERATION_SECONDS",
    "collapsed_refusal",
    "MAX_ENUMERATION_SECONDS",
    "collapsed_competence",
    "enumerated_competence",
    "iteration_seconds",
    "record_parents",
]

#: pm.sample() gives discrete records with discrete parents to EnumeratedParents when one
#: iteration (one collapsed evaluation per value of the parents and a records draw) is estimated
#: at most this
MAX_ENUMERATION_SECONDS = 2e-2

#: pm.sample() gives records to Collapsed when `iteration_seconds` is at most this
MAX_ITERATION_SECONDS = 2e-3


def iteration_seconds(plan, cost=None) -> float:
    r"""Estimated seconds of one Collapsed iteration for ``plan``: three evaluations of the collapsed
    log-likelihood (bounded by the cost of a gradient, ``cost.seconds(plan)`` of the configured
    `pymc_dp.marginal.CostModel`, default its documented defaults) plus one
    backward draw of the records (``cost.draw_seconds(plan)``: local O(n·w); additive O(n·L·w_t)
    in numba, O(n) for the closed Poisson/negative-binomial sums; counts O(N²K) in NumPy)."""
    cost = CostModel() if cost is None else cost
    return 3.0 * cost.seconds(plan) + cost.draw_seconds(plan)


def record_parents(model, record, plan=None) -> list:
    """The continuous free variables Collapsed moves with the record variable (θ): those its
    distribution reads directly; for Normal records summed out of a Gaussian release (``plan``
    of case ``"gaussian"``) every continuous free variable upstream of them (not released records
    themselves), so that NUTS moves a hierarchy — ``b_i ~ N(mu, τ)``, ``x_i ~ N(b_i, 1)`` — as one
    block on the collapsed density instead of alternating with mu."""
    if plan is None or plan.case != "gaussian":
        return direct_parents(model, [record], continuous=True)
    found = upstream(record.owner.inputs)
    released = set(released_records(dp_nodes(model)))
    return [
        v
        for v in model.free_RVs
        if v in found and v is not record and v not in released and v.dtype.startswith("float")
    ]


_COLLAPSIBLE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def collapsed_refusal(model, var) -> str:
    """Why `pymc_dp.Collapsed` does not take the record variable ``var`` (for messages)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (plan,) = collapsed_plans(model, records=[var.name]).values()
    except Exception as err:  # noqa: BLE001 - its refusal is the reason
        return str(err).split(". ")[0].rstrip(".")
    seconds = iteration_seconds(plan)
    if seconds > MAX_ITERATION_SECONDS:
        return (
            f"summing them out would take about {1e3 * seconds:.1f} ms per iteration "
            f"(more than {1e3 * MAX_ITERATION_SECONDS:g} ms)"
        )
    return "their parameters are not continuous parents it can move"


def collapsed_competence(var) -> Competence:
    """``IDEAL`` for a discrete record variable `pymc_dp.Collapsed` takes, and for its direct
    continuous parents.

    A record variable qualifies when `pymc_dp.marginal.collapsed_plans` accepts it and one
    Collapsed iteration is cheap: `iteration_seconds` ≤
    `MAX_ITERATION_SECONDS` (beyond, e.g. pdp.Counts of N = 400
    records, DataAugmentation's O(n) sweep is faster). The verdict (which records, built once with
    ``marginalize`` on all of them, so the step never refuses at construction) is cached per model
    state; never warns.
    """
    verdict = cached_verdict(var, _COLLAPSIBLE, _collapsible, per_var=False)
    if verdict == Competence.INCOMPATIBLE:
        return verdict
    records, parents = verdict
    return (
        Competence.IDEAL
        if (var.name in records or var.name in parents)
        else Competence.INCOMPATIBLE
    )


def _collapsible(model, nodes):
    """(names of the record variables Collapsed takes, names of their continuous parents)."""
    released = released_records(nodes)
    records = []
    for rv in released:
        if rv not in model.free_RVs:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                (plan,) = collapsed_plans(model, records=[rv.name]).values()
        except Exception:  # noqa: BLE001 - not collapsible: DataAugmentation or others take it
            continue
        if iteration_seconds(plan) <= MAX_ITERATION_SECONDS and record_parents(model, rv, plan):
            records.append((rv, plan))
    if records:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                marginalize(model, records=[r.name for r, _ in records])
        except Exception:  # noqa: BLE001 - keep the per-group samplers
            records = []
    parents = {p.name for r, plan in records for p in record_parents(model, r, plan)}
    return {r.name for r, _ in records}, parents


_ENUMERABLE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def enumerated_competence(var) -> Competence:
    """``IDEAL`` for discrete records whose free parents are all discrete parameters with a finite
    support (`pymc_dp.EnumeratedParents`), and for those parameters, when the records can be
    summed out (`pymc_dp.marginalize`) and one iteration is estimated at most
    `MAX_ENUMERATION_SECONDS`; cached per model state, never warns."""
    verdict = cached_verdict(var, _ENUMERABLE, _enumerable, per_var=False)
    if verdict == Competence.INCOMPATIBLE:
        return verdict
    return Competence.IDEAL if var.name in verdict else Competence.INCOMPATIBLE


def _enumerable(model, nodes):
    """Names of the records and discrete parameters EnumeratedParents takes."""
    from pymc_dp.marginal.enumerate import theta_supports

    cost = CostModel()
    records, thetas = [], []
    for rv in released_records(nodes):
        if rv not in model.free_RVs or rv.dtype.startswith("float"):
            continue
        parents = direct_parents(model, [rv])
        if not parents or any(p.dtype.startswith("float") for p in parents):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                supports = theta_supports(parents)
                (plan,) = collapsed_plans(model, records=[rv.name]).values()
        except Exception:  # noqa: BLE001 - not enumerable: other samplers take it
            continue
        values = int(np.prod([len(s) for s in supports]))
        if values * cost.seconds(plan) + cost.draw_seconds(plan) > MAX_ENUMERATION_SECONDS:
            continue
        records.append(rv)
        thetas += [p for p in parents if p not in thetas]
    if records:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theta_supports(thetas)
                marginalize(model, records=[r.name for r in records])
        except Exception:  # noqa: BLE001 - not collapsible together: they keep their own steps
            records, thetas = [], []
    return {v.name for v in records + thetas}


# the record samplers' no-kernel warning asks Collapsed first (`samplers.assign` sits below)
COLLAPSED.update(competence=collapsed_competence, refusal=collapsed_refusal)
