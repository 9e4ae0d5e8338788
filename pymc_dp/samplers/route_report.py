"""The route in ``idata.sample_stats.attrs``: which pymc-dp step moved which variables, and why.

After ``pm.sample()`` (with or without ``step=``) on a model sampled by at least one pymc-dp step,
``idata.sample_stats.attrs`` holds

* ``pymc_dp_steps`` — one line: every step of the run and its variables, e.g.
  ``"ConjugateTheta[mu] + SufficientTheta[sigma_log__] + DataAugmentation[x]"``;
* ``pymc_dp_route`` — a JSON document (`json.loads` it): a list with, per pymc-dp step, ``step``
  (class name), ``vars`` (value variables), ``reason`` (why this step can take them) and what the
  step decided: ``families`` (ConjugateTheta: θ → conjugate family; SufficientTheta: child →
  family of its sufficient statistics), ``plans`` (Collapsed: record → case, terms, support size,
  records), ``interweave`` (DataAugmentation: its ``interweave_decisions``, each with ``chains``:
  per chain of this run whether the non-centred θ-move ran after warm-up, read from the
  ``dp_route`` stat, and the warm-up measurement's reason when the chain ran in this process);
* ``pymc_dp_chains``, ``pymc_dp_draws`` — for a run of a data-holder step (``PenaltyMH``): its
  numbers of chains and draws, so ``privacy_spent`` refuses the trace once chains or draws are
  dropped (``idata.sel(chain=[0])``, ``idata.isel(draw=slice(0, 100))``).

Strings and integers only, so ``idata.to_netcdf(...)`` writes them. Models sampled by PyMC's
steps alone get no attrs, and ``return_inferencedata=False`` returns PyMC's trace untouched.

**How (PyMC internals used).** PyMC gives a step no say in the attrs of the result. ``pm.sample``
builds the steps, calls ``init_traces(..., step=..., model=...)`` and ends with
``_sample_return(..., return_inferencedata=..., model=...)``, both looked up in
``pymc.sampling.mcmc`` at call time (same calls and keywords on PyMC 5.28 and 6.4). `install`
wraps the first to note the step of the run and the second to write the attrs on the
``InferenceData`` (ArviZ 0.x) or ``DataTree`` (ArviZ 1.x) it returns. If a later PyMC calls
something else, no attrs are written and ``tests/unit/samplers/test_route_report.py`` fails on
that PyMC line.
"""

from __future__ import annotations

import functools
import json
import threading

import numpy as np

__all__ = ["install", "route_attrs"]

_PENDING = threading.local()  # (model, step) noted by init_traces for this thread's pm.sample


def _steps(step) -> list:
    methods = getattr(step, "methods", None)
    return list(methods) if methods is not None else [step]


def _label(step) -> str:
    names = [getattr(v, "name", str(v)) for v in getattr(step, "vars", [])]
    return f"{type(step).__name__}[{','.join(names)}]"


def route_attrs(step, sample_stats=None) -> dict:
    """The attrs for a run with ``step`` (a step or ``CompoundStep``); ``{}`` without pymc-dp steps.

    Parameters
    ----------
    step : pymc step method
    sample_stats : xarray.Dataset or DataTree node, optional
        The run's sampler stats (per-chain route of DataAugmentation's θ-move from ``dp_route``).
    """
    steps = _steps(step)
    ours = [s for s in steps if callable(getattr(s, "route", None))]
    if not ours:
        return {}
    routes = [_jsonable(s.route()) for s in ours]
    # the steps that emit ``dp_route``, in the order of the run (PyMC stacks a stat that several
    # steps emit along a last axis, one entry per step, in this order)
    emitters = [j for j, s in enumerate(ours) if "dp_route" in getattr(s, "dp_stats", {})]
    per_step = _chains_of(sample_stats, len(emitters))
    if per_step is not None:
        for j, route in zip(emitters, per_step, strict=True):
            for k, decision in enumerate(routes[j].get("interweave", [])):
                decision["chains"] = _chain_moves(decision, route, k)
    out = {
        "pymc_dp_steps": " + ".join(_label(s) for s in steps),
        "pymc_dp_route": json.dumps(routes, ensure_ascii=False),
    }
    shape = _run_shape(sample_stats)
    if shape is not None:  # privacy_spent refuses a trace with chains or draws dropped or added
        out["pymc_dp_chains"], out["pymc_dp_draws"] = shape
    return out


def _run_shape(sample_stats):
    """``(chains, draws)`` of a run of a data-holder step (its ``dp_iterations`` stat), or None."""
    if sample_stats is None:
        return None
    try:
        values = np.asarray(sample_stats["dp_iterations"])
    except KeyError:
        return None
    return (int(values.shape[0]), int(values.shape[1])) if values.ndim >= 2 else None


def _chains_of(sample_stats, n_steps):
    """Per step emitting ``dp_route``: the stat at each chain's last draw (None when the run has no
    such stat or its shape is not (chain, draw) for one step / (chain, draw, n_steps) for several)."""
    if sample_stats is None or n_steps == 0:
        return None
    try:
        values = np.asarray(sample_stats["dp_route"])
    except KeyError:
        return None
    if values.ndim < 2 or values.shape[1] == 0:
        return None
    if values.ndim == 2 and n_steps == 1:
        values = values[..., None]
    if values.ndim != 3 or values.shape[2] != n_steps:
        return None
    return [[int(v) for v in values[:, -1, j]] for j in range(n_steps)]


def _chain_moves(decision, route, k):
    """Per chain: whether group ``k``'s θ-move ran after warm-up, and the measured reason."""
    measured = decision.pop("measured", None)
    # with cores=1 the step ran every chain of this run in turn: its last len(route) verdicts
    mine = measured[-len(route) :] if measured and len(measured) >= len(route) else None
    out = []
    for c, r in enumerate(route):
        row = {"chain": c, "theta_move": int(bool(r >> k & 1))}
        if mine is not None and bool(mine[c]["enabled"]) == bool(row["theta_move"]):
            row["reason"] = str(mine[c]["reason"])
        elif measured is not None:
            row["reason"] = (
                "decided at warm-up in the chain's own process (cores > 1): the dp_route sampler "
                "stat shows it"
            )
        out.append(row)
    return out


def _jsonable(value):
    """Strings and integers (bools as 0/1, floats as short strings), recursively."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return f"{float(value):.4g}"
    if value is None:
        return ""
    return str(value)


def _note(init_traces):
    @functools.wraps(init_traces)
    def wrapper(*args, **kwargs):
        _PENDING.run = (kwargs.get("model"), kwargs.get("step"))
        return init_traces(*args, **kwargs)

    wrapper._pdp_route_note = True
    return wrapper


def _attach(sample_return):
    @functools.wraps(sample_return)
    def wrapper(*args, **kwargs):
        out = sample_return(*args, **kwargs)
        model, step = getattr(_PENDING, "run", (None, None))
        _PENDING.run = (None, None)
        if (
            step is None
            or model is not kwargs.get("model")
            or not kwargs.get("return_inferencedata")
        ):
            return out
        try:
            stats = out["sample_stats"]
        except (KeyError, TypeError):
            return out
        stats.attrs.update(route_attrs(step, stats))
        return out

    wrapper._pdp_route_attach = True
    return wrapper


def install() -> None:
    """Write the route into ``pm.sample()``'s result (wraps ``pymc.sampling.mcmc.init_traces`` and
    ``_sample_return``, once)."""
    from pymc.sampling import mcmc

    if not getattr(mcmc.init_traces, "_pdp_route_note", False):
        mcmc.init_traces = _note(mcmc.init_traces)
    if not getattr(mcmc._sample_return, "_pdp_route_attach", False):
        mcmc._sample_return = _attach(mcmc._sample_return)
