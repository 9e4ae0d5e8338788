r"""Interweaving for continuous records: a non-centred θ-move with the records' noise fixed.

Data augmentation alternates `x \mid \theta, s_{dp}` (record sweeps) and
`\theta \mid x` (NUTS, a conjugate step): the *centred* parametrisation. When the release is
weak relative to the records (strong privacy, small n) `\theta \mid x` is far narrower than
`p(\theta \mid s_{dp})` and θ crawls. The *ancillary* parametrisation writes each record through
θ-free noise `z`,

```text
x = T_\theta(z), \qquad
T_\theta(z) = \mathrm{loc}(\theta) + \mathrm{scale}(\theta)\, z \ \text{(location–scale)}
\quad\text{or}\quad T_\theta(u) = F_\theta^{-1}(u) \ \text{(inverse cdf)},
```

so that `f(x \mid \theta)\, |\partial T_\theta / \partial z| = p(z)` does not involve θ. In
`(\theta, z)` the joint posterior is
`p(\theta) \prod_i p(z_i) \prod_k \eta_k(s_k \mid S_k(T_\theta(z)))` times every other model
term evaluated at `x = T_\theta(z)`, hence

```text
\log \pi(\theta \mid z) = \log p(\theta) + \sum_k \log \eta_k\big(s_k \mid S_k(T_\theta(z))\big)
+ \text{const}
```

— no Jacobian, no record density: only the prior (with the transforms' log-Jacobians of PyMC's value
space) and the releases, whose statistics (clamping included) are evaluated on `T_\theta(z)`.
One evaluation is a compiled PyTensor graph, `O(n)`. Alternating the centred update with this
move is the ancillarity–sufficiency interweaving strategy of Yu & Meng (2011, JCGS 20(3)); each move
leaves `p(\theta, x \mid s_{dp})` invariant, so does their composition.

The θ-move is univariate slice sampling (`pymc_dp.samplers.slice`, Neal 2003, §4) along
each of d directions in PyMC's value space: the coordinate axes, or — learnt during warm-up for
d ≥ 2 — the principal axes of the θ draws (a ridge such as β₀ + β₁ pinned by a sum is then crossed
along, not across). Directions and interval widths (mean of twice the move sizes) are adapted during
warm-up only, so the kernel is exactly invariant after warm-up.

Records whose distribution has neither a location–scale form nor an icdf (e.g. discrete classes),
and records whose distribution does not read θ (a regression's covariates), are held fixed during
the move; their log density then enters `\log \pi`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.logprob.utils import replace_rvs_by_values
from pymc.pytensorf import compile as pm_compile
from pytensor.graph.replace import graph_replace

from pymc_dp.distributions.graph import (
    depends_on,
    draws_randomly,
    names,
    reads,
)
from pymc_dp.samplers.base import DPStep
from pymc_dp.samplers.points import layout_point
from pymc_dp.samplers.slice import as_log_density, slice_along, tuned_width
from pymc_dp.samplers.target import ReleaseTarget

__all__ = [
    "Interweave",
    "InterweaveInfo",
    "InterweaveParams",
    "InterweaveState",
    "InterweaveTarget",
    "InterweaveTrial",
    "interweave_kernel",
]

#: op class name -> (index of loc, index of scale, indices of θ-free shape parameters)
LOCATION_SCALE = {
    "NormalRV": (0, 1, ()),
    "LaplaceRV": (0, 1, ()),
    "LogisticRV": (0, 1, ()),
    "CauchyRV": (0, 1, ()),
    "GumbelRV": (0, 1, ()),
    "StudentTRV": (1, 2, (0,)),
}


# ----------------------------------------------------------------------------------------------
# pure kernel
# ----------------------------------------------------------------------------------------------
class InterweaveState(NamedTuple):
    """θ (flat, value space), its log target, the slice widths, the adaptation counter, and the
    slice directions (columns of ``basis``; ``None``: the coordinate axes)."""

    theta: np.ndarray
    logp: float
    width: np.ndarray
    n_adapt: int
    basis: np.ndarray | None = None


class InterweaveInfo(NamedTuple):
    """Number of target evaluations and the size of the move (Euclidean, value space)."""

    n_evals: int
    move: float


class InterweaveParams(NamedTuple):
    """``n_steps`` slice sweeps over θ's coordinates; ``max_steps_out`` per side; ``adapt`` widths."""

    n_steps: int = 1
    max_steps_out: int = 50
    adapt: bool = False


def interweave_kernel(rng, state: InterweaveState, target, params: InterweaveParams):
    """Non-centred θ-move: slice sampling of `\\pi(\\theta \\mid z)` with ``z`` held fixed.

    Parameters
    ----------
    rng : numpy.random.Generator
    state : InterweaveState
        ``state.logp`` must equal ``target(state.theta)``.
    target : callable
        ``theta_flat -> log π(θ | z)`` (from `InterweaveTarget.conditional`).
    params : InterweaveParams

    Returns
    -------
    (InterweaveState, InterweaveInfo)
    """
    theta, logp = np.array(state.theta, dtype=float, copy=True), float(state.logp)
    start = theta.copy()
    width, n_adapt = np.array(state.width, dtype=float, copy=True), state.n_adapt
    n_evals = 0
    basis = np.eye(theta.size) if state.basis is None else state.basis
    for _ in range(params.n_steps):
        for i in range(theta.size):
            before = theta.copy()
            theta, logp, used = slice_along(
                rng, theta, logp, basis[:, i], target, width[i], params.max_steps_out
            )
            n_evals += used
            if params.adapt:
                t = n_adapt + 1
                moved = abs(float(basis[:, i] @ (theta - before)))
                width[i] = tuned_width(width[i], 2.0 * moved, t, floor=1e-8)
        if params.adapt:
            n_adapt += 1
    move = float(np.sqrt(np.sum((theta - start) ** 2)))
    return InterweaveState(theta, logp, width, n_adapt, state.basis), InterweaveInfo(n_evals, move)


# ----------------------------------------------------------------------------------------------
# model side
# ----------------------------------------------------------------------------------------------
class InterweaveTarget(ReleaseTarget):
    """θ, the records' θ-free representation and the compiled `\\log\\pi(\\theta \\mid z)`.

    Parameters
    ----------
    model : pm.Model
    vars : list
        θ: continuous free variables (RVs or value variables).
    records : list, optional
        The latent records; default: every free variable that is the data of a ``DPObserved`` node
        and depends on θ (`pymc_dp.samplers.target.ReleaseTarget` finds and checks them).
    owner : str
        Name of the calling sampler, for messages.

    Attributes
    ----------
    kinds : dict
        Record name -> ``"location-scale"``, ``"icdf"``, ``"uniform-cell"`` (categorical /
        Bernoulli through a uniform in the record's cell) or ``"fixed"`` (held fixed, density kept).
    """

    def __init__(self, model, vars, records=None, *, owner="Interweave"):
        super().__init__(
            model,
            vars,
            records,
            owner=owner,
            move="moves θ by slice sampling in value space",
            argument="records",
            whole_releases=False,
        )
        self._build()

    # ------------------------------------------------------------------------------------------
    def _representation(self, rv, z, others_v, others_t):
        """``(kind, x graph in value space given z, z graph of the current value)`` or None."""
        model = self.model
        op = rv.owner.op
        if rv.dtype.startswith(("int", "uint", "bool")):
            return self._categorical(rv, z, others_v, others_t)
        theta_set = set(self.theta_rvs)
        spec = LOCATION_SCALE.get(type(op).__name__)
        tr = model.rvs_to_transforms.get(rv)
        (x_now,) = replace_rvs_by_values(
            [rv], rvs_to_values=model.rvs_to_values, rvs_to_transforms=model.rvs_to_transforms
        )
        if spec is not None:
            params = op.dist_params(rv.owner)
            i_loc, i_scale, shapes = spec
            if not any(depends_on(params[s], theta_set) for s in shapes):
                loc, scale = replace_rvs_by_values(  # float64 whatever the model's dtypes
                    [pt.cast(params[i_loc], "float64"), pt.cast(params[i_scale], "float64")],
                    rvs_to_values=others_v,
                    rvs_to_transforms=others_t,
                )
                x_nat = loc + scale * z
                z_now = (x_now - loc) / scale
                kind = "location-scale"
            else:
                spec = None
        if spec is None:
            try:
                x_nat = pm.icdf(rv, z)
                log_u = pm.logcdf(rv, rv)
            except NotImplementedError:
                return None
            (x_nat,) = replace_rvs_by_values(
                [x_nat], rvs_to_values=others_v, rvs_to_transforms=others_t
            )
            (log_u,) = replace_rvs_by_values(
                [log_u],
                rvs_to_values=model.rvs_to_values,
                rvs_to_transforms=model.rvs_to_transforms,
            )
            if draws_randomly([x_nat, log_u]):
                return (
                    None  # derived from a clone of the graph (pm.CustomDist(dist=...)): θ redrawn
                )
            z_now = pt.exp(log_u)
            kind = "icdf"
        x_nat = pt.broadcast_to(x_nat, rv.shape) if x_nat.ndim < rv.ndim else x_nat
        if tr is not None:
            x_val = tr.forward(x_nat, *rv.owner.inputs)
            (x_val,) = replace_rvs_by_values(
                [x_val], rvs_to_values=others_v, rvs_to_transforms=others_t
            )
        else:
            x_val = x_nat
        return kind, pt.cast(x_val, model.rvs_to_values[rv].dtype), pt.cast(z_now, "float64")

    def _categorical(self, rv, u, others_v, others_t):
        """Categorical / Bernoulli records through uniforms: ``x = #{k < K-1 : u ≥ P_k}`` with
        ``P_k = π_0 + … + π_k``. ``u | x, θ`` is uniform on ``[P_{x-1}, P_x)`` (drawn afresh each
        iteration, an exact Gibbs step on the auxiliary ``u``: integrating it over the cell gives
        back ``π_x``), so the graph of the current value is the cell ``(lower end, width)``."""
        kind = getattr(rv.owner.op, "name", None)
        if kind not in ("categorical", "bernoulli"):
            return None
        params = rv.owner.op.dist_params(rv.owner)
        (p,) = replace_rvs_by_values(
            [params[0]], rvs_to_values=others_v, rvs_to_transforms=others_t
        )
        if kind == "bernoulli":
            p = pt.stack([1.0 - p, p], axis=-1)
        p = pt.cast(p, "float64")
        k = p.shape[-1]
        cum = pt.cumsum(p, axis=-1)
        x_nat = pt.sum(pt.ge(u[..., None], cum[..., :-1]), axis=-1)
        x_nat = pt.broadcast_to(x_nat, rv.shape) if x_nat.ndim < rv.ndim else x_nat
        (x_now,) = replace_rvs_by_values(
            [rv],
            rvs_to_values=self.model.rvs_to_values,
            rvs_to_transforms=self.model.rvs_to_transforms,
        )
        idx = pt.arange(k)
        below = pt.lt(idx, x_now[..., None])
        at = pt.eq(idx, x_now[..., None])
        lower = pt.sum(pt.switch(below, p, 0.0), axis=-1)
        width = pt.sum(pt.switch(at, p, 0.0), axis=-1)
        (lower, width) = replace_rvs_by_values(
            [lower, width],
            rvs_to_values=self.model.rvs_to_values,
            rvs_to_transforms=self.model.rvs_to_transforms,
        )
        value_dtype = self.model.rvs_to_values[rv].dtype
        return "uniform-cell", pt.cast(x_nat, value_dtype), pt.stack([lower, width])

    def _build(self):
        model = self.model
        # parameters of a record are read at the current values of everything else; a record
        # whose distribution depends on another record that gets a z-representation is held fixed
        others_v = dict(model.rvs_to_values)
        others_t = {rv: t for rv, t in model.rvs_to_transforms.items() if t is not None}
        self.kinds = {}
        zs, x_vals, z_nows, z_vals, represented, z_kinds = [], [], [], [], [], []
        recs = set(self.record_rvs)
        order = sorted(self.record_rvs, key=lambda r: len(reads(r.owner.inputs, recs)))
        for rv in order:  # topological: a record's record-parents come before it
            z = pt.tensor(f"{rv.name}_z", dtype="float64", shape=rv.type.shape)
            linked = reads(rv.owner.inputs, represented)
            # records whose law does not read θ gain nothing from z (T_θ would not depend on θ) and
            # would hold their children fixed: keep them as they are (e.g. a regression's
            # covariates x, so that y ~ N(x·β, σ) is the one written through z)
            free_of_theta = not depends_on(rv.owner.inputs, self.theta_rvs)
            rep = (
                None if linked or free_of_theta else self._representation(rv, z, others_v, others_t)
            )
            if rep is None:
                self.kinds[rv.name] = "fixed"
                continue
            kind, x_val, z_now = rep
            self.kinds[rv.name] = kind
            z_kinds.append(kind)
            represented.append(rv)
            zs.append(z)
            x_vals.append(x_val)
            z_nows.append(z_now)
            z_vals.append(model.rvs_to_values[rv])
        if not zs:
            raise ValueError(
                f"{self.owner} needs records with a θ-free representation x = loc(θ) + scale(θ)·z "
                f"(Normal, StudentT, Laplace, Logistic, Cauchy, Gumbel), an icdf in PyMC, or categorical / "
                f"Bernoulli records (uniforms in their cells), but "
                f"{names(self.record_rvs)} has none (a family with neither form in PyMC, e.g. "
                "MvNormal, a truncated or censored distribution, Poisson or Binomial; or records "
                "drawn from each other). "
                "Use pdp.DataAugmentation with NUTS or a conjugate step for θ."
            )
        z_rvs = [model.values_to_rvs[v] for v in z_vals]
        depends = [r for r in z_rvs if depends_on(r, self.theta_rvs)]
        if not depends:
            raise ValueError(
                f"{self.owner}: the records {names(z_rvs)} do not depend on "
                f"vars=[{names(self.theta_rvs)}], so holding their noise fixed does not move θ "
                "differently from the centred update. Pass the parameters of the records' distribution."
            )
        terms = [v for v in model.basic_RVs if v not in set(z_rvs)] + list(model.potentials)
        logp = model.logp(vars=terms, sum=True)
        logp = graph_replace(logp, dict(zip(z_vals, x_vals)), strict=False)
        self.z_rvs = z_rvs
        self.z_kinds = z_kinds
        self.z_value_names = [v.name for v in z_vals]
        #: the noise inputs z and the records' value-space graphs T_θ(z) (for Jacobian checks)
        self.z_inputs, self.x_graphs = list(zs), list(x_vals)
        inputs = list(model.value_vars)
        self._logp = pm_compile(inputs + zs, pt.cast(logp, "float64"), on_unused_input="ignore")
        self._x = pm_compile(inputs + zs, x_vals, on_unused_input="ignore")
        self._z = pm_compile(inputs, z_nows, on_unused_input="ignore")

    # -- evaluators ----------------------------------------------------------------------------
    def z_of(self, point, rng=None):
        """θ-free noise of the current records: ``(x - loc)/scale`` or ``F_θ(x)``, one array each;
        for categorical records a uniform drawn in the record's cell (needs ``rng``)."""
        out = []
        for kind, z in zip(self.z_kinds, self._z(*self.args(point))):
            z = np.asarray(z, dtype=float)
            if kind == "uniform-cell":
                if rng is None:
                    raise ValueError(
                        "z_of needs rng for categorical records (a uniform in each cell)."
                    )
                z = z[0] + rng.random(z.shape[1:]) * z[1]
            out.append(z)
        return out

    def logp(self, point, zs) -> float:
        """`\\log \\pi(\\theta \\mid z)` up to a θ-free constant, θ and the rest from ``point``."""
        return as_log_density(self._logp(*self.args(point), *zs))

    def conditional(self, point, zs):
        """``theta_flat -> log π(θ | z)`` with ``z`` and every non-θ variable bound from ``point``."""
        base = dict(point)

        def log_density(theta):
            return self.logp(self.with_theta(base, theta), zs)

        return log_density

    def records(self, point, zs) -> dict:
        """The records `T_\\theta(z)` (value space) at the θ of ``point``: name -> array."""
        xs = self._x(*self.args(point), *zs)
        return {name: np.asarray(x) for name, x in zip(self.z_value_names, xs)}

    def update(self, point, theta, zs) -> dict:
        """``point`` with θ set to ``theta`` and the records moved to `T_\\theta(z)`."""
        new = self.with_theta(point, theta)
        new.update(self.records(new, zs))
        return new


class InterweaveTrial:
    r"""Warm-up measurement of whether the non-centred θ-move pays for itself (per chain).

    During tuning the move runs at every iteration and `record` keeps, per iteration, θ where
    the other steps left it (``theta_in``), θ after the move (``theta_out``), and the iteration's
    cost and the move's in estimated seconds: the work counted (records updated by the sweep,
    evaluations of the move's target) priced by the configured `pymc_dp.samplers.cost.CostModel`,
    never a clock, so the decision, and so the draws, depend on the seed alone and not on the
    machine's load. At the end of tuning `decide` compares, over the last half of the tuning
    window, the smallest standardised expected squared jump per estimated second over θ's
    coordinates,

    ```text
    \min_j \frac{E[(\Delta\theta_j)^2] / \mathrm{var}(\theta_j)}{\text{cost per iteration}},
    ```

    with the move (jump from one iteration's output to the next, cost of the whole iteration) and
    without it (the jump of the centred steps alone, the iteration's cost minus the move's), a proxy
    of θ's ESS/s (for a Gaussian AR(1) chain, ESJD/var = 2(1 − ρ)). The move is kept if it is larger
    with it. The decision is frozen when tuning ends, so after warm-up the kernel is a fixed
    composition of exact steps (each leaves the posterior invariant); the adaptation happens during
    tuning only, like the slice widths.

    The measurement stops after `MAX_WINDOW` iterations (the decision is then frozen, still
    within warm-up, so long tunings do not pay for a move that is not kept). With fewer than
    `MIN_WINDOW` iterations in the compared half (short tuning) the ``fallback`` decision (the
    weakness-ratio rule) is kept.
    """

    MIN_WINDOW = 40
    #: tuning iterations measured at most: the decision is frozen then, still within warm-up
    MAX_WINDOW = 200

    def __init__(self, fallback: bool, fallback_reason: str):
        self.fallback = bool(fallback)
        self.fallback_reason = str(fallback_reason)
        self.reset()

    def reset(self) -> None:
        """Forget the measurements (start of a chain)."""
        self.rows = []
        self._last = None
        self.decision = None  # (enabled, reason) once frozen

    def record(self, theta_in, theta_out, seconds: float, move_seconds: float) -> None:
        """One tuning iteration: θ before and after the move, the estimated seconds of the
        iteration (the move included) and of the move (counted work × the cost model)."""
        theta_in = np.asarray(theta_in, dtype=float).ravel()
        theta_out = np.asarray(theta_out, dtype=float).ravel()
        if self._last is not None:
            self.rows.append(
                (
                    theta_in - self._last,
                    theta_out - self._last,
                    theta_out,
                    float(seconds),
                    float(move_seconds),
                )
            )
        self._last = theta_out

    @property
    def full(self) -> bool:
        """Whether the window is complete (decide now)."""
        return len(self.rows) >= self.MAX_WINDOW

    def decide(self):
        """Freeze and return ``(enabled, reason)``."""
        if self.decision is not None:
            return self.decision
        rows = self.rows[len(self.rows) // 2 :]
        if len(rows) < self.MIN_WINDOW:
            self.decision = (
                self.fallback,
                f"{self.fallback_reason} (tuning too short to measure: "
                f"{len(rows)} < {self.MIN_WINDOW} iterations)",
            )
            return self.decision
        centred = np.array([r[0] for r in rows])
        total = np.array([r[1] for r in rows])
        theta = np.array([r[2] for r in rows])
        seconds = float(np.mean([r[3] for r in rows]))
        move = float(np.mean([r[4] for r in rows]))
        with_move, without = (
            _jump_rate(total, theta, seconds),
            _jump_rate(centred, theta, seconds - move),
        )
        enabled = bool(with_move > without)
        self.decision = (
            enabled,
            (
                f"measured at warm-up over {len(rows)} iterations: standardised θ jump² per "
                f"estimated second (cost model) {with_move:.3g} with the move, {without:.3g} "
                f"without ({seconds * 1e3:.3g} ms per iteration, the move {move * 1e3:.3g} ms)"
            ),
        )
        return self.decision


def _jump_rate(jumps, theta, seconds) -> float:
    """``min_j mean(jumps_j²) / var(θ_j)`` per second (coordinates that never moved: 0)."""
    var = np.var(theta, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(var > 0, np.mean(jumps**2, axis=0) / var, 0.0)
    return float(np.min(rate)) / max(seconds, 1e-12)


def _check_int(value, name, low):
    if isinstance(value, bool) or not (isinstance(value, int | np.integer) and value >= low):
        raise ValueError(f"{name} must be an integer >= {low}, got {name}={value!r}.")
    return int(value)


class Interweave(DPStep):
    """Non-centred θ-move for weak releases (ancillarity–sufficiency interweaving, Yu & Meng 2011).

    Combine with the centred updates, e.g.
    ``pm.sample(step=[pdp.DataAugmentation([x]), pm.NUTS([mu]), pdp.Interweave([mu], records=[x])])``.
    Each iteration reads the records' θ-free noise ``z`` from the point, slice-samples θ from
    `\\pi(\\theta \\mid z) \\propto p(\\theta) \\prod_k \\eta_k(s_k \\mid S_k(T_\\theta(z)))`
    and moves the records to `T_\\theta(z)`.

    Parameters
    ----------
    vars : list
        θ: continuous parameters of the records' distribution (location, scale, …).
    records : list, optional
        Latent record variables; default: every DPObserved record that depends on ``vars``.
    n_steps : int
        Slice sweeps over θ's coordinates per iteration (default 1).
    max_steps_out : int
        Stepping-out budget of each slice update (default 50).
    initial_width : float
        Initial slice width in value space (adapted during warm-up; default 1.0).
    model : pm.Model, optional

    Sampler stats
    -------------
    ``dp_iw_evals``: target evaluations in the iteration; ``dp_iw_move``: size of the θ move.
    """

    name = "interweave"
    dp_stats = {"dp_iw_evals": (np.int64, []), "dp_iw_move": (float, [])}

    def __init__(
        self,
        vars,
        records=None,
        *,
        n_steps: int = 1,
        max_steps_out: int = 50,
        initial_width: float = 1.0,
        model=None,
        rng=None,
        blocked=True,
    ):
        model = pm.modelcontext(model)
        self.n_steps = _check_int(n_steps, "n_steps", 1)
        self.max_steps_out = _check_int(max_steps_out, "max_steps_out", 1)
        if not (np.isfinite(initial_width) and initial_width > 0):
            raise ValueError(
                f"initial_width must be finite and > 0, got initial_width={initial_width!r}. Give "
                "the rough posterior sd of θ in value space (it is adapted during warm-up)."
            )
        self.initial_width = float(initial_width)
        self.trial = None  # an InterweaveTrial when DataAugmentation(interweave="auto") measures it
        self.target = InterweaveTarget(model, vars, records)
        self.vars = self.target.theta_values
        self.d = self.target.theta_flat(layout_point(model)).size
        self._init_step(rng)

    def start_chain(self) -> None:
        self.width = np.full(self.d, self.initial_width)
        self.n_adapt = 0
        self.basis = None
        self._seen, self._mean, self._m2 = 0, np.zeros(self.d), np.zeros((self.d, self.d))

    def _learn_directions(self, theta):
        """Warm-up only: slice along the principal axes of the θ draws seen so far (d ≥ 2)."""
        self._seen += 1
        delta = theta - self._mean
        self._mean = self._mean + delta / self._seen
        self._m2 = self._m2 + np.outer(delta, theta - self._mean)
        if self.d < 2 or self._seen < 20 + 2 * self.d or self._seen & (self._seen - 1):
            return  # re-estimate at powers of two
        cov = self._m2 / (self._seen - 1)
        eigval, eigvec = np.linalg.eigh(cov)
        if np.all(np.isfinite(eigval)) and eigval.min() > 0:
            self.basis = eigvec
            self.width = 2.0 * np.sqrt(eigval)
            self.n_adapt = 10

    def step(self, point):
        target = self.target
        zs = target.z_of(point, self.rng)
        log_density = target.conditional(point, zs)
        theta = target.theta_flat(point)
        state = InterweaveState(theta, log_density(theta), self.width, self.n_adapt, self.basis)
        params = InterweaveParams(self.n_steps, self.max_steps_out, bool(self.tune))
        state, info = interweave_kernel(self.rng, state, log_density, params)
        self.width, self.n_adapt = state.width, state.n_adapt
        if self.tune:
            self._learn_directions(state.theta)
        new = target.update(point, state.theta, zs)
        keys = target.theta_names + target.z_value_names
        return {**point, **{k: new[k] for k in keys}}, [
            self.stats(dp_iw_evals=int(info.n_evals), dp_iw_move=info.move)
        ]
