r"""A latent count table under a fixed Dirichlet, with its probabilities summed out.

The model: cell probabilities ``π ~ Dirichlet(a)`` with a fixed concentration ``a`` (constants or
data, the same for every row), a latent ``c ~ pm.Multinomial(n, p=π)`` of π's shape (one table, or
G rows of areas) and releases of ``c`` by ``pdp.Cells`` only. The default route before this step
alternated ``ConjugateTheta`` (π | c, Dirichlet(a + c_g)) with ``TableCells`` (c | π). That Gibbs
pair couples π_k and c_k the way data augmentation always does: for a cell with few people
(c_k below σ²) each pins the other, and the pair crawls (ESS/draw ≈ 0.2 at N = 10⁶, K = 2,016,
σ = 3.18, against ≈ 0.9 for most cells; ``benchmarks/TABLES_RESULTS.md``).

This step removes the coupling. Each iteration

1. moves the cells with π summed out: row g is Dirichlet-multinomial(N_g, a), so a move of d
   people from cell j to cell k changes its log density by the Pólya-urn ratio
   ``Σ log((c_k + a_k + v)/(c_k + 1 + v)) − Σ log((c_j + a_j − 1 − v)/(c_j − v))`` (the same
   ``reps``·K pair moves per row as `TableCells`, Metropolis–Hastings against every release,
   `cells.dm_rows_sweep_streams`, each row from its own stream); this leaves p(c | releases)
   invariant;
2. draws π | c exactly: Dirichlet(a + c_g) per row (`streams.dirichlet_rows_simplex_streams`).

Step 1 targets the marginal of c and step 2 its conditional, so the pair leaves the joint
posterior of (π, c) invariant (a collapsed Gibbs sampler, Liu 1994, *JASA* 89). Cost O(reps·K)
per row, independent of the number of people. Exactness is tested against enumeration of small
tables (``tests/statistical/samplers/test_dirichlet_cells.py``).

``pm.sample()`` assigns it by itself to π and c together (registered before `TableCells` and
`ConjugateTheta`, which would otherwise take them one each). Where ``a`` depends on free
parameters (``a = α·base``) `DirichletHyper` does the same job with those parameters; with any
other free concentration, or a table with other releases (``pdp.Marginals``), or π with other
children, the step refuses and the default stays ``ConjugateTheta`` + ``TableCells``.
"""

from __future__ import annotations

import weakref

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.distributions.transforms import SimplexTransform
from pymc.logprob.utils import replace_rvs_by_values
from pymc.step_methods.compound import Competence
from pytensor.tensor.random import basic as rb

from pymc_dp.distributions.graph import direct_upstream
from pymc_dp.samplers.assign import cached_verdict
from pymc_dp.samplers.base import DPStep
from pymc_dp.samplers.cells import TableCells, dm_rows_sweep_streams, entry_values
from pymc_dp.samplers.dirichlet_hyper import _cells_reason, _multinomial_table
from pymc_dp.samplers.streams import dirichlet_rows_simplex_streams, row_seeds


def _refusal(model, pi) -> str | None:
    """Why ``pi`` and its table cannot move in `DirichletCells` (None: they can)."""
    if pi not in model.free_RVs or not isinstance(pi.owner.op, rb.DirichletRV):
        return f"{pi.name!r} is not a free pm.Dirichlet"
    if any(d is None for d in pi.type.shape):
        return f"{pi.name!r} must have a fixed shape, got {pi.type.shape}"
    if not isinstance(model.rvs_to_transforms.get(pi), SimplexTransform):
        return f"{pi.name!r} must keep PyMC's default simplex transform (no transform= argument)"
    conc = pi.owner.op.dist_params(pi.owner)[0]
    free = sorted(v.name for v in direct_upstream(model, [conc]) if v in model.free_RVs)
    if free:
        return (
            f"the concentration of {pi.name!r} reads the free parameters {free} (a fixed "
            "concentration is needed; for a = alpha * base use pdp.DirichletHyper)"
        )
    table = _multinomial_table(model, pi)
    if table is None:
        return (
            f"{pi.name!r} must have one child, a latent pm.Multinomial table with p={pi.name} "
            "itself (same shape) and a fixed n"
        )
    why = _cells_reason(model, table)
    if why is not None:
        return why
    rows = _concentration_fn(model, pi)().reshape(-1, int(pi.type.shape[-1]))
    if not np.all(rows == rows[:1]):
        return f"the concentration of {pi.name!r} differs between rows (one row for every area)"
    return None


def _concentration_fn(model, pi):
    """A compiled function of no inputs: π's concentration broadcast to π's shape (float64)."""
    conc = pi.owner.op.dist_params(pi.owner)[0]
    (graph,) = replace_rvs_by_values(
        [pt.cast(pt.broadcast_to(conc, tuple(int(d) for d in pi.type.shape)), "float64")],
        rvs_to_values=model.rvs_to_values,
        rvs_to_transforms=model.rvs_to_transforms,
    )
    return pytensor.function([], graph, mode="FAST_COMPILE")


class _Table:
    """One (π, c) pair of the step: names, shapes and the `TableCells` that reads c's releases."""

    def __init__(self, model, pi, table, rng):
        self.pi_rv_name = pi.name
        self.pi_name = model.rvs_to_values[pi].name
        self.table_name = model.rvs_to_values[table].name
        self.k = int(pi.type.shape[-1])
        self.rows = int(np.prod(pi.type.shape[:-1], dtype=int))
        self.concentration = _concentration_fn(model, pi)
        self.conc = None  # the concentration row, read once per chain (`DirichletCells._conc`)
        #: the releases, kernels, widths and start of the table, as `TableCells` reads them (its
        #: own ``step`` is never called)
        self.cells = TableCells([table], model=model, rng=rng)


class DirichletCells(DPStep):
    """A latent Multinomial table and its Dirichlet π, the cells moved with π summed out.

    Exact: the cells move against the Dirichlet-multinomial rows, then π | c is drawn exactly
    (module docstring).

    ``pm.sample()`` assigns it by itself to ``π ~ pm.Dirichlet(a)`` (``a`` fixed, the same for
    every row) and ``c ~ pm.Multinomial(n, p=π)`` of π's shape when π has no other child and every
    release of c is ``pdp.Cells``. Explicitly: ``pm.sample(step=[pdp.DirichletCells([pi, c])])``.

    Parameters
    ----------
    vars : list
        Pairs of a Dirichlet π and its Multinomial table c, in any order (several tables may share
        the step; each moves on its own).
    reps : int
        Pair moves per cell per iteration (``reps``·K per row; default 4).
    width : int, optional
        Largest step (people moved) of a cell move; default: the smallest noise sd of the
        releases, rounded, at least 1 (as `TableCells`).
    start_at_release : bool
        At the first warm-up iteration of each chain, start the table at the one nearest to the
        ``Cells`` releases (`TableCells.start_table`) instead of PyMC's initial point.

    Raises
    ------
    ValueError
        At construction, naming what does not fit: a π without its table or a table without its
        π, a concentration that reads free parameters or differs between rows, π with another
        child, a table released by anything but ``pdp.Cells``.

    Sampler stats
    -------------
    ``dp_accept_rate``: fraction of proposed cell moves accepted.
    """

    name = "dirichlet_cells"
    dp_stats = {"dp_accept_rate": (float, [])}

    def __init__(
        self,
        vars,
        *,
        reps: int = 4,
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
        if not (isinstance(reps, int | np.integer) and reps >= 1):
            raise ValueError(f"reps must be an integer >= 1, got reps={reps!r}.")
        if vars is None or not isinstance(vars, list | tuple) or not vars:
            raise ValueError(
                f"DirichletCells needs vars=[pi, c] (a Dirichlet pi and its Multinomial table c); "
                f"got {vars!r}."
            )
        values = list(get_value_vars_from_user_vars(list(vars), model))
        rvs = [model.values_to_rvs[v] for v in values]
        pis = [r for r in rvs if isinstance(r.owner.op, rb.DirichletRV)]
        tables = [r for r in rvs if isinstance(r.owner.op, rb.MultinomialRV)]
        other = [r.name for r in rvs if r not in pis and r not in tables]
        if other:
            raise ValueError(
                f"DirichletCells updates Dirichlet cell probabilities and their Multinomial "
                f"tables only; got {other}. Pass vars=[pi, c]."
            )
        for pi in pis:
            why = _refusal(model, pi)
            if why is not None:
                raise ValueError(f"DirichletCells cannot update {pi.name!r}: {why}.")
        pairs = {id(_multinomial_table(model, pi)): pi for pi in pis}
        for c in tables:
            if id(c) not in pairs:
                raise ValueError(
                    f"DirichletCells moves the table {c.name!r} only together with its Dirichlet "
                    f"cell probabilities: pass step=[pdp.DirichletCells([pi, {c.name}])] (pi the "
                    f"p of {c.name!r}); if you pass a step for pi yourself, pass "
                    f"pdp.TableCells([{c.name}]) for the table too."
                )
        if len(tables) != len(pis):
            missing = [pi.name for pi in pis if _multinomial_table(model, pi) not in tables]
            raise ValueError(
                f"DirichletCells draws {missing} from the table it moves: pass each with its "
                "Multinomial table c, vars=[pi, c]."
            )
        if width is not None and not (isinstance(width, int | np.integer) and width >= 1):
            raise ValueError(f"width must be an integer >= 1 or None, got width={width!r}.")
        self.vars = values
        self.reps = int(reps)
        self._tables = [
            _Table(model, pairs[id(c)], c, rng)
            for c in tables  # in the order given
        ]
        for t in self._tables:
            t.cells.start_at_release = bool(start_at_release)
            if width is not None:
                t.cells.width = int(width)
        self._init_step(rng)

    def start_chain(self) -> None:
        for t in self._tables:
            t.cells.start_chain()
            t.conc = None  # read once per chain (data may change between runs)
        self._fresh = True

    @staticmethod
    def _conc(t) -> np.ndarray:
        """The concentration a (length K, the same for every row), read from the model once per
        chain (``pm.Data`` may change between runs)."""
        if t.conc is None:
            t.conc = np.ascontiguousarray(t.concentration().reshape(-1, t.k)[0])
        return t.conc

    def conditional(self, point) -> dict:
        """What the step draws π from given the table in ``point``: the Dirichlet parameters
        ``a + c_g`` of every row (rows × K), by π's name (the code path of `step`)."""
        return {
            t.pi_rv_name: self._conc(t)[None, :]
            + np.asarray(point[t.table_name], dtype=np.float64).reshape(t.rows, t.k)
            for t in self._tables
        }

    def step(self, point):
        fresh = self._fresh and self.tune
        self._fresh = False
        new, accepted, proposed = {}, 0, 0
        for t in self._tables:
            ts = t.cells
            conc = self._conc(t)
            table = np.array(point[t.table_name], dtype=np.int64).reshape(-1)
            if fresh and ts.start_at_release:
                table[:] = ts.start_table(table, np.ones(table.size))
            s = entry_values(table, ts.idx, ts.n_entries)
            accepted += dm_rows_sweep_streams(
                row_seeds(self.rng, t.rows),
                table,
                conc,
                t.k,
                ts.codes,
                ts.a,
                ts.b,
                ts.releases(),
                s,
                ts.idx,
                ts.width,
                self.reps,
            )
            proposed += self.reps * t.k * t.rows if t.k > 1 else 0
            out = np.empty((t.rows, t.k - 1))
            # π | c: Dirichlet(a + c_g) per row (`conditional`), each row from its own stream
            dirichlet_rows_simplex_streams(
                row_seeds(self.rng, t.rows), conc, table.reshape(t.rows, t.k), out
            )
            pi_old, c_old = np.asarray(point[t.pi_name]), np.asarray(point[t.table_name])
            new[t.pi_name] = out.reshape(pi_old.shape).astype(pi_old.dtype, copy=False)
            new[t.table_name] = table.reshape(c_old.shape).astype(c_old.dtype, copy=False)
        rate = accepted / proposed if proposed else 0.0
        return {**point, **new}, [self.stats(dp_accept_rate=rate)]

    @staticmethod
    def competence(var, has_grad):
        return dirichlet_cells_competence(var)


# -- pm.sample()'s default assignment -------------------------------------------------------
_VERDICTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def dirichlet_cells_competence(var) -> Competence:
    """``IDEAL`` if ``var`` is a Dirichlet π or its Multinomial table that `DirichletCells` accepts
    (`_refusal` finds nothing); registered before `TableCells` and `ConjugateTheta`, which are
    ``IDEAL`` for the table and π too. Cached; never warns."""
    op = getattr(var.owner, "op", None)
    if not isinstance(op, rb.DirichletRV | rb.MultinomialRV):
        return Competence.INCOMPATIBLE
    return cached_verdict(var, _VERDICTS, _verdict)


def _verdict(model, var) -> Competence:
    pi = var
    if isinstance(var.owner.op, rb.MultinomialRV):
        pi = var.owner.op.dist_params(var.owner)[1]
        if pi not in model.free_RVs or not isinstance(pi.owner.op, rb.DirichletRV):
            return Competence.INCOMPATIBLE
        if _multinomial_table(model, pi) is not var:
            return Competence.INCOMPATIBLE
    return Competence.IDEAL if _refusal(model, pi) is None else Competence.INCOMPATIBLE
