r"""Choosing the statistic to release (seed 001 §3; seed 000 §4.2 and §6.5).

A candidate is better at θ when its release carries more Fisher information. Three criteria:

* **pointwise** over a grid :math:`\theta_1..\theta_G`: the candidate with the largest F(θ_g) (for
  vector θ the smallest :math:`\operatorname{tr} F(\theta_g)^{-1}`) at each point; ``best`` is set
  only when one candidate wins at every grid point (uniformly better, as in seed 001 Example 2);
* **prior-averaged**: the smallest :math:`\int \operatorname{tr} F(\theta)^{-1}\, p(\theta)\, d\theta`,
  the Bernstein–von Mises approximation of the Bayes risk (posterior variance). For a scalar θ with
  a ``scipy.stats`` prior the integral is Gauss–Legendre quadrature in the prior's quantile space,
  :math:`\int_0^1 g(F_p^{-1}(q))\,dq`; otherwise a Monte Carlo average over prior draws;
* **posterior samples** of θ (e.g. from a first release of ``n0`` records, seed 000 §6.5):
  :math:`\frac1M\sum_m \operatorname{tr} F(\theta^{(m)})^{-1}`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import roots_legendre

from pymc_dp.fisher._validate import check_mc_size, check_rng

__all__ = ["select_statistic", "Selection", "inverse_trace"]


@dataclasses.dataclass(frozen=True)
class Selection:
    """Result of :func:`select_statistic`.

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
        name → weighted average of :math:`\\operatorname{tr} F^{-1}` (lower is better).
    best_at : list
        Winner at each θ point.
    """

    best: str | None
    criterion: str
    theta: np.ndarray
    weights: np.ndarray
    fisher: dict
    scores: dict
    best_at: list


def inverse_trace(F) -> float:
    """:math:`\\operatorname{tr} F^{-1}` (``1/F`` for scalar θ; ``inf`` for a singular F)."""
    F = np.atleast_2d(np.asarray(F, dtype=float))
    try:
        return float(np.trace(np.linalg.inv(F)))
    except np.linalg.LinAlgError:
        return float("inf")


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


def select_statistic(candidates, *, theta=None, prior=None, theta_samples=None, n=None,
                     n_nodes=24, max_samples=200, rng=None) -> Selection:
    r"""Choose the candidate statistic whose release is most informative about θ.

    Give exactly one of ``theta`` (pointwise over a grid), ``prior`` (prior-averaged
    :math:`\int \operatorname{tr}F^{-1}p`) or ``theta_samples`` (average over posterior draws).

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
    fisher, inv = {}, {}
    for c in items:
        vals = [c.fisher(p if n_params is not None else float(p), n=n, rng=rng).value for p in points]
        fisher[c.name] = np.asarray(vals, dtype=float)
        inv[c.name] = np.array([inverse_trace(v) for v in vals])
    names = [c.name for c in items]
    table = np.stack([inv[k] for k in names])  # (C, G)
    best_at = [names[i] for i in np.argmin(table, axis=0)]
    scores = {k: float(np.sum(weights * inv[k])) for k in names}
    if criterion == "pointwise":
        best = best_at[0] if all(b == best_at[0] for b in best_at) else None
    else:
        best = min(scores, key=scores.get)
    return Selection(best, criterion, points, weights, fisher, scores, best_at)


def _points(values, n_params, name):
    arr = np.asarray(values, dtype=float)
    if n_params is None:
        arr = arr.reshape(-1)
    else:
        arr = arr.reshape(-1, int(n_params)) if arr.size % int(n_params) == 0 else arr
        if arr.ndim != 2 or arr.shape[1] != int(n_params):
            raise ValueError(
                f"{name} must have shape (G, {n_params}) for {n_params} parameters, got "
                f"{np.shape(values)}."
            )
    if len(arr) == 0:
        raise ValueError(f"{name} must hold at least one value, got an empty array.")
    return arr
