r"""The DP penalty kernel, written once: a pluggable proposal and a pluggable acceptance test.

Every member of the penalty family (seed 002, Räisä 2020, §3–4) runs the same iteration:

1. **propose** `\theta'` (a `Proposal`: random walk, one coordinate, guided walk, or
   the privatised Langevin proposal of `pymc_dp.samplers.penalty.mala`);
2. **bound** the sensitivity `c` of the released log ratio under substitution of one record
   (the acceptance test's share plus the proposal's share, `0` for symmetric proposals) and
   set the noise sd `\sigma = z\,c` from the noise multiplier `z` (PenaltyMH's ``tau``);
3. **estimate** the log ratio from the data, each per-record ratio
   `r_i = \ln p(x_i\mid\theta') - \ln p(x_i\mid\theta)` clipped to
   `\pm L\lVert\theta'-\theta\rVert_2`: the full-data sum (the proposal's values are cached)
   or a batch estimate with the CLT variance correction (`pymc_dp.samplers.penalty.subsampled`);
4. **test**: add `\mathcal N(0,\sigma^2)` and decide — the penalty test (`PenaltyTest`,
   accept iff `\log u < \lambda^* - \sigma^2/2`, Ceperley & Dewing 1999, via
   `pymc_dp.samplers.accept`) or the corrected Barker test
   (`pymc_dp.samplers.penalty.barker`);
5. **advance**: move on acceptance; the guided walk flips the coordinate's direction on rejection.

Tempering: with ``temperature`` `T` the target is
`p(\theta)\prod_i p(x_i\mid\theta)^T` and the released ratio is
`\lambda = T\sum_i \operatorname{clip}(r_i) + \ln\frac{p(\theta')}{p(\theta)} + \ln\frac{q(\theta\mid\theta')}{q(\theta'\mid\theta)}`,
whose sensitivity under substitution of one record is `c = 2TL\lVert\theta'-\theta\rVert_2`
(one clipped ratio of width `2L\lVert\theta'-\theta\rVert_2` changes, scaled by `T`).
The noise sd `\sigma = z c` scales with it, so each iteration stays a Gaussian mechanism with
noise multiplier `z` whatever `T` — the accounting does not change.

Shape (BlackJAX): `penalty_init` builds the `PenaltyState`;
``penalty_kernel(rng, state, target, params) -> (state, info)`` with ``target`` any object with
``loglik(theta, idx=None)`` (per-record vector), ``logprior(theta)`` and ``n`` (and
``loglik_grad`` for MALA). Dependencies point one way: this module imports no other penalty module;
the Barker, MALA and subsampled modules import it, and `pymc_dp.samplers.penalty.step` (the
PyMC adapter) imports them all.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numba
import numpy as np

from pymc_dp.samplers.accept import mh_accept

__all__ = [
    "PROPOSALS",
    "AcceptanceTest",
    "CoordinateWalk",
    "GuidedWalk",
    "Move",
    "PenaltyInfo",
    "PenaltyParams",
    "PenaltyState",
    "PenaltyTest",
    "Proposal",
    "RandomWalk",
    "advance",
    "clip_ratios",
    "clipped_diff_sum",
    "clipped_sum",
    "penalty_accept",
    "penalty_init",
    "penalty_kernel",
    "propose",
]


class PenaltyState(NamedTuple):
    """Chain state: position, cached per-record log-likelihood, log prior, guided directions.

    ``loglik`` is ``None`` for the subsampled test (nothing is cached); ``grad`` holds the clipped
    gradient sum at ``theta`` for DP MALA (``None`` otherwise).
    """

    theta: np.ndarray
    loglik: np.ndarray | None
    logprior: float
    direction: np.ndarray
    grad: np.ndarray | None = None


class PenaltyInfo(NamedTuple):
    """What one iteration did. ``log_ratio`` is the released noisy λ*; ``coordinate`` is -1 for full moves."""

    accepted: bool
    accept_prob: float
    log_ratio: float
    noise_sd: float
    sensitivity: float
    clipped_fraction: float
    coordinate: int


class PenaltyParams(NamedTuple):
    """Kernel parameters.

    ``proposal`` is a `Proposal` or one of the names ``"rw"``, ``"coordinate"``,
    ``"guided"``; ``scale`` the per-coordinate proposal sd; ``lipschitz`` the clip bound L;
    ``noise_multiplier`` z (noise sd over sensitivity; ``tau`` of `PenaltyMH`);
    ``acceptance`` an `AcceptanceTest` (default: the penalty test on the full data);
    ``temperature`` T of the tempered likelihood.
    """

    proposal: Any
    scale: np.ndarray
    lipschitz: float
    noise_multiplier: float
    acceptance: Any = None
    temperature: float = 1.0


class Move(NamedTuple):
    """A proposed move: the new position, its distance ‖θ'−θ‖₂ and the coordinate moved (-1: all)."""

    theta: np.ndarray
    norm: float
    coordinate: int


# ----------------------------------------------------------------------------- proposals


class Proposal:
    """A proposal of the penalty kernel. Subclasses override `draw`; the rest defaults to a
    symmetric proposal that reads the log-likelihood only (no gradient)."""

    name = "?"

    def draw(self, rng, state: PenaltyState, params: PenaltyParams) -> Move:
        raise NotImplementedError

    def evaluate(self, target, theta):
        """Per-record log-likelihood at ``theta`` and the proposal's cache (``grad`` of the state)."""
        return target.loglik(theta), None

    def q_sensitivity(self, params: PenaltyParams, move: Move, n: int) -> float:
        """Sensitivity of `\\ln q(\\theta|\\theta')/q(\\theta'|\\theta)` (0: data-free)."""
        return 0.0

    def log_q_ratio(self, state: PenaltyState, move: Move, cache) -> float:
        return 0.0

    def direction_after(self, direction, accepted, coordinate):
        return direction


class RandomWalk(Proposal):
    """Full Gaussian random walk, `\\theta' = \\theta + s\\odot\\xi`."""

    name = "rw"

    def draw(self, rng, state, params):
        step = params.scale * rng.standard_normal(state.theta.size)
        return Move(state.theta + step, float(np.sqrt(np.dot(step, step))), -1)


class CoordinateWalk(Proposal):
    """One uniformly chosen coordinate moved by `s_j\\xi`."""

    name = "coordinate"

    def draw(self, rng, state, params):
        j = int(rng.integers(state.theta.size))
        delta = params.scale[j] * rng.standard_normal()
        theta = state.theta.copy()
        theta[j] += delta
        return Move(theta, abs(float(delta)), j)


class GuidedWalk(Proposal):
    """One coordinate moved along its direction by a half-normal step; the direction is kept after
    an acceptance and flipped after a rejection (lifted kernel leaving
    `\\pi(\\theta)\\times\\mathrm{Uniform}\\{\\pm1\\}^d` invariant)."""

    name = "guided"

    def draw(self, rng, state, params):
        j = int(rng.integers(state.theta.size))
        delta = state.direction[j] * params.scale[j] * abs(rng.standard_normal())
        theta = state.theta.copy()
        theta[j] += delta
        return Move(theta, abs(float(delta)), j)

    def direction_after(self, direction, accepted, coordinate):
        if accepted:
            return direction
        direction = direction.copy()
        direction[coordinate] = -direction[coordinate]
        return direction


PROPOSALS = {p.name: p for p in (RandomWalk(), CoordinateWalk(), GuidedWalk())}


def _proposal(proposal) -> Proposal:
    if isinstance(proposal, Proposal):
        return proposal
    try:
        return PROPOSALS[proposal]
    except (KeyError, TypeError):
        raise ValueError(
            f"proposal must be one of {tuple(PROPOSALS)} or a Proposal object, got proposal={proposal!r}. "
            "For DP MALA pass a pymc_dp.samplers.penalty.mala.MalaProposal."
        ) from None


def propose(rng, theta, direction, proposal, scale):
    """Draw a symmetric proposal by name. Returns ``(theta_new, step, coordinate)``."""
    state = PenaltyState(np.asarray(theta, dtype=float), None, 0.0, direction)
    move = _proposal(proposal).draw(rng, state, PenaltyParams(proposal, scale, 1.0, 1.0))
    return move.theta, move.theta - state.theta, move.coordinate


# ------------------------------------------------------------------------- clipping


def clip_ratios(r, bound):
    r"""Per-record log-likelihood ratios clipped to $[-b, b]$, non-finite ones included.

    The clipping rule (one rule for every ratio, so that each record's contribution to the
    released sum lies in $[-b, b]$ and the sensitivity $2b$ holds for every model):

    * a finite $r_i$ becomes $\min(b, \max(-b, r_i))$;
    * $+\infty$ (record impossible at θ, possible at θ′) becomes $+b$, and
      $-\infty$ (possible at θ, impossible at θ′) becomes $-b$ — the limits of the
      finite rule;
    * NaN ($(-\infty)-(-\infty)$: the record is impossible at both θ and θ′, e.g. outside a
      θ-dependent support; or $\infty-\infty$) becomes $0$. Any value in
      $[-b, b]$ keeps the privacy bound; $0$ is the only one that also keeps the ratio
      antisymmetric, $\operatorname{clip}(r(\theta,\theta')) = -\operatorname{clip}(r(\theta',\theta))$
      (the NaN case is symmetric in θ, θ′), which the penalty test needs for its balance
      $a(\theta,\theta')/a(\theta',\theta) = e^{\lambda}$.

    Returns the clipped vector and the number of records whose ratio was changed (non-finite
    ones count as clipped).
    """
    r = np.asarray(r, dtype=np.float64)
    rc = np.clip(np.where(np.isnan(r), 0.0, r), -bound, bound)
    count = int(np.count_nonzero(~(np.abs(r) <= bound)))  # NaN and ±inf compare False
    return rc, count


def clipped_sum(r, bound):
    """Sum of ``r`` clipped to ``±bound`` (rule of `clip_ratios`), the clipped fraction, the clipped vector."""
    rc, count = clip_ratios(r, bound)
    return float(rc.sum()), count / max(rc.size, 1), rc


@numba.njit(cache=True)
def clipped_diff_sum(new, old, bound):
    """Σ clip(new_i − old_i, ±bound) and the number clipped, in one pass.

    Non-finite differences follow `clip_ratios`: ±inf → ±bound, NaN (−inf − (−inf), a record
    impossible at both points) → 0; all of them count as clipped.
    """
    total = 0.0
    count = 0
    for i in range(new.shape[0]):
        r = new[i] - old[i]
        if np.isnan(r):  # NaN (both points impossible)
            r = 0.0
            count += 1
        elif r > bound:
            r = bound
            count += 1
        elif r < -bound:
            r = -bound
            count += 1
        total += r
    return total, count


# ------------------------------------------------------------------- acceptance tests


def penalty_accept(rng, lam, sigma):
    r"""Release `\lambda^* = \lambda + \mathcal N(0,\sigma^2)` and run the penalty test.

    Accept iff `\log u < \lambda^* - \sigma^2/2` (the MH decision of
    `pymc_dp.samplers.accept.mh_accept`; a NaN ratio rejects). Returns
    ``(accepted, accept_prob, noisy_lambda)``; always draws exactly two variates (normal, uniform).
    """
    noisy = lam + sigma * rng.standard_normal()
    accepted, prob = mh_accept(rng, noisy - 0.5 * sigma * sigma)
    return accepted, prob, noisy


class AcceptanceTest:
    """How the log ratio is estimated from the data and tested. The default (`PenaltyTest`)
    sums every clipped per-record ratio, caching the proposal's values, and runs the penalty test."""

    name = "?"
    caches_loglik = True  # the state carries the per-record log-likelihood at theta

    def sensitivity(self, params: PenaltyParams, norm: float, n: int) -> float:
        """Sensitivity of the data part of λ: `2TL\\lVert\\theta'-\\theta\\rVert_2`."""
        return 2.0 * params.temperature * params.lipschitz * norm

    def releasable(self, sigma: float) -> bool:
        """False if the iteration must be rejected without reading the data."""
        return True

    def estimate(self, rng, state, target, move, proposal, params):
        """Returns ``(T·Σ clip(r_i), clipped fraction, loglik at θ', proposal cache)``."""
        ll_prop, cache = proposal.evaluate(target, move.theta)
        lsum, count = clipped_diff_sum(ll_prop, state.loglik, params.lipschitz * move.norm)
        return params.temperature * lsum, count / max(ll_prop.size, 1), ll_prop, cache

    def decide(self, rng, lam, sigma):
        return penalty_accept(rng, lam, sigma)


class PenaltyTest(AcceptanceTest):
    """The standard DP penalty test on the full data (seed 002 §3.1)."""

    name = "penalty"


_PENALTY = PenaltyTest()


# ------------------------------------------------------------------------------ kernel


def penalty_init(target, theta, params: PenaltyParams, direction=None) -> PenaltyState:
    """The state at ``theta``: cached log-likelihood (unless the test subsamples), log prior,
    proposal cache, and the guided directions (``+1`` everywhere unless given)."""
    theta = np.asarray(theta, dtype=np.float64)
    proposal = _proposal(params.proposal)
    test = params.acceptance or _PENALTY
    ll, cache = proposal.evaluate(target, theta) if test.caches_loglik else (None, None)
    direction = np.ones(theta.size) if direction is None else np.asarray(direction, dtype=float)
    return PenaltyState(theta, ll, target.logprior(theta), direction, cache)


def advance(
    state: PenaltyState, accepted, proposal, move: Move, ll_prop, lp_prop, cache
) -> PenaltyState:
    """The state after the test: the proposal on acceptance; the proposal's direction update always."""
    direction = proposal.direction_after(state.direction, accepted, move.coordinate)
    if accepted:
        return PenaltyState(move.theta, ll_prop, lp_prop, direction, cache)
    return state if direction is state.direction else state._replace(direction=direction)


def penalty_kernel(rng, state: PenaltyState, target, params: PenaltyParams):
    """One iteration of the penalty family (see the module docstring). Returns ``(state, info)``."""
    proposal = _proposal(params.proposal)
    test = params.acceptance or _PENALTY
    move = proposal.draw(rng, state, params)
    c = test.sensitivity(params, move.norm, target.n) + proposal.q_sensitivity(
        params, move, target.n
    )
    sigma = params.noise_multiplier * c
    if not test.releasable(sigma):  # reject without reading the data
        state = advance(state, False, proposal, move, None, None, None)
        return state, PenaltyInfo(False, 0.0, math.nan, sigma, c, 0.0, move.coordinate)
    lam, frac, ll_prop, cache = test.estimate(rng, state, target, move, proposal, params)
    lp_prop = target.logprior(move.theta)
    lam = lam + lp_prop - state.logprior + proposal.log_q_ratio(state, move, cache)
    accepted, p, noisy = test.decide(rng, lam, sigma)
    state = advance(state, accepted, proposal, move, ll_prop, lp_prop, cache)
    return state, PenaltyInfo(accepted, p, noisy, sigma, c, frac, move.coordinate)
