"""The PyMC side of `PenaltyMH`: a model's per-record log-likelihood.

`ModelTarget` compiles, from an ordinary PyMC model with observed confidential records, the
per-record log-likelihood (and its gradient for DP MALA) and the log prior as functions of a flat θ,
so the pure penalty kernels never see PyMC. The records are read from the model's data containers
when they change (``pm.set_data``), never frozen at construction.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ModelTarget"]


def _drop_record_shape_checks(out, inputs):
    """Drop ``SpecifyShape``/``Alloc`` to the model's n on record inputs so a batch evaluates.

    The result is verified against the full-data evaluation (`ModelTarget.batch_ok`).
    """
    from pytensor.graph.fg import FunctionGraph
    from pytensor.graph.replace import clone_replace
    from pytensor.tensor.basic import Alloc
    from pytensor.tensor.shape import SpecifyShape

    from pymc_dp.distributions.graph import upstream

    fg = FunctionGraph(outputs=[out], clone=False)
    ids = {id(i) for i in inputs}
    reps = {}
    for node in fg.toposort():
        x = node.inputs[0] if node.inputs else None
        if x is None or not any(id(a) in ids for a in upstream(x)):
            continue
        # shape checks and broadcasts to the model's record count n (the batch has b rows)
        if isinstance(node.op, SpecifyShape | Alloc) and x.ndim == node.outputs[0].ndim:
            reps[node.outputs[0]] = x
    if not reps:
        return out
    (new,) = clone_replace([out], replace=reps, rebuild_strict=False)
    return new


def _shared_data(graphs):
    """The data containers (shared variables other than random generators) ``graphs`` read."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.tensor.random.type import RandomType

    from pymc_dp.distributions.graph import upstream

    found = {}
    for v in upstream(graphs):
        if isinstance(v, SharedVariable) and not isinstance(v.type, RandomType):
            found.setdefault(id(v), v)
    return list(found.values())


def _reader(value, name, owner):
    """A function returning the current records of an observed value: a ``pm.Data`` container
    (read without copying), a constant, or a graph of containers (e.g. a cast), compiled once."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    if isinstance(value, SharedVariable):
        return lambda: value.get_value(borrow=True)
    if isinstance(value, Constant):
        return lambda: value.data
    from pymc.pytensorf import compile as pm_compile

    try:
        fn = pm_compile([], value)
    except Exception as err:
        raise ValueError(
            f"{owner} reads the records of observed variable {name!r} from its data, but they are "
            f"computed by a graph that needs inputs ({err}). Pass observed= a pm.Data container "
            "or an array."
        ) from err
    return lambda: fn()


def _record_sources(model, obs, per_record, n):
    """What holds the confidential records: the observed values, the data containers they are
    read from, and the ``pm.Data`` containers the per-record log-likelihood reads with one row
    per record (covariates)."""
    from pymc_dp.distributions.graph import upstream

    values = [model.rvs_to_values[rv] for rv in obs]
    sources = set(values) | set(_shared_data(values)) | set(_per_record_containers(per_record, n))
    arrays = [a for a in map(_held, upstream(values)) if a is not None]
    return sources, arrays


def _held(v):
    """The array a constant or a data container holds (``None`` for anything else)."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.tensor.random.type import RandomType

    if isinstance(v, Constant):
        return np.asarray(v.data)
    if isinstance(v, SharedVariable) and not isinstance(v.type, RandomType):
        return np.asarray(v.get_value(borrow=True))
    return None


def _copies_records(v, arrays, n) -> bool:
    """Whether ``v`` is a constant or data container holding the observed records: an equal
    array, or the same values in another order or shape (sorted, transposed, ``x[:, None]``,
    cast to float32: the multisets of values agree to float32 precision)."""
    data = _held(v)
    if data is None or data.ndim < 1 or data.size < 2:
        return False
    if data.shape[0] == n and any(
        a.shape == data.shape and np.array_equal(a, data) for a in arrays
    ):
        return True
    if data.dtype.kind not in "biuf":
        return False
    flat = np.sort(data.astype(np.float64).ravel())
    for a in arrays:
        if a.size != data.size or a.dtype.kind not in "biuf" or a.ndim < 1 or a.shape[0] != n:
            continue
        if np.allclose(np.sort(a.astype(np.float64).ravel()), flat, rtol=1e-6, atol=0.0):
            return True
    return False


def _reads_records(graph, sources, arrays, n) -> bool:
    """Whether ``graph`` reads a record source, or a constant equal to the observed records."""
    from pymc_dp.distributions.graph import upstream

    return any(v in sources or _copies_records(v, arrays, n) for v in upstream([graph]))


#: check_record_terms also replaces the extreme records of parts with at most this many columns
_EXTREME_COLUMNS = 16


def check_prior_is_data_free(model, obs, per_record, n, owner="PenaltyMH"):
    """Refuse a log prior (free variables' priors, ``Potential`` terms) that reads the records.

    The prior ratio enters the released log ratio without clipping, so its sensitivity is only
    bounded if it does not depend on the confidential data. The message names the terms, never
    a value.
    """
    sources, arrays = _record_sources(model, obs, per_record, n)
    terms = [(rv.name, model.logp(vars=[rv])) for rv in model.free_RVs]
    terms += [(pot.name, pot) for pot in model.potentials]
    bad = [
        name
        for name, term in terms
        if _reads_records(term, sources, arrays, n) or _per_record_containers(term, n)
    ]
    if bad:
        raise ValueError(
            f"the prior terms {bad} read the confidential records (the observed data of "
            f"{[rv.name for rv in obs]}, or a data container with one row per record), but {owner} "
            "adds the prior ratio of the free variables and Potentials to the released log ratio "
            "without clipping: its sensitivity would be unbounded. Write the likelihood of the "
            "records as observed variables (records on axis 0) and set priors and Potentials from "
            "public constants only."
        )


def _per_record_containers(graph, n) -> list:
    """The data containers ``graph`` reads that hold one row per record (n rows): covariates in
    the likelihood; in a prior term, a second column of confidential data (a measurement the
    likelihood does not read), whatever its name."""
    out = []
    for v in _shared_data([graph]):
        shape = np.shape(v.get_value(borrow=True))
        if len(shape) >= 1 and shape[0] == n:
            out.append(v)
    return out


def _refuse_random_records(model, obs, owner):
    """Refuse observed data drawn at random at each evaluation (``pm.Minibatch``): the step would
    read one random batch as if it were the data set."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.tensor.random.type import RandomType

    from pymc_dp.distributions.graph import upstream

    for rv in obs:
        value = model.rvs_to_values[rv]
        if any(
            isinstance(v, SharedVariable) and isinstance(v.type, RandomType)
            for v in upstream([value])
        ):
            raise ValueError(
                f"the observed data of {rv.name!r} are drawn at random (e.g. pm.Minibatch): "
                f"{owner} would read one random batch as the whole data set, with the wrong "
                "record count and records repeated. Pass the full records (an array or a pm.Data "
                "container) as observed=, and subsample with pdp.PenaltyMH(batch_size=...), "
                "whose privacy accounting counts the subsampling."
            )


def _refuse_imputed(model, owner):
    """Refuse records with missing values, which PyMC splits into ``<name>_observed`` and a free
    ``<name>_unobserved``: the size of the latter is the number of missing records, and the
    published draws and ``dp_n_records`` would carry it (a noise-free count)."""
    free = {rv.name for rv in model.free_RVs}
    for rv in model.observed_RVs:
        base = rv.name.removesuffix("_observed")
        if base != rv.name and f"{base}_unobserved" in free:
            raise ValueError(
                f"observed variable {base!r} has missing values, which PyMC imputes as the free "
                f"variable '{base}_unobserved'. {owner} would publish its draws, whose size is the "
                "number of missing confidential records, and dp_n_records, the number of complete "
                "ones: noise-free counts of the data. Handle missing values before building the "
                "model, e.g. replace them by a public value within the declared bounds."
            )


class ModelTarget:
    """Compiled per-record log-likelihood and log prior of a PyMC model over a flat θ.

    θ is the concatenation of the step's value variables (transformed space, e.g. ``sigma_log__``);
    the other value variables are taken from the current point (`set_point`). The
    per-record log-likelihood sums ``model.logp(vars=observed, sum=False)`` over all axes but the
    first (the record axis) and over the observed variables; the observed data enter as inputs,
    so a batch of records is evaluated in O(b). The log prior is ``model.logp`` of the free
    variables (Jacobians included) plus any potentials.

    The records are *read*, not copied: `refresh` (called by the step before every
    iteration) takes the current values of the ``pm.Data`` containers holding them, so
    ``pm.set_data`` reaches the step; it also reports changes of containers the likelihood or prior
    read directly (covariates, hyperparameters), which the compiled functions see at each call.
    """

    def __init__(self, model, value_vars, observed=None, *, need_grad=False, owner="PenaltyMH"):
        import pytensor.tensor as pt
        from pymc.blocking import DictToArrayBijection

        self._bij = DictToArrayBijection
        obs = (
            list(model.observed_RVs)
            if observed is None
            else [model[o] if isinstance(o, str) else o for o in observed]
        )
        if not obs:
            raise ValueError(
                f"{owner} needs observed confidential data, but the model has no observed variable. "
                "Write the likelihood of the confidential records with observed=... (records on axis 0)."
            )
        inputs = []
        for rv in obs:
            if rv not in model.observed_RVs:
                raise ValueError(
                    f"observed must name observed variables of the model (the likelihood of the "
                    f"confidential records), got {getattr(rv, 'name', rv)!r}, which is not "
                    f"observed. The model's observed variables: "
                    f"{[o.name for o in model.observed_RVs]}."
                )
            value = model.rvs_to_values[rv]
            if value.ndim < 1:
                raise ValueError(
                    f"observed variable {rv.name!r} must hold records on axis 0, got a scalar. "
                    "Give each confidential record its own row."
                )
            inputs.append(
                pt.tensor(f"{rv.name}_records", dtype=value.dtype, shape=(None,) * value.ndim)
            )
        self._readers = [_reader(model.rvs_to_values[rv], rv.name, owner) for rv in obs]
        self.obs_names = [rv.name for rv in obs]
        self._owner = owner
        _refuse_random_records(model, obs, owner)
        _refuse_imputed(model, owner)
        left_out = [rv.name for rv in model.observed_RVs if rv not in obs]
        if left_out:
            raise ValueError(
                f"observed={self.obs_names} leaves the observed variables {left_out} out, so "
                f"{owner} would drop their likelihood from its target without a word. Pass "
                "observed=None (every observed variable holds confidential records), or remove "
                "them from the model (fix public quantities with pm.Data, not observed=)."
            )
        self._spec = (model, value_vars, obs, inputs, need_grad)
        self._values = None  # values of every value variable, in the order of all_vars
        self._info = None  # (name, shape, size, dtype) of the θ variables
        self.names = [v.name for v in value_vars]
        self.all_vars = list(model.value_vars)
        self._watch = _shared_data([model.rvs_to_values[rv] for rv in obs])
        self._seen = None
        self.refresh()

    def compile(self):
        """Compile the per-record log-likelihood (and gradient) and the log prior."""
        import pytensor.tensor as pt
        from pymc.pytensorf import compile as pm_compile
        from pytensor.graph.replace import clone_replace

        model, value_vars, obs, inputs, need_grad = self._spec
        terms = model.logp(vars=obs, sum=False)
        for rv, term in zip(obs, terms, strict=True):
            if term.ndim < 1:
                law = type(rv.owner.op).__name__
                raise ValueError(
                    f"the likelihood of observed variable {rv.name!r} ({law}) gives one log "
                    f"density for all its records, not one per record: {self._owner} clips each "
                    "record's term, so it needs a likelihood whose records are independent given "
                    "θ, one per row on axis 0 (e.g. pm.Normal rather than pm.MvNormal over the "
                    "record vector, a random walk or pm.AR, or a pm.CustomDist whose logp sums)."
                )
        per_record = sum(t.sum(axis=tuple(range(1, t.ndim))) if t.ndim > 1 else t for t in terms)
        values = [model.rvs_to_values[rv] for rv in obs]
        # rebuild_strict=False re-infers types, so the data inputs may hold any number of records
        (ll,) = clone_replace([per_record], replace=dict(zip(values, inputs)), rebuild_strict=False)
        ll = _drop_record_shape_checks(ll, inputs)
        self._ll = pm_compile(self.all_vars + inputs, ll, on_unused_input="ignore")
        self._ll_graph = ll
        check_prior_is_data_free(model, obs, per_record, self.n, self._owner)
        self._records = _record_sources(model, obs, per_record, self.n)
        # model.logp puts the value variables in place of the random ones in the Potentials too
        # (the raw Potential graph would draw them afresh at every call)
        prior = model.logp(vars=[*model.free_RVs, *model.potentials])
        self._lp = pm_compile(self.all_vars, prior, on_unused_input="ignore")
        # covariates and hyperparameters in pm.Data containers are read by the compiled functions
        # at each call; watch them too, so that a cached log-likelihood is rebuilt when they change
        watch = {id(v): v for v in self._watch + _shared_data([per_record, prior])}
        self._watch = list(watch.values())
        self._seen = None
        self.refresh()
        self._llg = None
        if need_grad:
            # per-record gradients by forward mode, one pass per coordinate of θ: O(n d), where a
            # reverse-mode Jacobian would build an (n, n) identity
            from pytensor.gradient import Rop

            shapes = [np.shape(v) for v in model.initial_point().values()]
            shapes = dict(zip(model.initial_point().keys(), shapes))
            cols = []
            for i, v in enumerate(value_vars):
                shape = shapes[v.name]
                for k in range(int(np.prod(shape, dtype=int))):
                    evals = [pt.zeros_like(w) for w in value_vars]
                    onehot = np.zeros(int(np.prod(shape, dtype=int)), dtype=v.dtype)
                    onehot[k] = 1
                    evals[i] = pt.constant(onehot.reshape(shape))
                    cols.append(Rop(ll, list(value_vars), evals, disconnected_outputs="ignore"))
            self._llg = pm_compile(
                self.all_vars + inputs, [ll, pt.stack(cols, axis=1)], on_unused_input="ignore"
            )
        return self

    def reads_records(self, graph) -> bool:
        """Whether ``graph`` reads the confidential records (the observed values, their data
        containers, per-record covariate containers, or a constant equal to the records)."""
        sources, arrays = self._records
        return _reads_records(graph, sources, arrays, self.n)

    def refresh(self, check=None) -> bool:
        """Read the current records if a data container changed; return True if anything changed.

        A change is seen by identity of the containers' storage (``pm.set_data`` stores a new array):
        O(number of containers) per call, no copy and no comparison of records. Sets ``data`` and
        ``n``; refuses observed variables whose record counts disagree. ``check(n)`` may refuse the
        new record count (raise) before anything is replaced.
        """
        current = [v.get_value(borrow=True) for v in self._watch]
        if self._seen is not None and all(a is b for a, b in zip(current, self._seen)):
            return False
        data, n = [], None
        for name, read in zip(self.obs_names, self._readers):
            arr = np.asarray(read())
            if n is None:
                n = arr.shape[0]
            elif arr.shape[0] != n:
                raise ValueError(
                    f"observed variables must share the record axis: {name!r} has {arr.shape[0]} rows, "
                    f"expected {n}. Put one record per row in every observed variable (set them "
                    "together: pm.set_data({...}) with every container of the records)."
                )
            data.append(arr)
        if check is not None:
            check(int(n))
        self.data, self.n, self._seen = data, int(n), current
        return True

    def check_record_terms(self) -> None:
        """Refuse a log-likelihood whose term i reads records other than record i (e.g. a scale
        or a centre computed from the observed data: ``sigma=d.std()``, ``mu + d.mean()``).

        The penalty's sensitivity assumes that a neighbour (one record replaced) changes one
        clipped term; a likelihood that reads every record in every term changes them all, and the
        noise would be calibrated to a fraction of the true sensitivity. Checked on the current
        records: record i is replaced by another record (every part of it: each observed
        variable's row and the rows of per-record data containers), at θ of the current point and
        θ shifted away from it (a coupling multiplied by a parameter that is 0 at the initial
        point), and no other term may change. The message names variables, never a value.
        """
        from pymc_dp.distributions.graph import upstream

        if self.n < 2:
            return
        # record sources the compiled log-likelihood reads (per-record covariates; the observed
        # values themselves are its inputs)
        sources, _ = self._records
        covariates = [v for v in _shared_data([self._ll_graph]) if v in sources]
        # a constant equal to the records (observed=array and a reduction of the same array)
        arrays = [np.asarray(d) for d in self.data]
        if any(
            _copies_records(v, arrays, self.n) and not any(v is c for c in covariates)
            for v in upstream([self._ll_graph])
        ):
            self._refuse_coupled()
        cols = [np.asarray(c.get_value(borrow=True)) for c in covariates]
        parts = [*arrays, *cols]
        flat = [p.reshape(self.n, -1) for p in parts]

        pairs = []
        # the first, last and middle records, and each column's largest and smallest (a scale
        # such as the records' maximum moves only when an extreme record is replaced)
        rows = [0, self.n - 1, self.n // 2]
        for p in flat:
            if p.dtype.kind in "biuf" and p.shape[1] <= _EXTREME_COLUMNS:
                with np.errstate(invalid="ignore"):
                    for col in p.T.astype(np.float64):
                        if np.isnan(col).all():
                            continue
                        rows += [int(np.nanargmax(col)), int(np.nanargmin(col))]
        for i in dict.fromkeys(rows):  # i and the first record unlike it
            unlike = np.zeros(self.n, dtype=bool)
            for p in flat:
                same = (p == p[i]) | (
                    np.isnan(p) & np.isnan(p[i]) if p.dtype.kind == "f" else False
                )
                unlike |= ~np.all(same, axis=1)
            if unlike.any() and (i, int(np.argmax(unlike))) not in pairs:
                pairs.append((i, int(np.argmax(unlike))))
        if not pairs:
            return
        theta = np.concatenate(
            [np.ravel(self._values[k]).astype(np.float64) for k in self._theta_pos]
        )
        thetas = [theta, theta + 0.3 * (1.0 + np.arange(theta.size) % 3)]
        try:
            for th in thetas:
                full = self.loglik(th)
                for i, j in pairs:
                    data = [d.copy() for d in arrays]
                    for d in data:
                        d[i] = d[j]
                    for c, col in zip(covariates, cols):
                        new = col.copy()
                        new[i] = col[j]
                        c.set_value(new)
                    try:
                        got = np.asarray(self._ll(*self._args(th), *data), dtype=np.float64)
                    finally:
                        for c, col in zip(covariates, cols):
                            c.set_value(col)
                    others = np.arange(self.n) != i
                    if not np.allclose(
                        got[others], full[others], rtol=1e-10, atol=1e-12, equal_nan=True
                    ):
                        self._refuse_coupled()
        finally:
            self._seen = None
            self.refresh()

    def _refuse_coupled(self):
        raise ValueError(
            f"the log-likelihood of {self.obs_names} reads other records in the term of each "
            "record (e.g. a scale or a centre computed from the observed data, such as "
            "sigma=d.std() or mu + d.mean(), or a covariate standardized by its own mean): "
            f"replacing one record changes the terms of others. {self._owner}'s noise is "
            "calibrated for one clipped term per record, so its privacy guarantee would not "
            "hold. Compute such constants from public information (or release them privately "
            "first) and pass them as numbers or pm.Data."
        )

    def batch_ok(self) -> bool:
        """True if a batch of records can be evaluated alone (no other per-record constants)."""
        try:
            theta = np.concatenate(
                [np.ravel(self._values[i]).astype(np.float64) for i in self._theta_pos]
            )
            full = self.loglik(theta)
            part = self.loglik(theta, np.array([0, self.n - 1]))
            return bool(np.allclose(part, full[[0, self.n - 1]], equal_nan=True))
        except Exception:  # noqa: BLE001 - any failure means "evaluate the full data"
            return False

    def set_point(self, point) -> bool:
        """Store the point; return True if a value outside θ changed (caches must be rebuilt)."""
        if self._info is None:
            self._info = self._bij.map({k: point[k] for k in self.names}).point_map_info
            self._others = [i for i, v in enumerate(self.all_vars) if v.name not in self.names]
            pos = {v.name: i for i, v in enumerate(self.all_vars)}
            self._theta_pos = [pos[name] for name, *_ in self._info]
        values = [np.asarray(point[v.name]) for v in self.all_vars]
        changed = self._values is None or any(
            not np.array_equal(values[i], self._values[i]) for i in self._others
        )
        # copies: PyMC's parallel workers write the next point into the arrays this point holds
        self._values = [np.array(v, copy=True) for v in values]
        return changed

    def theta_of(self, point) -> np.ndarray:
        """The flat θ (a new float64 array) of a point."""
        return np.concatenate(
            [np.ravel(np.asarray(point[name], dtype=np.float64)) for name, *_ in self._info]
        )

    def _pieces(self, theta, copy):
        start = 0
        for _, shape, size, dtype in self._info:
            yield theta[start : start + size].reshape(shape).astype(dtype, copy=copy)
            start += size

    def point_of(self, theta) -> dict:
        """``{name: value}`` of the θ variables (new arrays in the variables' shapes and dtypes)."""
        return {name: piece for (name, *_), piece in zip(self._info, self._pieces(theta, True))}

    def _args(self, theta):
        args = list(self._values)
        for i, piece in zip(self._theta_pos, self._pieces(theta, False)):
            args[i] = piece
        return args

    def loglik(self, theta, idx=None) -> np.ndarray:
        data = self.data if idx is None else [d[idx] for d in self.data]
        return np.asarray(self._ll(*self._args(theta), *data), dtype=np.float64)

    def loglik_grad(self, theta, idx=None):
        data = self.data if idx is None else [d[idx] for d in self.data]
        ll, g = self._llg(*self._args(theta), *data)
        return np.asarray(ll, dtype=np.float64), np.asarray(g, dtype=np.float64)

    def logprior(self, theta) -> float:
        return float(self._lp(*self._args(theta)))
