r"""``pdp.Collapsed``: θ from the exact collapsed likelihood, then the records from their exact conditional.

For discrete records whose releases `pymc_dp.marginalize` can sum out, one step owns the
record variables `x` and their continuous parameters `θ` and runs, each iteration,

1. a θ-move `θ' \sim K(θ, \cdot)` that leaves `p(θ \mid s_{dp}, φ)` invariant, where
   `φ` are the model's other variables (moved by other steps) — Metropolis–Hastings on the
   compiled log density of the marginalized model (collapsed log-likelihood
   `\log p(s_{dp} \mid θ)` of `pymc_dp.marginal.loglik` + every other term, in PyMC's
   transformed space with the Jacobian);
2. an exact draw `x' \sim p(x \mid θ', s_{dp}, φ)` by backward sampling
   (`pymc_dp.marginal.recover.draw_records`).

**Exactness.** If `(θ, x) \sim p(θ, x \mid s, φ)` then `θ \sim p(θ \mid s, φ)`, so
`θ' \sim p(θ \mid s, φ)` (K is invariant and ignores x), and `x' \sim p(x \mid θ', s, φ)`
makes `(θ', x') \sim p(θ, x \mid s, φ)`: the step leaves the joint posterior invariant (a
collapsed, blocked Gibbs scheme; van Dyk & Park 2008). Records feed nothing but their releases
(checked by `pymc_dp.marginal.collapsed_plans`), so no other step reads them.

**θ-kernel.** An independence MH proposal `θ' \sim t_ν(m, Σ)` (multivariate Student-t,
ν = ``df``, in the unconstrained space), accepted with
`\min\{1, π(θ') t(θ) / (π(θ) t(θ'))\}`, then an adaptive-covariance random-walk MH step
`θ' = θ + λ L z` (`LLᵀ = C`). Warm-up starts `m` at the BFGS mode of
`\log π(θ \mid s, φ)` with `Σ = C` = 1.5 × its inverse Hessian (λ = 2.38/√d, tuned towards
acceptance 0.3); `m, Σ` and `C = Σ` are refitted to the second half of the warm-up draws
after 100, 200, 400, … iterations and at the end of warm-up; then both proposals are **frozen**
(fixed kernels, hence exact), and the number of independence tries per iteration is fixed to the
smallest k with `(1 - a)^k ≤ 0.01` for the warm-up acceptance a (k MH steps of one fixed
kernel), at most as many as one warm-up iteration's estimated cost pays for in density evaluations
(between ``MIN_TRIES`` = 4 and ``MAX_TRIES`` = 16; the work counted, priced by the ``cost``
model, never a clock: the same seed gives the same draws under any load). A warning is given when a is below `POOR_ACCEPT`.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.pytensorf import compile as pm_compile
from pymc.util import get_value_vars_from_user_vars
from pytensor.graph.replace import graph_replace

from pymc_dp.distributions.graph import released_records
from pymc_dp.distributions.registry import dp_nodes
from pymc_dp.marginal.assign import (
    MAX_ITERATION_SECONDS,
    collapsed_competence,
    iteration_seconds,
    record_parents,
)
from pymc_dp.marginal.collapsed import collapsed_plans, marginal_plans, marginalize
from pymc_dp.marginal.recover import RecordConditional, record_draw_fn
from pymc_dp.samplers.accept import mh_accept
from pymc_dp.samplers.adapt import robbins_monro
from pymc_dp.samplers.base import DPStep
from pymc_dp.samplers.cost import cost_model
from pymc_dp.samplers.points import layout_point

__all__ = [
    "Collapsed",
    "CollapsedInfo",
    "CollapsedState",
    "ThetaProposals",
    "collapsed_kernel",
    "iteration_seconds",
    "record_parents",
    "MAX_ITERATION_SECONDS",
    "POOR_ACCEPT",
]

#: independence tries per iteration after warm-up: at least / at most (see Collapsed._max_tries)
MIN_TRIES, MAX_TRIES = 4, 16
#: warn at the end of warm-up when the independence acceptance is below this
POOR_ACCEPT = 0.25
_RW_TARGET = 0.3
_FIT_AT = (100, 200, 400, 800, 1600, 3200)


# ------------------------------------------------------------------------------------- kernel
class ThetaProposals(NamedTuple):
    """The two θ proposals (``imh_chol is None``: no independence move yet)."""

    imh_mean: np.ndarray | None
    imh_chol: np.ndarray | None  # Cholesky factor of the Student-t scale matrix
    df: float
    rw_chol: np.ndarray  # random-walk step = rw_chol @ z
    imh_tries: int = 1  # independence moves per iteration (each one a valid MH step)
    imh_inv: np.ndarray | None = None  # inverse of imh_chol
    wide: float = 2.0  # the defensive component's scale factor (sd), so tails are not missed
    wide_weight: float = 0.3  # its weight in the mixture


class CollapsedState(NamedTuple):
    theta: np.ndarray  # flat θ in PyMC's value (unconstrained) space
    logp: float  # log π(θ | s, φ) up to a constant
    records: tuple  # one int array per record variable


class CollapsedInfo(NamedTuple):
    imh_accept: float  # min(1, α) of the independence move (NaN: not run)
    imh_accepted: bool
    rw_accept: float
    rw_accepted: bool


def _t_logq(theta, prop: ThetaProposals) -> float:
    """log of the defensive mixture (1 − w) t_ν(m, Σ) + w t_ν(m, c²Σ) at θ, up to a constant."""
    d = theta.size
    z = prop.imh_inv @ (theta - prop.imh_mean)
    q = float(z @ z) / prop.df
    c = prop.wide
    narrow = math.log1p(-prop.wide_weight) - 0.5 * (prop.df + d) * math.log1p(q)
    wide = math.log(prop.wide_weight) - d * math.log(c) - 0.5 * (prop.df + d) * math.log1p(q / c**2)
    return float(np.logaddexp(narrow, wide))


def collapsed_kernel(rng, state: CollapsedState, logp_fn, proposals: ThetaProposals, draw):
    """One Collapsed iteration: independence MH, random-walk MH, exact records draw.

    Parameters
    ----------
    logp_fn : callable
        ``theta_flat -> log π(θ | s, φ)`` (other variables fixed).
    proposals : ThetaProposals
    draw : callable
        ``(rng, theta_flat) -> tuple of record arrays`` drawn from ``p(x | θ, s, φ)``.
    """
    theta, logp = state.theta, state.logp
    imh_p, imh_acc = math.nan, False
    if proposals.imh_chol is not None:
        d = theta.size
        probs = []
        for _ in range(proposals.imh_tries):
            z = rng.standard_normal(d)
            w = math.sqrt(rng.chisquare(proposals.df) / proposals.df)
            if rng.random() < proposals.wide_weight:
                z = z * proposals.wide
            prop = proposals.imh_mean + proposals.imh_chol @ z / w
            lp = float(logp_fn(prop))
            log_alpha = lp - logp + _t_logq(theta, proposals) - _t_logq(prop, proposals)
            acc, prob = mh_accept(rng, log_alpha)
            probs.append(prob)
            if acc:
                theta, logp, imh_acc = prop, lp, True
        imh_p = float(np.mean(probs))
    prop = theta + proposals.rw_chol @ rng.standard_normal(theta.size)
    lp = float(logp_fn(prop))
    rw_acc, rw_p = mh_accept(rng, lp - logp)
    if rw_acc:
        theta, logp = prop, lp
    records = draw(rng, theta)
    return CollapsedState(theta, logp, records), CollapsedInfo(imh_p, imh_acc, rw_p, rw_acc)


# --------------------------------------------------------------------------------------- step
def _split(model, values):
    rvs = [model.values_to_rvs[v] for v in values]
    released = set(released_records(dp_nodes(model)))
    records = [rv for rv in rvs if rv in released]
    thetas = [rv for rv in rvs if rv not in released]
    if not records:  # pragma: no cover - Collapsed.__new__ delegates such vars
        raise ValueError(
            f"Collapsed needs record variables read by a pdp.DPObserved release among vars; got "
            f"{[rv.name for rv in rvs]}. Pass e.g. vars=[theta, x] with x the records."
        )
    bad = [rv.name for rv in thetas if not rv.dtype.startswith("float")]
    if bad:
        raise ValueError(
            f"Collapsed moves continuous parameters only; {bad} are discrete. Leave them to PyMC's "
            "default steps (drop them from vars)."
        )
    return records, thetas


class Collapsed(DPStep):
    r"""Sample θ from the exact collapsed likelihood and the discrete records exactly given θ.

    See the module docstring for the scheme and why it is exact. ``pm.sample()`` picks it by itself
    for discrete records whose releases `pymc_dp.marginalize` accepts when one iteration is
    cheap (`iteration_seconds` ≤ `MAX_ITERATION_SECONDS`), together with the records'
    continuous parents; ``pm.sample(step=[pdp.Collapsed([theta, x])])`` asks for it explicitly.

    Parameters
    ----------
    vars : list, optional
        Record variables (each read by ``DPObserved`` releases) and the continuous parameters to move
        with them; default: every record variable that can be collapsed and its direct continuous
        parents.
    df : float
        Degrees of freedom of the Student-t independence proposal (default 6).
    theta_kernel : {"auto", "mh", "nuts"}
        How θ moves on the collapsed density: ``"mh"`` the independence + random-walk MH above,
        ``"nuts"`` PyMC's NUTS on θ of the marginalized model (its own warm-up; its stats —
        ``diverging``, ``step_size``, … — join the sampler stats), ``"auto"`` (default) NUTS when
        every plan is Gaussian (Normal records under a linear Gaussian release) and θ has two or
        more entries, MH otherwise (docs/collapsed.md has the measurements).
    cost : pymc_dp.marginal.CostModel, optional
        The cost model deciding which collapsed plans are too slow and pricing the warm-up work
        that sets the independence tries per iteration (configuration; default the documented
        `CostModel()`).
    model : pm.Model, optional

    Stats
    -----
    ``dp_accept`` / ``dp_accepted``: the independence move (NaN / False before the first fit);
    ``dp_accept_rw`` / ``dp_accepted_rw``: the random-walk move.
    """

    name = "collapsed"
    dp_stats = {
        "dp_accept": (float, []),
        "dp_accepted": (bool, []),
        "dp_accept_rw": (float, []),
        "dp_accepted_rw": (bool, []),
    }

    def __new__(cls, vars=None, *args, **kwargs):
        model = pm.modelcontext(kwargs.get("model"))
        if vars is not None:
            values = get_value_vars_from_user_vars(vars, model)
            released = set(released_records(dp_nodes(model)))
            if not any(model.values_to_rvs[v] in released for v in values):
                return _delegate(values, model, kwargs)
        return super().__new__(cls, vars, *args, **kwargs)

    def __init__(
        self,
        vars=None,
        *,
        df: float = 6.0,
        theta_kernel: str = "auto",
        cost=None,
        model=None,
        rng=None,
        blocked=True,
        initial_point=None,
        compile_kwargs=None,
    ):
        model = pm.modelcontext(model)
        if not (isinstance(df, int | float) and not isinstance(df, bool) and df > 2):
            raise ValueError(
                f"df must be a number > 2 (finite proposal covariance), got df={df!r}."
            )
        self.df = float(df)
        if theta_kernel not in ("auto", "mh", "nuts"):
            raise ValueError(
                f"theta_kernel must be 'auto', 'mh' or 'nuts', got theta_kernel={theta_kernel!r}."
            )
        self.cost = cost_model(cost)
        if vars is None:
            plans = collapsed_plans(model, cost=cost)
            records = [model[name] for name in plans]
            thetas = list(
                dict.fromkeys(p for r in records for p in record_parents(model, r, plans[r.name]))
            )
            values = [model.rvs_to_values[v] for v in records + thetas]
        else:
            values = get_value_vars_from_user_vars(vars, model)
            records, thetas = _split(model, values)
            plans = collapsed_plans(model, records=[r.name for r in records], cost=cost)
        self.vars = list(values)
        self.plans = plans
        self.record_names = [r.name for r in records]
        marginal = marginalize(model, records=self.record_names, cost=cost)
        self.theta_values = [model.rvs_to_values[t].name for t in thetas]
        point = layout_point(model) if initial_point is None else initial_point
        self._shapes = [np.shape(point[n]) for n in self.theta_values]
        # θ's collapsed log density (and its gradient, for the warm-up's mode search) compile on
        # first use: a NUTS θ-kernel never needs them
        self._marginal = marginal
        self._logp_fns = {}
        self.other_names = (
            [v.name for v in _other_values(marginal, self.theta_values)] if thetas else []
        )
        self._draws = [record_draw_fn(plan, model) for plan in plans.values()]
        self._record_dtypes = [np.asarray(point[n]).dtype for n in self.record_names]
        self._d = int(sum(int(np.prod(s, dtype=int)) for s in self._shapes))
        self._releases = _release_containers(model, plans)
        self._model = model
        self._marginal_plans = marginal_plans(marginal)
        self.theta_kernel = (
            _auto_kernel(self.plans, self._d) if theta_kernel == "auto" else theta_kernel
        )
        self._nuts = None
        if self.theta_kernel == "nuts" and self._d:
            self._nuts, self._marginal_names = _build_nuts(
                marginal, self.theta_values, compile_kwargs
            )
            nuts_stats = {k: v for k, v in self._nuts.stats_dtypes_shapes.items() if k != "tune"}
            self.stats_dtypes_shapes = {**nuts_stats, **self.stats_dtypes_shapes}
            self.stats_dtypes = [{k: d for k, (d, _) in self.stats_dtypes_shapes.items()}]
        self._init_step(rng)

    @property
    def _logp(self):
        """``(theta_flat, *others) -> logp`` of the marginalized model, compiled on first use."""
        return self._compiled(grad=False)

    @property
    def _logp_grad(self):
        """``(theta_flat, *others) -> (logp, dlogp/dθ)``, compiled on first use."""
        return self._compiled(grad=True)

    def _compiled(self, grad):
        if grad not in self._logp_fns:
            self._logp_fns[grad] = _compile_logp(
                self._marginal, self.theta_values, self._shapes, grad=grad
            )
        return self._logp_fns[grad]

    # -- per-chain state ------------------------------------------------------------------
    def reseed(self, rng):
        nuts = getattr(self, "_nuts", None)
        if nuts is not None:  # the θ-kernel's generator: a child of the chain's
            child = rng.spawn(1)[0]
            if hasattr(nuts, "setup_chain"):  # PyMC >= 6.3
                nuts.setup_chain(child, 1, 1)
            else:
                nuts.set_rng(child)

    def start_chain(self):
        if getattr(self, "_nuts", None) is not None:
            self._nuts.reset_tuning()
        d = self._d
        self._props = ThetaProposals(None, None, self.df, 0.5 * np.eye(d))
        self._log_lambda = math.log(0.5)
        self._cov = np.eye(d)
        self._tuning_draws = []
        self._imh_tune = []
        self._n_adapt = 0
        self._cache = None  # (other values, θ, logp) of the last iteration
        self._started = False
        self._warmup_counts = (0, 0)  # warm-up: (collapsed log density evaluations, iterations)

    def stop_tuning(self):
        if self._nuts is not None:
            self._nuts.stop_tuning()
            super().stop_tuning()
            return
        if self.tune:
            self._fit()
            recent = self._imh_tune[-max(25, len(self._imh_tune) // 4) :]
            if recent:  # tries so that all of them fail with probability ≤ 0.01, within the cap
                a = min(max(float(np.mean(recent)), 1e-3), 0.999)
                tries = math.ceil(math.log(0.01) / math.log1p(-a))
                self._props = self._props._replace(
                    imh_tries=int(min(max(tries, 1), self._max_tries()))
                )
            if recent and float(np.mean(recent)) < POOR_ACCEPT:
                warnings.warn(
                    f"Collapsed: the Student-t independence proposal for {self.theta_values} was "
                    f"accepted {np.mean(recent):.2f} of the time at the end of warm-up (below "
                    f"{POOR_ACCEPT}); the posterior of θ is far from it. Draws stay exact (the "
                    "random-walk move and the proposals are frozen now) but mix more slowly; "
                    "increase tune.",
                    UserWarning,
                    stacklevel=2,
                )
        super().stop_tuning()

    def _max_tries(self) -> int:
        """Independence tries per iteration allowed after warm-up: as many as one warm-up
        iteration's estimated cost (the records draw and overhead included) pays for in evaluations
        of the collapsed log density, between `MIN_TRIES` and `MAX_TRIES` (cheap
        densities, e.g. a few distinct local release rows, get more tries; a costly counts DP 4).
        The cost is the work counted during warm-up (evaluations per iteration, terms of the plans,
        the records draw) priced by the configured `pymc_dp.marginal.CostModel`, never a clock, so
        the draws depend on the seed alone and not on the machine's load."""
        evals, iters = self._warmup_counts
        if not (evals and iters):
            return MIN_TRIES
        cost = self.cost
        per_eval = cost.unit("collapsed_eval") + sum(cost.seconds(p) for p in self.plans.values())
        per_iter = (
            evals / iters * per_eval
            + sum(cost.draw_seconds(p) for p in self.plans.values())
            + cost.unit("collapsed_iteration")
        )
        return int(min(max(per_iter / per_eval, MIN_TRIES), MAX_TRIES))

    def _start_at_mode(self, theta, others):
        """Warm-up only: a first Student-t proposal at the mode of π(θ | s, φ) with the BFGS inverse
        Hessian as its scale (so the independence move works from the first iteration)."""
        from scipy import optimize

        self._started = True

        def neg(t):
            lp, g = self._logp_grad(t, *others)
            if not np.isfinite(lp):
                return 1e300, np.zeros_like(t)
            return -float(lp), -np.asarray(g, dtype=float)

        try:
            with np.errstate(all="ignore"):
                res = optimize.minimize(
                    neg, theta, jac=True, method="BFGS", options={"maxiter": 200}
                )
            cov = np.atleast_2d(res.hess_inv) * 1.5  # a little wider than the Laplace approximation
            chol = np.linalg.cholesky(cov)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            return
        if not (np.all(np.isfinite(res.x)) and np.all(np.isfinite(chol))):
            return
        self._cov = cov
        self._props = self._props._replace(
            imh_mean=np.asarray(res.x, dtype=float), imh_chol=chol, imh_inv=np.linalg.inv(chol)
        )
        self._log_lambda = math.log(2.38 / math.sqrt(self._d))
        self._set_rw()

    def _fit(self):
        draws = np.asarray(self._tuning_draws[len(self._tuning_draws) // 2 :])
        if len(draws) < 50:
            return
        mean = draws.mean(axis=0)
        cov = np.atleast_2d(np.cov(draws, rowvar=False)) + 1e-10 * np.eye(self._d)
        try:
            chol = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            return
        self._cov = cov
        self._props = self._props._replace(
            imh_mean=mean, imh_chol=chol, imh_inv=np.linalg.inv(chol)
        )
        self._set_rw()

    def _set_rw(self):
        self._props = self._props._replace(
            rw_chol=math.exp(self._log_lambda) * np.linalg.cholesky(self._cov)
        )

    # -- one iteration -----------------------------------------------------------------------
    def _flat(self, point):
        if not self.theta_values:
            return np.zeros(0)
        return np.concatenate(
            [np.ravel(np.asarray(point[n], dtype=float)) for n in self.theta_values]
        )

    def record_conditionals(self, point) -> dict:
        """Per record variable, its exact conditional ``p(x | θ, s_dp, φ)`` at the θ and φ of
        ``point`` (value space) as a `RecordConditional` (``.draw(rng)``, ``.logq(x)``): the law
        the records draw of `step` uses, from the same compiled parameters."""
        return {
            name: RecordConditional(plan, fn(*[point[n] for n in names]), has_logf)
            for name, plan, (fn, names, has_logf) in zip(
                self.record_names, self.plans.values(), self._draws
            )
        }

    def step(self, point):
        self._check_releases()
        others = [np.asarray(point[n]) for n in self.other_names]
        theta = self._flat(point)

        def draw(rng, t):
            conds = self.record_conditionals({**point, **self._unflat(t)})
            return tuple(conds[name].draw(rng) for name in self.record_names)

        if not self._d:  # θ moved by other steps: the exact records draw alone (a Gibbs step)
            state = CollapsedState(theta, math.nan, draw(self.rng, theta))
            return self._point(point, state, CollapsedInfo(math.nan, False, math.nan, False))
        if self._nuts is not None:  # NUTS on the marginalized model, then the records
            self._nuts.tune = self.tune
            # θ first, in NUTS's own order: without other variables PyMC ravels the point as given
            names = list(self._nuts.var_names)
            names += [n for n in self._marginal_names if n not in names]
            moved, (nuts_stats,) = self._nuts.step({n: point[n] for n in names})
            theta = self._flat(moved)
            state = CollapsedState(theta, math.nan, draw(self.rng, theta))
            new, (stats,) = self._point(
                point, state, CollapsedInfo(math.nan, False, math.nan, False)
            )
            nuts_stats = {k: v for k, v in nuts_stats.items() if k != "tune"}
            return new, [{**nuts_stats, **stats}]
        if self.tune and not self._started:
            self._start_at_mode(theta, others)
        cache = self._cache
        if (
            cache is not None
            and np.array_equal(cache[1], theta)
            and all(np.array_equal(a, b) for a, b in zip(cache[0], others))
        ):
            logp = cache[2]
        else:
            logp = float(self._logp(theta, *others))

        evals = [0]

        def logp_fn(t):
            evals[0] += 1
            return self._logp(t, *others)

        state = CollapsedState(theta, logp, ())
        state, info = collapsed_kernel(self.rng, state, logp_fn, self._props, draw)
        if self.tune:
            done, iters = self._warmup_counts
            self._warmup_counts = (done + evals[0], iters + 1)
        # copies: another step may write its next values into the arrays the point holds now
        self._cache = (
            [np.array(o, copy=True) for o in others],
            np.array(state.theta, copy=True),
            state.logp,
        )
        if self.tune:
            self._adapt(state.theta, info)
        return self._point(point, state, info)

    def follow_releases(self) -> bool:
        """Follow releases held in ``pm.Data`` that changed since the step was built or last
        followed them (``pm.set_data``): plan the collapsed likelihood again for the new values and,
        when the new plan differs from the old one in its noise table alone (same support, lattice
        and, for local releases, the same release rows; `CollapsedPlan.follows`), swap that table
        into the compiled likelihood and the records draw. The step then samples exactly what a
        step built for the new releases samples, without compiling again. Returns ``False``
        (changing nothing) when a new plan differs in more than its table: build the step again.
        """
        changed = [
            name
            for name, shared, planned in self._releases
            if not np.array_equal(shared.get_value(borrow=True), planned)
        ]
        if not changed:
            return True
        new = collapsed_plans(self._model, records=self.record_names)
        if not all(self.plans[r].follows(new[r]) for r in self.record_names):
            return False
        for r in self.record_names:
            self.plans[r].follow(new[r])
            self._marginal_plans[r].follow(new[r])
        self._releases = [
            (name, shared, np.array(shared.get_value(), copy=True))
            for name, shared, _ in self._releases
        ]
        self._cache = None  # log densities of the old release
        return True

    def _check_releases(self):
        """Follow a release held in ``pm.Data`` that changed after the step was built
        (`follow_releases`); refuse to go on when its plan changed in more than its noise table: the
        collapsed likelihood, its support or lattice were planned for the old value, and the step
        would silently sample the old release's posterior."""
        if self.follow_releases():
            return
        for name, shared, planned in self._releases:
            if not np.array_equal(shared.get_value(borrow=True), planned):
                raise ValueError(
                    f"The release {name!r} changed after pdp.Collapsed was built (pm.set_data) and "
                    f"its collapsed likelihood, planned for the value {planned.tolist()}, needs "
                    "another support or lattice for the new one. Build the step again after "
                    "pm.set_data (pm.sample() without step= builds a new one on each call)."
                )

    def _point(self, point, state, info):
        new = {**self._unflat(state.theta)}
        for name, x, dtype in zip(self.record_names, state.records, self._record_dtypes):
            new[name] = np.asarray(x).astype(dtype)
        return {**point, **new}, [
            self.stats(
                dp_accept=float(info.imh_accept),
                dp_accepted=bool(info.imh_accepted),
                dp_accept_rw=float(info.rw_accept),
                dp_accepted_rw=bool(info.rw_accepted),
            )
        ]

    def _unflat(self, flat):
        out, i = {}, 0
        for name, shape in zip(self.theta_values, self._shapes):
            size = int(np.prod(shape, dtype=int))
            out[name] = np.asarray(flat[i : i + size]).reshape(shape)
            i += size
        return out

    def _adapt(self, theta, info):
        self._n_adapt += 1
        self._tuning_draws.append(np.array(theta))
        if not math.isnan(info.imh_accept):
            self._imh_tune.append(info.imh_accept)
        self._log_lambda = robbins_monro(
            self._log_lambda, info.rw_accept, _RW_TARGET, self._n_adapt
        )
        self._log_lambda = min(max(self._log_lambda, math.log(1e-3)), math.log(10.0))
        if self._n_adapt in _FIT_AT:
            self._fit()
        self._set_rw()

    def route(self) -> dict:
        plans = {
            name: {
                "case": plan.case
                if plan.case != "additive"
                else f"additive ({plan.closed or 'convolution'})",
                "terms": int(plan.cost),
                "support": "continuous" if plan.case == "gaussian" else int(len(plan.support)),
                "records": int(plan.law.n),
                "nodes": list(plan.nodes),
                "iteration_ms": f"{iteration_seconds(plan, self.cost) * 1e3:.3g}",
            }
            for name, plan in self.plans.items()
        }
        kinds = sorted({p.case for p in self.plans.values()})
        what = "Normal records" if kinds == ["gaussian"] else "discrete records"
        move = (
            "NUTS on the marginalized model"
            if self._nuts is not None
            else "independence + random-walk MH on the collapsed likelihood"
        )
        return {
            **super().route(),
            "theta_kernel": self.theta_kernel,
            "reason": (
                f"{what} {list(plans)} summed out exactly (marginalize); θ "
                f"{self.theta_values} by {move}, the records drawn exactly given θ; "
                f"θ-kernel {self.theta_kernel} ({_KERNEL_RULE}); estimated iteration "
                f"{', '.join(p['iteration_ms'] for p in plans.values())} ms (pm.sample() picks "
                f"it up to {MAX_ITERATION_SECONDS * 1e3:g} ms)"
            ),
            "plans": plans,
        }

    @staticmethod
    def competence(var, has_grad=None):
        return collapsed_competence(var)


def _release_containers(model, plans):
    """(node name, shared variable, value planned for) of every ``pm.Data`` container a collapsed
    release is read from (the release's value variable itself, or the container behind a cast)."""
    from pytensor.compile.sharedvalue import SharedVariable

    from pymc_dp.distributions.graph import upstream

    nodes = dp_nodes(model)
    out = []
    for plan in plans.values():
        for name in plan.nodes:
            value = model.rvs_to_values[nodes[name].rv]
            for var in upstream([value]):
                if isinstance(var, SharedVariable):
                    out.append((name, var, np.array(var.get_value(), copy=True)))
    return out


def _delegate(values, model, kwargs):
    """Parameters without their records (the records were given to another step, e.g.
    ``step=[pdp.DataAugmentation([x])]``): θ | x is then no business of Collapsed, whose θ-move
    integrates the records out. Build what PyMC would have chosen without Collapsed."""
    from pymc.step_methods import STEP_METHODS
    from pymc.step_methods.compound import CompoundStep

    methods = [m for m in STEP_METHODS if m is not Collapsed]
    chosen = {}
    for v in values:
        has_grad = v.dtype.startswith("float")
        best = max(methods, key=lambda m, rv=model.values_to_rvs[v]: m._competence(rv, has_grad))
        chosen.setdefault(best, []).append(v)
    keep = {
        k: kwargs[k] for k in ("model", "initial_point", "compile_kwargs", "rng") if k in kwargs
    }
    steps = [cls(vars=vs, **keep) for cls, vs in chosen.items()]
    return steps[0] if len(steps) == 1 else CompoundStep(steps)


#: how ``theta_kernel="auto"`` chooses (`_auto_kernel`)
_KERNEL_RULE = "auto: NUTS when every plan is Gaussian and θ has 2 or more entries, else MH"


def _auto_kernel(plans, d) -> str:
    """``"nuts"`` when every plan is Gaussian (a gradient costs O(n) elementwise terms) and θ has
    ``d ≥ 2`` entries (hierarchical means, per-record random effects: many dimensions or a funnel,
    where the independence proposal's acceptance falls), else ``"mh"`` (one θ entry: the frozen
    Student-t independence proposal gives ESS/draw ≈ 1, PyMC's NUTS ≈ 0.4 there). See
    docs/collapsed.md for the measurements."""
    if all(p.case == "gaussian" for p in plans.values()) and d >= 2:
        return "nuts"
    return "mh"


def _build_nuts(marginal, theta_values, compile_kwargs):
    """PyMC's NUTS on θ's value variables of the marginalized model (the other variables are read
    from the point as PyMC's steps read them)."""
    by_name = {v.name: v for v in marginal.value_vars}
    with marginal:
        nuts = pm.NUTS(
            vars=[by_name[n] for n in theta_values],
            model=marginal,
            compile_kwargs=compile_kwargs,
        )
    return nuts, [v.name for v in marginal.value_vars]


def _other_values(marginal, theta_values):
    """The marginalized model's value variables other than θ's, in the order `_compile_logp`'s
    functions take them (``Collapsed.other_names``)."""
    return [v for v in marginal.value_vars if v.name not in theta_values]


def _compile_logp(marginal, theta_values, shapes, *, grad=False):
    """``(theta_flat, *others) -> logp`` of the marginalized model (Jacobian included), with
    ``grad``: ``-> (logp, dlogp/dθ)``; ``others`` are the model's other value variables in order."""
    by_name = {v.name: v for v in marginal.value_vars}
    missing = [n for n in theta_values if n not in by_name]
    if missing:  # pragma: no cover - marginalize keeps every non-record variable
        raise ValueError(f"{missing} are not free variables of the marginalized model.")
    flat = pt.vector("theta_flat", dtype="float64")
    repl, i = {}, 0
    for name, shape in zip(theta_values, shapes):
        size = int(np.prod(shape, dtype=int))
        v = by_name[name]
        repl[v] = pt.cast(flat[i : i + size].reshape(shape), v.dtype)
        i += size
    others = _other_values(marginal, theta_values)
    logp = graph_replace(marginal.logp(), repl, strict=False)
    outputs = [logp, pt.grad(logp, flat)] if grad else logp
    return pm_compile([flat, *others], outputs, on_unused_input="ignore")
