"""A convergence guard: after ``pm.sample()`` with pymc-dp's steps, say which parameter is stuck.

PyMC's own checks warn that "the rhat statistic is larger than 1.01 for some parameters"; they do
not say which step moved the parameter nor what to change. This module does, for the parameters θ
of a model with ``DPObserved`` nodes (the free variables that are not latent records):

* `check_convergence` — the public check of a finished run: a table with, per θ variable,
  the step that moves it, the bulk ESS per draw, the rank-normalised split R-hat and what to try;
  it warns (`ConvergenceWarning`) when R-hat > 1.01 or ESS/draw < 0.05.
* `watch_chain` — the same check inside ``pm.sample()``, with no call by the user: every
  pymc-dp step joins the chain's watcher when PyMC starts the chain; the first one (the *leader*)
  keeps the θ values of each draw and checks them when the chain's last draw is produced.
  With ``cores=1`` a step object runs every chain in turn, so the check after chain ``k`` covers
  chains ``0..k`` (R-hat across them); with one process per chain it covers that chain (split
  R-hat and ESS of the chain). The chain length comes from ``setup_chain(rng, tune, draws)``
  (PyMC ≥ 6.3); PyMC 5 does not pass it to the steps, so it is read from PyMC's sampling loop
  that called ``set_rng`` (its ``tune``/``draws``); where neither is available there is no check
  during sampling and `check_convergence` remains. θ variables of more than `WATCH_SIZE`
  numbers per draw (π of a table of thousands of areas) are not watched; `check_convergence` on the
  finished run still covers them.

R-hat is compared at the two decimals ``az.summary`` shows (1.0149 passes, 1.015 does not): with a
few hundred draws its third decimal is noise, and a guard that cries wolf is ignored.
Rank-normalised split R-hat and bulk ESS are invariant under monotone maps, so the guard reads θ
in PyMC's transformed (value) space and reports the variable's own name.
"""

from __future__ import annotations

import sys
import warnings
import weakref

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import ndtri
from scipy.stats import rankdata

from pymc_dp._checks import model_context

__all__ = [
    "ESS_PER_DRAW_MIN",
    "RHAT_MAX",
    "RHAT_MAX_ONE_CHAIN",
    "ConvergenceWarning",
    "check_convergence",
    "forget_chains",
    "watch_chain",
]

RHAT_MAX = 1.01
#: R-hat limit for one chain (its two halves: split R-hat): the worst of a θ's entries over two
#: halves of 100–500 draws reads 1.02–1.03 on a chain that mixes (ESS/draw 0.3–0.5), which is
#: what each worker of ``pm.sample(cores > 1)`` judges; a stuck or drifting chain still exceeds it
RHAT_MAX_ONE_CHAIN = 1.05
ESS_PER_DRAW_MIN = 0.05
MIN_DRAWS = 100  # fewer draws per chain: no verdict (as PyMC's own checks)
#: how the guard names a θ that DataAugmentation's own θ-move also moves (after its main step)
THETA_MOVE = "DataAugmentation's θ-move"
#: θ variables with more numbers per draw are not watched inside pm.sample() (e.g. π of a (G, K)
#: table of areas: copying and diagnosing 2 million entries per draw would cost more than sampling)
WATCH_SIZE = 10_000
#: θ variables with more entries are screened: ArviZ's ESS and R-hat (a Python loop over entries,
#: about 3 s for the 2,015 entries of a Dirichlet over 200 draws) run on the `SCREEN_KEEP` entries
#: with the lowest and the `SCREEN_KEEP` with the highest screening statistics (`_screen`)
SCREEN_KEEP = 32


class ConvergenceWarning(UserWarning):
    """A parameter did not mix: R-hat > 1.01 or bulk ESS per draw < 0.05 (names the step and a fix)."""


#: why a parent θ of records moved by DataAugmentation mixes slowly, by the step that moves θ; the
#: remedies follow (below in general; `record_advice` names those this model takes)
RECORD_PARENT_OPENINGS = {
    "NUTS": (
        "its records are updated one at a time by DataAugmentation, so θ moves little per draw "
        "when the release is weak: pass "
    ),
    "ConjugateTheta": "its exact draw given the records is only as fast as the records move: try ",
    "SufficientTheta": "its draw given the records is only as fast as the records move: try ",
}

_ADVICE = {
    "NUTS": RECORD_PARENT_OPENINGS["NUTS"]
    + (
        "step=[pdp.MHAAR([θ])] or [pdp.PMMH([θ])] (they integrate the records), "
        "pdp.DataAugmentation(interweave=True), or pdp.Collapsed / pdp.marginalize(model) for "
        "discrete records"
    ),
    "ConjugateTheta": RECORD_PARENT_OPENINGS["ConjugateTheta"]
    + (
        "step=[pdp.MHAAR([θ])] or pdp.DataAugmentation(interweave=True); for discrete records "
        "pdp.Collapsed"
    ),
    "SufficientTheta": RECORD_PARENT_OPENINGS["SufficientTheta"]
    + "pdp.DataAugmentation(interweave=True) or step=[pdp.MHAAR([θ])]",
    "DataAugmentation": (
        "the records it moves one at a time pin θ when the release is weak: try "
        "pdp.DataAugmentation(interweave=True), step=[pdp.MHAAR([θ])], or "
        "pdp.Collapsed for discrete records"
    ),
    "Interweave": "try more record sweeps (pdp.DataAugmentation(sweeps=5)) or step=[pdp.MHAAR([θ])]",
    "PMMH": (
        "its likelihood estimate is too noisy or the proposal too wide: raise n_particles "
        "(log-likelihood estimate sd ≈ 1; pdp.diagnostics.particles_for_sd) and tune longer"
    ),
    "MHAAR": (
        "raise n_particles (log-likelihood estimate sd ≈ 1; pdp.diagnostics.particles_for_sd) "
        "or tune longer"
    ),
    "Collapsed": (
        "it moves θ on the exact collapsed likelihood by NUTS or by MH (the route says which: "
        "idata.sample_stats.attrs['pymc_dp_route']): switch the kernel, "
        "step=[pdp.Collapsed(theta_kernel='mh')] for a few parameters (e.g. a mean and a "
        "scale) or theta_kernel='nuts' for many or a funnel; tune longer, or reparameterise a "
        "hierarchical prior (non-centred)"
    ),
    "NonAdditiveRoute": (
        "MHAAR's particle estimate may be too noisy or NUTS too slow on the joint model: pass "
        "step=[pdp.NonAdditiveRoute([θ, records], n_particles=50)], fix the kernel with "
        "route='mhaar' or route='nuts', or tune longer (the warm-up trial needs 400 iterations)"
    ),
    "DirichletHyper": (
        "its moves are exact; what mixes slowest is the coupling with the table (θ's coordinates "
        "for sparse columns, and α, move only as fast as the cells do): run more draws (ESS "
        "grows with them), or more cell moves per iteration, step=[pdp.DirichletHyper([...], "
        "cells=3)] (α's ESS per draw rises, at the same ESS per second)"
    ),
    "Metropolis": (
        "a discrete θ left to PyMC's Metropolis: run longer or marginalise it; a parent of "
        "discrete records with a finite support (e.g. pm.DiscreteUniform(1, 5)) is enumerated "
        "with its records summed out by pdp.EnumeratedParents, which pm.sample() picks by itself"
    ),
    # θ also moved by DataAugmentation's own non-centred θ-move (interweaving already runs)
    THETA_MOVE: (
        "DataAugmentation's non-centred move of the parameters already runs: try more record sweeps "
        "(pdp.DataAugmentation(sweeps=5)), step=[pdp.MHAAR([θ])] (it integrates the records), "
        "or pdp.Collapsed / pdp.marginalize(model) for discrete records"
    ),
}
_DEFAULT_ADVICE = (
    "run more draws and tuning, or pass a θ-move from pymc_dp (MHAAR, PMMH, interweaving)"
)


def advice(step_name: str, var: str) -> str:
    """What to try when ``var`` (moved by the step named ``step_name``) does not mix."""
    key = THETA_MOVE if step_name.endswith(THETA_MOVE) else step_name
    text = _ADVICE.get(key, _DEFAULT_ADVICE)
    return text.replace("θ", var)


# ---------------------------------------------------------------------------------------------
# what the parameters are and who moves them
# ---------------------------------------------------------------------------------------------
def theta_value_names(model) -> dict:
    """``{value-variable name: RV name}`` of the free variables that are not records of a release
    (empty for a model without ``DPObserved`` nodes)."""
    from pymc_dp.distributions.graph import released_records
    from pymc_dp.distributions.registry import dp_nodes

    nodes = dp_nodes(model)
    if not nodes:
        return {}
    records = set(released_records(nodes))
    return {model.rvs_to_values[rv].name: rv.name for rv in model.free_RVs if rv not in records}


def _movers(steps) -> dict:
    """``{value-variable name: step class name}`` of the given step(s) (compound steps opened)."""
    out, also = {}, []
    pending = list(steps) if isinstance(steps, list | tuple) else [steps]
    while pending:
        step = pending.pop(0)
        if hasattr(step, "methods"):
            pending = list(step.methods) + pending
            continue
        for v in getattr(step, "vars", ()):
            out.setdefault(v.name, type(step).__name__)
        moved = getattr(step, "theta_move_values", None)
        if callable(moved):
            also.extend(moved())
    for name in also:  # θ moved by its own step and by DataAugmentation's non-centred θ-move
        out[name] = f"{out.get(name, 'NUTS')} and {THETA_MOVE}"
    return out


def _hints(steps) -> dict:
    """``{value-variable name: model-specific advice}`` that steps give through their
    ``convergence_hints`` attribute (e.g. ConjugateTheta for π of a table released only through
    margins), over the ``parent_hints`` of table steps (TableCells: the variables its table's law
    depends on)."""
    out, general = {}, {}
    pending = list(steps) if isinstance(steps, list | tuple) else [steps]
    while pending:
        step = pending.pop(0)
        if hasattr(step, "methods"):
            pending = list(step.methods) + pending
            continue
        out.update(getattr(step, "convergence_hints", None) or {})
        # a table's for its parents, DataAugmentation's for parameters above the records'
        # parents: advice for a variable PyMC's own steps move (`_PYMC_STEPS`)
        general.update(
            {k: _General(v) for k, v in (getattr(step, "parent_hints", None) or {}).items()}
        )
    return general | out


class _General(str):
    """A step's advice for variables that PyMC's own steps move (`_hints`)."""


#: PyMC's step methods (a general hint applies to the variables they move)
_PYMC_STEPS = frozenset(
    {
        "NUTS",
        "HamiltonianMC",
        "Metropolis",
        "Slice",
        "DEMetropolis",
        "DEMetropolisZ",
        "BinaryMetropolis",
        "BinaryGibbsMetropolis",
        "CategoricalGibbsMetropolis",
    }
)


def _hint(hints, name, step, var):
    """The hint for value variable ``name`` (RV ``var``) moved by ``step`` (None: the step's
    advice). A callable hint (`record_advice.RecordParentAdvice`) writes it for the step."""
    text = (hints or {}).get(name)
    if callable(text):
        return text(step, var)
    if isinstance(text, _General) and step not in _PYMC_STEPS:
        return None
    return text


def _default_movers(model) -> dict:
    """The step ``pm.sample()`` assigns by itself to each value variable of ``model``."""
    from pymc.sampling.mcmc import assign_step_methods
    from pymc.step_methods import STEP_METHODS

    _, selected = assign_step_methods(model, None, methods=STEP_METHODS)
    return {v.name: cls.__name__ for cls, vars_ in selected.items() for v in vars_}


# ---------------------------------------------------------------------------------------------
# the verdict
# ---------------------------------------------------------------------------------------------
def _diagnose(
    values: dict, labels: dict, movers: dict, rhat_max, ess_min, hints=None
) -> pd.DataFrame:
    """``values``: value name -> (chain, draw, *event) array. One row per variable (worst entry)."""
    rows = []
    for name, d in values.items():
        d = np.asarray(d, dtype=float)
        n_chains, n_total = d.shape[0], d.shape[0] * d.shape[1]
        if n_chains == 1:  # one chain: its two halves (split R-hat; ArviZ wants two chains)
            half = d.shape[1] // 2
            d = np.stack([d[0, :half], d[0, half : 2 * half]])
        d = d.reshape(d.shape[0], d.shape[1], -1)
        if d.shape[2] > 2 * SCREEN_KEEP:
            d = d[:, :, _screen(d, SCREEN_KEEP)]
        ds = xr.Dataset({"q": (("chain", "draw", "entry"), d)})
        ess = np.asarray(az.ess(ds, method="bulk")["q"], dtype=float).ravel()
        rhat = np.asarray(az.rhat(ds)["q"], dtype=float).ravel()
        const = np.ptp(d.reshape(d.shape[0] * d.shape[1], -1), axis=0) == 0  # per entry, flat
        ess = np.where(const, 0.0, np.nan_to_num(ess, nan=0.0))
        rhat = np.where(const | ~np.isfinite(rhat), np.inf, rhat)
        step = movers.get(name, "NUTS")
        var = labels.get(name, name)
        worst_ess, worst_rhat = float(ess.min()) / n_total, float(rhat.max())
        limit = rhat_max if n_chains > 1 else max(rhat_max, RHAT_MAX_ONE_CHAIN)
        ok = round(worst_rhat, 2) <= limit and worst_ess >= ess_min  # R-hat as az.summary shows it
        rows.append(
            {
                "variable": var,
                "step": step,
                "chains": n_chains,
                "draws": n_total // n_chains,
                "ess_bulk": float(ess.min()),
                "ess_per_draw": worst_ess,
                "r_hat": worst_rhat,
                "ok": ok,
                "advice": "" if ok else (_hint(hints, name, step, var) or advice(step, var)),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "variable",
            "step",
            "chains",
            "draws",
            "ess_bulk",
            "ess_per_draw",
            "r_hat",
            "ok",
            "advice",
        ],
    )


def _screen(d: np.ndarray, keep: int) -> np.ndarray:
    """Entries of ``d`` (chain, draw, entry) to diagnose with ArviZ: the ``keep`` with the lowest
    lag-1 ESS (rank-normalised draws, ``N(1 - ρ₁)/(1 + ρ₁)``, the AR(1) approximation) and the
    ``keep`` with the highest between/within variance ratio of the chains' rank means (R-hat's
    ingredients); constant entries rank first. Vectorised over entries; ArviZ then reports exact
    figures for the chosen ones, so a run's verdict stands unless its worst entry is outside both
    lists."""
    n_chains, n_draws, n_entries = d.shape
    flat = d.reshape(n_chains * n_draws, n_entries)
    z = ndtri((rankdata(flat, axis=0) - 0.375) / (flat.shape[0] + 0.25))
    z = z.reshape(n_chains, n_draws, n_entries)
    zc = z - z.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = (zc[:, 1:] * zc[:, :-1]).sum(axis=(0, 1)) / (zc**2).sum(axis=(0, 1))
        within = z.var(axis=1, ddof=1).mean(axis=0)
        between = z.mean(axis=1).var(axis=0, ddof=1) / within
    const = np.ptp(flat, axis=0) == 0
    ess = np.where(const, -np.inf, np.nan_to_num((1.0 - rho) / (1.0 + rho), nan=-np.inf))
    between = np.where(const, np.inf, np.nan_to_num(between, nan=np.inf))
    return np.union1d(
        np.argsort(ess, kind="stable")[:keep], np.argsort(-between, kind="stable")[:keep]
    )


def _warn(table: pd.DataFrame, *, rhat_max, ess_min, stacklevel: int) -> None:
    bad = table[~table["ok"]]
    if bad.empty:
        return
    lines = [
        f"{r.variable!r} (moved by {r.step}): R-hat {r.r_hat:.3g}, bulk ESS/draw "
        f"{r.ess_per_draw:.3g} ({r.ess_bulk:.0f} over {r.chains} chain(s) × {r.draws} draws). "
        f"To fix: {r.advice}."
        for r in bad.itertuples()
    ]
    warnings.warn(
        f"pymc_dp: {len(bad)} parameter(s) did not mix (R-hat > {rhat_max} or bulk ESS/draw < "
        f"{ess_min}); the posterior summaries of these are not reliable:\n  " + "\n  ".join(lines),
        ConvergenceWarning,
        stacklevel=stacklevel,
    )


def _posterior(idata):
    """The posterior group of ``idata`` (InferenceData or DataTree), or a TypeError naming it."""
    try:
        post = idata["posterior"] if not hasattr(idata, "posterior") else idata.posterior
    except (KeyError, TypeError, IndexError, ValueError):
        post = None
    if post is None or not hasattr(post, "data_vars") and not hasattr(post, "ds"):
        raise TypeError(
            "idata must be what pm.sample() returned (an InferenceData or DataTree with a "
            f"posterior group), got {type(idata).__name__}. Pass the result of pm.sample() first "
            "and the model second: pdp.check_convergence(idata, model)."
        )
    return getattr(post, "ds", post)  # DataTree node (ArviZ 1.x) or Dataset


def check_convergence(
    idata,
    model=None,
    *,
    step=None,
    warn: bool = True,
    rhat_max: float = RHAT_MAX,
    ess_per_draw_min: float = ESS_PER_DRAW_MIN,
):
    """Per parameter θ: the step that moves it, bulk ESS per draw, R-hat, and what to try.

    Parameters
    ----------
    idata : InferenceData or DataTree
        What ``pm.sample()`` returned (at least 2 chains for a cross-chain R-hat; one chain gives
        split R-hat).
    model : pm.Model, optional
        The model (default: the model context). θ are its free variables that are not records of a
        ``DPObserved`` node.
    step : step method or list, optional
        The step(s) given to ``pm.sample(step=...)``; default: what ``pm.sample()`` assigns by itself.
    warn : bool
        Issue a `ConvergenceWarning` naming every θ with R-hat > `rhat_max` or bulk ESS per draw
        < `ess_per_draw_min`.

    Returns
    -------
    pandas.DataFrame
        One row per θ variable (its worst entry): ``variable``, ``step``, ``chains``, ``draws``,
        ``ess_bulk``, ``ess_per_draw``, ``r_hat``, ``ok``, ``advice``.
    """
    model = model_context(model, owner="pdp.check_convergence")
    labels = theta_value_names(model)
    movers = _movers(step) if step is not None else _default_movers(model)
    post = _posterior(idata)
    values = {}
    for value_name, rv_name in labels.items():
        if rv_name not in post:
            raise ValueError(
                f"idata: the posterior has no variable {rv_name!r} of the model; pass "
                "the model that was sampled (model=...)."
            )
        values[value_name] = np.asarray(post[rv_name])
    hints = _hints(step) if step is not None else {}
    table = _diagnose(values, labels, movers, rhat_max, ess_per_draw_min, hints)
    if warn:
        _warn(table, rhat_max=rhat_max, ess_min=ess_per_draw_min, stacklevel=2)
    return table


# ---------------------------------------------------------------------------------------------
# the check inside pm.sample(): one watcher per chain, led by the first pymc-dp step
# ---------------------------------------------------------------------------------------------
class _ChainWatch:
    """The θ draws of one chain, kept by its leader step; checked at the chain's last draw."""

    def __init__(self, leader, labels: dict, tune: int, draws: int, history: list):
        self.leader = weakref.ref(leader)
        self.labels, self.tune, self.draws = labels, tune, draws
        self.members = [weakref.ref(leader)]
        self.history = history  # finished chains of this step object: list of {name: (draw, ...)}
        self.i = 0
        self.buffer = {name: [] for name in self.labels}
        self.discrete = {}  # value name -> integer-valued (PyMC gives a discrete θ Metropolis)

    @property
    def started(self) -> bool:
        return self.i > 0

    def observe(self, step, point) -> None:
        if self.leader() is not step or self.i >= self.tune + self.draws:
            return
        self.i += 1
        if not self.discrete:
            self.discrete = {n: np.asarray(point[n]).dtype.kind in "iub" for n in self.buffer}
        if self.i > self.tune:
            # what the trace does not read (`DPStep.untraced`) has no summaries to warn about, and
            # a step may leave it undrawn (DirichletHyper's π): it would show as stuck
            untraced = getattr(step, "untraced", frozenset())
            for name, buf in self.buffer.items():
                value = point[name]
                if np.size(value) > WATCH_SIZE or name in untraced:  # e.g. π of a (G, K) table
                    continue
                buf.append(np.array(value, dtype=float, copy=True))
        if self.i == self.tune + self.draws:
            self.history.append({name: np.stack(buf) for name, buf in self.buffer.items() if buf})
            self.buffer = {}
            self._check()

    def _check(self) -> None:
        if self.draws < MIN_DRAWS or not self.labels:
            return
        chains = [h for h in self.history if all(len(v) == self.draws for v in h.values())]
        names = [n for n in self.labels if chains and all(n in h for h in chains)]
        if not names:
            return
        values = {name: np.stack([h[name] for h in chains]) for name in names}
        members = [m() for m in self.members if m() is not None]
        movers = _movers(members)
        for name in names:  # not moved by a pymc-dp step: PyMC's default for its type
            movers.setdefault(name, "Metropolis" if self.discrete.get(name) else "NUTS")
        labels = {n: self.labels[n] for n in names}
        table = _diagnose(values, labels, movers, RHAT_MAX, ESS_PER_DRAW_MIN, _hints(members))
        _warn(table, rhat_max=RHAT_MAX, ess_min=ESS_PER_DRAW_MIN, stacklevel=4)


_OPEN: dict = {}  # "watch": the watcher of the chain being set up / sampled in this process


def _lengths_from_pymc():
    """(tune, draws) of the chain PyMC is starting, read from its sampling loop (PyMC < 6.3)."""
    frame = sys._getframe(1)
    for _ in range(12):
        if frame is None:
            return None
        module, name = frame.f_globals.get("__name__", ""), frame.f_code.co_name
        if module == "pymc.sampling.mcmc" and name == "_iter_sample":
            tune, total = frame.f_locals.get("tune"), frame.f_locals.get("draws")
            if tune is not None and total is not None:
                return int(tune), int(total) - int(tune)
        if module == "pymc.sampling.parallel" and name == "_start_loop":
            proc = frame.f_locals.get("self")
            if hasattr(proc, "_tune") and hasattr(proc, "_draws"):
                return int(proc._tune), int(proc._draws)
        frame = frame.f_back
    return None


def forget_chains(step) -> None:
    """Forget the chains ``step`` (and the steps inside a CompoundStep) ran so far: its next chain
    starts a new run for the guard. For steps reused on another posterior (`pymc_dp.sample_many`
    with ``data=``), whose earlier chains must not be pooled with the new ones."""
    for m in getattr(step, "methods", [step]):
        if getattr(m, "_dp_watch", None) is not None:
            m._dp_watch = None


def watch_chain(step, tune: int | None = None, draws: int | None = None):
    """Join ``step`` to the watcher of the chain PyMC is starting; returns it (or None).

    Called by every pymc-dp step when PyMC starts a chain. The first step to join a new chain
    leads: it keeps θ's draws (`observe` from each ``step``) and checks them at the last
    draw. ``tune``/``draws`` as ``setup_chain`` gives them; None reads them from PyMC's loop.
    """
    labels = getattr(step, "_dp_theta", None)
    if not labels:
        return None  # no release (e.g. PenaltyMH on confidential data) or no θ: nothing to watch
    if tune is None or draws is None:
        lengths = _lengths_from_pymc()
        if lengths is None:
            return None
        tune, draws = lengths
    current = _OPEN.get("watch")
    if (
        current is not None
        and not current.started
        and (current.tune, current.draws) == (tune, draws)
        and current.labels == labels
        and current.leader() is not None
    ):
        if all(m() is not step for m in current.members):
            current.members.append(weakref.ref(step))
        return current
    previous = getattr(step, "_dp_watch", None)
    history = (
        previous.history
        if previous is not None
        and previous.labels == labels
        and (previous.tune, previous.draws) == (tune, draws)
        else []
    )
    watch = _ChainWatch(step, labels, tune, draws, history)
    _OPEN["watch"] = watch
    return watch
