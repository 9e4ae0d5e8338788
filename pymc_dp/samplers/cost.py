r"""The cost model: seconds per unit of work, stated as configuration, never measured at run time.

Three decisions weigh what a route gains against what it costs:

* whether a collapsed likelihood is too slow (`pymc_dp.marginal.make_plan`: terms per gradient ×
  `SECONDS_PER_TERM`, refused above `MAX_SECONDS`; ``pm.sample()``'s choice of ``Collapsed``:
  `pymc_dp.marginal.assign.iteration_seconds`);
* whether ``DataAugmentation`` keeps its non-centred θ-move after warm-up (`InterweaveTrial`:
  standardised θ jump² per second with and without the move);
* how many independence tries ``Collapsed`` makes per iteration after warm-up.

Each counts the work it does (terms of a plan, records updated by the sweep, evaluations of the
θ-move's target, collapsed log-density evaluations, iterations) and prices it with the constants of
a `CostModel`. Timing the steps with a clock instead would make the choice depend on the machine's
load, so the same model and ``random_seed`` could give different draws from one run to the next;
with counts × constants the draws are a function of the seed alone. The defaults were measured once
on the project's 2-core machine (PyMC 5.28, C backend): `SECONDS_PER_TERM` with
``benchmarks/bench_collapsed_cost.py``, `SECONDS_PER_UNIT` with ``benchmarks/bench_route_cost.py``,
`DRAW_SECONDS` with ``benchmarks/bench_collapsed_cost.py --draws``. Pass
``cost=pdp.marginal.CostModel(...)`` (numbers measured with those scripts on your machine) to
``marginalize``, ``Collapsed`` or ``DataAugmentation``.
"""

from __future__ import annotations

import dataclasses

__all__ = [
    "DRAW_SECONDS",
    "MAX_SECONDS",
    "SECONDS_PER_TERM",
    "SECONDS_PER_UNIT",
    "CostModel",
    "cost_model",
]

#: measured time per term of each route's gradient (benchmarks/bench_collapsed_cost.py, PyMC 5.28 C backend,
#: 2 shared cores): local logsumexp, log-space convolution, counts recursion, closed-form sums
SECONDS_PER_TERM = {
    "local": 35e-9,
    "convolution": 2.5e-9,
    "counts": 45e-9,
    "closed": 50e-9,
    "gaussian": 10e-9,
}
#: largest time per gradient accepted. NUTS on the collapsed model spends ~15 gradients per
#: effective draw (3–7 per draw at ESS/draw ≈ 0.4), so at 30 ms an effective draw costs ~0.45 s,
#: what DataAugmentation + NUTS needs on the N = 400 randomized-response table (2 ESS/s): beyond
#: it data augmentation can be faster, and the plan is refused.
MAX_SECONDS = 0.03
#: seconds per unit of the exact records draw of a collapsed plan (`CostModel.draw_seconds`):
#: local O(n·w), counts O((n+1)²·w) in NumPy, closed Poisson / negative-binomial sums O(n + L),
#: the log-space convolution O(n·L·w_t) in numba. Measured with ``benchmarks/bench_collapsed_cost.py
#: --draws`` (PyMC 5.28, 2 cores shared with other jobs, load average 3, 2026-11-28), per unit at
#: n = 200 / 1,000 (counts: n = 100 / 300): convolution 3.1 / 2.4 ns, local 36 / 30, counts
#: 90 / 38, closed 205 / 158, gaussian 303 / 91 (closed and gaussian: a fixed 0.06–0.15 ms per
#: draw over few units). The values below are the larger-n figures.
DRAW_SECONDS = {
    "local": 30e-9,
    "counts": 40e-9,
    "closed": 160e-9,
    "convolution": 2.5e-9,
    "gaussian": 90e-9,
}
#: seconds per unit of work of the steps (benchmarks/bench_route_cost.py, one run, PyMC 5.28 C backend,
#: 2 cores shared with other jobs, load average 8.2–8.8, 2026-11-25; the decisions compare costs with
#: each other, so only the ratios between these numbers matter, and load scales them alike):
#: ``sweep`` / ``record_update``: one DataAugmentation sweep of a record group, fixed part / per
#: record; ``interweave_eval`` / ``interweave_record``: one evaluation of the non-centred θ-move's
#: target, fixed part / per record it writes; ``iteration``: the rest of one iteration (PyMC's loop
#: and the θ steps; median over the user models (b), (d), (e)); ``collapsed_eval``: one collapsed
#: log-density evaluation beyond its terms; ``collapsed_iteration``: one Collapsed iteration beyond
#: its evaluations and its records draw.
SECONDS_PER_UNIT = {
    "sweep": 8.6e-4,
    "record_update": 1.3e-7,
    "interweave_eval": 1.55e-4,
    "interweave_record": 9.4e-9,
    "iteration": 1.34e-3,
    "collapsed_eval": 2.0e-4,
    "collapsed_iteration": 1.6e-3,
    "nuts_gradient": 3.3e-4,
    "nuts_gradient_record": 2.5e-7,
    "mhaar_eval": 3.0e-3,
    "mhaar_particle_record": 1e-7,
}


def _positive(table, given, what, noun="routes"):
    unknown = sorted(set(given) - set(table))
    if unknown:
        raise ValueError(f"{what} has unknown {noun} {unknown}; the {noun} are {sorted(table)}.")
    for key, sec in given.items():
        if isinstance(sec, bool) or not isinstance(sec, int | float) or not sec > 0:
            raise ValueError(f"{what}[{key!r}] must be a positive number, got {sec!r}.")
    return {**table, **{k: float(v) for k, v in given.items()}}


@dataclasses.dataclass(frozen=True)
class CostModel:
    """Seconds per unit of work of each route, and the largest accepted seconds per gradient.

    Configuration (module docstring); the defaults are `SECONDS_PER_TERM`, `MAX_SECONDS`,
    `SECONDS_PER_UNIT` and `DRAW_SECONDS`. Entries not given keep their default.

    Parameters
    ----------
    seconds_per_term : dict, optional
        Collapsed route (``"local"``, ``"convolution"``, ``"counts"``, ``"closed"``) → seconds per
        gradient term.
    max_seconds : float, optional
        Largest estimated time per gradient of an accepted collapsed plan.
    seconds_per_unit : dict, optional
        Unit of work (keys of `SECONDS_PER_UNIT`) → seconds.
    draw_seconds_per_term : dict, optional
        Collapsed route → seconds per unit of its exact records draw (`DRAW_SECONDS`).
    """

    seconds_per_term: dict = dataclasses.field(default_factory=dict)
    max_seconds: float = MAX_SECONDS
    seconds_per_unit: dict = dataclasses.field(default_factory=dict)
    draw_seconds_per_term: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        set_ = object.__setattr__
        set_(
            self,
            "seconds_per_term",
            _positive(SECONDS_PER_TERM, dict(self.seconds_per_term or {}), "seconds_per_term"),
        )
        set_(
            self,
            "seconds_per_unit",
            _positive(
                SECONDS_PER_UNIT, dict(self.seconds_per_unit or {}), "seconds_per_unit", "units"
            ),
        )
        set_(
            self,
            "draw_seconds_per_term",
            _positive(
                DRAW_SECONDS, dict(self.draw_seconds_per_term or {}), "draw_seconds_per_term"
            ),
        )
        m = self.max_seconds
        if isinstance(m, bool) or not isinstance(m, int | float) or not m > 0:
            raise ValueError(f"max_seconds must be a positive number, got max_seconds={m!r}.")
        set_(self, "max_seconds", float(m))

    def seconds(self, plan) -> float:
        """Estimated seconds per gradient of the collapsed ``plan`` (its terms × seconds per term)."""
        return plan.cost * self.seconds_per_term[_route(plan)]

    def draw_seconds(self, plan) -> float:
        """Estimated seconds of one exact records draw of the collapsed ``plan``."""
        n, per = plan.law.n, self.draw_seconds_per_term
        if plan.case == "local":
            return per["local"] * n * len(plan.support)
        if plan.case == "gaussian":
            return per["gaussian"] * plan.cost
        if plan.case == "counts":
            return per["counts"] * (n + 1) ** 2 * len(plan.support)
        if plan.closed in ("poisson", "negative_binomial"):
            return per["closed"] * (n + plan.length)
        return per["convolution"] * n * plan.length * plan.n_cells

    def unit(self, name: str) -> float:
        """Seconds of one unit of work ``name`` (a key of `SECONDS_PER_UNIT`)."""
        return self.seconds_per_unit[name]


def _route(plan) -> str:
    return plan.case if plan.case != "additive" else ("closed" if plan.closed else "convolution")


def cost_model(cost) -> CostModel:
    """``cost`` checked (None: the defaults)."""
    if cost is None:
        return CostModel()
    if not isinstance(cost, CostModel):
        raise TypeError(
            f"cost must be a pymc_dp.marginal.CostModel or None, got cost={cost!r}. Pass e.g. "
            "cost=pdp.marginal.CostModel(max_seconds=0.1)."
        )
    return cost
