r"""Privacy spent by releases and data-holder MCMC runs, composed with ``dp_accounting``.

Releases
--------
Each release (a `pymc_dp.release.Release`, or a ``DPObserved`` node of a model) is one
mechanism applied to the records; its event is ``mechanism.dp_event()``: ``LaplaceDpEvent(b/Δ₁)``,
``GaussianDpEvent(σ/Δ₂)``, ``DiscreteLaplaceDpEvent(1/b, Δ₁)``, ``RandomizedResponseDpEvent``, with
Δ the replace-one sensitivity of the released statistic. Releases of one dataset compose
sequentially (``ComposedDpEvent``), except releases that state a partition ``(key, cell)`` of the
people: those of different cells of one key compose in parallel (`pymc_dp.accounting.parts`).
A release is counted once however often it is passed (its ``release_id``).
A mechanism without a ``dp_accounting`` event states its guarantee as ``epsilon_delta``
(e.g. ``SmoothLaplace``); those parts are added by basic composition (ε adds up, their δ is taken
out of the δ given to the accountant).

PenaltyMH
---------
Each DP-penalty iteration is a Gaussian mechanism with noise multiplier `z = \sigma / c`
(noise standard deviation over the sensitivity of the released log ratio, seed 002 Theorem 7
proof); a subsampled iteration (seed 002 §4.1) runs it on a batch of ``b`` of the ``n`` records
drawn without replacement; a DP-MALA iteration (seed 002 §4.2) composes two Gaussian mechanisms
(gradient-drift proposal and log ratio). The whole run is the adaptive composition of its
iterations over every chain and every PenaltyMH step, tuning included.

Neighbouring relation
---------------------
Everything in pymc-dp is calibrated for **replace-one** neighbours (one record substituted, ``n``
public). An event's noise multiplier is relative to that replace-one sensitivity, so the output
distributions of two neighbours are the noise distribution and its shift by one sensitivity unit.
``dp_accounting`` describes exactly that pair with its ``ADD_OR_REMOVE_ONE`` analyses of the
Gaussian, Laplace and discrete Laplace events (its ``REPLACE_ONE`` PLD would shift by two units),
and with its ``REPLACE_ONE`` analysis of randomized response (changing one record's value) and of
subsampling without replacement. The ``"pld"`` accountant here therefore builds each event's
privacy loss distribution with the relation that matches replace-one for that event and composes
them; the ``"rdp"`` accountant is dp_accounting's ``RdpAccountant(REPLACE_ONE)``, whose Gaussian and
Laplace analyses are the shift-by-one ones. The ε returned is for replace-one neighbours.

Count tables (``pdp.Cells`` / ``pdp.Marginals``) state their relation, add/remove by default: their
sensitivity, and so their events, are for one person added or removed (one cell changes by one).
The same shift-by-one analyses then give ε for add/remove neighbours, and the result's
``neighbouring`` says which relation it holds for. Parts that state different relations are
refused: an add/remove ε is not a replace-one ε (a replaced person changes two cells), and their
composition would hold for neither. A bare ``dp_accounting`` event states none and is taken for
the relation of the rest.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
from dp_accounting import dp_event
from dp_accounting.rdp import RdpAccountant

from pymc_dp._checks import check_delta, check_epsilon
from pymc_dp.mechanisms._calibrate import event_leaves as _leaves
from pymc_dp.mechanisms._calibrate import rdp_orders
from pymc_dp.accounting._search import largest_within
from pymc_dp.accounting.parts import (
    Part,
    cell_choices,
    mechanism_part,
    model_nodes,
    unique_parts,
)

__all__ = [
    "PrivacySpent",
    "PrivacyBudgetExceeded",
    "iteration_event",
    "run_event",
    "epsilon_of_event",
    "rho_of_event",
    "privacy_spent",
    "max_iterations",
]

_REPLACE = dp_accounting.NeighboringRelation.REPLACE_ONE


class PrivacyBudgetExceeded(RuntimeError):
    """Raised by a data-holder step before an iteration that would exceed the declared budget."""


def iteration_event(
    noise_multiplier, *, grad_noise_multiplier=None, n_records=None, batch_size=None
) -> dp_accounting.DpEvent:
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
        raise ValueError(
            f"noise_multiplier must be > 0, got noise_multiplier={noise_multiplier!r}."
        )
    event = dp_accounting.GaussianDpEvent(z)
    if grad_noise_multiplier is not None and np.isfinite(grad_noise_multiplier):
        event = dp_accounting.ComposedDpEvent(
            [dp_accounting.GaussianDpEvent(float(grad_noise_multiplier)), event]
        )
    if batch_size is not None and n_records is not None and int(batch_size) < int(n_records):
        event = dp_accounting.SampledWithoutReplacementDpEvent(
            int(n_records), int(batch_size), event
        )
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


def _unsupported(event, accountant):
    return ValueError(
        f"accountant={accountant!r} cannot compose {type(event).__name__} ({event!r}). Use "
        "accountant='rdp' (it composes Gaussian, Laplace, discrete Laplace via zCDP, randomized "
        "response, zCDP and subsampled events), or leave this release out and compose it by hand."
    )


def _rdp_event(event):
    """Map events the RDP accountant lacks onto ones it has (conservatively)."""
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return dp_accounting.SelfComposedDpEvent(_rdp_event(event.event), event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return dp_accounting.ComposedDpEvent([_rdp_event(e) for e in event.events])
    if isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        # pure ε-DP with ε = Δ/b implies ε²/2-zCDP (Bun & Steinke 2016, Proposition 1.4)
        eps = float(event.noise_parameter) * float(event.sensitivity)
        return dp_accounting.ZCDpEvent(rho=0.5 * eps * eps)
    return event


def _pld_of(event, count, interval):
    """Privacy loss distribution of ``count`` compositions of ``event`` for replace-one neighbours."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    if isinstance(event, dp_accounting.NoOpDpEvent):
        return None
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _pld_of(event.event, count * int(event.count), interval)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        out = None
        for e in event.events:
            p = _pld_of(e, count, interval)
            out = p if out is None else (out if p is None else out.compose(p))
        return out
    if isinstance(event, dp_accounting.GaussianDpEvent):
        # k compositions of a Gaussian are one Gaussian with noise multiplier z/√k
        return pld.from_gaussian_mechanism(
            standard_deviation=event.noise_multiplier / math.sqrt(count),
            value_discretization_interval=interval,
        )
    if isinstance(event, dp_accounting.LaplaceDpEvent):
        one = pld.from_laplace_mechanism(
            parameter=event.noise_multiplier, value_discretization_interval=interval
        )
    elif isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        one = pld.from_discrete_laplace_mechanism(
            parameter=event.noise_parameter,
            sensitivity=int(event.sensitivity),
            value_discretization_interval=interval,
        )
    elif isinstance(event, dp_accounting.RandomizedResponseDpEvent):
        one = pld.from_randomized_response(
            noise_parameter=event.noise_parameter,
            num_buckets=event.num_buckets,
            value_discretization_interval=interval,
            neighboring_relation=_REPLACE,
        )
    else:
        raise _unsupported(event, "pld")
    return one if count == 1 else one.self_compose(count)


def _pure_epsilon(event) -> float | None:
    """Σ ε of the parts when every part is pure ε-DP (basic composition), else None."""
    total = 0.0
    for e, k in _leaves(event):
        if isinstance(e, dp_accounting.NoOpDpEvent):
            continue
        if isinstance(e, dp_accounting.LaplaceDpEvent) and e.noise_multiplier > 0:
            total += k / e.noise_multiplier
        elif isinstance(e, dp_event.DiscreteLaplaceDpEvent):
            total += k * float(e.noise_parameter) * float(e.sensitivity)
        elif isinstance(e, dp_accounting.RandomizedResponseDpEvent) and 0 < e.noise_parameter <= 1:
            p, m = float(e.noise_parameter), int(e.num_buckets)
            total += k * math.log((1.0 - p + p / m) / (p / m))
        else:
            return None
    return total


def epsilon_of_event(event, delta, *, accountant: str = "pld") -> float:
    """ε at ``delta`` of a composed event (replace-one neighbours; see the module docstring).

    ``accountant="pld"`` composes privacy loss distributions (tight); ``"rdp"`` is dp_accounting's
    Rényi accountant under ``REPLACE_ONE`` (needed for subsampled events and zCDP events).
    """
    return _epsilon(event, delta, accountant, _pure_epsilon(event))


def _epsilon(event, delta, accountant, pure):
    """`epsilon_of_event`, capped at ``pure`` (Σ ε of pure ε-DP parts, or None)."""
    delta = check_delta(delta)
    if accountant not in ("pld", "rdp"):
        raise ValueError(f"accountant must be 'pld' or 'rdp', got accountant={accountant!r}.")
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return 0.0
    if any(isinstance(e, dp_accounting.NonPrivateDpEvent) for e, _ in _leaves(event)):
        return math.inf
    if accountant == "rdp":
        ev = _rdp_event(event)
        acc = RdpAccountant(orders=rdp_orders(ev), neighboring_relation=_REPLACE)
        if not acc.supports(ev):
            bad = next(e for e, _ in _leaves(ev) if not acc.supports(e))
            raise _unsupported(bad, "rdp")
        acc.compose(ev)
        return _at_most(float(acc.get_epsilon(delta)), pure)
    if _has_wor(event):
        raise ValueError(
            "accountant='pld' cannot compose subsampling without replacement "
            "(SampledWithoutReplacementDpEvent): dp_accounting's PLD accountant does not "
            "support it. Use accountant='rdp' for subsampled penalty runs."
        )
    # discretise the privacy loss relative to its size: the default 1e-4 grid makes a run with
    # a large ε (thousands of weakly-noised iterations) take minutes and gigabytes
    rough = _epsilon(event, delta, "rdp", pure)
    if not math.isfinite(rough):
        return math.inf
    p = _pld_of(event, 1, 1e-4 * max(1.0, rough))
    return 0.0 if p is None else _at_most(float(p.get_epsilon_for_delta(delta)), pure)


def _at_most(eps, pure):
    # the accountants' pessimistic discretisation can exceed the exact Σε of pure-DP parts
    return eps if pure is None else min(eps, pure)


def _event_part(event, label, neighbouring=None):
    """A part for a bare event (a step's run, a user's event), its pure ε and ρ read from it;
    ``neighbouring`` None: a user's event, taken for the relation of the rest."""
    return Part(
        event=event,
        label=label,
        epsilon=_pure_epsilon(event),
        rho=rho_of_event(event),
        neighbouring=neighbouring,
    )


def _total(values):
    """Σ of the parts' values (pure ε or ρ), None when some part has none."""
    total = 0.0
    for v in values:
        if v is None:
            return None
        total += v
    return total


def rho_of_event(event) -> float | None:
    """ρ of zCDP when every part of ``event`` is a Gaussian (ρ = 1/(2z²)) or a zCDP event, else None."""
    rho = 0.0
    for e, k in _leaves(event):
        if isinstance(e, dp_accounting.NoOpDpEvent):
            continue
        if isinstance(e, dp_accounting.GaussianDpEvent) and e.noise_multiplier > 0:
            rho += k / (2.0 * e.noise_multiplier**2)
        elif isinstance(e, dp_accounting.ZCDpEvent) and e.xi == 0:
            rho += k * float(e.rho)
        else:
            return None
    return rho


def max_iterations(
    per_iteration, epsilon, delta, *, accountant: str = "pld", upper: int = 10**9
) -> int:
    """Largest k with ε(k iterations) ≤ ``epsilon`` at ``delta`` (binary search with the accountant)."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)

    def ok(k):
        return (
            epsilon_of_event(run_event(per_iteration, k), delta, accountant=accountant) <= epsilon
        )

    return largest_within(ok, upper)


def _stats_group(idata):
    for getter in (lambda d: d["sample_stats"], lambda d: d.sample_stats):
        try:
            return getter(idata)
        except (KeyError, AttributeError, TypeError):
            continue
    return None


def _check_full_run(iters, exhausted, attrs):
    """Refuse sample stats from which draws were removed (sliced, thinned): ε is read from the
    last ``dp_iterations`` of each chain and would miss the iterations no longer shown.

    Per chain and step the counter grows by 1 per draw (by 0 only on draws marked
    ``dp_budget_exhausted``, which read no data); with PyMC's ``tuning_steps`` attribute (tuning
    discarded or kept in ``warmup_``), a draw that read data is draw ``i`` of the run at
    ``tuning_steps + i + 1``. Checks public counters only.
    """
    it = np.asarray(iters, dtype=np.int64)
    shown = {"chains": it.shape[0], "draws": it.shape[1]}
    for what, count in shown.items():
        ran = attrs.get(f"pymc_dp_{what}") if hasattr(attrs, "get") else None
        ran = None if ran is None else int(np.asarray(ran).reshape(-1)[0])
        if ran is not None and ran != count:
            raise ValueError(
                f"this trace shows {count} {what}, but the pm.sample run it comes from had "
                f"{ran} (sample_stats.attrs['pymc_dp_{what}']): "
                f"{what} were dropped or added, and every iteration that read the data counts. "
                "Pass the full result of pm.sample to privacy_spent / publishable (several runs "
                "as a list), and select from the published result afterwards (post-processing)."
            )
    frozen = np.zeros(it.shape, bool) if exhausted is None else np.asarray(exhausted, bool)
    step = np.diff(it, axis=1)
    ok = np.all((step == 1) | ((step == 0) & frozen[:, 1:]))
    tune = attrs.get("tuning_steps") if hasattr(attrs, "get") else None
    if ok and tune is not None and np.ndim(tune) == 0:
        expected = int(tune) + 1 + np.arange(it.shape[1])[None, :, None]
        ok = bool(np.all((it == expected) | frozen))
    if not ok:
        raise ValueError(
            "the sample stats' dp_iterations show that draws were removed from this run (a sliced, "
            "thinned or concatenated trace), so its privacy loss cannot be read from them: every "
            "iteration that read the data counts, shown or not. Pass the full result of pm.sample "
            "to privacy_spent / publishable, and slice or thin the published result afterwards "
            "(post-processing)."
        )


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
            out = np.asarray(stats[name])
        except KeyError:
            return None
        return out[..., None] if out.ndim == 2 else out

    # (chain, draw) for one PenaltyMH step; (chain, draw, step) when several steps record the stat
    iters = iters[..., None] if iters.ndim == 2 else iters
    _check_full_run(iters, col("dp_budget_exhausted"), getattr(stats, "attrs", {}))
    z, zg = col("dp_noise_multiplier"), col("dp_grad_noise_multiplier")
    nrec, batch = col("dp_n_records"), col("dp_batch_size")
    events = []
    for c in range(iters.shape[0]):
        for j in range(iters.shape[2]):
            k = int(np.max(iters[c, :, j]))
            zc = float(z[c, -1, j])
            zgc = float(zg[c, -1, j]) if zg is not None else None
            nc = int(nrec[c, -1, j]) if nrec is not None else None
            bc = int(batch[c, -1, j]) if batch is not None else None
            it = iteration_event(zc, grad_noise_multiplier=zgc, n_records=nc, batch_size=bc)
            events.append(run_event(it, k))
    return events


class PrivacySpent(float):
    """ε of a composition (a float), with what it was computed from.

    Attributes
    ----------
    epsilon : float
        The same number as the float itself.
    delta : float
        δ at which ε holds.
    rho : float or None
        ρ of zCDP when every part is a Gaussian-type mechanism (Gaussian, discrete Gaussian,
        Gaussian penalty iterations), else None.
    accountant : str
    event : dp_accounting.DpEvent
        The composed event (releases, runs); with partitions, that of the worst choice of cells.
    cells : dict
        For each partition key, the cell whose releases give the largest ε (empty without
        partitions).
    neighbouring : str
        The neighbouring relation ε holds for: that of every release composed (``"replace-one"``,
        or ``"add/remove"`` for count tables released so, `pymc_dp.statistics.cells`).
    """

    def __new__(
        cls,
        epsilon,
        *,
        delta,
        rho,
        accountant,
        event,
        extra=(),
        cells=None,
        neighbouring="replace-one",
    ):
        obj = super().__new__(cls, epsilon)
        obj.delta, obj.rho, obj.accountant, obj.event = delta, rho, accountant, event
        obj.approx_dp = tuple(extra)
        obj.cells = dict(cells or {})
        obj.neighbouring = neighbouring
        return obj

    @property
    def epsilon(self) -> float:
        return float(self)

    def __str__(self):
        return float.__repr__(self)

    def __reduce__(self):
        return _rebuild_spent, (
            float(self),
            self.delta,
            self.rho,
            self.accountant,
            self.event,
            self.approx_dp,
            self.cells,
            self.neighbouring,
        )

    def __repr__(self):
        rho = "" if self.rho is None else f", rho={self.rho!r}"
        return (
            f"PrivacySpent(epsilon={float(self)!r}, delta={self.delta!r}{rho}, "
            f"accountant={self.accountant!r}, neighbouring={self.neighbouring!r})"
        )


def _rebuild_spent(
    eps, delta, rho, accountant, event, extra, cells=None, neighbouring="replace-one"
):
    return PrivacySpent(
        eps,
        delta=delta,
        rho=rho,
        accountant=accountant,
        event=event,
        extra=extra,
        cells=cells,
        neighbouring=neighbouring,
    )


def _is_model(obj) -> bool:
    import pymc as pm

    return isinstance(obj, pm.Model)


def _collect(source, parts):
    """Append the parts (`pymc_dp.accounting.parts.Part`) of ``source``."""
    from pymc_dp.release import Release

    if isinstance(source, dp_accounting.DpEvent):
        parts.append(_event_part(source, "a dp_accounting event"))
    elif isinstance(source, Release):
        if source._info is None:
            raise TypeError(
                "this array lost its release metadata; pass the Release from pdp.release."
            )
        parts.append(
            mechanism_part(
                source.mechanism,
                f"a Release of {source.statistic!r} by {type(source.mechanism).__name__}",
                partition=source.partition_cell,
                release_id=source.release_id,
                neighbouring=source.neighbouring,
            )
        )
    elif _is_model(source):
        nodes = model_nodes(source)
        if not nodes:
            raise ValueError(
                "the model has no DPObserved node, so no release to account for. Add the releases "
                "with pdp.DPObserved(...), or pass the Release objects or the InferenceData."
            )
        for name, node in nodes.items():
            parts.append(
                mechanism_part(
                    node.mechanism,
                    f"DPObserved node {name!r}",
                    partition=node.partition,
                    release_id=node.release_id,
                    neighbouring=getattr(node.statistic, "neighbouring", "replace-one"),
                )
            )
    elif isinstance(source, list | tuple):
        if not source:
            raise ValueError("privacy_spent got an empty list; pass releases, models or runs.")
        for item in source:
            _collect(item, parts)
    elif hasattr(source, "dp_event") and callable(source.dp_event):
        parts.append(_event_part(source.dp_event(), "a step", "replace-one"))
        if getattr(source, "total_iterations", None) == 0:
            warnings.warn(
                "this step object ran no iteration in this process (with cores > 1 each worker "
                "holds its own copy); pass the InferenceData returned by pm.sample instead.",
                UserWarning,
                stacklevel=3,
            )
    elif hasattr(source, "methods"):
        evs = [m.dp_event() for m in source.methods if hasattr(m, "dp_event")]
        if not evs:
            raise ValueError(
                "the compound step contains no PenaltyMH step; nothing touched the data privately."
            )
        parts.extend(_event_part(e, "a step", "replace-one") for e in evs)
    elif isinstance(source, str | bytes):
        raise TypeError(
            f"privacy_spent got the text {source!r}; pass the objects themselves: a pm.Model, a "
            "Release from pdp.release, the InferenceData of a PenaltyMH run, a step or a "
            "dp_accounting event (or a list of them)."
        )
    elif isinstance(source, np.ndarray | float | int):
        raise TypeError(
            "privacy_spent got a bare array/number, which carries no privacy information. Pass the "
            "Release returned by pdp.release (or the model, an InferenceData or a dp_accounting event)."
        )
    else:
        parts.extend(
            _event_part(e, "a PenaltyMH run", "replace-one") for e in _events_from_idata(source)
        )


def _needs_rdp(event) -> bool:
    return _has_wor(event) or any(isinstance(e, dp_accounting.ZCDpEvent) for e, _ in _leaves(event))


def privacy_spent(source, *, delta, accountant: str | None = None) -> PrivacySpent:
    r"""ε spent at ``delta`` by releases and data-holder runs, composed by ``dp_accounting``.

    Parameters
    ----------
    source : model, Release, InferenceData, step, DpEvent, or a list of them
        * a ``pm.Model``: every ``DPObserved`` node (its calibrated mechanism), those of nested
          ``pm.Model("sub")`` blocks and those ``marginalize`` collapsed included; a copy of the
          model (``clone_model``, ``pm.do``, ``pm.observe``, cloudpickle) gives the same;
        * a `pymc_dp.release.Release` (from ``pdp.release``);
        * the result of ``pm.sample`` (any ArviZ version) with ``PenaltyMH`` steps: the per-chain,
          per-step iteration counters ``dp_iterations`` (tuning included) and the noise
          multipliers recorded as sampler stats (pass the full result);
        * a step object: the iterations it ran *in this process* (with ``cores > 1`` each worker
          holds its own copy — use the InferenceData then);
        * a ``dp_accounting`` event;
        * a list of any of these: composed sequentially (they touch the same records), a
          release counted once however often it appears (``[r, r]`` is ``r``), and releases that
          state a ``partition=(key, cell)`` composed in parallel across the cells of a key (the
          worst cell; `pymc_dp.accounting.parts`).
    delta : float
        δ in (0, 1), or 0 when every part is pure ε-DP (its mechanism states a pure ε, e.g.
        `Laplace`, `Staircase`): their ε then add up (basic composition, parallel across
        partition cells; ``accountant`` is ``"pure"``), and anything else is refused.
    accountant : {None, "pld", "rdp"}
        Privacy-loss-distribution (tight) or Rényi accountant. ``None`` (default) uses ``"pld"``
        unless the composition holds an event it cannot take (subsampling without replacement, a
        zCDP event such as ``DiscreteGaussian``'s), then ``"rdp"``; the result's ``accountant``
        says which. ``"pld"`` given explicitly refuses such events.

    Returns
    -------
    PrivacySpent
        A float, ε such that everything composed is (ε, δ)-DP under replace-one neighbours; it
        also carries ``rho`` (zCDP, for Gaussian-type compositions, else None), ``delta``,
        ``accountant`` and the composed ``event``.
    """
    pure_only = _is_zero(delta)
    delta = 0.0 if pure_only else check_delta(delta)
    if accountant not in (None, "pld", "rdp"):
        raise ValueError(
            f"accountant must be 'pld' or 'rdp', got accountant={accountant!r}. Leave it None to "
            "choose automatically."
        )
    parts = []
    _collect(source, parts)
    parts = unique_parts(parts)
    relation = _relation(parts)
    if pure_only:
        spents = [_compose_pure(chosen, cells) for chosen, cells in cell_choices(parts)]
        best = max(spents, key=float)
        best.neighbouring = relation
        return best
    if accountant is None:
        every = [p.event for p in parts if p.event is not None]
        accountant = "rdp" if every and _needs_rdp(dp_accounting.ComposedDpEvent(every)) else "pld"
    spents = [_compose(chosen, delta, accountant, cells) for chosen, cells in cell_choices(parts)]
    best = max(spents, key=float)  # parallel composition: the worst choice of cells
    rhos = [s.rho for s in spents]
    best.rho = None if any(r is None for r in rhos) else max(rhos)
    best.neighbouring = relation
    return best


def _relation(parts) -> str:
    """The neighbouring relation every part's guarantee is for (bare events: any); refused when
    parts state different ones: an ε for add/remove neighbours is not one for replace-one (a
    replaced person changes two cells of a table), and composing them gives neither."""
    by = {}
    for p in parts:
        if p.neighbouring is not None:
            by.setdefault(p.neighbouring, []).append(p.label)
    if len(by) > 1:
        listed = "; ".join(f"{rel}: {', '.join(labels)}" for rel, labels in sorted(by.items()))
        raise ValueError(
            f"privacy_spent composes guarantees for one neighbouring relation, but these parts "
            f"state different ones ({listed}). An epsilon for add/remove neighbours is not one "
            "for replace-one (replacing a person changes two cells of a table) and composing "
            "them gives neither. Account each relation on its own, or release the tables with "
            "pdp.Cells(neighbouring='replace-one') / pdp.Marginals(..., neighbouring="
            "'replace-one') so that every release states replace-one."
        )
    return next(iter(by), "replace-one")


def _is_zero(delta) -> bool:
    return (
        isinstance(delta, int | float | np.integer | np.floating)
        and not isinstance(delta, bool | np.bool_)
        and delta == 0
    )


def _compose_pure(parts, cells):
    """ε at δ = 0: basic composition of pure ε-DP parts; anything else is refused, named."""

    def pure(p):  # the part's pure ε, or None
        if p.approx is not None:
            return float(p.approx[0]) if p.approx[1] == 0 else None
        return p.epsilon

    bad = [
        f"{p.label} ({type(p.event).__name__ if p.event is not None else 'epsilon, delta > 0'})"
        for p in parts
        if pure(p) is None
    ]
    if bad:
        raise ValueError(
            f"delta=0 asks for pure epsilon-DP, but {bad} hold only (epsilon, delta) guarantees "
            "(Gaussian noise, zCDP, subsampling, smooth sensitivity, PenaltyMH runs). Pass delta > 0, "
            "e.g. delta=1e-6, or leave those parts out."
        )
    events = [p.event for p in parts if p.event is not None]
    event = events[0] if len(events) == 1 else dp_accounting.ComposedDpEvent(events)
    eps = float(sum(pure(p) for p in parts))
    extra = [p.approx for p in parts if p.approx is not None]
    return PrivacySpent(
        eps, delta=0.0, rho=None, accountant="pure", event=event, extra=extra, cells=cells
    )


def _compose(parts, delta, accountant, cells):
    """ε at ``delta`` of the sequential composition of ``parts``."""
    events = [p.event for p in parts if p.event is not None]
    extra = [p.approx for p in parts if p.approx is not None]
    event = events[0] if len(events) == 1 else dp_accounting.ComposedDpEvent(events)
    if not events:
        event = dp_accounting.NoOpDpEvent()
    left = delta - sum(d for _, d in extra)
    if left <= 0:
        named = [p.label for p in parts if p.approx is not None]
        raise ValueError(
            f"delta={delta!r} is not larger than the total delta {delta - left!r} of the "
            f"(epsilon, delta) releases without a dp_accounting event ({', '.join(named)}); pass "
            "a larger delta."
        )
    with_event = [p for p in parts if p.event is not None]
    pure = _total(p.epsilon for p in with_event)  # the mechanisms' own pure ε
    eps = _epsilon(event, left, accountant, pure) if events else 0.0
    eps = (eps if math.isfinite(eps) else math.inf) + sum(e for e, _ in extra)
    rho = None if extra else _total(p.rho for p in with_event)
    return PrivacySpent(
        eps, delta=delta, rho=rho, accountant=accountant, event=event, extra=extra, cells=cells
    )
