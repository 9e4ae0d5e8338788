r"""Privacy spent by a data-holder MCMC run, composed with ``dp_accounting``.

Each DP-penalty iteration is a Gaussian mechanism with noise multiplier :math:`z = \sigma / c`
(noise standard deviation over the sensitivity of the released log ratio, seed 002 Theorem 7
proof); a subsampled iteration (seed 002 §4.1) runs it on a batch of ``b`` of the ``n`` records
drawn without replacement; a DP-MALA iteration (seed 002 §4.2) composes two Gaussian mechanisms
(gradient-drift proposal and log ratio). The whole run is the adaptive composition of its
iterations over every chain, tuning included.

Neighbouring relation: the sensitivities ``c`` are computed for the substitution of one record
(the seed's :math:`c \le 2L\lVert\theta'-\theta\rVert`). A Gaussian event with unit sensitivity
is therefore composed with the ``ADD_OR_REMOVE_ONE`` accountants (which treat the noise multiplier
as relative to the sensitivity of the released value); the subsampled events use
``SampledWithoutReplacementDpEvent`` under ``REPLACE_ONE``, which only the RDP accountant supports.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from pymc_dp._checks import check_delta, check_epsilon
from pymc_dp.accounting._search import largest_within

__all__ = [
    "PrivacyBudgetExceeded",
    "iteration_event",
    "run_event",
    "epsilon_of_event",
    "privacy_spent",
    "max_iterations",
]

_REPLACE = dp_accounting.NeighboringRelation.REPLACE_ONE
_ADD_REMOVE = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE


class PrivacyBudgetExceeded(RuntimeError):
    """Raised by a data-holder step before an iteration that would exceed the declared budget."""


def iteration_event(noise_multiplier, *, grad_noise_multiplier=None, n_records=None,
                    batch_size=None) -> dp_accounting.DpEvent:
    """The ``dp_accounting`` event of one data-touching iteration.

    Parameters
    ----------
    noise_multiplier : float
        σ / c of the released log acceptance ratio.
    grad_noise_multiplier : float, optional
        Noise multiplier of the gradient-drift proposal (DP MALA); composed with the ratio release.
    n_records, batch_size : int, optional
        Subsampling without replacement of ``batch_size`` out of ``n_records`` records.
    """
    z = float(noise_multiplier)
    if not z > 0:
        raise ValueError(f"noise_multiplier must be > 0, got noise_multiplier={noise_multiplier!r}.")
    event = dp_accounting.GaussianDpEvent(z)
    if grad_noise_multiplier is not None and np.isfinite(grad_noise_multiplier):
        event = dp_accounting.ComposedDpEvent([dp_accounting.GaussianDpEvent(float(grad_noise_multiplier)), event])
    if batch_size is not None and n_records is not None and int(batch_size) < int(n_records):
        event = dp_accounting.SampledWithoutReplacementDpEvent(int(n_records), int(batch_size), event)
    return event


def run_event(per_iteration: dp_accounting.DpEvent, iterations) -> dp_accounting.DpEvent:
    """``iterations`` adaptive compositions of ``per_iteration`` (``NoOpDpEvent`` for 0)."""
    k = int(iterations)
    if k < 0:
        raise ValueError(f"iterations must be >= 0, got iterations={iterations!r}.")
    if k == 0:
        return dp_accounting.NoOpDpEvent()
    return dp_accounting.SelfComposedDpEvent(per_iteration, k)


def _has_wor(event) -> bool:
    if isinstance(event, dp_accounting.SampledWithoutReplacementDpEvent):
        return True
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _has_wor(event.event)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return any(_has_wor(e) for e in event.events)
    return False


def epsilon_of_event(event, delta, *, accountant: str = "pld") -> float:
    """ε at ``delta`` of a composed event with the ``"pld"`` or ``"rdp"`` accountant of dp_accounting."""
    delta = check_delta(delta)
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return 0.0
    wor = _has_wor(event)
    if accountant == "rdp":
        acc = RdpAccountant(neighboring_relation=_REPLACE if wor else _ADD_REMOVE)
    elif accountant == "pld":
        if wor:
            raise ValueError(
                "accountant='pld' cannot compose subsampling without replacement "
                "(SampledWithoutReplacementDpEvent): dp_accounting's PLD accountant does not "
                "support it. Use accountant='rdp' for subsampled penalty runs."
            )
        # discretise the privacy loss relative to its size: the default 1e-4 grid makes a run with
        # a large ε (thousands of weakly-noised iterations) take minutes and gigabytes
        rough = epsilon_of_event(event, delta, accountant="rdp")
        if not math.isfinite(rough):
            return math.inf
        acc = PLDAccountant(_ADD_REMOVE, value_discretization_interval=1e-4 * max(1.0, rough))
    else:
        raise ValueError(f"accountant must be 'pld' or 'rdp', got accountant={accountant!r}.")
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def max_iterations(per_iteration, epsilon, delta, *, accountant: str = "pld", upper: int = 10**9) -> int:
    """Largest k with ε(k iterations) ≤ ``epsilon`` at ``delta`` (binary search with the accountant)."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)

    def ok(k):
        return epsilon_of_event(run_event(per_iteration, k), delta, accountant=accountant) <= epsilon

    return largest_within(ok, upper)


def _stats_group(idata):
    for getter in (lambda d: d["sample_stats"], lambda d: d.sample_stats):
        try:
            return getter(idata)
        except (KeyError, AttributeError, TypeError):
            continue
    return None


def _events_from_idata(idata):
    stats = _stats_group(idata)
    if stats is None:
        raise ValueError("idata has no sample_stats group. Pass the result of pm.sample.")
    try:
        iters = np.asarray(stats["dp_iterations"])
    except KeyError:
        raise ValueError(
            "idata.sample_stats has no 'dp_iterations': this run used no PenaltyMH step. "
            "Pass the InferenceData of a pm.sample run with step=[pdp.PenaltyMH(...)]."
        ) from None

    def col(name):
        try:
            return np.asarray(stats[name])
        except KeyError:
            return None

    z = col("dp_noise_multiplier")
    zg = col("dp_grad_noise_multiplier")
    nrec = col("dp_n_records")
    batch = col("dp_batch_size")
    events = []
    for c in range(iters.shape[0]):
        k = int(np.max(iters[c]))
        zc = float(z[c, -1])
        zgc = float(zg[c, -1]) if zg is not None else None
        nc = int(nrec[c, -1]) if nrec is not None else None
        bc = int(batch[c, -1]) if batch is not None else None
        events.append(run_event(iteration_event(zc, grad_noise_multiplier=zgc, n_records=nc, batch_size=bc), k))
    return events


def privacy_spent(source, *, delta, accountant: str = "pld") -> float:
    r"""ε spent by a data-holder run at ``delta``, composed by ``dp_accounting``.

    Parameters
    ----------
    source : InferenceData, DataTree, PenaltyMH step, CompoundStep or DpEvent
        * the result of ``pm.sample`` (any ArviZ version): the per-chain iteration counters
          ``dp_iterations`` (tuning included, so discarding tuned draws does not hide them) and the
          noise multipliers recorded as sampler stats (pass the full result: a slice that drops
          the last draws of a chain undercounts);
        * a step object: the iterations it ran *in this process* (with ``cores > 1`` each worker
          holds its own copy — use the InferenceData then);
        * a ``dp_accounting`` event.
    delta : float
        δ in (0, 1).
    accountant : {"pld", "rdp"}
        Privacy-loss-distribution (tight) or Rényi accountant. Subsampled runs need ``"rdp"``.

    Returns
    -------
    float
        ε such that the released draws are (ε, δ)-DP under substitution of one record.
    """
    delta = check_delta(delta)
    if isinstance(source, dp_accounting.DpEvent):
        event = source
    elif hasattr(source, "dp_event") and callable(source.dp_event):
        event = source.dp_event()
        if getattr(source, "total_iterations", None) == 0:
            warnings.warn(
                "this step object ran no iteration in this process (with cores > 1 each worker "
                "holds its own copy); pass the InferenceData returned by pm.sample instead.",
                UserWarning, stacklevel=2,
            )
    elif hasattr(source, "methods"):
        evs = [m.dp_event() for m in source.methods if hasattr(m, "dp_event")]
        if not evs:
            raise ValueError("the compound step contains no PenaltyMH step; nothing touched the data privately.")
        event = dp_accounting.ComposedDpEvent(evs)
    else:
        event = dp_accounting.ComposedDpEvent(_events_from_idata(source))
    eps = epsilon_of_event(event, delta, accountant=accountant)
    return eps if math.isfinite(eps) else math.inf
