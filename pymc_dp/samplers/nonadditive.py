r"""``pm.sample()``'s route for records of a release that is not record-additive.

A ``Median``/``Max``/``Quantile`` released with ``SmoothLaplace`` reads the whole database at
once: `pymc_dp.DataAugmentation` (one record at a time, accepted by an additive release's
density) cannot take its records, and PyMC's default is NUTS on θ and the records jointly, whose
θ mixes slowly there (ESS/draw 0.06–0.08 on the zoo's ``normal_median_smooth_laplace``: the order
statistic and the smooth sensitivity make the joint density ragged). `pymc_dp.MHAAR` in z-space
(seed 001, Algorithm 7) integrates the records by particles and mixes θ better on small databases
(0.18–0.22), but its particle weights degenerate when the release pins the statistic much more
tightly than θ does (large n), where it barely moves.

`NonAdditiveRoute` owns θ (the records' continuous parents) and the records and *measures* which
of three fixed kernels to keep, the way `pymc_dp.samplers.interweave.InterweaveTrial` measures the
non-centred θ-move:

* ``"nuts"``: PyMC's NUTS on (θ, records), what ``pm.sample()`` gave before;
* ``"mhaar"``: MHAAR on θ, the records refreshed from its particles;
* ``"both"``: NUTS then MHAAR.

During warm-up both run at every iteration (NUTS first). `RouteTrial` keeps θ at the start of
the iteration, after NUTS and after MHAAR, and the *counted* work of each (NUTS: leapfrog steps ×
one gradient over the n records; MHAAR: 2 × n_particles evaluations of the n records' release
density), priced by the `pymc_dp.samplers.cost.CostModel` units ``"nuts_gradient"``,
``"nuts_gradient_record"``, ``"mhaar_eval"``, ``"mhaar_particle_record"`` — never a clock, so
the same seed gives the same draws under any load. After `RouteTrial.MAX_WINDOW` tuning
iterations (or at the end of a shorter warm-up) it compares the smallest standardised squared θ
jump per estimated second over θ's coordinates of each kernel (a proxy of θ's ESS/s: 2(1 − ρ)
for an AR(1) chain) over the last half of the window, and freezes the best; with fewer than
`RouteTrial.MIN_WINDOW` compared iterations it keeps ``"both"``. After that the kernel is a fixed
composition of exact steps (each leaves the joint posterior invariant), so the draws are exact.
The choice is per chain: the stat ``dp_route`` (1 NUTS, 2 MHAAR, 3 both) shows what ran.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.util import get_value_vars_from_user_vars

from pymc_dp._checks import child_rng
from pymc_dp.samplers.base import DPStep
from pymc_dp.samplers.cost import cost_model
from pymc_dp.samplers.mhaar import MHAAR

__all__ = ["NonAdditiveRoute", "RouteTrial", "ROUTES"]

#: the three kernels, by their ``dp_route`` code
ROUTES = {1: "nuts", 2: "mhaar", 3: "both"}
_CODES = {v: k for k, v in ROUTES.items()}


class RouteTrial:
    r"""Warm-up measurement of NUTS against MHAAR (per chain); see the module docstring.

    The first `N_BLOCKS` × `BLOCK` tuning iterations alternate blocks of `BLOCK` iterations of
    NUTS alone and of MHAAR alone (NUTS first). `record` keeps θ after each iteration with its
    block and the iteration's estimated seconds (counted work × the cost model). `decide`
    estimates, from the last `MEASURED` blocks of each kernel, θ's integrated autocorrelation time
    τ_j per coordinate (autocovariances pooled over the blocks around the mean of every measured
    draw of both kernels, so a kernel stuck away from the other's draws scores badly; Geyer's
    initial positive sequence) and keeps the kernel with the larger

    ```text
    \frac{1}{\max_j \tau_j \cdot \text{cost per iteration}}
    ```

    (θ's ESS per estimated second). A one-iteration jump would rate NUTS too high here: its θ
    moves diffuse (large lag-1 jumps, long autocorrelation), MHAAR's do not.
    """

    BLOCK = 50
    N_BLOCKS = 8
    MEASURED = 3  # blocks of each kernel used (the last ones: the adaptation has settled)

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.rows = []  # (block index, θ after the iteration, estimated seconds)
        self.decision = None  # (route name, reason) once frozen

    def kernel_at(self, iteration: int):
        """The kernel of tuning iteration ``iteration`` (None: past the trial)."""
        b = iteration // self.BLOCK
        if b >= self.N_BLOCKS:
            return None
        return "nuts" if b % 2 == 0 else "mhaar"

    def record(self, iteration, theta, seconds) -> None:
        self.rows.append(
            (iteration // self.BLOCK, np.asarray(theta, dtype=float).ravel(), float(seconds))
        )

    def _blocks(self, kernel):
        first = 0 if kernel == "nuts" else 1
        wanted = list(range(first, self.N_BLOCKS, 2))[-self.MEASURED :]
        blocks = []
        for b in wanted:
            rows = [r for r in self.rows if r[0] == b]
            if len(rows) == self.BLOCK:
                blocks.append(rows)
        return blocks

    def rates(self):
        """``({kernel: θ ESS per estimated second}, {kernel: (max τ, seconds per iteration)})``."""
        blocks = {k: self._blocks(k) for k in ("nuts", "mhaar")}
        draws = np.array([r[1] for k in blocks for blk in blocks[k] for r in blk])
        mean = draws.mean(axis=0)
        rates, facts = {}, {}
        for k, blks in blocks.items():
            theta = [np.array([r[1] for r in blk]) - mean for blk in blks]
            tau = max(_iat(theta, j) for j in range(mean.size))
            seconds = float(np.mean([r[2] for blk in blks for r in blk]))
            rates[k] = 1.0 / (tau * max(seconds, 1e-12))
            facts[k] = (tau, seconds)
        return rates, facts

    def decide(self):
        """Freeze and return ``(route, reason)``."""
        if self.decision is not None:
            return self.decision
        if not (self._blocks("nuts") and self._blocks("mhaar")):
            self.decision = (
                "both",
                f"tuning too short to measure (the trial needs {self.N_BLOCKS * self.BLOCK} "
                "tuning iterations): NUTS and MHAAR both kept",
            )
            return self.decision
        rates, facts = self.rates()
        best = max(rates, key=rates.get)
        self.decision = (
            best,
            "measured at warm-up (blocks of "
            f"{self.BLOCK} iterations of each kernel): θ ESS per estimated second (cost model) "
            + ", ".join(
                f"{k} {rates[k]:.3g} (τ {facts[k][0]:.3g}, {facts[k][1] * 1e3:.3g} ms per "
                "iteration)"
                for k in rates
            ),
        )
        return self.decision


def _iat(blocks, j) -> float:
    """Integrated autocorrelation time of coordinate ``j`` from centred ``blocks`` (each
    (B, d)), autocovariances pooled over blocks; summed up to Sokal's window (the first lag M
    with M ≥ 5 τ(M)) or the first non-positive pair of Geyer's initial positive sequence,
    whichever comes first; ≥ 1, and the block length when it never decorrelates."""
    series = [b[:, j] for b in blocks]
    length = min(len(s) for s in series)
    c0 = np.mean([np.mean(s * s) for s in series])
    if not c0 > 0:
        return float(length)
    rho = np.array(
        [np.mean([np.mean(s[: length - k] * s[k:]) for s in series]) / c0 for k in range(length)]
    )
    tau = 1.0
    for k in range(1, length - 1, 2):
        if rho[k] + rho[k + 1] <= 0:
            return float(max(tau, 1.0))
        tau += 2.0 * (rho[k] + rho[k + 1])
        if k + 1 >= 5.0 * tau:
            return float(max(tau, 1.0))
    return float(length)


class NonAdditiveRoute(DPStep):
    r"""θ and the records of a non-additive release: NUTS, MHAAR or both, measured at warm-up.

    Parameters
    ----------
    vars : list
        The record variables (read by a ``DPObserved`` node whose statistic is neither
        record-additive nor local) and their continuous parents θ.
    n_particles : int
        MHAAR's particles per iteration (default 10).
    route : {"auto", "nuts", "mhaar", "both"}
        ``"auto"`` measures at warm-up (module docstring); the others fix the kernel.
    cost : pymc_dp.marginal.CostModel, optional
        Prices of the counted work (``"nuts_gradient"``, ``"nuts_gradient_record"``,
        ``"mhaar_eval"``, ``"mhaar_particle_record"``).

    Sampler stats: ``dp_route`` (1 NUTS, 2 MHAAR, 3 both, this iteration), ``dp_accept`` (MHAAR's
    acceptance probability, NaN when it did not run), ``dp_n_steps`` (NUTS leapfrog steps, 0 when
    it did not run), ``diverging`` (NUTS divergence, as PyMC names it).
    """

    name = "nonadditive_route"
    dp_stats = {
        "dp_route": (int, []),
        "dp_accept": (float, []),
        "dp_n_steps": (int, []),
        "diverging": (bool, []),
    }

    def __init__(
        self,
        vars,
        *,
        n_particles: int = 10,
        route: str = "auto",
        cost=None,
        model=None,
        rng=None,
        blocked=True,
        initial_point=None,
        compile_kwargs=None,
    ):
        model = pm.modelcontext(model)
        if route not in ("auto", *_CODES):
            raise ValueError(
                f"route must be 'auto', 'nuts', 'mhaar' or 'both', got route={route!r}."
            )
        self.fixed_route = None if route == "auto" else route
        self.cost = cost_model(cost)
        values = get_value_vars_from_user_vars(vars, model)
        records, theta = split_records(model, [model.values_to_rvs[v] for v in values])
        if not records or not theta:
            raise ValueError(
                "NonAdditiveRoute needs the records of a non-additive release and their "
                f"continuous parents; got records {[r.name for r in records]} and parameters "
                f"{[t.name for t in theta]}. Pass both, e.g. vars=[mu, x]."
            )
        self.record_names = [r.name for r in records]
        self.theta_names = [t.name for t in theta]
        # discrete records: NUTS cannot move them, and z-space needs continuous records; MHAAR
        # draws their particles in its own space (`MHAAR`'s "auto")
        self.discrete = any(not r.dtype.startswith("float") for r in records)
        if self.discrete and any(r.dtype.startswith("float") for r in records):
            raise ValueError(
                f"NonAdditiveRoute takes continuous or discrete records, not both at once: got "
                f"{self.record_names}. Pass step=[pdp.MHAAR([theta])] for this model."
            )
        if self.discrete:
            if route in ("nuts", "both"):
                raise ValueError(
                    f"route={route!r} needs NUTS on the records, but {self.record_names} are "
                    "discrete. Use route='mhaar' (or 'auto', which is MHAAR for discrete records)."
                )
            self.fixed_route = "mhaar"
        build_rng = child_rng(rng)
        self.mhaar = MHAAR(
            theta,
            n_particles=n_particles,
            latent=records,
            space="auto" if self.discrete else "z",
            model=model,
            rng=build_rng,
        )
        self.nuts = None
        if not self.discrete:
            self.nuts = pm.NUTS(
                vars=[model.rvs_to_values[v] for v in theta + records],
                model=model,
                initial_point=initial_point,
                compile_kwargs=compile_kwargs,
            )
        self.vars = [model.rvs_to_values[v] for v in theta + records]
        self._theta_values = [model.rvs_to_values[t].name for t in theta]
        if self.discrete:  # the class's advice offers NUTS, which discrete records refuse
            self.convergence_hints = dict.fromkeys(
                self._theta_values,
                "MHAAR's particle estimate may be too noisy: pass step=[pdp.NonAdditiveRoute("
                f"{self.theta_names + self.record_names}, n_particles=50)] or tune longer",
            )
        self.n_records = int(self.mhaar.target.block.n)
        self.n_particles = int(self.mhaar.n_particles)
        self.trial = RouteTrial()
        self._init_step(rng)

    # -- per-chain state -------------------------------------------------------------------
    def reseed(self, rng) -> None:
        # the sub-steps get their own streams, spawned from the chain's (no convergence-guard
        # membership of their own: this step reports for them)
        mh_rng, nuts_rng = rng.spawn(2)
        self.mhaar._start(mh_rng)
        if self.nuts is None:
            return
        if hasattr(self.nuts, "setup_chain") and not hasattr(self.nuts, "set_rng"):
            self.nuts.setup_chain(nuts_rng, 1, 1)
        else:
            self.nuts.set_rng(nuts_rng)

    def start_chain(self) -> None:
        self.trial.reset()
        self._iteration = 0
        if self.nuts is not None:
            self.nuts.reset_tuning()
            self.nuts.tune = True
        self.mhaar.reset_tuning()

    def stop_tuning(self):
        if self.tune and self.fixed_route is None:
            self.trial.decide()
        if self.nuts is not None:
            self.nuts.stop_tuning()
        self.mhaar.stop_tuning()
        super().stop_tuning()

    @property
    def chosen(self) -> str:
        if self.fixed_route is not None:
            return self.fixed_route
        if self.trial.decision is not None:
            return self.trial.decision[0]
        return "both"

    # -- one iteration -----------------------------------------------------------------------
    def _theta(self, point):
        return np.concatenate([np.ravel(point[n]) for n in self._theta_values])

    def step(self, point):
        kernel = None
        if self.tune and self.fixed_route is None and self.trial.decision is None:
            kernel = self.trial.kernel_at(self._iteration)
            if kernel is None:
                self.trial.decide()
        route = kernel if kernel is not None else self.chosen
        if self.nuts is not None:
            self.nuts.tune = bool(self.tune)
        self.mhaar.tune = bool(self.tune)
        n_steps, diverging, accept = 0, False, float("nan")
        seconds = 0.0
        if route in ("nuts", "both"):
            new, nuts_stats = self.nuts.step(point)
            point = {**point, **new}
            st = nuts_stats[0] if nuts_stats else {}
            n_steps = int(st.get("tree_size", 0))
            diverging = bool(st.get("diverging", False))
            seconds += self._nuts_seconds(n_steps)
        if route in ("mhaar", "both"):
            point, mh_stats = self.mhaar.step(point)
            accept = float(mh_stats[0]["dp_accept"])
            seconds += self._mhaar_seconds()
        if kernel is not None:
            self.trial.record(self._iteration, self._theta(point), seconds)
        self._iteration += 1
        return point, [
            self.stats(
                dp_route=_CODES[route],
                dp_accept=accept,
                dp_n_steps=n_steps,
                diverging=diverging,
            )
        ]

    def _nuts_seconds(self, n_steps: int) -> float:
        c = self.cost
        per = c.unit("nuts_gradient") + c.unit("nuts_gradient_record") * self.n_records
        return max(n_steps, 1) * per

    def _mhaar_seconds(self) -> float:
        c = self.cost
        return 2.0 * (
            c.unit("mhaar_eval")
            + c.unit("mhaar_particle_record") * self.n_particles * self.n_records
        )

    @staticmethod
    def competence(var, has_grad=None):
        from pymc_dp.samplers.assign import nonadditive_competence

        return nonadditive_competence(var)

    # -- reporting ---------------------------------------------------------------------------
    def route(self) -> dict:
        out = super().route()
        decision = self.trial.decision
        out["route"] = {
            "kernel": self.chosen,
            "reason": (
                f"fixed by route={self.fixed_route!r}"
                if self.fixed_route is not None
                else (decision[1] if decision is not None else "not decided yet")
            ),
        }
        return out

    def route_reason(self) -> str:
        if self.discrete:
            return (
                f"discrete records {self.record_names} of a release that is not "
                f"record-additive: MHAAR on {self.theta_names} (NUTS cannot move them)"
            )
        return (
            f"records {self.record_names} of a release that is not record-additive: NUTS on "
            f"{self.theta_names + self.record_names}, MHAAR on {self.theta_names} (z-space "
            "particles), or both, measured at warm-up"
        )


def split_records(model, rvs):
    """``(records, θ)``: the given RVs that are data of a ``DPObserved`` node, and the others."""
    from pymc_dp.distributions.graph import released_records
    from pymc_dp.distributions.registry import dp_nodes

    released = set(released_records(dp_nodes(model)))
    return [r for r in rvs if r in released], [r for r in rvs if r not in released]
