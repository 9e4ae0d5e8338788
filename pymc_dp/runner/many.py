"""Many independent posteriors at once, on Dask: `sample_many`.

```python
import pymc_dp as pdp

def build(county):                         # any function: unit -> pm.Model
    with pm.Model() as m:
        ...                                # the county's model and its DPObserved release
    return m

res = pdp.sample_many(build, counties, outdir="runs/counties", draws=1000, tune=1000)
res[county]          # that unit's InferenceData (PyMC 5) / DataTree (PyMC 6)
res.summary          # one row per unit × scalar parameter: mean, sd, HDI, ESS, R-hat, route, seconds
```

* **Where it runs.** By default on a Dask ``LocalCluster``-like cluster of this machine (one process
  per core, one thread each; each worker compiles in its own PyTensor compile directory,
  ``<base_compiledir>/pymc_dp_workers/w<i>``, kept between runs). ``client=`` takes a
  ``distributed.Client`` or a scheduler address (``"tcp://host:8786"``) of any Dask cluster
  (dask-jobqueue, Kubernetes, …): nothing else changes. ``n_workers=0`` runs the units in this
  process without Dask (debugging, notebooks).
* **Seeds.** Unit ``u`` samples with a seed derived from ``seed`` and ``u`` alone
  (`unit_seed`), so a run gives the same draws whatever the number of workers, the batching and
  the order of completion.
* **Compile once per worker.** ``data=`` (a function ``unit -> {pm.Data name: value}``) makes the
  units share one model: each worker builds it once and swaps the data in (see
  `pymc_dp.runner._work`).
* **Nothing lost.** With ``outdir`` every finished unit is written as soon as it is done; calling
  again with the same arguments and the same code (``build``, ``data``, ``step`` and the constants
  they read: `pymc_dp.runner._code`) skips finished units (resume after a crash); a changed
  ``build`` is refused, not handed the old model's posteriors; a unit that raises is
  recorded with its error and the others go on; a unit whose worker dies is run again elsewhere
  (Dask reschedules it).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from pymc_dp._checks import check_count
from pymc_dp.runner._code import code_digest
from pymc_dp.runner._store import Store, load_idata, unit_key
from pymc_dp.runner._work import pickle_digest, run_batch

__all__ = ["ManyResult", "map_units", "sample_many", "unit_seed", "worker_cache"]

_RESERVED = ("random_seed", "model", "step")


def unit_seed(seed: int, unit) -> int:
    """The seed of ``unit``'s ``pm.sample`` call: a function of ``seed`` and the unit only."""
    digest = int(hashlib.sha256(unit_key(unit).encode()).hexdigest()[:15], 16)
    return int(np.random.SeedSequence([int(seed), digest]).generate_state(1, np.uint32)[0])


class ManyResult(Mapping):
    """The results of `sample_many`: a mapping unit → InferenceData / DataTree, plus tables.

    Attributes
    ----------
    summary : pandas.DataFrame
        One row per unit × scalar posterior element (variables with at most 20 elements per draw):
        ``unit, variable, mean, sd, hdi_lower, hdi_upper, ess_bulk, r_hat, route, seconds``.
    units : pandas.DataFrame
        One row per unit: ``status`` (ok / skipped / error), ``route`` (which step moved which
        variables), ``seconds`` (wall time of the unit on its worker), ``build_seconds`` (everything
        but sampling), ``note`` (built / reused model and steps / built again and why), ``worker``,
        ``error``.
    errors : dict
        unit → ``"ExceptionType: message"`` for the units that raised.
    """

    def __init__(self, units, records, store, in_memory):
        import pandas as pd

        self._units = list(units)
        self._by_key = {unit_key(u): u for u in self._units}
        self._records = records
        self._store = store
        self._memory = in_memory
        rows, unit_rows = [], []
        for u in self._units:
            rec = records.get(unit_key(u), {})
            unit_rows.append(
                {
                    "unit": u,
                    "status": rec.get("status", "missing"),
                    "route": rec.get("route"),
                    "seconds": rec.get("seconds"),
                    "build_seconds": rec.get("build_seconds"),
                    "note": rec.get("note"),
                    "worker": rec.get("worker"),
                    "error": rec.get("error"),
                }
            )
            for r in rec.get("rows", []) or []:
                rows.append(
                    {"unit": u, **r, "route": rec.get("route"), "seconds": rec.get("seconds")}
                )
        self.units = pd.DataFrame(unit_rows)
        self.summary = pd.DataFrame(rows)
        self.errors = {
            u: records[unit_key(u)]["error"]
            for u in self._units
            if records.get(unit_key(u), {}).get("status") == "error"
        }

    def __getitem__(self, unit):
        unit = unit.item() if isinstance(unit, np.generic) else unit  # as `_check_units` keys them
        key = unit_key(unit)
        if key not in self._by_key or unit not in self._units:
            raise KeyError(unit)
        if key in self._memory:
            return self._memory[key]
        rec = self._records.get(key, {})
        if rec.get("status") == "error":
            raise KeyError(f"unit {unit!r} failed: {rec.get('error')}")
        if self._store is None:
            raise KeyError(unit)
        self._memory[key] = load_idata(self._store.data_path(key))
        return self._memory[key]

    def __iter__(self):
        return (
            u
            for u in self._units
            if self._records.get(unit_key(u), {}).get("status") in ("ok", "skipped")
        )

    def __len__(self):
        return sum(1 for _ in self)

    def __repr__(self):
        counts = self.units["status"].value_counts().to_dict() if len(self.units) else {}
        return f"ManyResult({len(self._units)} units: {counts})"


def sample_many(
    build,
    units,
    *,
    data=None,
    outdir=None,
    n_workers=None,
    client=None,
    seed=0,
    overwrite=False,
    progressbar=True,
    batch_size=None,
    step=None,
    timeout=10.0,
    **sample_kwargs,
) -> ManyResult:
    """Run ``pm.sample()`` (pymc-dp's default step assignment) for every unit, on Dask.

    Parameters
    ----------
    build : callable
        ``build(unit) -> pm.Model``. With ``data=``, called once per worker (and again only when a
        unit's data have other shapes).
    units : iterable
        Hashable units with a stable ``repr`` (ints, strings, tuples of these): each is one
        independent posterior.
    data : callable, optional
        ``data(unit) -> {name: value}`` for the model's ``pm.Data`` containers: units then share
        one compiled model per worker.
    outdir : str or Path, optional
        Directory for the results (``units/<key>.nc`` + ``.json`` per unit, ``manifest.json``).
        Re-running the same call resumes; another call's directory is refused unless
        ``overwrite=True`` — another call includes a ``build``, ``data`` or ``step`` whose code
        changed, or a value it reads (a module-level constant, a closure variable; see
        `pymc_dp.runner._code`). Without it the results come back in memory.
    n_workers : int, optional
        Workers of the local cluster (default: the machine's cores); ``0`` runs in this process
        without Dask. Ignored with ``client=``.
    client : distributed.Client, Cluster or str, optional
        An existing Dask client or cluster (e.g. `local_cluster`, a dask-jobqueue cluster), or the
        address of a scheduler to connect to. A cluster passed in is not closed.
    seed : int
        The one seed every unit's seed is derived from (`unit_seed`).
    overwrite : bool
        Discard results of a different call in ``outdir``.
    progressbar : bool
        Show units done, failed and the ETA on stderr.
    batch_size : int, optional
        Units per task, >= 1 (default ``None``: enough tasks to keep every worker busy, at most 16
        per task).
    step : callable, optional
        ``step(model) -> step(s)`` instead of the default assignment.
    timeout : float
        Seconds to wait for a scheduler given by address.
    **sample_kwargs
        Passed to ``pm.sample`` (``draws``, ``tune``, ``chains``, ...); ``cores`` defaults to 1,
        and must be 1 on Dask (a worker's process cannot start the processes ``cores > 1``
        runs chains in): parallelism comes from the workers. ``n_workers=0`` takes any ``cores``.

    Returns
    -------
    ManyResult
    """
    units = _check_units(units)
    seed = _check_seed(seed)
    if not callable(build):
        raise TypeError(f"build must be a function unit -> pm.Model, got {type(build).__name__}.")
    if data is not None and not callable(data):
        raise TypeError(
            f"data must be a function unit -> dict of pm.Data values, got {type(data).__name__}."
        )
    _check_step(step)
    bad = [k for k in _RESERVED if k in sample_kwargs]
    if bad:
        raise TypeError(
            f"sample_many sets {bad[0]}= itself (seeds come from seed=, the model from build, "
            "steps from step=(model -> steps)); remove it from the keyword arguments."
        )
    n_workers, batch_size = _check_workers(n_workers, batch_size)
    _check_cores(sample_kwargs, on_dask=client is not None or n_workers != 0)
    _check_run_lengths(sample_kwargs)
    manifest = _manifest(build, data, step, seed, sample_kwargs)
    store = Store(outdir, manifest, overwrite=overwrite) if outdir is not None else None
    outdir = None if store is None else str(store.root)
    keys = [unit_key(u) for u in units]
    records = {}
    todo = []
    for u, k in zip(units, keys, strict=True):
        done = store.finished(k) if store is not None else None
        if done is not None:
            records[k] = {**done, "status": "skipped"}
        else:
            todo.append((u, k, unit_seed(seed, u)))
    memory: dict = {}
    call_id = _call_id(build, data, step)
    progress = _Progress(len(units), len(units) - len(todo), enabled=progressbar)
    # items -> one record per unit; the same call in this process and on every Dask worker
    work = functools.partial(
        run_batch,
        build,
        data,
        step,
        sample_kwargs=sample_kwargs,
        outdir=outdir,
        manifest=manifest,
        call_id=call_id,
        run=uuid.uuid4().hex,  # tells a unit finished by this run from one of an earlier run
    )
    if todo:
        if client is None and n_workers == 0:
            for item in todo:
                (rec,) = work([item])
                _collect(rec, records, memory)
                progress.update(rec)
        else:
            _run_on_dask(
                work,
                todo,
                call_id,
                n_workers,
                client,
                timeout,
                batch_size,
                records,
                memory,
                progress,
            )
    progress.close()
    return ManyResult(units, records, store, memory)


def _call_id(build, data, step) -> str:
    """Workers keep one compiled model per (build, data, step): the same functions (by value for
    functions of ``__main__``, by reference otherwise) reuse it across calls on one cluster."""
    return pickle_digest((build, data, step))


def _check_run_lengths(sample_kwargs) -> None:
    """Refuse, once and by name, what would fail in every unit: no InferenceData back, and
    chains / draws / tune that are not counts (``chains=0`` failed each unit with a
    ZeroDivisionError)."""
    if sample_kwargs.get("return_inferencedata", True) is not True:
        raise TypeError(
            "sample_many stores and returns each unit's InferenceData, so return_inferencedata "
            f"must be True, got return_inferencedata={sample_kwargs['return_inferencedata']!r}. "
            "Drop it."
        )
    for name, low in (("chains", 1), ("draws", 1), ("tune", 0)):
        if sample_kwargs.get(name) is not None:
            check_count(
                sample_kwargs[name],
                name=name,
                minimum=low,
                fix="It is passed to pm.sample for every unit.",
            )


def _collect(rec, records, memory):
    idata = rec.pop("idata", None)
    records[rec["key"]] = rec
    if idata is not None:
        memory[rec["key"]] = idata


def _check_step(step) -> None:
    """``step`` is a function of the model (called once per model built), not a step class or
    a step built for another model."""
    if step is None:
        return
    if isinstance(step, type) or not callable(step):
        what = step.__name__ if isinstance(step, type) else type(step).__name__
        raise TypeError(
            f"step must be a function model -> step(s), got {what}: each unit's model is built "
            "on a worker, so its steps must be built there too. Pass e.g. "
            "step=lambda model: pm.NUTS(model=model) (or a list of steps, built inside the "
            "function from the model's variables)."
        )


def _check_workers(n_workers, batch_size) -> tuple[int | None, int | None]:
    """``n_workers``: None or an int >= 0; ``batch_size``: None or an int >= 1 (bools refused:
    ``n_workers=True`` ran one worker, ``batch_size=-1`` submitted no unit at all)."""
    if n_workers is not None:
        n_workers = check_count(
            n_workers,
            name="n_workers",
            minimum=0,
            rule="an int >= 0 (not a bool)",
            fix="Use 0 to run in this process, None for one worker per core.",
        )
    if batch_size is not None:
        batch_size = check_count(
            batch_size,
            name="batch_size",
            minimum=1,
            rule="an int >= 1 (units per Dask task; not a bool)",
            fix="Pass e.g. batch_size=4, or None to keep every worker busy (at most 16 per task).",
        )
    return n_workers, batch_size


def _check_cores(sample_kwargs, *, on_dask) -> None:
    """``cores > 1`` makes ``pm.sample`` start a process per chain, which a Dask worker cannot:
    its process is daemonic, and daemonic processes may not have children."""
    if not on_dask or "cores" not in sample_kwargs:
        return
    cores = sample_kwargs["cores"]
    if isinstance(cores, int | np.integer) and not isinstance(cores, bool) and cores == 1:
        return
    raise ValueError(
        f"cores must be 1 on Dask workers, got cores={cores!r}: pm.sample would run a unit's "
        "chains in processes of their own, which a Dask worker (a daemonic process) cannot start. "
        "Pass cores=1 (each unit's chains then run one after another on its worker; run more "
        "units at once with more workers, n_workers=...), or n_workers=0 to run the units in this "
        f"process with cores={cores!r}."
    )


def _check_seed(seed) -> int:
    if isinstance(seed, bool | np.bool_) or not isinstance(seed, int | np.integer):
        raise TypeError(
            f"seed must be an int >= 0 (every unit's seed is derived from it), got seed={seed!r}. "
            "Pass e.g. seed=0; a generator cannot be shared by units sampled on other workers."
        )
    if seed < 0:
        raise ValueError(f"seed must be an int >= 0, got seed={seed!r}. Pass e.g. seed=0.")
    return int(seed)


def _check_units(units) -> list:
    try:
        units = list(units)
    except TypeError:
        raise TypeError(
            f"units must be an iterable of units, got {type(units).__name__}."
        ) from None
    if not units:
        raise ValueError("units is empty: pass at least one unit.")
    # NumPy scalars (units=np.arange(G)) are the Python numbers they hold: res[0] finds them and
    # their seeds are those of the same ints
    units = [u.item() if isinstance(u, np.generic) else u for u in units]
    keys = {}
    for u in units:
        try:
            hash(u)
        except TypeError:
            raise TypeError(
                f"units must be hashable (ints, strings, tuples of them): they key the results, "
                f"got {u!r} ({type(u).__name__}). Pass e.g. tuple({u!r})."
            ) from None
        k = unit_key(u)
        if k in keys:
            raise ValueError(
                f"units holds {u!r} twice (or two units with the same repr); each "
                "unit must be distinct."
            )
        keys[k] = u
    return units


def _manifest(build, data, step, seed, sample_kwargs) -> dict:
    def name(f):
        return (
            None
            if f is None
            else f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', repr(f))}"
        )

    return {
        "build": name(build),
        "data": name(data),
        "step": name(step),
        # what they compute: a changed constant inside build must not resume the old results
        "build_code": code_digest(build),
        "data_code": code_digest(data),
        "step_code": code_digest(step),
        "seed": int(seed),
        "sample_kwargs": {k: repr(v) for k, v in sorted(sample_kwargs.items())},
    }


# -- Dask ---------------------------------------------------------------------------------------
def compile_root() -> Path:
    """Where local workers keep their own PyTensor compile directories (kept between runs)."""
    import pytensor

    return Path(pytensor.config.base_compiledir) / "pymc_dp_workers"


def local_cluster(n_workers: int | None = None, *, own_compiledirs: bool = True):
    """A Dask cluster of this machine: ``n_workers`` processes (default: cores), one thread each,
    worker ``i`` compiling in ``<base_compiledir>/pymc_dp_workers/w<i>`` (``own_compiledirs=False``:
    in PyTensor's usual directory, shared under its lock — warm caches, more waiting).

    Worker processes are spawned one after another with ``PYTENSOR_FLAGS`` set before the spawn
    (a spawned worker imports the user's script, and PyTensor with it, before Dask can set its
    environment), so each worker really uses its own compile directory.
    """
    from distributed import Scheduler, SpecCluster

    n = n_workers or os.cpu_count() or 1
    root = compile_root()
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    scheduler = {
        "cls": Scheduler,
        "options": {"host": "127.0.0.1", "port": 0, "dashboard": False, "dashboard_address": None},
    }
    cluster = SpecCluster(workers={}, scheduler=scheduler, silence_logs=40)
    try:
        for i in range(n):
            own = f"base_compiledir={root / f'w{i}'}" if own_compiledirs else ""
            env = {
                "PYTENSOR_FLAGS": ",".join(filter(None, [flags, own])),
                "OMP_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1",
            }
            cluster.worker_spec[f"w{i}"] = {
                "cls": _SpawnEnvNanny,
                "options": {
                    "nthreads": 1,
                    "host": "127.0.0.1",
                    "silence_logs": 40,
                    "spawn_env": env,
                },
            }
            cluster.sync(cluster._correct_state)  # waits for this worker before the next spawn
    finally:
        _restore_env("PYTENSOR_FLAGS", flags)
    return cluster


def _restore_env(name, value):
    if value:
        os.environ[name] = value
    else:
        os.environ.pop(name, None)


def _spawn_env_nanny():
    from distributed import Nanny

    class SpawnEnvNanny(Nanny):
        """A Nanny whose worker process starts with ``spawn_env`` in its environment."""

        def __init__(self, *args, spawn_env=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.pre_spawn_env.update(spawn_env or {})

    return SpawnEnvNanny


class _LazyNanny:
    """Resolves to the Nanny subclass on first use (distributed is imported only when needed)."""

    _cls = None

    def __call__(self, *args, **kwargs):
        if _LazyNanny._cls is None:
            _LazyNanny._cls = _spawn_env_nanny()
        return _LazyNanny._cls(*args, **kwargs)


_SpawnEnvNanny = _LazyNanny()


def _connect(client, n_workers, timeout):
    """(client, cluster we own or None)."""
    from distributed import Client
    from distributed.deploy import Cluster

    if isinstance(client, Cluster):
        return Client(client, set_as_default=False), None
    if client is None:
        cluster = local_cluster(n_workers)
        return Client(cluster, set_as_default=False), cluster
    if isinstance(client, str):
        try:
            return Client(client, timeout=timeout, set_as_default=False), None
        except (OSError, TimeoutError) as exc:
            raise ConnectionError(
                f"client={client!r}: no Dask scheduler answered within {timeout} s ({exc}). Check "
                "the address (tcp://host:port of `dask scheduler`), or pass client=None to run on "
                "a local cluster."
            ) from None
    if not isinstance(client, Client):
        raise TypeError(
            f"client must be a distributed.Client, a scheduler address or None, got "
            f"{type(client).__name__}."
        )
    return client, None


def _on_dask(work, todo, call_id, n_workers, client, timeout, batch_size):
    """Run ``work(batch)`` for batches of ``todo`` on Dask; yields ``(batch, result)`` as batches
    finish (``result`` is the exception for a batch whose task failed, e.g. ``KilledWorker``).
    Close the generator (``contextlib.closing``) to close a cluster it started."""
    from distributed import as_completed

    client, cluster = _connect(client, n_workers, timeout)
    futures: dict = {}
    try:
        n = max(1, len(client.scheduler_info(n_workers=-1).get("workers", {})) or (n_workers or 1))
        size = batch_size or max(1, min(16, math.ceil(len(todo) / (4 * n))))
        batches = [todo[i : i + size] for i in range(0, len(todo), size)]
        run = uuid.uuid4().hex[:8]  # task keys of this call only: never another call's result
        futures = {
            client.submit(work, b, pure=False, key=f"pymc-dp-{call_id}-{run}-{j}"): b
            for j, b in enumerate(batches)
        }
        for fut in as_completed(futures, loop=client.loop):
            try:
                out = fut.result()
            except Exception as exc:  # noqa: BLE001 - handed to the caller with its batch
                out = exc
            yield futures[fut], out
    finally:
        left = [f for f in futures if not f.done()]
        if left and cluster is None:  # stopped early (an error): free the cluster we were lent
            with contextlib.suppress(Exception):
                client.cancel(left)
        if cluster is not None:
            client.close()
            cluster.close()


def _run_on_dask(
    work, todo, call_id, n_workers, client, timeout, batch_size, records, memory, progress
):
    runs = _on_dask(work, todo, call_id, n_workers, client, timeout, batch_size)
    with contextlib.closing(runs):
        for batch, recs in runs:
            if isinstance(recs, BaseException):  # e.g. KilledWorker: the batch's units failed
                recs = [
                    {
                        "unit": repr(u),
                        "key": k,
                        "seed": s,
                        "status": "error",
                        "error": f"{type(recs).__name__}: {recs}",
                    }
                    for u, k, s in batch
                ]
            for rec in recs:
                _collect(rec, records, memory)
                progress.update(rec)


# -- any function over units ------------------------------------------------------------------
def map_units(
    fn,
    units,
    *,
    seed=0,
    n_workers=None,
    client=None,
    batch_size=None,
    timeout=10.0,
    progressbar=False,
) -> list:
    """``[fn(unit, rng) for unit in units]`` in this process or on Dask, with seeds per unit.

    The Monte Carlo behind a grid (a Fisher estimate per candidate and θ, a simulation per cell of
    a table) is a function of its unit and a random generator. ``map_units`` gives unit ``u`` the
    generator ``np.random.default_rng(unit_seed(seed, u))``, so the results are the same whatever
    the number of workers, the batching and the order of completion, and runs them where
    `sample_many` would: ``n_workers=0`` in this process, by default on a local cluster (one
    process per core, each compiling in its own PyTensor directory), or on ``client=`` (a
    ``distributed.Client``, a cluster, or a scheduler address).

    Parameters
    ----------
    fn : callable
        ``fn(unit, rng) -> result``; on Dask it must be picklable by cloudpickle (a module-level
        function, or a closure over picklable objects) and so must its results.
    units : iterable
        Distinct hashable units with a stable ``repr`` (as for `sample_many`).
    seed : int
        The one seed every unit's generator is derived from (`unit_seed`).
    n_workers, client, batch_size, timeout
        As for `sample_many`.
    progressbar : bool
        Show units done and the ETA on stderr.

    Returns
    -------
    list
        ``fn(unit, rng)`` per unit, in the order of ``units``.

    Raises
    ------
    Exception
        The first exception a unit raised (the other tasks are cancelled), with the unit named in
        a note.
    """
    units = _check_units(units)
    seed = _check_seed(seed)
    if not callable(fn):
        raise TypeError(f"fn must be a function (unit, rng) -> result, got {type(fn).__name__}.")
    n_workers, batch_size = _check_workers(n_workers, batch_size)
    todo = [(i, u, unit_seed(seed, u)) for i, u in enumerate(units)]
    work = functools.partial(_map_batch, fn)
    out: list = [None] * len(units)
    progress = _Progress(len(units), 0, enabled=progressbar)
    try:
        if client is None and n_workers == 0:
            for i, u, s in todo:
                ((_, res),) = work([(i, u, s)])
                out[i] = res
                progress.update({})
            return out
        runs = _on_dask(
            work, todo, _call_id(fn, None, None), n_workers, client, timeout, batch_size
        )
        with contextlib.closing(runs):
            for batch, results in runs:
                if isinstance(results, BaseException):
                    results.add_note(
                        f"map_units: raised by a task holding units {[u for _, u, _ in batch]!r}."
                    )
                    raise results
                for i, res in results:
                    out[i] = res
                    progress.update({})
        return out
    finally:
        progress.close()


def worker_cache(key, make):
    """``make()`` once per process for each ``key``, then the same object for every later unit.

    For `map_units` functions that need something costly to build and safe to reuse, such as a
    compiled model and its step methods: each Dask worker (or this process) builds it for the first
    unit that asks and keeps it. ``key`` must be hashable and name everything ``make`` depends on;
    the objects are kept until the process ends.
    """
    from pymc_dp.runner._work import _MAP_CACHE

    if key not in _MAP_CACHE:
        _MAP_CACHE[key] = make()
    return _MAP_CACHE[key]


def _map_batch(fn, items):
    """``[(index, fn(unit, rng))]`` for ``items`` of ``(index, unit, seed)`` (on a worker)."""
    return [(i, fn(u, np.random.default_rng(s))) for i, u, s in items]


class _Progress:
    """``12/100 units done, 1 failed, ETA 40 s`` on stderr, redrawn at most 5 times a second."""

    def __init__(self, total, skipped, *, enabled):
        self.total, self.done, self.failed = total, skipped, 0
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self.start_done = skipped
        self.last = 0.0

    def update(self, rec):
        if rec.get("status") == "error":
            self.failed += 1
        else:
            self.done += 1
        now = time.perf_counter()
        if self.enabled and (now - self.last > 0.2 or self.done + self.failed == self.total):
            self.last = now
            ran = self.done + self.failed - self.start_done
            left = self.total - self.done - self.failed
            eta = (now - self.t0) / ran * left if ran else float("nan")
            sys.stderr.write(
                f"\r{self.done}/{self.total} units done, {self.failed} failed, ETA {eta:.0f} s   "
            )
            sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")
