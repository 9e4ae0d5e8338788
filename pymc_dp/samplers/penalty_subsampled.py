r"""Subsampled DP penalty (seed 002, Räisä 2020, §4.1, Lemma 1 and Theorem 9).

Each iteration draws a batch :math:`B` of :math:`b` records without replacement, clips the ratios
:math:`r_j` to :math:`\pm L\lVert\theta'-\theta\rVert_2` and forms

.. math::
    \hat\lambda = \frac{nT}{b}\sum_{j\in B} r_j + \ln\frac{p(\theta')}{p(\theta)},\qquad
    \sigma_b^2 = \Big(\frac{nT}{b}\Big)^2\Big(\sum_{j\in B} r_j^2 - \frac{R^2}{b}\Big),\ R = \sum_{j\in B} r_j .

It releases :math:`V = \hat\lambda - \tfrac12\sigma_b^2 + \mathcal N(0, \sigma^2)` with
:math:`\sigma = \tau c`, :math:`c = \Delta_\lambda + \Delta_\sigma` (Lemma 1, Theorem 9), and accepts
with probability :math:`\min\{1, \exp(V - \sigma^2/2)\}`, i.e.
:math:`\min\{1, e^{\lambda^* - (\sigma^2 + \sigma_b^2)/2}\}`. By the CLT the subsampling error of
:math:`\hat\lambda` is approximately :math:`\mathcal N(0, \sigma_b^2)`, so the penalty corrects it
approximately (the target is exact only in the CLT limit). Cost O(b) per iteration. Privacy:
subsampled Gaussian mechanism, composed by the RDP accountant with
``SampledWithoutReplacementDpEvent`` (Theorem 9 is the closed form).
"""

from __future__ import annotations

import numpy as np

from pymc_dp.accounting.penalty_bounds import subsampled_sensitivity
from pymc_dp.samplers.penalty import PenaltyInfo, PenaltyState, advance, clipped_sum, penalty_accept, propose

__all__ = ["subsampled_kernel", "batch_log_ratio"]


def batch_log_ratio(r_clipped, n, temperature=1.0):
    r"""Scaled batch sum :math:`\frac{nT}{b}R` and the CLT variance :math:`\sigma_b^2` of the seed's §4.1."""
    b = r_clipped.size
    f = n * temperature / b
    R = float(r_clipped.sum())
    var = f * f * max(float(np.dot(r_clipped, r_clipped)) - R * R / b, 0.0)
    return f * R, var


def subsampled_kernel(rng, state: PenaltyState, target, params, batch_size, temperature=1.0):
    """One subsampled-penalty iteration. Returns ``(state, info)``; ``state.loglik`` stays ``None``."""
    n = target.n
    prop, step, j = propose(rng, state.theta, state.direction, params.proposal, params.scale)
    idx = rng.choice(n, size=batch_size, replace=False)
    norm = float(np.sqrt(np.dot(step, step)))
    r = target.loglik(prop, idx) - target.loglik(state.theta, idx)
    _, frac, rc = clipped_sum(r, params.lipschitz * norm)
    lam_hat, var_b = batch_log_ratio(rc, n, temperature)
    lp_prop = target.logprior(prop)
    _, _, c = subsampled_sensitivity(n, batch_size, params.lipschitz, norm, temperature=temperature)
    c = float(c)
    sigma = params.tau * c
    accepted, p, noisy = penalty_accept(rng, lam_hat - 0.5 * var_b + lp_prop - state.logprior, sigma)
    state = advance(state, accepted, prop, None, lp_prop, params.proposal, j)
    return state, PenaltyInfo(accepted, p, noisy, sigma, c, frac, j)
