r"""DP penalty Metropolis–Hastings on confidential data (seed 002, Räisä 2020, §3.1; Yıldırım & Ermiş 2019).

The data holder runs MCMC on the confidential records and releases the draws. Each iteration
proposes :math:`\theta'`, computes the per-record log-likelihood ratios
:math:`r_i = \ln p(x_i\mid\theta') - \ln p(x_i\mid\theta)`, clips them to
:math:`\pm L\lVert\theta'-\theta\rVert_2`, and releases

.. math::
    \lambda^* = \sum_i \operatorname{clip}(r_i) + \ln\frac{p(\theta')}{p(\theta)}
                + \ln\frac{q(\theta\mid\theta')}{q(\theta'\mid\theta)} + \xi,\qquad
    \xi \sim \mathcal N(0, \sigma^2),\quad \sigma = \tau\, c(\theta,\theta'),\quad
    c = 2L\lVert\theta'-\theta\rVert_2 ,

then accepts with the penalty probability :math:`\min\{1, \exp(\lambda^* - \sigma^2/2)\}` (Ceperley &
Dewing 1999). Because :math:`\sigma` is symmetric in :math:`(\theta,\theta')`, the chain leaves the
posterior of the *clipped* likelihood invariant — the exact posterior when no ratio is clipped
(the ``dp_clipped_fraction`` stat reports how often clipping bites). Every iteration is a Gaussian
mechanism with noise multiplier :math:`\tau` on :math:`\lambda/c` (sensitivity 1 under substitution
of a record): :mod:`pymc_dp.accounting` composes them (seed 002 Theorems 6–7).

Proposals (seed 002 §3.1): ``"rw"`` full Gaussian random walk; ``"coordinate"`` one uniformly chosen
coordinate; ``"guided"`` one coordinate moved along its current direction by a half-normal step,
the direction kept after an acceptance and flipped after a rejection (a lifted, non-reversible
kernel that leaves :math:`\pi(\theta)\times\text{Uniform}\{\pm1\}^d` invariant). Variants:
subsampling (:mod:`pymc_dp.samplers.penalty_subsampled`), the MALA proposal
(:mod:`pymc_dp.samplers.penalty_mala`) and the DP Barker acceptance test
(:mod:`pymc_dp.samplers.penalty_barker`, ``acceptance="barker"``).

The pure kernel :func:`penalty_kernel` works on any ``target`` with ``loglik(theta, idx=None)``
(per-record vector), ``logprior(theta)`` and ``n``; :class:`PenaltyMH` is the PyMC adapter.

Privacy notes: the released draws (and the accept flags) are private; ``dp_clipped_fraction`` and
``dp_noise_sd`` are *not* privatised — keep them with the curator. The initial point must not
depend on the data, and no other step may touch the confidential data.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numba
import numpy as np
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.metropolis import tune as metropolis_tune

from pymc_dp._checks import check_delta, check_epsilon, check_positive
from pymc_dp.accounting.spent import (
    PrivacyBudgetExceeded,
    epsilon_of_event,
    iteration_event,
    max_iterations,
    run_event,
)
from pymc_dp.samplers.penalty_target import ModelTarget

__all__ = [
    "PenaltyMH",
    "PenaltyState",
    "PenaltyInfo",
    "PenaltyParams",
    "ClippingWarning",
    "penalty_kernel",
    "advance",
    "propose",
    "clipped_sum",
    "clipped_diff_sum",
    "penalty_accept",
]

PROPOSALS = ("rw", "coordinate", "guided", "mala")
ACCEPTANCES = ("penalty", "barker")


class ClippingWarning(UserWarning):
    """More than the tolerated fraction of log-likelihood ratios were clipped."""


class PenaltyState(NamedTuple):
    """Chain state: position, cached per-record log-likelihood, log prior, guided directions.

    ``loglik`` is ``None`` for the subsampled kernel (nothing is cached); ``grad`` holds the
    clipped gradient sum at ``theta`` for DP MALA (``None`` otherwise).
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
    """Kernel parameters: proposal kind and per-coordinate scale, Lipschitz bound L, noise multiplier τ."""

    proposal: str
    scale: np.ndarray
    lipschitz: float
    tau: float


def propose(rng, theta, direction, proposal, scale):
    """Draw a symmetric proposal. Returns ``(theta_new, step, coordinate)``."""
    d = theta.size
    step = np.zeros(d)
    if proposal == "rw":
        step = scale * rng.standard_normal(d)
        j = -1
    elif proposal == "coordinate":
        j = int(rng.integers(d))
        step[j] = scale[j] * rng.standard_normal()
    elif proposal == "guided":
        j = int(rng.integers(d))
        step[j] = direction[j] * scale[j] * abs(rng.standard_normal())
    else:
        raise ValueError(f"proposal must be one of 'rw', 'coordinate', 'guided', got proposal={proposal!r}.")
    return theta + step, step, j


def clipped_sum(r, bound):
    """Sum of ``r`` clipped to ``±bound``, the clipped fraction, and the clipped vector (NaN kept)."""
    rc = np.clip(r, -bound, bound)
    frac = float(np.count_nonzero(np.abs(r) > bound)) / max(r.size, 1)
    return float(rc.sum()), frac, rc


@numba.njit(cache=True)
def clipped_diff_sum(new, old, bound):
    """Σ clip(new_i − old_i, ±bound) and the number clipped, in one pass (a NaN difference gives NaN)."""
    total = 0.0
    count = 0
    for i in range(new.shape[0]):
        r = new[i] - old[i]
        if r > bound:
            r = bound
            count += 1
        elif r < -bound:
            r = -bound
            count += 1
        total += r
    return total, count


def penalty_accept(rng, lam, sigma):
    r"""Add :math:`\mathcal N(0,\sigma^2)` to ``lam`` and run the penalty test.

    Returns ``(accepted, accept_prob, noisy_lambda)``; a NaN ratio rejects (probability 0).
    Always draws exactly two variates so runs stay reproducible.
    """
    noisy = lam + sigma * rng.standard_normal()
    log_a = noisy - 0.5 * sigma * sigma
    log_u = math.log(rng.random())
    if math.isnan(log_a):
        return False, 0.0, noisy
    accepted = bool(log_u < log_a)
    return accepted, (1.0 if log_a >= 0 else math.exp(log_a)), noisy


def advance(state: PenaltyState, accepted, prop, ll_prop, lp_prop, proposal, j) -> PenaltyState:
    """The state after the test: move on acceptance; the guided walk flips coordinate j's direction on rejection."""
    direction = state.direction
    if proposal == "guided" and not accepted:
        direction = direction.copy()
        direction[j] = -direction[j]
    if accepted:
        return PenaltyState(prop, ll_prop, lp_prop, direction, None)
    return state._replace(direction=direction)


def penalty_kernel(rng, state: PenaltyState, target, params: PenaltyParams):
    """One DP-penalty iteration on the full data (seed 002, §3.1). Returns ``(state, info)``."""
    prop, step, j = propose(rng, state.theta, state.direction, params.proposal, params.scale)
    norm = float(np.sqrt(np.dot(step, step)))
    ll_prop = target.loglik(prop)
    lsum, count = clipped_diff_sum(ll_prop, state.loglik, params.lipschitz * norm)
    frac = count / max(ll_prop.size, 1)
    lp_prop = target.logprior(prop)
    c = 2.0 * params.lipschitz * norm
    sigma = params.tau * c
    accepted, p, noisy = penalty_accept(rng, lsum + lp_prop - state.logprior, sigma)
    state = advance(state, accepted, prop, ll_prop, lp_prop, params.proposal, j)
    return state, PenaltyInfo(accepted, p, noisy, sigma, c, frac, j)


# ------------------------------------------------------------------------ PyMC adapter


def _full_then_index(loglik):
    def wrapped(theta, idx=None):
        full = loglik(theta)
        return full if idx is None else full[idx]

    return wrapped


class PenaltyMH(BlockedStep):
    r"""Data holder's DP penalty Metropolis–Hastings step (seed 002 §3.1, §4.1, §4.2).

    Parameters
    ----------
    vars : list, optional
        Continuous free variables to update (default: all of them — any variable left to another
        step would be sampled from the confidential data without privacy).
    lipschitz : float
        L: per-record log-likelihood ratios are clipped to :math:`\pm L\lVert\theta'-\theta\rVert_2`
        (θ in the transformed space of the value variables).
    tau : float
        Noise multiplier: noise standard deviation over the sensitivity of the released ratio.
        Plan it from a budget with :func:`pymc_dp.accounting.penalty_tau`.
    scale : float or array
        Proposal standard deviation (per coordinate); the step size σ_p for ``proposal="mala"``.
    proposal : {"rw", "coordinate", "guided", "mala"}
    observed : list, optional
        Observed variables holding the confidential records (default: all observed variables).
    batch_size : int, optional
        Subsampled penalty (seed 002 §4.1) with batches of this size drawn without replacement.
    temperature : float
        Likelihood tempering T of the subsampled penalty (T = n0 / n in the seed).
    grad_bound, mala_a, total_grad_bound : float
        DP MALA: per-record gradient clipping norm :math:`L_g`, proposal variance factor ``a``
        (variance :math:`a\sigma_p^2`), optional bound :math:`L_S` on the total gradient norm.
    budget : (epsilon, delta), optional
        Stop with :class:`~pymc_dp.accounting.PrivacyBudgetExceeded` before an iteration that
        would exceed it (counted over all chains this object runs in one process).
    accountant : {"pld", "rdp"}
        Accountant for the budget ("rdp" is used for subsampled runs).
    acceptance : {"penalty", "barker"}
        ``"penalty"`` (default): penalty test min{1, exp(λ* − σ²/2)}. ``"barker"``: DP Barker test
        (seed 002 §3.2, :mod:`pymc_dp.samplers.penalty_barker`): the noise is topped up to the fixed
        sd ``barker_sigma`` and a fitted Gaussian-mixture correction makes the test Barker's
        1/(1+e^{−λ}) up to ``barker_error``. Proposals "rw", "coordinate", "guided"; full data only.
    barker_sigma : float
        Total Gaussian noise sd of the Barker test, in [0.1, 1.25]. Proposals whose privacy noise
        τ·2L‖θ′−θ‖ exceeds it are rejected without reading the data (``dp_noise_sd > barker_sigma``).
    clip_warning : float
        Warn (:class:`ClippingWarning`) once per chain when the running clipped fraction exceeds it.
    tune_interval : int
        During tuning, rescale the proposal every ``tune_interval`` iterations from the acceptance
        rate (PyMC ``Metropolis`` rule; 0 disables). The accept flags are private outputs and the
        per-iteration privacy does not depend on the scale, so tuning costs no extra privacy;
        the scale restarts from ``scale`` for each chain. Not applied to ``proposal="mala"``,
        whose step size enters the privacy of the proposal.

    Sampler stats
    -------------
    ``dp_accepted``, ``dp_accept_prob`` (acceptance probability given the noisy ratio), ``dp_clipped_fraction``,
    ``dp_noise_sd``, ``dp_noise_multiplier``, ``dp_grad_noise_multiplier`` (NaN unless MALA),
    ``dp_n_records``, ``dp_batch_size``, ``dp_iterations`` (data-touching iterations of the chain,
    tuning included), ``dp_coordinate``.
    """

    name = "penalty_mh"
    stats_dtypes_shapes = {
        "dp_accepted": (bool, []),
        "dp_accept_prob": (float, []),
        "dp_clipped_fraction": (float, []),
        "dp_noise_sd": (float, []),
        "dp_noise_multiplier": (float, []),
        "dp_grad_noise_multiplier": (float, []),
        "dp_n_records": (int, []),
        "dp_batch_size": (int, []),
        "dp_iterations": (int, []),
        "dp_coordinate": (int, []),
        "tune": (bool, []),
    }
    _state_class = StepMethodState

    def __init__(self, vars=None, *, lipschitz, tau, scale=1.0, proposal="rw", observed=None,
                 batch_size=None, temperature=1.0, grad_bound=None, mala_a=1.0,
                 total_grad_bound=None, budget=None, accountant="pld", clip_warning=0.1,
                 tune_interval=100, acceptance="penalty", barker_sigma=1.0, model=None, rng=None,
                 blocked=True):
        import pymc as pm
        from pymc.util import get_value_vars_from_user_vars

        model = pm.modelcontext(model)
        self.lipschitz = check_positive(
            lipschitz, name="lipschitz",
            fix="L bounds |log p(x|θ') - log p(x|θ)| <= L·||θ' - θ||; pass e.g. lipschitz=5.0.",
        )
        self.tau = check_positive(
            tau, name="tau", fix="tau is the noise multiplier; plan it with pymc_dp.accounting.penalty_tau."
        )
        if proposal not in PROPOSALS:
            raise ValueError(
                f"proposal must be one of {PROPOSALS}, got proposal={proposal!r}. "
                "Use 'rw' (full random walk), 'coordinate', 'guided' or 'mala'."
            )
        self.proposal = proposal
        if acceptance not in ACCEPTANCES:
            raise ValueError(
                f"acceptance must be one of {ACCEPTANCES}, got acceptance={acceptance!r}. "
                "Use 'penalty' (default) or 'barker' (DP Barker test, seed 002 §3.2)."
            )
        self.acceptance = acceptance
        self.barker_correction = None
        self.barker_error = None
        if acceptance == "barker":
            if proposal == "mala" or batch_size is not None:
                raise ValueError(
                    f"acceptance='barker' supports proposal='rw', 'coordinate' or 'guided' on the full "
                    f"data, got proposal={proposal!r}, batch_size={batch_size!r}. Use "
                    "acceptance='penalty' for DP MALA or subsampling."
                )
            from pymc_dp.samplers.penalty_barker import check_sigma, fit_correction

            self.barker_correction = fit_correction(check_sigma(barker_sigma))
            self.barker_error = self.barker_correction.error
        self.temperature = check_positive(temperature, name="temperature", fix="Use 1.0 for no tempering.")
        value_vars = model.value_vars if vars is None else get_value_vars_from_user_vars(vars, model)
        for v in value_vars:
            if v.dtype.startswith("int") or v.dtype.startswith("uint") or v.dtype == "bool":
                raise ValueError(
                    f"PenaltyMH updates continuous variables only, got discrete {v.name!r}. "
                    "Pass the continuous parameters in vars=."
                )
        if vars is not None and len(value_vars) < len(model.value_vars):
            warnings.warn(
                "PenaltyMH updates only some free variables; the steps of the others see the "
                "confidential data without privacy and are not in privacy_spent.",
                UserWarning, stacklevel=2,
            )
        self.vars = list(value_vars)
        scale_in = np.asarray(scale, dtype=np.float64)
        if not np.all(np.isfinite(scale_in)) or np.any(scale_in <= 0):
            raise ValueError(
                f"scale must be finite and > 0 in every coordinate, got scale={scale_in.tolist()!r}. "
                "A zero proposal scale never moves the chain; pass e.g. scale=0.1."
            )
        if budget is not None:
            eps, delta = budget
            self.budget = (check_epsilon(eps, name="budget epsilon"), check_delta(delta, name="budget delta"))
        if proposal == "mala" and scale_in.size != 1:
            raise ValueError(
                f"proposal='mala' takes one step size, got scale={scale_in.tolist()!r}. "
                "Pass a scalar scale (sigma_p); the proposal variance is mala_a * scale**2."
            )
        if proposal == "mala" and grad_bound is None:
            raise ValueError(
                "proposal='mala' needs grad_bound (L_g, the per-record gradient clipping norm), "
                "got grad_bound=None. Pass e.g. grad_bound=5.0."
            )
        self.target = ModelTarget(model, self.vars, observed, need_grad=proposal == "mala")
        self.n = self.target.n
        if batch_size is not None and not (isinstance(batch_size, int | np.integer) and 2 <= batch_size <= self.n):
            raise ValueError(
                f"batch_size must be an integer in [2, n={self.n}], got batch_size={batch_size!r}. "
                "A batch cannot be larger than the data; use batch_size=None for the full data."
            )
        self.target.compile()
        start = model.initial_point()
        self.target.set_point(start)
        self.d = self.target.theta_of(start).size
        self.scale = np.broadcast_to(scale_in, (self.d,)).copy()
        self.batch_size = None
        if batch_size is not None:
            if proposal == "mala":
                raise ValueError("batch_size is not supported with proposal='mala'; pass batch_size=None.")
            self.batch_size = int(batch_size)
            if not self.target.batch_ok():
                self.target.loglik = _full_then_index(self.target.loglik)
                warnings.warn(
                    "the likelihood depends on per-record constants besides the observed data, so "
                    "each batch is evaluated on the full data and indexed (O(n) per iteration).",
                    UserWarning, stacklevel=2,
                )
        self.grad_noise_multiplier = None
        if proposal == "mala":
            from pymc_dp.samplers.penalty_mala import MalaParams

            self.mala = MalaParams(
                float(self.scale[0]), check_positive(grad_bound, name="grad_bound"),
                check_positive(mala_a, name="mala_a", fix="Use mala_a=1.0 for the standard MALA variance."),
                None if total_grad_bound is None else check_positive(total_grad_bound, name="total_grad_bound"),
            )
            self.grad_noise_multiplier = math.sqrt(self.mala.a) / (self.mala.step_size * self.mala.grad_bound)
        self.params = PenaltyParams(proposal, self.scale, self.lipschitz, self.tau)
        self.accountant = "rdp" if self.batch_size is not None else accountant
        self.max_iterations = None
        if budget is not None:
            eps, delta = self.budget
            self.max_iterations = max_iterations(self.iteration_event(), eps, delta, accountant=self.accountant)
        self.clip_warning = float(clip_warning)
        if not (isinstance(tune_interval, int | np.integer) and tune_interval >= 0):
            raise ValueError(
                f"tune_interval must be an integer >= 0, got tune_interval={tune_interval!r}. "
                "Use 0 to keep the proposal scale fixed."
            )
        self.tune_interval = 0 if proposal == "mala" else int(tune_interval)
        self._scale0 = self.scale.copy()
        self.total_iterations = 0
        self.chains_started = 0
        self.tune = True
        self._state = None
        self.set_rng(rng)

    # --------------------------------------------------------------- accounting
    def iteration_event(self):
        """dp_accounting event of one iteration of this step."""
        return iteration_event(self.tau, grad_noise_multiplier=self.grad_noise_multiplier,
                               n_records=self.n, batch_size=self.batch_size)

    def dp_event(self):
        """Event of every iteration this object ran in this process (all chains)."""
        return run_event(self.iteration_event(), self.total_iterations)

    def epsilon_spent(self, delta, accountant=None):
        return epsilon_of_event(self.dp_event(), delta, accountant=accountant or self.accountant)

    # --------------------------------------------------------------- PyMC plumbing
    def set_rng(self, rng):  # PyMC <= 6.2, once per chain
        from pymc.util import get_random_generator

        self.rng = get_random_generator(rng, copy=False)
        self._state = None
        self._chain_iters = 0
        self._chain_clipped = 0.0
        self._warned = False
        self._window_acc = 0
        self.tune = True  # PyMC 5 sets .tune on the top-level step only; stop_tuning() clears it
        if hasattr(self, "_scale0"):
            self.scale = self._scale0.copy()
            self.params = self.params._replace(scale=self.scale)
        self.chains_started += 1

    def setup_chain(self, rng, tune, draws):  # PyMC >= 6.3
        self.set_rng(rng)
        self.tune = tune > 0
        if self.max_iterations is not None and self.total_iterations + tune + draws > self.max_iterations:
            raise PrivacyBudgetExceeded(self._budget_message(tune + draws))

    def _budget_message(self, wanted):
        eps, delta = self.budget
        return (
            f"privacy budget exceeded: budget=(epsilon={eps}, delta={delta}) allows "
            f"{self.max_iterations} PenaltyMH iterations, {self.total_iterations} already ran and "
            f"{wanted} more were requested. Raise tau, lower tune+draws, or declare a larger budget."
        )

    def _fresh_state(self, point):
        t = self.target
        theta = t.theta_of(point)
        direction = np.ones(self.d)
        if self._state is not None and self._state.direction.size == self.d:
            direction = self._state.direction
        else:
            direction = np.where(self.rng.random(self.d) < 0.5, -1.0, 1.0)
        grad = None
        if self.proposal == "mala":
            from pymc_dp.samplers.penalty_mala import clipped_grad_sum

            ll, g = t.loglik_grad(theta)
            grad = clipped_grad_sum(g, self.mala.grad_bound)
        else:
            ll = None if self.batch_size is not None else t.loglik(theta)
        return PenaltyState(theta, ll, t.logprior(theta), direction, grad)

    def step(self, point):
        if self.max_iterations is not None and self.total_iterations >= self.max_iterations:
            raise PrivacyBudgetExceeded(self._budget_message(1))
        t = self.target
        changed = t.set_point(point)
        st = self._state
        if st is None or changed or not np.array_equal(st.theta, t.theta_of(point)):
            st = self._fresh_state(point)
        if self.proposal == "mala":
            from pymc_dp.samplers.penalty_mala import mala_kernel

            st, info = mala_kernel(self.rng, st, t, self.params, self.mala)
        elif self.acceptance == "barker":
            from pymc_dp.samplers.penalty_barker import barker_kernel

            st, info = barker_kernel(self.rng, st, t, self.params, self.barker_correction)
        elif self.batch_size is not None:
            from pymc_dp.samplers.penalty_subsampled import subsampled_kernel

            st, info = subsampled_kernel(self.rng, st, t, self.params, self.batch_size, self.temperature)
        else:
            st, info = penalty_kernel(self.rng, st, t, self.params)
        self._state = st
        self.total_iterations += 1
        self._chain_iters += 1
        self._chain_clipped += info.clipped_fraction
        self._maybe_warn()
        self._maybe_tune(info.accepted)
        stats = {
            "dp_accepted": bool(info.accepted),
            "dp_accept_prob": float(info.accept_prob),
            "dp_clipped_fraction": float(info.clipped_fraction),
            "dp_noise_sd": float(info.noise_sd),
            "dp_noise_multiplier": self.tau,
            "dp_grad_noise_multiplier": (
                math.nan if self.grad_noise_multiplier is None else self.grad_noise_multiplier
            ),
            "dp_n_records": self.n,
            "dp_batch_size": self.n if self.batch_size is None else self.batch_size,
            "dp_iterations": self._chain_iters,
            "dp_coordinate": int(info.coordinate),
            "tune": bool(self.tune),
        }
        new = {k: np.asarray(v).copy() for k, v in t.point_of(st.theta).items()}
        return {**point, **new}, [stats]

    def _maybe_tune(self, accepted):
        if not (self.tune and self.tune_interval):
            return
        self._window_acc += bool(accepted)
        if self._chain_iters % self.tune_interval:
            return
        rate = self._window_acc / self.tune_interval
        self.scale = np.asarray(metropolis_tune(self.scale, rate), dtype=float)  # PyMC Metropolis rule
        self.params = self.params._replace(scale=self.scale)
        self._window_acc = 0

    def _maybe_warn(self):
        if self._warned or self._chain_iters < 50:
            return
        frac = self._chain_clipped / self._chain_iters
        if frac > self.clip_warning:
            self._warned = True
            warnings.warn(
                f"PenaltyMH clipped {frac:.1%} of the per-record log-likelihood ratios over "
                f"{self._chain_iters} iterations (threshold clip_warning={self.clip_warning}). The "
                "chain targets the clipped posterior, not the exact one; raise lipschitz "
                "(more noise per iteration) or shrink the proposal scale.",
                ClippingWarning, stacklevel=2,
            )

    @staticmethod
    def competence(var, has_grad):
        return Competence.INCOMPATIBLE
