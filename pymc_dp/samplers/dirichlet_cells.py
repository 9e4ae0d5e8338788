r"""A latent count table under a fixed Dirichlet, with its probabilities summed out.

The model: cell probabilities ``π ~ Dirichlet(a)`` with a fixed concentration ``a`` (constants or
data, the same for every row), a latent ``c ~ pm.Multinomial(n, p=π)`` of π's shape (one table, or
G rows of areas) and releases of ``c`` by ``pdp.Cells``, or by ``pdp.Marginals`` whose entries each
count cells of one row (any margin of a single table; margins within each area's row). The default
route before this step
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
other free concentration, or a margin summing cells of several rows (across areas), or π with
other children, the step refuses and the default stays ``ConjugateTheta`` + ``TableCells``.

A table released by margins only (no cell-level release) is weakly identified within the margins'
fibre, and these local moves cross it slowly: a 2 × 3 × 2 table of 150 people released by two
margins gave π an ESS/draw of 0.003 with the default ``reps=4`` and 0.056 with ``reps=40``
(moves that keep every margin fixed would be the remedy; not built).
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.distributions.transforms import SimplexTransform
from pymc.logprob.utils import replace_rvs_by_values
from pytensor.tensor.random import basic as rb

from pymc_dp.distributions.graph import direct_upstream, fixed_shape
from pymc_dp.samplers.cells import dm_rows_sweep_streams
from pymc_dp.samplers.cells import multinomial_table_of, row_margins_refusal
from pymc_dp.samplers.parent_cells import ParentCells
from pymc_dp.samplers.streams import dirichlet_rows_simplex_streams, row_seeds


def _refusal(model, pi) -> str | None:
    """Why ``pi`` and its table cannot move in `DirichletCells` (None: they can)."""
    if pi not in model.free_RVs or not isinstance(pi.owner.op, rb.DirichletRV):
        return f"{pi.name!r} is not a free pm.Dirichlet"
    if fixed_shape(pi) is None:
        return f"the shape of {pi.name!r} depends on a random variable ({pi.type.shape})"
    if not isinstance(model.rvs_to_transforms.get(pi), SimplexTransform):
        return f"{pi.name!r} must keep PyMC's default simplex transform (no transform= argument)"
    conc = pi.owner.op.dist_params(pi.owner)[0]
    free = sorted(v.name for v in direct_upstream(model, [conc]) if v in model.free_RVs)
    if free:
        return (
            f"the concentration of {pi.name!r} reads the free parameters {free} (a fixed "
            "concentration is needed; for a = alpha * base use pdp.DirichletHyper)"
        )
    table = multinomial_table_of(model, pi)
    if table is None:
        return (
            f"{pi.name!r} must have one child, a latent pm.Multinomial table with p={pi.name} "
            "itself (same shape) and a fixed n"
        )
    why = row_margins_refusal(model, table)
    if why is not None:
        return why
    rows = _concentration_fn(model, pi)().reshape(-1, fixed_shape(pi)[-1])
    if not np.all(rows == rows[:1]):
        return f"the concentration of {pi.name!r} differs between rows (one row for every area)"
    return None


def _concentration_fn(model, pi):
    """A compiled function of no inputs: π's concentration broadcast to π's shape (float64)."""
    conc = pi.owner.op.dist_params(pi.owner)[0]
    (graph,) = replace_rvs_by_values(
        [pt.cast(pt.broadcast_to(conc, fixed_shape(pi)), "float64")],
        rvs_to_values=model.rvs_to_values,
        rvs_to_transforms=model.rvs_to_transforms,
    )
    return pytensor.function([], graph, mode="FAST_COMPILE")


class DirichletCells(ParentCells):
    """A latent Multinomial table and its Dirichlet π, the cells moved with π summed out.

    Exact: the cells move against the Dirichlet-multinomial rows, then π | c is drawn exactly
    (module docstring).

    ``pm.sample()`` assigns it by itself to ``π ~ pm.Dirichlet(a)`` (``a`` fixed, the same for
    every row) and ``c ~ pm.Multinomial(n, p=π)`` of π's shape when π has no other child and every
    release of c is ``pdp.Cells`` or a ``pdp.Marginals`` within rows. Explicitly:
    ``pm.sample(step=[pdp.DirichletCells([pi, c])])``.

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
        child, a table released by anything but ``pdp.Cells`` or margins within rows.

    Sampler stats
    -------------
    ``dp_accept_rate``: fraction of proposed cell moves accepted.
    """

    name = "dirichlet_cells"
    parent_op = rb.DirichletRV
    table_op = rb.MultinomialRV
    words = ("Dirichlet cell probabilities", "Multinomial", "pi")

    def __init__(self, vars, *, reps: int = 4, **kwargs):
        super().__init__(vars, reps=reps, **kwargs)

    def conditional(self, point) -> dict:
        """What the step draws π from given the table in ``point``: the Dirichlet parameters
        ``a + c_g`` of every row (rows × K), by π's name (the code path of `step`)."""
        out = {}
        for t in self._pairs:
            conc = self._params(t)
            c = np.asarray(point[t.table_name], dtype=np.float64).reshape(-1, conc.size)
            out[t.parent_rv_name] = conc[None, :] + c
        return out

    # -- the hooks of ParentCells ------------------------------------------------------------
    refusal = staticmethod(_refusal)
    table_of = staticmethod(multinomial_table_of)

    @staticmethod
    def parent_of(table):
        return table.owner.op.dist_params(table.owner)[1]

    @staticmethod
    def params_fn(model, pi):
        """The concentration row a (length K; `_refusal` checked every row has it)."""
        fn, k = _concentration_fn(model, pi), fixed_shape(pi)[-1]
        return lambda: np.ascontiguousarray(fn().reshape(-1, k)[0])

    @staticmethod
    def move_cells(rng, t, conc, table, s, reps):
        """``reps``·K pair moves per row against Dirichlet-multinomial(N_g, a) rows times the
        releases (`cells.dm_rows_sweep_streams`), each row from its own stream."""
        k = conc.size
        rows = table.size // k
        seeds = row_seeds(rng, rows)
        accepted = dm_rows_sweep_streams(seeds, table, conc, k, *t.cells.sweep_args(s, reps))
        return accepted, (reps * k * rows if k > 1 else 0)

    @staticmethod
    def draw_parent(rng, t, conc, table):
        """π | c: Dirichlet(a + c_g) per row (`conditional`), each row from its own stream, as
        PyMC's simplex values."""
        k = conc.size
        rows = table.size // k
        out = np.empty((rows, k - 1))
        dirichlet_rows_simplex_streams(row_seeds(rng, rows), conc, table.reshape(rows, k), out)
        return out
