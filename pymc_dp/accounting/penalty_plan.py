r"""Plans of DP penalty runs made with the accountant that enforces the budget.

`PenaltyMH(..., budget=(ε, δ))` allows the largest number k of iterations whose composition
`epsilon_of_event(run_event(iteration_event(τ, ...), k), δ)` stays within ε: PLD on the full data,
RDP with subsampling (`pymc_dp.accounting.spent`). The seeds' closed forms (Theorem 7, Theorem 10) are
tight mathematically, but the PLD accountant discretises pessimistically, so a τ planned with them
allowed k − 1 iterations. Every plan here asks the same predicate; the closed forms only give the
starting guess of the search:

* `budget_iterations(τ, ε, δ, ...)`: the k the step allows (what `PenaltyMH.max_iterations` is);
* `plan_tau(ε, δ, k, ...)`: the smallest τ (to a relative 1e-4) with `budget_iterations(τ) ≥ k`;
  full data, subsampled (`batch_size`, `n`) and DP MALA (`grad_noise_multiplier`);
* `lipschitz_normal_regression(...)`: ``lipschitz`` from declared bounds of the data (never from
  the data), as `pymc_dp.regression` declares ``x_bound`` and ``y_bound``;
* `plan_penalty(...)`: the feasibility planner — τ, the proposal scale, the noise sd of the log
  ratio, the expected number of independent moves — which warns (`InfeasibleRunWarning`) before any
  data are touched when the run cannot move.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
from scipy.stats import norm

from pymc_dp._checks import check_delta, check_epsilon, check_positive
from pymc_dp.accounting._search import largest_within
from pymc_dp.accounting.spent import epsilon_of_event, iteration_event, run_event

__all__ = [
    "InfeasibleRunWarning",
    "PenaltyPlan",
    "budget_accountant",
    "budget_iterations",
    "lipschitz_normal_regression",
    "plan_penalty",
    "plan_tau",
]

_REL_TOL = 1e-4  # relative precision of a planned τ (costs at most ~2e-4 of the iterations)
_UPPER = 10**9


class InfeasibleRunWarning(UserWarning):
    """A planned PenaltyMH run cannot move: the noise forces steps far below the posterior scale."""


def budget_accountant(batch_size=None, accountant=None) -> str:
    """The accountant `PenaltyMH` enforces its budget with: RDP when subsampling, else PLD (or as given)."""
    if batch_size is not None:
        return "rdp"
    if accountant is None:
        return "pld"
    if accountant not in ("pld", "rdp"):
        raise ValueError(f"accountant must be 'pld' or 'rdp', got accountant={accountant!r}.")
    return accountant


def _check_k(iterations):
    if not (isinstance(iterations, int | np.integer) and iterations >= 1):
        raise ValueError(
            f"iterations must be an integer >= 1, got iterations={iterations!r}. Count every "
            "data-touching iteration of every chain, tuning included: chains * (tune + draws)."
        )
    return int(iterations)


def _event(tau, n, batch_size, grad_noise_multiplier):
    return iteration_event(
        tau, grad_noise_multiplier=grad_noise_multiplier, n_records=n, batch_size=batch_size
    )


def _rdp_guess(event, epsilon, delta):
    """k from the RDP curve of one iteration (linear in k): one accountant call, no search over events."""
    import dp_accounting
    from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant, compute_epsilon

    acc = RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(event)
    orders, rdp = np.asarray(acc._orders), np.asarray(acc._rdp)

    def ok(k):
        return compute_epsilon(orders, k * rdp, delta)[0] <= epsilon

    return largest_within(ok, _UPPER)


def _guess(tau, epsilon, delta, batch_size, grad_noise_multiplier, accountant):
    from pymc_dp.accounting.penalty_bounds import penalty_iterations

    if batch_size is None and accountant == "pld":
        z = float(tau)
        if grad_noise_multiplier is not None:  # two Gaussians compose to one: 1/z² adds
            z = 1.0 / math.sqrt(1.0 / z**2 + 1.0 / float(grad_noise_multiplier) ** 2)
        return penalty_iterations(epsilon, delta, z, method="tight")
    return None


def _largest_near(ok, guess):
    """Largest k ≥ 1 with ok(k) (ok true up to some k, false after), searched outward from ``guess``."""
    if guess is None:
        return largest_within(ok, _UPPER)
    g = min(max(1, int(guess)), _UPPER)
    step = 1
    if ok(g):
        lo = g
        while lo + step <= _UPPER and ok(lo + step):
            lo, step = lo + step, step * 2
        hi = lo + step
    else:
        hi = g
        while True:
            cand = hi - step
            if cand < 1:
                if not ok(1):
                    return 0
                lo = 1
                break
            if ok(cand):
                lo = cand
                break
            hi, step = cand, step * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def budget_iterations(
    tau, epsilon, delta, *, n=None, batch_size=None, grad_noise_multiplier=None, accountant=None
) -> int:
    """Iterations a `PenaltyMH` with noise multiplier ``tau`` may run within (ε, δ).

    The largest k with ``epsilon_of_event(run_event(iteration_event(tau, ...), k), delta) <= epsilon``
    for the accountant of `budget_accountant` — the predicate the step enforces. ``n`` and
    ``batch_size``: subsampling without replacement (RDP); ``grad_noise_multiplier``: DP MALA's drift
    (`MalaProposal.grad_noise_multiplier`). The seeds' closed forms only start the search.
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    acc = budget_accountant(batch_size, accountant)
    event = _event(tau, n, batch_size, grad_noise_multiplier)

    def ok(k):
        return epsilon_of_event(run_event(event, k), delta, accountant=acc) <= epsilon

    guess = _guess(tau, epsilon, delta, batch_size, grad_noise_multiplier, acc)
    if guess is None and acc == "rdp":
        guess = _rdp_guess(event, epsilon, delta)
    return _largest_near(ok, guess)


def plan_tau(
    epsilon,
    delta,
    iterations,
    *,
    n=None,
    batch_size=None,
    grad_noise_multiplier=None,
    accountant=None,
) -> float:
    """Smallest noise multiplier τ (to a relative 1e-4, rounded up) whose budget allows ``iterations``.

    Guaranteed: ``budget_iterations(plan_tau(ε, δ, k, ...), ε, δ, ...) >= k`` — the same accountant
    as the step's budget (PLD; RDP with ``batch_size``). Arguments as in `budget_iterations`.
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    k = _check_k(iterations)
    acc = budget_accountant(batch_size, accountant)
    if batch_size is not None and n is None:
        raise ValueError(
            f"batch_size={batch_size!r} needs n, the number of records (the sampling rate "
            "batch_size/n enters the accounting); pass n=len(records) — a public count."
        )
    if grad_noise_multiplier is not None:
        zg = check_positive(grad_noise_multiplier, name="grad_noise_multiplier")
        if (
            epsilon_of_event(run_event(_event(1e12, None, None, zg), k), delta, accountant=acc)
            > epsilon
        ):
            raise ValueError(
                f"the DP-MALA drift alone (grad_noise_multiplier={zg!r}) spends more than "
                f"epsilon={epsilon} in {k} iterations, whatever tau. Lower the step size or "
                "grad_bound, raise mala_a, or plan fewer iterations."
            )

    def ok(z):
        return (
            epsilon_of_event(
                run_event(_event(z, n, batch_size, grad_noise_multiplier), k), delta, accountant=acc
            )
            <= epsilon
        )

    from pymc_dp.accounting.penalty_bounds import penalty_tau

    z0 = penalty_tau(epsilon, delta, k, method="tight")  # closed form: a guess only
    if grad_noise_multiplier is not None:
        inv = 1.0 / z0**2 - 1.0 / zg**2
        z0 = 1.0 / math.sqrt(inv) if inv > 0 else 10.0 * z0
    lo, hi = z0 / 1.01, z0 * 1.01
    while not ok(hi):
        lo, hi = hi, hi * 2.0
    while ok(lo) and lo > 1e-6:
        lo, hi = lo / 2.0, lo
    while hi / lo - 1.0 > _REL_TOL:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


class PenaltyPlan(NamedTuple):
    """What `plan_penalty` returns (every field data-free: from n, (ε, δ), k, L, d and the prior guess).

    Attributes
    ----------
    tau : float
        Noise multiplier planned with the enforcing accountant (`plan_tau`).
    scale : float
        Proposal scale per coordinate to pass as ``PenaltyMH(scale=...)``.
    noise_sd : float
        Typical noise sd of the released log ratio at that scale, τ·2TL‖θ′−θ‖ (RMS step).
    accept_rate : float
        Acceptance rate of the penalty test for a move with zero log ratio, 2Φ(−noise_sd/2).
    steps_per_sd : float
        Posterior sd (``posterior_scale``) over the RMS proposal step of one coordinate.
    expected_moves : float
        Rule-of-thumb number of independent draws of the whole run: ``iterations`` over the
        integrated autocorrelation time 4ρ²/v of a small-step random walk (v the mean squared
        accepted move of one coordinate per iteration, ρ the posterior sd). Optimistic when
        ``posterior_scale`` is left at its default (a lower bound of the posterior sd).
    posterior_scale : float
        The posterior sd used: the argument, or 1/(L√(nT)) (the Fisher information of one record
        is at most L², so the posterior sd is at least about this).
    feasible : bool
        ``expected_moves >= min_moves``.
    accountant : str
    """

    tau: float
    scale: float
    noise_sd: float
    accept_rate: float
    steps_per_sd: float
    expected_moves: float
    posterior_scale: float
    feasible: bool
    accountant: str


def plan_penalty(
    n,
    epsilon,
    delta,
    iterations,
    lipschitz,
    dim,
    *,
    posterior_scale=None,
    batch_size=None,
    proposal="guided",
    temperature=1.0,
    target_noise_sd=2.0,
    min_moves=10.0,
    warn=True,
) -> PenaltyPlan:
    r"""Feasibility planner of a `PenaltyMH` run, before any data are touched.

    Parameters
    ----------
    n : int
        Number of confidential records (a public count).
    epsilon, delta : float
        Budget of the whole run.
    iterations : int
        Every data-touching iteration of every chain: chains × (tune + draws).
    lipschitz : float
        L of `PenaltyMH` (θ in PyMC's transformed space). Set it from declared bounds of the data,
        never from the data (see docs/penalty.md, "Choosing the knobs").
    dim : int
        Number of coordinates of θ.
    posterior_scale : float, optional
        A prior guess of the posterior sd of one coordinate (transformed space). Default
        1/(L√(nT)), a lower bound: the plan is then optimistic about mixing.
    batch_size : int, optional
        Subsampled penalty; the sensitivity grows by n/b (seed 002 Lemma 1).
    proposal : {"guided", "coordinate", "rw"}
    target_noise_sd : float
        Noise sd of the log ratio the scale is set for (2.0: acceptance about 0.32 at zero log
        ratio; σ²·2Φ(−σ/2), the mean squared accepted move, peaks near σ = 2.4).
    min_moves : float
        Warn when fewer independent moves are expected.
    warn : bool
        Emit `InfeasibleRunWarning` when the run cannot move.

    Returns
    -------
    PenaltyPlan

    Notes
    -----
    The proposal scale is the smaller of the noise-limited scale (noise sd ``target_noise_sd`` at
    the RMS step: σ = τ·c, c = 2TL‖θ′−θ‖, times n/b with subsampling) and the posterior-limited
    one (2.4ρ for one-coordinate moves, 2.4ρ/√d for the full random walk). With one-coordinate
    proposals each coordinate moves once per d iterations.
    """
    if isinstance(n, bool | np.bool_) or not isinstance(n, int | np.integer):
        raise TypeError(
            f"n must be an integer number of records, got n={n!r}. Pass the number of "
            "confidential records."
        )
    n = int(check_positive(n, name="n", fix="Pass the number of confidential records."))
    lipschitz = check_positive(lipschitz, name="lipschitz")
    temperature = check_positive(temperature, name="temperature")
    d = int(check_positive(dim, name="dim", fix="Pass the number of coordinates of theta."))
    if proposal not in ("guided", "coordinate", "rw"):
        raise ValueError(
            f"proposal must be 'guided', 'coordinate' or 'rw' for plan_penalty, got proposal={proposal!r}. "
            "Plan DP MALA with plan_tau(..., grad_noise_multiplier=...)."
        )
    k = _check_k(iterations)
    tau = plan_tau(
        epsilon, delta, k, n=n if batch_size is not None else None, batch_size=batch_size
    )
    rho = (
        1.0 / (lipschitz * math.sqrt(n * temperature))
        if posterior_scale is None
        else check_positive(posterior_scale, name="posterior_scale")
    )
    rms = math.sqrt(d) if proposal == "rw" else 1.0  # RMS ‖θ′−θ‖ in units of the scale
    factor = 1.0 if batch_size is None else n / batch_size  # Lemma 1's leading term
    per_unit = tau * 2.0 * temperature * lipschitz * factor * rms  # noise sd per unit of scale
    s_noise = float(target_noise_sd) / per_unit
    s_post = 2.4 * rho / (math.sqrt(d) if proposal == "rw" else 1.0)
    scale = min(s_noise, s_post)
    noise_sd = per_unit * scale
    accept = float(2.0 * norm.cdf(-noise_sd / 2.0))
    moves_per_coord = 1.0 if proposal == "rw" else 1.0 / d
    v = accept * scale**2 * moves_per_coord
    iat = max(1.0, 4.0 * rho**2 / v)
    moves = k / iat
    plan = PenaltyPlan(
        tau,
        scale,
        noise_sd,
        accept,
        rho / scale,
        moves,
        rho,
        moves >= min_moves,
        budget_accountant(batch_size),
    )
    if warn and not plan.feasible:
        warnings.warn(
            f"this PenaltyMH run cannot move: with n={n}, epsilon={epsilon}, delta={delta} over "
            f"{k} iterations, tau={tau:.4g} keeps the proposal scale at {scale:.3g} "
            f"({rho / scale:.0f} steps per posterior sd {rho:.3g}, dim={d}), about {moves:.2g} "
            "independent moves in the whole run; its draws would stay near the starting point and "
            "look falsely precise. Raise epsilon, plan fewer iterations, lower lipschitz (declared "
            "bounds of the data), use more records, or publish a release instead.",
            InfeasibleRunWarning,
            stacklevel=2,
        )
    return plan


def lipschitz_normal_regression(
    x_bound, y_bound, coef_bound, *, sigma=1.0, sigma_lower=None
) -> float:
    r"""``lipschitz`` of a Gaussian linear regression from declared bounds of the data.

    Per record $\ell(\beta) = \ln\mathcal N(y \mid x^\top\beta, \sigma^2)$, with the
    declared bounds $\lVert x\rVert_2 \le$ ``x_bound`` (covariates, intercept column
    included), $|y| \le$ ``y_bound`` (as `pymc_dp.regression` declares them) and the region
    $\lVert\beta\rVert_2 \le$ ``coef_bound`` where clipping must not bite. Then
    $|y - x^\top\beta| \le r = y_b + x_b c_b$ and

    $$\lVert\nabla_\beta \ell\rVert_2 \le r\,x_b/\sigma^2 ,\qquad
    |\partial\ell/\partial\ln\sigma| = |r^2/\sigma^2 - 1| \le \max(1, r^2/\sigma_{lo}^2 - 1),$$

    the second only when σ is a parameter (``sigma_lower``: a declared lower bound of σ, the θ
    coordinate being PyMC's ``sigma_log__``); the bound returned is the norm of both. The records
    must be clipped to the declared bounds (or be within them by construction) — the bounds are
    public constants, never computed from the confidential data; the same holds for any
    centring or scaling of the data before the model (see docs/penalty.md).
    """
    xb = check_positive(
        x_bound, name="x_bound", fix="Declare the largest row norm ||x||_2 allowed."
    )
    yb = check_positive(y_bound, name="y_bound", fix="Declare the largest |y| allowed.")
    cb = check_positive(
        coef_bound, name="coef_bound", fix="Declare the region ||beta||_2 <= coef_bound."
    )
    r = yb + xb * cb
    if sigma_lower is None:
        s = check_positive(sigma, name="sigma", fix="Pass the known noise sd.")
        return r * xb / s**2
    lo = check_positive(sigma_lower, name="sigma_lower", fix="Declare a lower bound of sigma.")
    return math.hypot(r * xb / lo**2, max(1.0, r * r / lo**2 - 1.0))
