r"""A latent count table and its one parent, the cells moved with the parent summed out.

The shared part of `DirichletCells` (a Multinomial table under π ~ Dirichlet(a)) and `GammaCells`
(Poisson cells under λ ~ Gamma(α, β)). The parent's prior has fixed hyperparameters, the parent's
only child is the table and every release of the table is ``pdp.Cells``. Each iteration then

1. moves the cells against their marginal law with the parent summed out, times every release
   (exact Metropolis–Hastings sweeps of `pymc_dp.samplers.cells`), which leaves p(c | releases)
   invariant;
2. draws the parent from its exact conditional given the moved table.

Step 1 targets the marginal of c and step 2 its conditional, so the pair leaves the joint posterior
of (parent, c) invariant (a collapsed Gibbs sampler, Liu 1994, *JASA* 89). The alternation of a
conjugate parent step with `TableCells` couples each small cell with its parent (each pins the
other), which this removes. A subclass states the pattern (`refusal`, `table_of`), reads the
hyperparameters (`params_fn`), and writes the two moves (`move_cells`, `draw_parent`).
"""

from __future__ import annotations

import weakref

import numpy as np
from pymc.step_methods.compound import Competence

from pymc_dp._checks import check_count
from pymc_dp.distributions.graph import fixed_shape
from pymc_dp.samplers.assign import cached_verdict
from pymc_dp.samplers.base import DPStep
from pymc_dp.samplers.cells import TableCells, entry_values


class _Pair:
    """One (parent, table) pair of a step: names, the hyperparameters' compiled reader and the
    `TableCells` that reads the table's releases, kernels, widths and start (its own ``step`` is
    never called)."""

    def __init__(self, cls, model, parent, table, rng):
        self.parent_rv_name = parent.name
        self.parent_name = model.rvs_to_values[parent].name
        self.table_name = model.rvs_to_values[table].name
        self.shape = fixed_shape(parent)
        self.read = cls.params_fn(model, parent)
        self.params = None  # read once per chain (`ParentCells._params`)
        self.cells = TableCells([table], model=model, rng=rng)


class ParentCells(DPStep):
    """Base of the steps that move a latent table with its parent summed out (module docstring).

    Subclasses set ``parent_op`` / ``table_op`` (the PyTensor random ops), ``words`` (how messages
    name the parent, its table and the argument, e.g. ``("Dirichlet cell probabilities",
    "Multinomial", "pi")``) and the static hooks `refusal`, `table_of`, `params_fn`,
    `move_cells`, `draw_parent`.
    """

    parent_op: type
    table_op: type
    words: tuple = ("parent", "table", "theta")
    dp_stats = {"dp_accept_rate": (float, [])}

    def __init__(
        self,
        vars,
        *,
        reps: int,
        width=None,
        start_at_release=True,
        model=None,
        rng=None,
        blocked=True,
        initial_point=None,
        compile_kwargs=None,
    ):
        import pymc as pm
        from pymc.util import get_value_vars_from_user_vars

        model = pm.modelcontext(model)
        name, (what, kind, arg) = type(self).__name__, self.words
        reps = check_count(reps, name="reps")
        if width is not None:
            width = check_count(width, name="width", rule="an integer >= 1 or None")
        if vars is None or not isinstance(vars, list | tuple) or not vars:
            raise ValueError(
                f"{name} needs vars=[{arg}, c] ({what} and their {kind} table c); got {vars!r}."
            )
        values = list(get_value_vars_from_user_vars(list(vars), model))
        rvs = [model.values_to_rvs[v] for v in values]
        parents = [r for r in rvs if isinstance(r.owner.op, self.parent_op)]
        tables = [r for r in rvs if isinstance(r.owner.op, self.table_op)]
        other = [r.name for r in rvs if r not in parents and r not in tables]
        if other:
            raise ValueError(
                f"{name} updates {what} and their {kind} tables only; got {other}. Pass "
                f"vars=[{arg}, c]."
            )
        for parent in parents:
            why = self.refusal(model, parent)
            if why is not None:
                raise ValueError(f"{name} cannot update {parent.name!r}: {why}.")
        pairs = {id(self.table_of(model, p)): p for p in parents}
        for c in tables:
            if id(c) not in pairs:
                raise ValueError(
                    f"{name} moves the table {c.name!r} only together with its {what}: pass "
                    f"step=[pdp.{name}([{arg}, {c.name}])]; if you pass a step for {arg} "
                    f"yourself, pass pdp.TableCells([{c.name}]) for the table too."
                )
        if len(tables) != len(parents):
            missing = [p.name for p in parents if self.table_of(model, p) not in tables]
            raise ValueError(
                f"{name} draws {missing} from the table it moves: pass each with its {kind} "
                f"table c, vars=[{arg}, c]."
            )
        self.vars = values
        self.reps = reps
        self._pairs = [_Pair(type(self), model, pairs[id(c)], c, rng) for c in tables]
        for t in self._pairs:
            t.cells.start_at_release = bool(start_at_release)
            if width is not None:
                t.cells.width = width
        self._init_step(rng)

    def thread_work(self) -> int:
        """The cells of its tables (`streams.auto_threads`)."""
        return sum(t.cells.thread_work() for t in self._pairs)

    def start_chain(self) -> None:
        for t in self._pairs:
            t.cells.start_chain()
            t.params = None  # read once per chain (pm.Data may change between runs)
        self._fresh = True

    @staticmethod
    def _params(t):
        """The hyperparameters of pair ``t``, read from the model once per chain."""
        if t.params is None:
            t.params = t.read()
        return t.params

    def step(self, point):
        start, fresh = self._fresh, self._fresh and self.tune
        self._fresh = False
        new, accepted, proposed = {}, 0, 0
        for t in self._pairs:
            ts, params = t.cells, self._params(t)
            table = np.array(point[t.table_name], dtype=np.int64).reshape(-1)
            if start:
                ts.check_row_totals(table, point)
            if fresh and ts.start_at_release:
                table = np.ascontiguousarray(ts.start_table(table, np.ones(table.size)))
            s = entry_values(table, ts.idx, ts.n_entries)
            n_acc, n_prop = self.move_cells(self.rng, t, params, table, s, self.reps)
            accepted, proposed = accepted + n_acc, proposed + n_prop
            value = self.draw_parent(self.rng, t, params, table)
            old_p, old_c = np.asarray(point[t.parent_name]), np.asarray(point[t.table_name])
            new[t.parent_name] = value.reshape(old_p.shape).astype(old_p.dtype, copy=False)
            new[t.table_name] = table.reshape(old_c.shape).astype(old_c.dtype, copy=False)
        rate = accepted / proposed if proposed else 0.0
        return {**point, **new}, [self.stats(dp_accept_rate=rate)]

    # -- pm.sample()'s default assignment ----------------------------------------------------
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._verdicts = weakref.WeakKeyDictionary()  # per class: model -> cached verdicts

    @classmethod
    def competence(cls, var, has_grad=None):
        """``IDEAL`` for the parent or its table when `refusal` finds nothing (cached per model
        state; never warns). Registered before `TableCells` and `ConjugateTheta`, which are
        ``IDEAL`` for the table and the parent too (``pymc_dp/__init__.py``)."""
        if not isinstance(getattr(var.owner, "op", None), cls.parent_op | cls.table_op):
            return Competence.INCOMPATIBLE
        return cached_verdict(var, cls._verdicts, cls.verdict)

    @classmethod
    def verdict(cls, model, var) -> Competence:
        """``IDEAL`` for the parent or its table when `refusal` finds nothing."""
        parent = var
        if isinstance(var.owner.op, cls.table_op):
            parent = cls.parent_of(var)
            if parent not in model.free_RVs or not isinstance(parent.owner.op, cls.parent_op):
                return Competence.INCOMPATIBLE
            if cls.table_of(model, parent) is not var:
                return Competence.INCOMPATIBLE
        return Competence.IDEAL if cls.refusal(model, parent) is None else Competence.INCOMPATIBLE

    # -- the subclass's hooks ----------------------------------------------------------------
    @staticmethod
    def refusal(model, parent) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def table_of(model, parent):  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def parent_of(table):  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def params_fn(model, parent):  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def move_cells(rng, t, params, table, s, reps):  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def draw_parent(rng, t, params, table):  # pragma: no cover - abstract
        raise NotImplementedError
