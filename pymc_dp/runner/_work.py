"""What a worker does with a batch of units: build (or reuse) the model, sample, summarise, save.

Everything here runs in the worker process (a Dask worker, or this process with ``n_workers=0``).

**Compile once per worker.** With ``data=`` the model is built by ``build(unit)`` for the first unit
a worker sees and kept in `_CACHE` (one entry per `sample_many` call); later units of that call swap
their data in with ``pm.set_data`` and reuse the compiled model, and reuse the built steps when every
step follows ``pm.Data`` changes (`REUSABLE_STEPS`, each checked by a test that a reused step draws
exactly what a freshly built one draws; `pymc_dp.Collapsed` follows a new release when its plan
changes only in its noise table, and is built again otherwise). A unit whose data have other shapes than the cached model
is built again, and its record says so.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import traceback

import numpy as np

from pymc_dp.runner._store import Store

__all__ = ["REUSABLE_STEPS", "assign_steps", "route_of", "run_batch", "summary_rows"]

#: Step classes that read the model's ``pm.Data`` containers at every iteration (so a built step
#: stays valid after ``pm.set_data``); any other step is rebuilt for each unit.
REUSABLE_STEPS = frozenset(
    {
        "NUTS",
        "HamiltonianMC",
        "Metropolis",
        "Slice",
        "BinaryGibbsMetropolis",
        "CategoricalGibbsMetropolis",
        "DataAugmentation",
        "ConjugateTheta",
        "Collapsed",
    }
)

#: worker-process cache: call id -> dict(model=..., steps=..., shapes=..., reusable=...)
_CACHE: dict = {}

#: worker-process cache of `pymc_dp.runner.many.worker_cache`: key -> object
_MAP_CACHE: dict = {}

#: posterior variables with more elements than this per draw (latent records) are not summarised
SUMMARY_MAX_SIZE = 20


def split_step_kwargs(sample_kwargs: dict) -> tuple[dict, dict]:
    """``(pm.sample keywords, step keywords)``: the keywords ``pm.sample()`` hands to the steps it
    builds (``target_accept``, ``nuts={...}``, ``metropolis={...}``, ...), which the runner must
    hand over itself since it builds the steps (``pm.sample(step=...)`` refuses them)."""
    from pymc.step_methods import STEP_METHODS

    names = {getattr(m, "name", None) for m in STEP_METHODS} - {None}
    rest = dict(sample_kwargs)
    steps = {k: rest.pop(k) for k in list(rest) if k in names}
    if "target_accept" in rest:  # as pm.sample(): target_accept= is NUTS's
        nuts = dict(steps.get("nuts", {}))
        nuts.setdefault("target_accept", rest.pop("target_accept"))
        steps["nuts"] = nuts
    return rest, steps


def assign_steps(model, step=None, step_kwargs=None):
    """The steps ``pm.sample()`` would build for ``model`` (pymc-dp's registered ones included).

    ``step`` may be a callable ``step(model) -> step or list of steps`` that overrides the default;
    ``step_kwargs``: ``{step name: keywords}`` as ``pm.sample()`` hands them to the steps it
    builds (`split_step_kwargs`).
    """
    from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
    from pymc.step_methods import STEP_METHODS

    with model:
        if step is not None:
            built = step(model)
            return list(built) if isinstance(built, list | tuple) else [built]
        _, selected = assign_step_methods(model, None, methods=STEP_METHODS)
        built = instantiate_steppers(model, [], selected, step_kwargs=dict(step_kwargs or {}))
    return list(built) if isinstance(built, list) else [built]


def route_of(steps, model=None) -> str:
    """``"ConjugateTheta[p]; DataAugmentation[x]"``: which step moves which variables."""
    to_rv = {} if model is None else model.values_to_rvs
    parts = []
    for s in steps:
        names = ", ".join(getattr(to_rv.get(v), "name", v.name) for v in getattr(s, "vars", []))
        parts.append(f"{type(s).__name__}[{names}]")
    return "; ".join(parts)


def _prepare(build, data_fn, step_fn, unit, call_id, step_kwargs=None):
    """(model, steps, note, compiled?) for one unit."""
    import pymc as pm

    if data_fn is None:
        model = _check_model(build(unit), unit)
        return model, assign_steps(model, step_fn, step_kwargs), "built", True
    values = data_fn(unit)
    if not isinstance(values, dict):
        raise TypeError(
            f"data(unit) must return a dict of pm.Data values by container name, got "
            f"{type(values).__name__} for unit {unit!r}. Return e.g. {{'obs': release}}."
        )
    shapes = {name: np.shape(v) for name, v in values.items()}
    # the steps' keywords (target_accept=, nuts={...}) are part of what a worker compiled: a
    # later call with others must not reuse steps built with the old ones
    call_id = f"{call_id}:{_kwargs_digest(step_kwargs)}"
    cached = _CACHE.get(call_id)
    note = "built"
    fresh = None
    if cached is not None and cached["shapes"] == shapes:
        # the unit's own model (a graph: milliseconds) must be the compiled one up to its pm.Data
        fresh = _check_model(build(unit), unit)
        pm.set_data(_known(values, fresh, unit), model=fresh)
        if _fingerprint(fresh) != cached["fingerprint"]:
            note = (
                "built again: build(unit) returns another model than the one this worker "
                "compiled (variables of other shapes, or other constants): only what data(unit) "
                "returns is swapped in"
            )
            cached = None
    if cached is not None:
        if cached["shapes"] == shapes:
            model = cached["model"]
            pm.set_data(values, model=model)
            if cached["reusable"]:
                if all(_follows(s) for s in cached["steps"]):
                    from pymc_dp.samplers.convergence import forget_chains

                    for s in cached["steps"]:  # the guard must not pool other units' chains
                        forget_chains(s)
                    return model, cached["steps"], "reused model and steps", False
                cached["steps"] = assign_steps(model, step_fn, step_kwargs)
                return (
                    model,
                    cached["steps"],
                    "reused model, steps built again: the new release needs another collapsed "
                    "plan (support or release rows), not only another noise table",
                    False,
                )
            return model, assign_steps(model, step_fn, step_kwargs), "reused model", False
        changed = sorted(
            n
            for n in set(shapes) | set(cached["shapes"])
            if shapes.get(n) != cached["shapes"].get(n)
        )
        note = (
            f"built again: the data of {', '.join(changed)} have other shapes than the model "
            "this worker compiled"
        )
    model = fresh
    if model is None:  # (a fresh model has its data set already)
        model = _check_model(build(unit), unit)
        pm.set_data(_known(values, model, unit), model=model)
    steps = assign_steps(model, step_fn, step_kwargs)
    reusable = all(type(s).__name__ in REUSABLE_STEPS for s in steps)
    _CACHE.clear()  # one compiled model per worker: the newest call's
    _CACHE[call_id] = {
        "model": model,
        "steps": steps,
        "shapes": shapes,
        "reusable": reusable,
        "fingerprint": _fingerprint(model),
    }
    return model, steps, note, True


def pickle_digest(value) -> str:
    """A digest of ``value``'s cloudpickle (functions of ``__main__`` by value, others by
    reference), the same in every process; a fresh random one when ``value`` cannot be pickled
    (never equal to another: nothing is reused)."""
    import hashlib
    import uuid

    import cloudpickle

    try:
        blob = cloudpickle.dumps(value)
    except Exception:  # noqa: BLE001 - unpicklable here fails later with Dask's own message
        return uuid.uuid4().hex
    return hashlib.sha256(blob).hexdigest()[:16]


def _kwargs_digest(step_kwargs) -> str:
    """A digest of the steps' keywords (`split_step_kwargs`), stable across processes."""
    return pickle_digest(sorted((step_kwargs or {}).items(), key=lambda kv: str(kv[0])))


def _known(values, model, unit):
    """``values`` after checking that each names a ``pm.Data`` container of ``model``."""
    names = {d.name for d in model.data_vars}
    missing = sorted(set(values) - names)
    if missing:
        raise KeyError(
            f"data(unit) returned {missing}, which are not pm.Data containers of the model "
            f"build(unit) returns for unit {unit!r} (it has {sorted(names)}). Name them as in "
            "pm.Data(name, ...)."
        )
    return values


def _fingerprint(model) -> tuple:
    """What two units' models must share for one compiled model to serve both: every variable's
    name, distribution and shape (as it samples), and the constants of the graph, observed values
    included. ``pm.Data`` containers (swapped in by ``data(unit)``) and random generators are
    not part of it. A unit whose ``build`` sets e.g. the number of records from the unit, outside
    ``data(unit)``, differs here and is built again (it reused the first unit's model and drew
    that unit's posterior)."""
    import hashlib

    from pytensor.graph.basic import Constant

    from pymc_dp._compat import ancestors

    from pymc_dp.distributions.graph import fixed_shape

    outs = [*model.basic_RVs, *model.potentials, *model.deterministics]
    outs += [model.rvs_to_values[rv] for rv in model.observed_RVs]
    parts = tuple(
        (v.name, type(v.owner.op).__name__ if v.owner else None, fixed_shape(v)) for v in outs
    )
    digest = hashlib.sha256()
    for var in ancestors(outs):
        if isinstance(var, Constant):
            digest.update(str(var.type).encode())
            digest.update(np.ascontiguousarray(var.data).tobytes())
    return parts, digest.hexdigest()


def _follows(step) -> bool:
    """Whether ``step`` (and every step inside a CompoundStep) is valid for the data just set:
    steps that plan for the release (`pymc_dp.Collapsed`) follow it, or say they cannot."""
    methods = getattr(step, "methods", [step])
    return all(m.follow_releases() for m in methods if hasattr(m, "follow_releases"))


def _check_model(model, unit):
    import pymc as pm

    if not isinstance(model, pm.Model):
        raise TypeError(
            f"build(unit) must return a pm.Model, got {type(model).__name__} for unit {unit!r}."
        )
    return model


def summary_rows(idata, *, hdi_prob: float = 0.94) -> list[dict]:
    """Mean, sd, HDI, bulk ESS and R-hat of every small posterior variable, one row per element."""
    import arviz as az

    post = idata["posterior"] if not hasattr(idata, "posterior") else idata.posterior
    rows = []
    for name in post.data_vars:
        arr = np.asarray(post[name].values, dtype=float)
        if arr.ndim < 2:
            continue
        flat = arr.reshape(arr.shape[0], arr.shape[1], -1)
        if flat.shape[2] > SUMMARY_MAX_SIZE:
            continue
        for j in range(flat.shape[2]):
            label = (
                name
                if flat.shape[2] == 1 and arr.ndim == 2
                else (f"{name}[{','.join(map(str, np.unravel_index(j, arr.shape[2:])))}]")
            )
            x = flat[:, :, j]
            lo, hi = _hdi(x.ravel(), hdi_prob)
            finite = np.all(np.isfinite(x)) and np.ptp(x) > 0
            rows.append(
                {
                    "variable": label,
                    "mean": float(x.mean()),
                    "sd": float(x.std(ddof=1)) if x.size > 1 else float("nan"),
                    "hdi_lower": lo,
                    "hdi_upper": hi,
                    "ess_bulk": float(az.ess(x, method="bulk")) if finite else float("nan"),
                    "r_hat": float(az.rhat(x)) if finite and x.shape[0] > 1 else float("nan"),
                }
            )
    return rows


def _hdi(x: np.ndarray, prob: float) -> tuple[float, float]:
    """The shortest interval holding ``ceil(prob·n)`` of the draws."""
    x = np.sort(x[np.isfinite(x)])
    n = x.size
    if n == 0:
        return float("nan"), float("nan")
    k = max(1, int(np.ceil(prob * n)))
    widths = x[k - 1 :] - x[: n - k + 1]
    i = int(np.argmin(widths))
    return float(x[i]), float(x[i + k - 1])


def run_batch(build, data_fn, step_fn, items, sample_kwargs, outdir, manifest, call_id, run=None):
    """Run the units of ``items`` (``(unit, key, seed)``) one after another; one record per unit.

    A unit that raises is recorded with its error and the batch goes on. With ``outdir`` each
    finished unit is on disk before the next starts, and a unit already finished is skipped (a
    batch retried after its worker died does not redo what was written).
    """
    store = Store(outdir, manifest, overwrite=False) if outdir is not None else None
    return [
        _run_unit(build, data_fn, step_fn, unit, key, seed, sample_kwargs, store, call_id, run)
        for unit, key, seed in items
    ]


def _run_unit(build, data_fn, step_fn, unit, key, seed, sample_kwargs, store, call_id, run=None):
    if store is not None:
        done = store.finished(key)
        if done is not None:
            # finished by this run (a batch retried after its worker died): as it finished
            same_run = run is not None and done.get("run") == run
            return {**done, "status": done.get("status") if same_run else "skipped"}
    t0 = time.perf_counter()
    record = {
        "unit": repr(unit),
        "key": key,
        "seed": int(seed),
        "worker": _worker_name(),
        "pid": os.getpid(),
        "run": run,
    }
    idata = None
    try:
        import pymc as pm
        import pytensor

        record["compiledir"] = str(pytensor.config.compiledir)
        sample_kwargs, step_kwargs = split_step_kwargs(sample_kwargs)
        if step_fn is not None and step_kwargs:
            raise TypeError(
                f"{sorted(step_kwargs)}= set the steps pm.sample() builds, but step= builds them "
                "here: pass those settings to the steps step(model) returns."
            )
        model, steps, note, compiled = _prepare(build, data_fn, step_fn, unit, call_id, step_kwargs)
        kwargs = {
            "progressbar": False,
            "compute_convergence_checks": False,
            "cores": 1,
            **sample_kwargs,
        }
        t1 = time.perf_counter()
        with model, _quiet_pymc(), _sigint_seen() as seen:
            try:
                idata = pm.sample(step=steps, random_seed=int(seed), **kwargs)
            except Exception:
                if seen:  # Ctrl-C during warm-up: PyMC then fails on the short trace
                    raise KeyboardInterrupt(_INTERRUPTED) from None
                raise
            if seen:
                raise KeyboardInterrupt(_INTERRUPTED)
        _check_not_interrupted(idata, kwargs)
        t2 = time.perf_counter()
        record.update(
            status="ok",
            route=route_of(steps, model),
            note=note,
            compiled=compiled,
            rows=summary_rows(idata),
            build_seconds=t1 - t0,
            sample_seconds=t2 - t1,
        )
    except Exception as exc:  # noqa: BLE001 - every failure of one unit is recorded, others go on
        record.update(
            status="error",
            error=f"{type(exc).__name__}: {exc}",
            traceback=traceback.format_exc(limit=8),
        )
        idata = None
    record["seconds"] = time.perf_counter() - t0
    if store is not None:
        store.write(key, record, idata)
        return record
    return {**record, "idata": idata}


_INTERRUPTED = (
    "pm.sample was interrupted; the unit is not saved (run the same call again to resume)."
)


@contextlib.contextmanager
def _sigint_seen():
    """Yields a list that is non-empty once SIGINT (Ctrl-C) arrived. PyMC's sequential sampler
    catches the KeyboardInterrupt and returns (or fails on) a short trace; the unit must stop, not be
    saved as finished or as failed. Only in the main thread (elsewhere no handler can be set)."""
    import signal
    import threading

    seen: list = []
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous == signal.SIG_IGN:
        yield seen
        return

    def handler(signum, frame):
        seen.append(signum)
        if callable(previous):
            previous(signum, frame)
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def _check_not_interrupted(idata, kwargs) -> None:
    """PyMC's sequential sampler catches Ctrl-C and returns the draws made so far; a unit cut short
    must not be saved as finished. Fewer draws than asked: stop here, as the user asked."""
    import inspect

    import pymc as pm

    want = kwargs.get("draws", inspect.signature(pm.sample).parameters["draws"].default)
    post = idata["posterior"] if not hasattr(idata, "posterior") else idata.posterior
    got = int(post.sizes["draw"])
    if got < int(want):
        raise KeyboardInterrupt(
            f"pm.sample was interrupted after {got} of {want} draws; the unit is not saved "
            "(run the same call again to resume)."
        )


@contextlib.contextmanager
def _quiet_pymc():
    """PyMC's per-call INFO lines ("Sequential sampling ...") would repeat for every unit."""
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except (ImportError, ValueError):
        return f"local-{os.getpid()}"


def pytensor_imported() -> bool:
    return "pytensor" in sys.modules
