r"""The Metropolis–Hastings accept step, written once for every kernel.

Every sampler of the package differs only in its log acceptance ratio `\log\alpha` — exact
(data augmentation), estimated (pseudo-marginal), averaged (MHAAR) or penalised (penalty MH); the
decision is the same: accept iff `\log u < \log\alpha`, `u \sim U(0, 1)`, and a NaN
ratio rejects (PyMC ``metrop_select``; BlackJAX ``mcmc/proposal.py``).

`accept_prob` and `mh_accept` are the NumPy versions; `nb_accept_prob` is the
numba one the compiled record sweeps inline.
"""

from __future__ import annotations

import math

import numba

__all__ = ["safe_log_alpha", "accept_prob", "mh_accept", "nb_accept_prob"]


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


@numba.njit(cache=True, inline="always")
def nb_accept_prob(log_alpha):
    """Compiled `accept_prob`: ``min(1, exp(log_alpha))``, NaN → 0."""
    if log_alpha != log_alpha:
        return 0.0
    if log_alpha >= 0.0:
        return 1.0
    return math.exp(log_alpha)
