r"""Independent Poisson cells under fixed Gamma rates, with the rates summed out.

The model: rates ``λ ~ pm.Gamma(α, β)`` with α, β fixed (constants or data, per cell or shared),
a latent table ``c ~ pm.Poisson(λ)`` of λ's shape (total unknown; any shape, e.g. (G, K) areas)
and releases of ``c`` by ``pdp.Cells`` only. The default route before this step alternated
``ConjugateTheta`` (λ | c, Gamma(α + c, β + 1)) with ``TableCells`` (c | λ): for a cell with few
people each pins the other (the data-augmentation coupling), and the rates of the smallest cells
mixed slowly (the census tutorial's convergence warning on ``lam``).

This step removes the coupling. Each iteration

1. moves every cell with its rate summed out: c_k is then negative binomial,
   ``p(c) = Γ(c + α) / (Γ(α) c!) · (β / (1 + β))^α (1 + β)^(−c)``, and each cell gets ``reps``
   symmetric ±1..±w Metropolis moves against that law times every release
   (`cells.independent_cells_sweep`, the negative-binomial kind of `TableCells`); this leaves
   p(c | releases) invariant;
2. draws λ | c exactly: Gamma(α + c_k, β + 1) per cell, written in PyMC's log value (log-gamma
   draws, exact for shapes below 1 too: ``log G(a + 1) + log(U) / a``).

Step 1 targets the marginal of c and step 2 its conditional: a collapsed Gibbs sampler of (λ, c)
(as `DirichletCells` for a Multinomial table). Cost O(cells · reps), independent of the number of
people. Exactness: ``tests/statistical/samplers/test_gamma_cells.py`` (enumeration).
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.distributions.transforms import LogTransform
from pymc.logprob.utils import replace_rvs_by_values
from pytensor.tensor.random import basic as rb

from pymc_dp.distributions.graph import direct_upstream, fixed_shape
from pymc_dp.samplers.cells import (
    NEGBIN_TABLE,
    cells_only_refusal,
    independent_cells_sweep,
    sole_table_child,
)
from pymc_dp.samplers.parent_cells import ParentCells


def _poisson_table(model, lam):
    """The latent ``pm.Poisson`` table ``c`` with rate λ itself (same shape, no transform) when it
    is the only term that depends on λ; None otherwise."""
    return sole_table_child(model, lam, rb.PoissonRV, 0)


def _refusal(model, lam) -> str | None:
    """Why ``lam`` and its table cannot move in `GammaCells` (None: they can)."""
    if lam not in model.free_RVs or not isinstance(lam.owner.op, rb.GammaRV):
        return f"{lam.name!r} is not a free pm.Gamma"
    if fixed_shape(lam) is None:
        return f"the shape of {lam.name!r} depends on a random variable ({lam.type.shape})"
    if not isinstance(model.rvs_to_transforms.get(lam), LogTransform):
        return f"{lam.name!r} must keep PyMC's default log transform (no transform= argument)"
    params = lam.owner.op.dist_params(lam.owner)
    free = sorted({v.name for v in direct_upstream(model, params) if v in model.free_RVs})
    if free:
        return (
            f"the prior of {lam.name!r} reads the free parameters {free} (fixed α and β are needed)"
        )
    table = _poisson_table(model, lam)
    if table is None:
        return (
            f"{lam.name!r} must have one child, a latent pm.Poisson table with mu={lam.name} "
            "itself (same shape)"
        )
    return cells_only_refusal(model, table)


def _params_fn(model, lam):
    """A compiled function of no inputs: λ's shape α and rate β, each broadcast to λ's shape
    (float64; the model's own graph computes them, then they are cast)."""
    shape = fixed_shape(lam)
    alpha, scale = lam.owner.op.dist_params(lam.owner)
    graphs = replace_rvs_by_values(
        [pt.cast(pt.broadcast_to(p, shape), "float64") for p in (alpha, scale)],
        rvs_to_values=model.rvs_to_values,
        rvs_to_transforms=model.rvs_to_transforms,
    )
    fn = pytensor.function([], graphs, mode="FAST_COMPILE")

    def params():
        a, s = fn()
        return np.ascontiguousarray(a.reshape(-1)), np.ascontiguousarray(1.0 / s.reshape(-1))

    return params


def log_gamma_draws(rng, shape, rate) -> np.ndarray:
    """``log X`` for X ~ Gamma(``shape``, ``rate``) (arrays, vectorised, the step's generator):
    shapes below 1 as ``log G(a + 1) + log(U) / a`` (Marsaglia and Tsang's boost), so that a
    tiny shape gives a finite log even where X itself would underflow to 0."""
    small = shape < 1.0
    g = rng.standard_gamma(np.where(small, shape + 1.0, shape))
    u = 1.0 - rng.random(shape.shape)  # in (0, 1]
    return np.log(g) + np.where(small, np.log(u) / np.where(small, shape, 1.0), 0.0) - np.log(rate)


class GammaCells(ParentCells):
    """Latent Poisson cells and their Gamma rates, the cells moved with the rates summed out.

    Exact: the cells move against their negative-binomial marginal, then λ | c is drawn exactly
    (module docstring). ``pm.sample()`` assigns it by itself to ``λ ~ pm.Gamma(α, β)`` (α, β fixed)
    and ``c ~ pm.Poisson(λ)`` of λ's shape when λ has no other child and every release of c is
    ``pdp.Cells``. Explicitly: ``pm.sample(step=[pdp.GammaCells([lam, c])])``.

    Parameters
    ----------
    vars : list
        Pairs of a Gamma λ and its Poisson table c, in any order (several tables may share the
        step; each moves on its own).
    reps : int
        Moves per cell per iteration (default 6, as `TableCells`).
    width : int, optional
        Largest step of a move; default: the smallest noise sd of the releases, rounded, at least
        1 (as `TableCells`).
    start_at_release : bool
        At the first warm-up iteration of each chain, start the table at the one nearest to the
        ``Cells`` releases (`TableCells.start_table`) instead of PyMC's initial point.

    Raises
    ------
    ValueError
        At construction, naming what does not fit: a λ without its table or a table without its
        λ, α or β reading free parameters, λ with another child or another transform, a table
        released by anything but ``pdp.Cells``.

    Sampler stats
    -------------
    ``dp_accept_rate``: fraction of proposed cell moves accepted.
    """

    name = "gamma_cells"
    parent_op = rb.GammaRV
    table_op = rb.PoissonRV
    words = ("Gamma rates", "Poisson", "lam")

    def __init__(self, vars, *, reps: int = 6, **kwargs):
        super().__init__(vars, reps=reps, **kwargs)

    def conditional(self, point) -> dict:
        """What the step draws λ from given the table in ``point``: the Gamma shape ``α + c`` and
        rate ``β + 1`` of every cell (flattened), by λ's name (the code path of `step`)."""
        out = {}
        for t in self._pairs:
            alpha, beta = self._params(t)
            c = np.asarray(point[t.table_name], dtype=np.float64).reshape(-1)
            out[t.parent_rv_name] = (alpha + c, beta + 1.0)
        return out

    # -- the hooks of ParentCells ------------------------------------------------------------
    refusal = staticmethod(_refusal)
    table_of = staticmethod(_poisson_table)
    params_fn = staticmethod(_params_fn)

    @staticmethod
    def parent_of(table):
        return table.owner.op.dist_params(table.owner)[0]

    @staticmethod
    def move_cells(rng, t, ab, table, s, reps):
        """``reps`` moves per cell against NegativeBinomial(n = α, log(1 − p) = −log(1 + β)), the
        marginal of c with λ summed out, times the releases (`cells.independent_cells_sweep`)."""
        alpha, beta = ab
        accepted = independent_cells_sweep(
            rng, table, NEGBIN_TABLE, alpha, -np.log1p(beta), *t.cells.sweep_args(s, reps)
        )
        return accepted, reps * table.size

    @staticmethod
    def draw_parent(rng, t, ab, table):
        """λ | c: Gamma(α + c, β + 1) per cell (`conditional`), in PyMC's log value."""
        alpha, beta = ab
        return log_gamma_draws(rng, alpha + table, beta + 1.0)
