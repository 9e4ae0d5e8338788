r"""Choosing the statistic to release (seed 001 §3; seed 000 §4.2 and §6.5).

A candidate is better at θ when its release carries more Fisher information. Three criteria:

* **pointwise** over a grid `\theta_1..\theta_G`: the candidate with the largest F(θ_g) (for
  vector θ the smallest `\operatorname{tr} F(\theta_g)^{-1}`) at each point; ``best`` is set
  only when one candidate wins at every grid point (uniformly better, as in seed 001 Example 2);
* **prior-averaged**: the smallest `\int \operatorname{tr} F(\theta)^{-1}\, p(\theta)\, d\theta`,
  the Bernstein–von Mises approximation of the Bayes risk (posterior variance). For a scalar θ with
  a ``scipy.stats`` prior the integral is Gauss–Legendre quadrature in the prior's quantile space,
  `\int_0^1 g(F_p^{-1}(q))\,dq`; otherwise a Monte Carlo average over prior draws;
* **posterior samples** of θ (e.g. from a first release of ``n0`` records, seed 000 §6.5):
  `\frac1M\sum_m \operatorname{tr} F(\theta^{(m)})^{-1}`.

Monte Carlo candidates carry standard errors: the criterion `\operatorname{tr}F^{-1}` gets
one by the delta method (`\mathrm{se}(1/F) = \mathrm{se}(F)/F^2`), the result reports by how
many standard errors the winner beats the runner-up (``margin_at``, ``margin``), and an estimate
flagged ``unstable`` (non-positive, or relative standard error above
`pymc_dp.fisher.monte_carlo.UNSTABLE_RSE`) is never ranked best. Before the run, one small pilot
evaluation per Monte Carlo candidate is timed and extrapolated (``cost``); a
`PlanningCostWarning` is raised when the estimate exceeds ``max_seconds``.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import warnings

import numpy as np
from scipy.special import roots_legendre

from pymc_dp.fisher._validate import check_mc_size, check_rng
from pymc_dp.runner.many import map_units

__all__ = ["PlanningCostWarning", "Selection", "inverse_trace", "select_statistic"]

_PILOT = 20  # simulated releases of the timed pilot evaluation


class PlanningCostWarning(UserWarning):
    """`select_statistic` expects to run longer than ``max_seconds``."""


@dataclasses.dataclass(frozen=True)
class Selection:
    """Result of `select_statistic`.

    Attributes
    ----------
    best : str or None
        Chosen candidate (``None`` for a pointwise comparison with no uniform winner).
    criterion : str
        ``"pointwise"``, ``"prior"`` or ``"samples"``.
    theta : numpy.ndarray
        The θ points used (grid, quadrature nodes or samples).
    weights : numpy.ndarray
        Their weights (sum 1; uniform for grid and samples).
    fisher : dict
        name → F at each point (``(G,)`` or ``(G, d, d)``).
    scores : dict
        name → weighted average of `\\operatorname{tr} F^{-1}` (lower is better).
    best_at : list
        Winner at each θ point (``None`` where every candidate is unstable).
    stderr : dict
        name → standard error of F at each point (0 for closed forms).
    unstable : dict
        name → ``(G,)`` bool: the estimate is non-positive or too noisy (never ranked best).
    score_se : dict
        name → standard error of its score (delta method; ``inf`` if any point is unstable).
    margin_at : list
        At each point, (runner-up − winner) of `\\operatorname{tr}F^{-1}` in standard errors
        of that difference (``inf`` for closed forms, ``nan`` with a single ranked candidate).
    margin : float
        The same for ``scores`` (prior / samples criteria; the smallest ``margin_at`` for a
        pointwise ``best``; ``nan`` without a winner).
    cost : dict
        name → estimated seconds, from the timed pilot, before the run; ``"total"`` the sum and
        ``"elapsed"`` the measured time of the run.
    """

    best: str | None
    criterion: str
    theta: np.ndarray
    weights: np.ndarray
    fisher: dict
    scores: dict
    best_at: list
    stderr: dict = dataclasses.field(default_factory=dict)
    unstable: dict = dataclasses.field(default_factory=dict)
    score_se: dict = dataclasses.field(default_factory=dict)
    margin_at: list = dataclasses.field(default_factory=list)
    margin: float = float("nan")
    cost: dict = dataclasses.field(default_factory=dict)


def inverse_trace(F) -> float:
    """`\\operatorname{tr} F^{-1}` (``1/F`` for scalar θ; ``inf`` for a singular F)."""
    F = np.atleast_2d(np.asarray(F, dtype=float))
    try:
        return float(np.trace(np.linalg.inv(F)))
    except np.linalg.LinAlgError:
        return float("inf")


def inverse_trace_se(F, se) -> float:
    r"""Delta-method standard error of `\operatorname{tr}F^{-1}` (entries' errors independent)."""
    F = np.atleast_2d(np.asarray(F, dtype=float))
    se = np.atleast_2d(np.asarray(se, dtype=float))
    try:
        inv = np.linalg.inv(F)
    except np.linalg.LinAlgError:
        return float("inf")
    grad = inv @ inv  # d tr F^{-1} / dF_ij = -(F^{-2})_ji
    return float(np.sqrt(np.sum((grad.T * se) ** 2)))


def _as_candidates(candidates):
    from pymc_dp.fisher.api import Candidate

    items = list(candidates.values()) if isinstance(candidates, dict) else list(candidates)
    if not items:
        raise ValueError("candidates must name at least one Candidate, got none.")
    for c in items:
        if not isinstance(c, Candidate):
            raise TypeError(
                f"candidates must be pymc_dp.fisher.Candidate objects, got {c!r}. Wrap each "
                "statistic: Candidate('abs', statistic=..., mechanism=..., moments=...)."
            )
    names = [c.name for c in items]
    if len(set(names)) != len(names):
        raise ValueError(f"candidate names must be unique, got {names}.")
    return items


def select_statistic(
    candidates,
    *,
    theta=None,
    prior=None,
    theta_samples=None,
    n=None,
    n_nodes=24,
    max_samples=200,
    rng=None,
    max_seconds=60.0,
    workers=None,
    client=None,
) -> Selection:
    r"""Choose the candidate statistic whose release is most informative about θ.

    Give exactly one of ``theta`` (pointwise over a grid), ``prior`` (prior-averaged
    `\int \operatorname{tr}F^{-1}p`) or ``theta_samples`` (average over posterior draws).

    Parameters
    ----------
    candidates : sequence of Candidate or dict of name → Candidate
    theta : array_like, optional
        Grid: shape ``(G,)`` for scalar θ, ``(G, d)`` for vector θ.
    prior : scipy.stats frozen distribution, optional
        Scalar θ: quadrature with ``n_nodes`` nodes via ``prior.ppf``; vector θ (or no ``ppf``):
        ``max_samples`` draws from ``prior.rvs``.
    theta_samples : array_like, optional
        Draws of θ, ``(S,)`` or ``(S, d)``; at most ``max_samples`` of them (evenly thinned) are used.
    n : int, optional
        Records behind each candidate's release, when the candidates do not say.
    n_nodes, max_samples : int
    rng : numpy.random.Generator, optional
        For Monte Carlo candidates and prior draws.
    max_seconds : float or None
        Warn (`PlanningCostWarning`) before the run when the timed pilot predicts more than this
        (the time in one process); ``None`` never warns.
    workers : int, optional
        Run the Fisher estimates (one per candidate and θ point) on a local Dask cluster of this
        many worker processes (`pymc_dp.runner.map_units`); default: in this process.
    client : distributed.Client, Cluster or str, optional
        Run them on this Dask cluster instead (a client, a cluster or a scheduler address).

    The estimate of each candidate at each θ point draws from its own generator, derived from one
    draw of ``rng`` and the (candidate, point) pair: the result is the same in this process and on
    any number of workers.

    Returns
    -------
    Selection
    """
    items = _as_candidates(candidates)
    given = [x is not None for x in (theta, prior, theta_samples)]
    if sum(given) != 1:
        raise ValueError(
            "select_statistic needs exactly one of theta=grid, prior=..., theta_samples=..., got "
            f"{sum(given)}. Use a grid for a pointwise comparison, a prior for a prior-averaged "
            "score, or posterior draws from a first release."
        )
    if workers is not None and (
        not isinstance(workers, int) or isinstance(workers, bool) or workers < 0
    ):
        raise ValueError(
            f"workers must be an int >= 0 (0 or None: in this process), got workers={workers!r}. "
            "Use e.g. workers=4 for a local Dask cluster of 4 processes, or client= for yours."
        )
    rng = check_rng(rng)
    n_params = items[0].n_params
    if theta is not None:
        criterion = "pointwise"
        points = _points(theta, n_params, "theta")
        weights = np.full(len(points), 1.0 / len(points))
    elif theta_samples is not None:
        criterion = "samples"
        pts = _points(theta_samples, n_params, "theta_samples")
        m = check_mc_size(max_samples, name="max_samples")
        if len(pts) > m:
            pts = pts[np.linspace(0, len(pts) - 1, m).round().astype(int)]
        points, weights = pts, np.full(len(pts), 1.0 / len(pts))
    else:
        criterion = "prior"
        if n_params is None and hasattr(prior, "ppf"):
            k = check_mc_size(n_nodes, name="n_nodes")
            x, w = roots_legendre(k)
            q = 0.5 * (x + 1.0)
            points, weights = np.asarray(prior.ppf(q), float), 0.5 * w
        elif hasattr(prior, "rvs"):
            m = check_mc_size(max_samples, name="max_samples")
            points = _points(prior.rvs(size=m, random_state=rng), n_params, "prior draws")
            weights = np.full(len(points), 1.0 / len(points))
        else:
            raise TypeError(
                f"prior must be a scipy.stats frozen distribution (with ppf or rvs), got "
                f"prior={prior!r}. For example prior=scipy.stats.uniform(0.1, 1.9)."
            )
    cost = _estimate_cost(items, points, n_params, n, rng, max_seconds)
    start = time.perf_counter()
    fisher, inv, ses, inv_se, unstable = {}, {}, {}, {}, {}
    seed = int(rng.integers(2**63))  # one draw; each (candidate, point) gets its own generator
    units = [(c.name, g) for c in items for g in range(len(points))]
    fn = functools.partial(_fisher_at, {c.name: c for c in items}, points, n_params, n)
    in_process = client is None and not workers
    results = map_units(fn, units, seed=seed, n_workers=0 if in_process else workers, client=client)
    by_unit = dict(zip(units, results, strict=True))
    for c in items:
        ests = [by_unit[(c.name, g)] for g in range(len(points))]
        fisher[c.name] = np.asarray([e.value for e in ests], dtype=float)
        ses[c.name] = np.asarray([e.stderr for e in ests], dtype=float)
        unstable[c.name] = np.array([bool(e.info.get("unstable", False)) for e in ests])
        inv[c.name] = np.array([inverse_trace(e.value) for e in ests])
        inv_se[c.name] = np.array([inverse_trace_se(e.value, e.stderr) for e in ests])
    cost["elapsed"] = time.perf_counter() - start
    names = [c.name for c in items]
    table = np.stack([np.where(unstable[k], np.inf, inv[k]) for k in names])  # (C, G)
    table_se = np.stack([inv_se[k] for k in names])
    best_at, margin_at = [], []
    for g in range(table.shape[1]):
        order = np.argsort(table[:, g], kind="stable")
        win = order[0]
        best_at.append(names[win] if np.isfinite(table[win, g]) else None)
        margin_at.append(_margin(table[:, g], table_se[:, g], order))
    scores = {k: float(np.sum(weights * inv[k])) for k in names}
    score_se = {
        k: (
            float(np.sqrt(np.sum((weights * inv_se[k]) ** 2)))
            if not unstable[k].any()
            else float("inf")
        )
        for k in names
    }
    if criterion == "pointwise":
        uniform = best_at[0] is not None and all(b == best_at[0] for b in best_at)
        best = best_at[0] if uniform else None
        margin = float(np.min(margin_at)) if best is not None else float("nan")
    else:
        ranked = {k: v for k, v in scores.items() if not unstable[k].any()}
        best = min(ranked, key=ranked.get) if ranked else None
        sc = np.array([ranked.get(k, np.inf) for k in names])
        margin = _margin(sc, np.array([score_se[k] for k in names]), np.argsort(sc, kind="stable"))
        margin = margin if best is not None else float("nan")
    return Selection(
        best,
        criterion,
        points,
        weights,
        fisher,
        scores,
        best_at,
        ses,
        unstable,
        score_se,
        margin_at,
        margin,
        cost,
    )


def _fisher_at(candidates, points, n_params, n, unit, rng):
    """F at one (candidate name, point index) unit, drawing from ``rng`` (on any worker)."""
    name, g = unit
    p = points[g] if n_params is not None else float(points[g])
    return candidates[name].fisher(p, n=n, rng=rng)


def _margin(values, ses, order) -> float:
    """(runner-up − winner) over the standard error of the difference; nan without a runner-up."""
    if len(order) < 2 or not np.isfinite(values[order[1]]) or not np.isfinite(values[order[0]]):
        return float("nan")
    diff = values[order[1]] - values[order[0]]
    se = float(np.hypot(ses[order[0]], ses[order[1]]))
    return float(diff / se) if se > 0 else float("inf")


def _estimate_cost(items, points, n_params, n, rng, max_seconds) -> dict:
    """Seconds each candidate will take: a pilot with few releases, timed and extrapolated."""
    from pymc_dp.fisher.api import default_n_outer

    cost = {}
    p0 = points[0] if n_params is not None else float(points[0])
    for c in items:
        small = min(_PILOT, int(c.options.get("n_outer") or _PILOT))
        for _ in range(2):  # the second run is timed: the first pays one-off compilation
            pilot_rng = rng.spawn(1)[0]
            t0 = time.perf_counter()
            est = c.fisher(p0, n=n, rng=pilot_rng, n_outer=small)
            dt = time.perf_counter() - t0
        full = default_n_outer(est.method, c.options)
        cost[c.name] = dt * max(1.0, full / small) * len(points)
    cost["total"] = float(sum(cost.values()))
    if max_seconds is not None and cost["total"] > max_seconds:
        detail = ", ".join(f"{k!r} ≈ {v:.0f} s" for k, v in cost.items() if k != "total")
        warnings.warn(
            f"select_statistic will take about {cost['total']:.0f} s ({detail}; {len(points)} θ "
            f"points), above max_seconds={max_seconds}. Use fewer θ points, smaller n_outer / "
            "n_inner in the candidates' options, or raise max_seconds.",
            PlanningCostWarning,
            stacklevel=3,
        )
    return cost


def _points(values, n_params, name):
    """θ points as ``(G,)`` (scalar θ) or ``(G, d)``; any other shape is refused, never reshaped."""
    arr = np.asarray(values, dtype=float)
    if n_params is None:
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim > 1:
            raise ValueError(
                f"{name} must have shape (G,) (or (G, 1)) for a scalar parameter, got "
                f"{np.shape(values)}. Pass the grid or draws as a 1-D array."
            )
        arr = arr.reshape(-1)
    else:
        d = int(n_params)
        if arr.ndim == 1 and arr.size == d:
            arr = arr[None, :]  # one point
        if arr.ndim != 2 or arr.shape[1] != d:
            raise ValueError(
                f"{name} must have shape (G, {d}) for {d} parameters, got {np.shape(values)}."
            )
    if len(arr) == 0:
        raise ValueError(f"{name} must hold at least one value, got an empty array.")
    return arr
