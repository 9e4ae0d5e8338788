r"""Latent count tables released cell by cell (``pdp.Cells``): an O(K) sweep, independent of N.

Target: $p(c \mid \theta, s) \propto p(c \mid \theta) \prod_m \prod_k \eta_m(s_{mk} \mid c_k)$
for a table $c$ that is

* **independent Poisson cells**, $c_k \sim \mathrm{Poisson}(\lambda_k)$ (total unknown): each
  cell in turn gets ``reps`` Metropolis moves $c_k^* = c_k + d$, $d$ uniform on
  $\{-w, \dots, -1, 1, \dots, w\}$ (symmetric; $c_k^* < 0$ rejected), accepted with
  probability $\min\big(1, \frac{\lambda_k^{c_k^*} c_k!}{\lambda_k^{c_k} c_k^*!}
  \prod_m \frac{\eta_m(s_{mk} \mid c_k^*)}{\eta_m(s_{mk} \mid c_k)}\big)$;
* **a multinomial table**, $c \sim \mathrm{Multinomial}(N, \pi)$ (total public): ``reps``·K
  pairwise moves, each moving $d$ people (uniform on $1..w$) from a cell $j$ to a
  cell $k \ne j$ (both uniform): the proposal is symmetric (the reverse move has the same
  probability), the total stays N, and the ratio is

  $$\Big(\frac{\pi_k}{\pi_j}\Big)^d \frac{c_j!\, c_k!}{(c_j - d)!\, (c_k + d)!} \prod_m \frac{\eta_m(s_{mj} \mid c_j - d)\, \eta_m(s_{mk} \mid c_k + d)} {\eta_m(s_{mj} \mid c_j)\, \eta_m(s_{mk} \mid c_k)}.$$

Every move is an exact Metropolis–Hastings step (accept iff $\log\alpha \ge -E$, E standard
exponential); a sweep costs $O(K \cdot \text{reps})$ whatever N. The step width w defaults to
the noise sd of the release (rounded, at least 1): the posterior of a cell given the rest is about
that wide when the table's prior is flat at that scale. θ (π, λ) is left to PyMC's samplers.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
import pytensor.tensor as pt
from pymc.logprob.utils import replace_rvs_by_values
from pymc.pytensorf import compile as pm_compile
from pymc.step_methods.compound import Competence
from pytensor.tensor.random import basic as rb

from pymc_dp.distributions.graph import depends_on
from pymc_dp.distributions.registry import dp_nodes, model_of
from pymc_dp.mechanisms.base import check_kernel_codes, kernel_logpdf
from pymc_dp.samplers.base import DPStep

__all__ = ["TableCells", "poisson_cells_sweep", "multinomial_cells_sweep", "table_competence"]

POISSON_TABLE, MULTINOMIAL_TABLE = 0, 1


class CellsInfo(NamedTuple):
    """Accepted moves and moves proposed in one sweep."""

    n_accepted: int
    n_proposed: int


@numba.njit(cache=True, inline="always")
def _noise(codes, a, b, r, k, old, new):
    """Σ_m ℓ_m(r_mk − new) − ℓ_m(r_mk − old)."""
    out = 0.0
    for m in range(codes.shape[0]):
        out += kernel_logpdf(codes[m], a[m], b[m], r[m, k] - new) - kernel_logpdf(
            codes[m], a[m], b[m], r[m, k] - old
        )
    return out


@numba.njit(cache=True)
def poisson_cells_sweep(rng, c, lam, codes, a, b, r, width, reps):
    """``reps`` symmetric ±1..±``width`` Metropolis moves per Poisson cell, in place (module doc)."""
    n_acc = 0
    for k in range(c.shape[0]):
        log_lam = math.log(lam[k]) if lam[k] > 0 else -np.inf
        for _ in range(reps):
            d = 1 + int(rng.random() * width)
            if rng.random() < 0.5:
                d = -d
            new = c[k] + d
            if new < 0:
                continue
            lr = d * log_lam - math.lgamma(new + 1.0) + math.lgamma(c[k] + 1.0)
            lr += _noise(codes, a, b, r, k, float(c[k]), float(new))
            if lr == lr and (lr >= 0.0 or lr + rng.standard_exponential() >= 0.0):
                c[k] = new
                n_acc += 1
    return n_acc


@numba.njit(cache=True)
def multinomial_cells_sweep(rng, c, log_p, codes, a, b, r, width, reps):
    """``reps``·K pairwise moves of 1..``width`` people between two cells, in place (module doc)."""
    n_acc = 0
    n_cells = c.shape[0]
    for _ in range(reps * n_cells):
        j = int(rng.random() * n_cells)
        k = int(rng.random() * (n_cells - 1))
        if k >= j:
            k += 1
        d = 1 + int(rng.random() * width)
        if c[j] < d:
            continue
        cj, ck = float(c[j]), float(c[k])
        lr = d * (log_p[k] - log_p[j])
        lr += (
            math.lgamma(cj + 1.0)
            - math.lgamma(cj - d + 1.0)
            + math.lgamma(ck + 1.0)
            - math.lgamma(ck + d + 1.0)
        )
        lr += _noise(codes, a, b, r, j, cj, cj - d) + _noise(codes, a, b, r, k, ck, ck + d)
        if lr == lr and (lr >= 0.0 or lr + rng.standard_exponential() >= 0.0):
            c[j] -= d
            c[k] += d
            n_acc += 1
    return n_acc


def _table_kind(rv):
    op = type(rv.owner.op)
    if op is rb.PoissonRV:
        return POISSON_TABLE
    if op is rb.MultinomialRV and rv.ndim == 1:
        return MULTINOMIAL_TABLE
    return None


def _cells_nodes(model, rv):
    return [
        node
        for node in dp_nodes(model).values()
        if rv in node.data and getattr(node.statistic, "latent_table", False)
    ]


def _refusal(model, rv):
    """Why TableCells cannot take ``rv`` (None: it can)."""
    if rv not in model.free_RVs:
        return f"{rv.name!r} is not a free random variable of the model"
    if _table_kind(rv) is None:
        return (
            f"{rv.name!r} is a {type(rv.owner.op).__name__}; TableCells samples a pm.Poisson table "
            "or a 1-d pm.Multinomial table"
        )
    nodes = _cells_nodes(model, rv)
    if not nodes:
        return f"{rv.name!r} feeds no DPObserved node with statistic=pdp.Cells()"
    own = {node.rv for node in nodes}
    for var in list(model.basic_RVs) + list(model.potentials):
        if var is rv or var in own:
            continue
        if depends_on(var, [rv]):
            return (
                f"{var.name!r} depends on the table {rv.name!r}; TableCells needs the Cells "
                "releases to be the only terms that do"
            )
    return None


def _width(mech) -> int:
    sd = mech.noise_sd
    return max(1, int(round(sd))) if math.isfinite(sd) else 1


class TableCells(DPStep):
    """Update a latent count table released by ``pdp.Cells`` with O(K) exact moves per sweep.

    ``pm.sample()`` assigns it by itself to a ``pm.Poisson`` or 1-d ``pm.Multinomial`` table that
    feeds ``DPObserved(..., statistic=pdp.Cells(), ...)`` nodes and nothing else (module docstring
    for the moves).

    Parameters
    ----------
    vars : list
        One table variable.
    reps : int
        Moves per cell per iteration (Poisson: per cell; Multinomial: ``reps``·K pair moves).
    width : int, optional
        Largest step (people moved); default: the release's noise sd, rounded, at least 1.
    start_at_release : bool
        At the first warm-up iteration of each chain, start the table at the one nearest to the
        releases (rounded, non-negative, with the Multinomial's total) instead of PyMC's initial
        point (N·π at the initial π, which can be thousands of people from the data and takes
        long random walks to leave). Only the chain's starting point changes.
    model : pm.Model, optional

    Sampler stats
    -------------
    ``dp_accept_rate``: fraction of proposed cell moves accepted.
    """

    name = "table_cells"
    dp_stats = {"dp_accept_rate": (float, [])}

    def __init__(
        self,
        vars,
        *,
        reps: int = 6,
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
        values = get_value_vars_from_user_vars(vars, model)
        if len(values) != 1:
            raise ValueError(
                f"TableCells updates one table variable, got {len(values)}: pass vars=[c]."
            )
        rv = model.values_to_rvs[values[0]]
        reason = _refusal(model, rv)
        if reason is not None:
            raise ValueError(f"TableCells cannot update {rv.name!r}: {reason}.")
        if model.rvs_to_transforms.get(rv) is not None:
            raise ValueError(f"TableCells cannot update {rv.name!r}: it has a transform.")
        if not (isinstance(reps, int | np.integer) and reps >= 1):
            raise ValueError(f"reps must be an integer >= 1, got reps={reps!r}.")
        self.vars = list(values)
        self.name_ = values[0].name
        self.kind = _table_kind(rv)
        self.reps = int(reps)
        self.start_at_release = bool(start_at_release)
        nodes = _cells_nodes(model, rv)
        kernels = [nd.mechanism.compiled_kernel() for nd in nodes]
        self.codes = check_kernel_codes([k[0] for k in kernels])
        self.a = np.array([k[1] for k in kernels], dtype=np.float64)
        self.b = np.array([k[2] for k in kernels], dtype=np.float64)
        self.width = int(width) if width is not None else min(_width(nd.mechanism) for nd in nodes)
        if self.width < 1:
            raise ValueError(f"width must be an integer >= 1, got width={width!r}.")
        self.shape = tuple(rv.type.shape)
        dist = rv.owner.op.dist_params(rv.owner)
        par = dist[0] if self.kind == POISSON_TABLE else dist[1]
        graph = pt.cast(
            pt.broadcast_to(par, rv.shape) if self.kind == POISSON_TABLE else par, "float64"
        )
        (graph,) = replace_rvs_by_values(
            [graph], rvs_to_values=model.rvs_to_values, rvs_to_transforms=model.rvs_to_transforms
        )
        self._param = pm_compile(model.value_vars, graph, on_unused_input="ignore")
        releases = [pt.cast(pt.flatten(model.rvs_to_values[nd.rv]), "float64") for nd in nodes]
        import pytensor

        self._releases = pytensor.function([], releases)
        self.input_names = [v.name for v in model.value_vars]
        self._init_step(rng)

    def start_chain(self):
        self._fresh = True

    def _start_table(self, c, r, par):
        """The table nearest to the releases (their mean, rounded, ≥ 0, zero where the parameter
        is 0; a Multinomial's total restored to N by moving the largest remainders)."""
        target = np.maximum(r.mean(axis=0), 0.0)
        target[par <= 0] = 0.0
        start = np.rint(target).astype(np.int64)
        if self.kind == MULTINOMIAL_TABLE:
            total = int(c.sum())
            if target.sum() == 0:  # nothing to go by: keep PyMC's start
                return c
            start = np.floor(target * total / target.sum()).astype(np.int64)
            rest = total - int(start.sum())
            order = np.argsort(-(target * total / target.sum() - start), kind="stable")
            start[order[:rest]] += 1
        return start

    def step(self, point):
        c = np.array(point[self.name_], dtype=np.int64, copy=True).reshape(-1)
        r = np.stack([np.asarray(v, dtype=np.float64) for v in self._releases()])
        par = np.asarray(
            self._param(*[point[n] for n in self.input_names]), dtype=np.float64
        ).reshape(-1)
        if self._fresh and self.tune and self.start_at_release:
            c = self._start_table(c, r, par)  # a starting point (warm-up draws are discarded)
        self._fresh = False
        if self.kind == POISSON_TABLE:
            n_acc = poisson_cells_sweep(
                self.rng, c, par, self.codes, self.a, self.b, r, self.width, self.reps
            )
        else:
            with np.errstate(divide="ignore"):
                log_p = np.log(par / par.sum())
            n_acc = multinomial_cells_sweep(
                self.rng, c, log_p, self.codes, self.a, self.b, r, self.width, self.reps
            )
        new = c.reshape(np.shape(point[self.name_])).astype(np.asarray(point[self.name_]).dtype)
        rate = n_acc / (self.reps * c.size) if c.size else 0.0
        return {**point, self.name_: new}, [self.stats(dp_accept_rate=float(rate))]

    @staticmethod
    def competence(var, has_grad):
        return table_competence(var)


def table_competence(var) -> Competence:
    """``IDEAL`` for a Poisson / 1-d Multinomial table that feeds ``pdp.Cells`` releases only."""
    model = model_of(var)
    if model is None or var not in model.free_RVs or not _cells_nodes(model, var):
        return Competence.INCOMPATIBLE
    return Competence.IDEAL if _refusal(model, var) is None else Competence.INCOMPATIBLE
