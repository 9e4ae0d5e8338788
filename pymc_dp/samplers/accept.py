r"""The Metropolis–Hastings accept step of the samplers' NumPy kernels.

The MH samplers differ in their log acceptance ratio `\log\alpha` — exact (data augmentation),
estimated (pseudo-marginal), averaged (MHAAR), collapsed (`Collapsed`) or penalised (penalty MH);
the decision is the same: accept iff `\log u < \log\alpha`, `u \sim U(0, 1)`, and a NaN
ratio rejects (PyMC ``metrop_select``; BlackJAX ``mcmc/proposal.py``).

The compiled record sweeps (`augmentation`, `counts_sweep`, `cells`) make the same decision
inline in numba as ``log α + E ≥ 0`` with ``E = -log u`` standard exponential (augmentation draws
all ``E`` in one call, the others only when ``log α < 0``); a NaN ratio fails the comparison and
rejects. The regression stack and `pymc_dp.fisher`'s inner random-walk Metropolis write their own
vectorised comparison ``log u < log α`` (docs/architecture.md).
"""

from __future__ import annotations

import math

__all__ = ["safe_log_alpha", "accept_prob", "mh_accept"]


def safe_log_alpha(log_alpha) -> float:
    """``log_alpha`` as a float, NaN mapped to ``-inf`` (a NaN ratio rejects)."""
    value = float(log_alpha)
    return -math.inf if math.isnan(value) else value


def accept_prob(log_alpha) -> float:
    """``min(1, exp(log_alpha))``, with NaN giving 0."""
    value = safe_log_alpha(log_alpha)
    return 1.0 if value >= 0.0 else math.exp(value)


def mh_accept(rng, log_alpha) -> tuple[bool, float]:
    """Draw the MH decision: ``(accepted, min(1, α))``; uses one uniform from ``rng``."""
    value = safe_log_alpha(log_alpha)
    prob = 1.0 if value >= 0.0 else math.exp(value)
    return bool(rng.random() < prob), prob
