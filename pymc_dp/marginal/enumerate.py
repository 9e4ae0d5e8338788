r"""``pdp.EnumeratedParents``: discrete θ with a finite support, drawn with the records summed out.

For discrete records whose only free parents are discrete parameters θ with a finite support
(e.g. ``up ~ DiscreteUniform(1, 5)``, ``x ~ DiscreteUniform(0, up, shape=n)``), one step owns θ
and the records and, each iteration,

1. evaluates the collapsed log density `\log p(θ = v, φ) + \log p(s_{dp} \mid θ = v, φ)` of the
   model with the records summed out (`pymc_dp.marginalize`; the records' support is enumerated
   up to the largest bound θ allows, the pmf being 0 beyond θ's own bound) at every value v of
   θ's support, and draws θ from that finite conditional exactly;
2. draws the records exactly from `p(x \mid θ, s_{dp}, φ)` by backward sampling
   (`pymc_dp.marginal.recover.draw_records`).

A blocked Gibbs step on (θ, x) given the other variables φ, so it leaves the joint posterior
invariant and has nothing to tune. PyMC's default for such a θ is Metropolis with the records
moved one at a time, which is stuck (measured: ESS ≈ 2, R-hat 2.4 at 1000 draws).
"""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
from pymc.util import get_value_vars_from_user_vars

from pymc_dp.distributions.graph import released_records
from pymc_dp.distributions.registry import dp_nodes
from pymc_dp.marginal.collapsed import collapsed_plans, marginalize
from pymc_dp.marginal.records import MAX_BOUND_VALUES, finite_support
from pymc_dp.marginal.recover import RecordConditional, record_draw_fn
from pymc_dp.marginal.step import _release_containers
from pymc_dp.samplers.base import DPStep
from pymc_dp.samplers.points import layout_point

__all__ = ["EnumeratedParents", "MAX_VALUES"]

#: joint values of θ enumerated per iteration at most
MAX_VALUES = MAX_BOUND_VALUES


def theta_supports(thetas):
    """The finite supports of the discrete parameters ``thetas`` (a ValueError naming the first
    without one, or when their joint support has more than `MAX_VALUES` values)."""
    supports = []
    for t in thetas:
        s = finite_support(t)
        if s is None:
            raise ValueError(
                f"EnumeratedParents draws {t.name!r} from its finite conditional, but it is not a "
                "scalar discrete parameter with a finite support (Bernoulli, Categorical, "
                "Binomial with a constant n, DiscreteUniform with constant bounds). Leave it to "
                "PyMC's samplers."
            )
        supports.append(s)
    total = int(np.prod([len(s) for s in supports]))
    if total > MAX_VALUES:
        raise ValueError(
            f"EnumeratedParents would evaluate {total} joint values of "
            f"{[t.name for t in thetas]} per iteration (at most {MAX_VALUES}). Leave them to "
            "PyMC's samplers."
        )
    return supports


class EnumeratedParents(DPStep):
    r"""Discrete parameters with a finite support drawn exactly with the records summed out, then
    the records exactly (see the module docstring).

    Parameters
    ----------
    vars : list
        The discrete record variables (data of ``DPObserved`` nodes that `pymc_dp.marginalize`
        can sum out) and their discrete parents θ, each with a finite support.

    Sampler stats: ``dp_theta_prob`` (the conditional probability of the θ value drawn).
    """

    name = "enumerated_parents"
    dp_stats = {"dp_theta_prob": (float, [])}

    def __init__(
        self,
        vars,
        *,
        model=None,
        rng=None,
        blocked=True,
        initial_point=None,
        compile_kwargs=None,
    ):
        model = pm.modelcontext(model)
        values = get_value_vars_from_user_vars(vars, model)
        rvs = [model.values_to_rvs[v] for v in values]
        released = set(released_records(dp_nodes(model)))
        records = [r for r in rvs if r in released]
        thetas = [r for r in rvs if r not in released]
        if not records or not thetas:
            raise ValueError(
                "EnumeratedParents needs discrete records of a DPObserved release and their "
                f"discrete parents; got records {[r.name for r in records]} and parameters "
                f"{[t.name for t in thetas]}. Pass both, e.g. vars=[up, x]."
            )
        supports = theta_supports(thetas)
        self.record_names = [r.name for r in records]
        self.theta_names = [model.rvs_to_values[t].name for t in thetas]
        self.plans = collapsed_plans(model, records=self.record_names)
        marginal = marginalize(model, records=self.record_names)
        self._logp = marginal.compile_logp()
        self._marginal_names = [v.name for v in marginal.value_vars]
        self._draws = [record_draw_fn(plan, model) for plan in self.plans.values()]
        self._releases = _release_containers(model, self.plans)
        self._combos = [tuple(c) for c in itertools.product(*supports)]
        point = layout_point(model) if initial_point is None else initial_point
        self._dtypes = {n: np.asarray(point[n]).dtype for n in self.theta_names + self.record_names}
        self.vars = list(values)
        self._init_step(rng)

    def conditional(self, point) -> tuple:
        """``(values, log probabilities)`` of θ's finite conditional at ``point``'s other
        variables: every joint value of θ and its normalised log probability."""
        base = {n: point[n] for n in self._marginal_names if n in point}
        lp = np.array(
            [float(self._logp({**base, **self._theta_point(combo)})) for combo in self._combos]
        )
        lp = lp - np.logaddexp.reduce(lp)
        return self._combos, lp

    def _theta_point(self, combo) -> dict:
        return {n: np.asarray(v, dtype=self._dtypes[n]) for n, v in zip(self.theta_names, combo)}

    def step(self, point):
        for name, shared, planned in self._releases:
            if not np.array_equal(shared.get_value(borrow=True), planned):
                raise ValueError(
                    f"The release {name!r} changed after pdp.EnumeratedParents was built "
                    f"(pm.set_data); its collapsed likelihood was planned for the value "
                    f"{planned.tolist()}. Build the step again after pm.set_data (pm.sample() "
                    "without step= builds a new one on each call)."
                )
        combos, lp = self.conditional(point)
        p = np.exp(lp)
        k = int(self.rng.choice(len(combos), p=p / p.sum()))
        new = {**point, **self._theta_point(combos[k])}
        for name, plan, (fn, names, has_logf) in zip(
            self.record_names, self.plans.values(), self._draws
        ):
            x = RecordConditional(plan, fn(*[new[n] for n in names]), has_logf).draw(self.rng)
            new[name] = np.asarray(x, dtype=self._dtypes[name]).reshape(np.shape(point[name]))
        return new, [self.stats(dp_theta_prob=float(p[k]))]

    @staticmethod
    def competence(var, has_grad=None):
        from pymc_dp.marginal.assign import enumerated_competence

        return enumerated_competence(var)

    def route_reason(self) -> str:
        return (
            f"discrete parameters {self.theta_names} with a finite support ({len(self._combos)} "
            f"values): exact draw from their conditional with the records {self.record_names} "
            "summed out, then the records exactly"
        )
