r"""DP MALA: the penalty algorithm with a privatised Langevin proposal (seed 002, Räisä 2020, §4.2).

With per-record gradients clipped to norm :math:`L_g`, :math:`g(\theta) = \sum_i
\operatorname{clip}_{L_g}(\nabla\ln p(x_i\mid\theta))`, the proposal

.. math:: \theta' \sim \mathcal N\big(\theta + \tfrac12\sigma_p^2 g(\theta),\ a\sigma_p^2 I\big)

is a Gaussian mechanism on the drift (Lemma 2: :math:`\rho_g = \sigma_p^2 L_g^2/(2a)`, noise
multiplier :math:`\sqrt a/(\sigma_p L_g)`). The log ratio

.. math::
    \lambda = \sum_i \operatorname{clip}(r_i) + \ln\frac{p(\theta')}{p(\theta)}
              + \ln\frac{q(\theta\mid\theta')}{q(\theta'\mid\theta)}

has sensitivity :math:`c_l` of :func:`pymc_dp.accounting.mala_sensitivity` (the seed's bound,
with :math:`L_S` when given) and is released with noise :math:`\tau c_l` (Lemma 3:
:math:`\rho_l = 1/(2\tau^2)`); acceptance is the penalty test. The drift is a deterministic
function of θ and the data, so the chain is an exact MH chain for the clipped-likelihood
posterior; gradient clipping changes only efficiency. Accounting: Theorem 10 (zCDP) or the
composition of both Gaussian events in ``dp_accounting``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pymc_dp.accounting.penalty_bounds import mala_sensitivity
from pymc_dp.samplers.penalty import PenaltyInfo, PenaltyState, clipped_diff_sum, penalty_accept

__all__ = ["MalaParams", "mala_kernel", "clipped_grad_sum", "log_q"]


class MalaParams(NamedTuple):
    """σ_p (step size), L_g (per-record gradient norm bound), a (variance factor), L_S (optional)."""

    step_size: float
    grad_bound: float
    a: float
    total_grad_bound: float | None


def clipped_grad_sum(per_record_grad, bound):
    """Sum over records of gradients rescaled to norm ≤ ``bound`` (rows of an (n, d) array)."""
    norms = np.sqrt(np.einsum("ij,ij->i", per_record_grad, per_record_grad))
    factor = np.minimum(1.0, bound / np.maximum(norms, 1e-300))
    return factor @ per_record_grad


def log_q(to, frm, grad_frm, mala: MalaParams):
    """Log density (up to a constant) of the MALA proposal ``to`` given ``frm``."""
    s2 = mala.step_size**2
    diff = to - frm - 0.5 * s2 * grad_frm
    return -float(np.dot(diff, diff)) / (2.0 * mala.a * s2)


def mala_kernel(rng, state: PenaltyState, target, params, mala: MalaParams):
    """One DP-MALA iteration (seed 002, Algorithm 3). ``state.grad`` caches g(θ)."""
    theta = state.theta
    s = mala.step_size
    prop = theta + 0.5 * s * s * state.grad + np.sqrt(mala.a) * s * rng.standard_normal(theta.size)
    step = prop - theta
    norm = float(np.sqrt(np.dot(step, step)))
    ll_prop, g_rec = target.loglik_grad(prop)
    g_prop = clipped_grad_sum(g_rec, mala.grad_bound)
    lsum, count = clipped_diff_sum(ll_prop, state.loglik, params.lipschitz * norm)
    frac = count / max(ll_prop.size, 1)
    lp_prop = target.logprior(prop)
    lq = log_q(theta, prop, g_prop, mala) - log_q(prop, theta, state.grad, mala)
    c = float(mala_sensitivity(params.lipschitz, mala.grad_bound, norm, s, mala.a, target.n,
                               total_grad_bound=mala.total_grad_bound))
    sigma = params.tau * c
    accepted, p, noisy = penalty_accept(rng, lsum + lp_prop - state.logprior + lq, sigma)
    if accepted:
        state = PenaltyState(prop, ll_prop, lp_prop, state.direction, g_prop)
    return state, PenaltyInfo(accepted, p, noisy, sigma, c, frac, -1)
