"""One home for PyMC's step contract: `DPStep`, the base of every pymc-dp step method.

PyMC drives a step through a handful of calls whose details changed across versions:

* ``set_rng(rng)`` once per chain (PyMC ≤ 6.2) or ``setup_chain(rng, tune, draws)`` (PyMC ≥ 6.3);
* ``tune`` set on the *top-level* step only (a ``CompoundStep`` does not forward it), then
  ``reset_tuning()`` (forwarded by ``CompoundStep``) at the start of every chain and
  ``stop_tuning()`` (forwarded) when warm-up ends;
* with ``cores=1`` one step object runs every chain in turn, so anything learnt in one chain
  (adapted proposal scales, a carried likelihood estimate, cached latent variables) must be reset
  before the next.

`DPStep` answers all of these once. A subclass declares its ``dp_stats`` (dtype and shape of
each ``dp_``-prefixed sampler stat; the ``tune`` stat that PyMC 5.25–5.27 read is added here) and
implements

* `DPStep.reseed` — reseed compiled graphs from the chain's generator (optional);
* `DPStep.start_chain` — reset every piece of per-chain state, adaptation included;
* `DPStep.plan_chain` — see ``tune`` and ``draws`` before the chain runs (optional; e.g. a
  privacy budget check);
* ``step(point)`` — one iteration, returning ``({**point, **new}, [stats])``, ``stats`` holding
  exactly the keys of ``dp_stats`` and ``"tune"`` (use `DPStep.stats`).
"""

from __future__ import annotations

import functools
import os

from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_random_generator

from pymc_dp._checks import check_float64
from pymc_dp.samplers.convergence import theta_value_names, watch_chain
from pymc_dp.samplers.streams import auto_threads, stepping

__all__ = ["Competence", "DPStep"]


class DPStep(BlockedStep):
    """Base class of pymc-dp's step methods (see the module docstring for the contract)."""

    #: name -> (dtype, shape) of the sampler stats, without ``tune``; subclasses override
    dp_stats: dict = {}
    _state_class = StepMethodState
    #: names of free variables that ``pm.sample()``'s trace does not read (set by
    #: `trace_memory`; empty outside it): a step may skip drawing one that no other step reads
    untraced: frozenset = frozenset()

    def __new__(cls, *args, **kwargs):
        check_float64(f"pdp.{cls.__name__}")
        step = super().__new__(cls, *args, **kwargs)
        step._dp_theta = theta_value_names(modelcontext(kwargs.get("model")))  # for the guard
        return step

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.stats_dtypes_shapes = {**cls.dp_stats, "tune": (bool, [])}
        if "step" in cls.__dict__:  # the convergence guard sees every iteration's point
            cls.step = _watched(cls.__dict__["step"])

    # -- hooks -------------------------------------------------------------------------------
    def reseed(self, rng) -> None:
        """Reseed compiled graphs' generators from ``rng`` (default: nothing to reseed)."""

    def start_chain(self) -> None:
        """Reset per-chain state, adaptation included (default: nothing)."""

    def thread_work(self) -> int:
        """Cells the step's numba loops cover per iteration (`streams.auto_threads`; default 0:
        never threaded by itself)."""
        return 0

    def plan_chain(self, tune: int, draws: int) -> None:
        """Called with the chain's warm-up and draw counts when PyMC gives them (PyMC ≥ 6.3)."""

    # -- PyMC's contract ---------------------------------------------------------------------
    def _init_step(self, rng) -> None:
        """End of a subclass ``__init__``: start tuning and set up the first chain."""
        self.tune = True
        self.set_rng(rng)

    def _start(self, rng) -> None:
        if not hasattr(self, "_built_pid"):  # the process that built the step (`auto_threads`)
            self._built_pid = os.getpid()
        self._threaded = auto_threads(self.thread_work(), self._built_pid)
        self.rng = get_random_generator(rng, copy=False)
        self.reseed(self.rng)
        self.tune = True
        self.start_chain()

    def set_rng(self, rng) -> None:  # PyMC <= 6.2: once per chain
        self._start(rng)
        self._dp_watch = watch_chain(self)

    def setup_chain(self, rng, tune, draws) -> None:  # PyMC >= 6.3: once per chain
        self._start(rng)
        self.tune = tune > 0
        self.plan_chain(int(tune), int(draws))
        self._dp_watch = watch_chain(self, int(tune), int(draws))

    def reset_tuning(self) -> None:
        """Forwarded by ``CompoundStep`` at the start of every chain: tune again from scratch."""
        self.tune = True
        self.start_chain()

    def stop_tuning(self) -> None:
        self.tune = False

    def stats(self, **values) -> dict:
        """The stats dict of one iteration: ``values`` (the ``dp_stats`` keys) plus ``tune``."""
        return {**values, "tune": bool(self.tune)}

    def route(self) -> dict:
        """What ``idata.sample_stats.attrs["pymc_dp_route"]`` says about this step
        (`pymc_dp.samplers.route_report`): ``step``, ``vars`` and ``reason``; subclasses add what
        they decided (families, plans, the θ-move)."""
        return {
            "step": type(self).__name__,
            "vars": [v.name for v in getattr(self, "vars", [])],
            "reason": self.route_reason(),
        }

    def route_reason(self) -> str:
        """Why this step moves its variables (default: the first line of the class docstring)."""
        doc = (type(self).__doc__ or "").strip()
        return doc.splitlines()[0] if doc else type(self).__name__

    @staticmethod
    def competence(var, has_grad=None):
        return Competence.INCOMPATIBLE


def _watched(step_fn):
    """``step`` that also hands its result to the chain's convergence guard (`watch_chain`)."""

    @functools.wraps(step_fn)
    def step(self, point):
        # threads only in the process that built the step (never in a forked worker: GNU OpenMP)
        if getattr(self, "_threaded", False) and os.getpid() == self._built_pid:
            with stepping(True):
                new, stats = step_fn(self, point)
        else:  # as the caller runs (serial, or a threaded step's part)
            new, stats = step_fn(self, point)
        watch = getattr(self, "_dp_watch", None)
        if watch is not None:
            watch.observe(self, new)
        return new, stats

    return step
