r"""Pure helpers of the particle estimates of PMMH and MHAAR: resampling, log-mean-exp and the
(possibly factorised) estimate `\log\hat Z`.

A factorised estimate has log weights ``(N, B)``: B independently estimated factors (records of
local releases, or independent record groups), `\hat Z = \prod_b \frac1N\sum_j w_{jb}`.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["sample_indices", "logsumexp0", "log_mean_exp", "estimate_log_lik", "pick_particle"]


# ----------------------------------------------------------------------------------------------
def sample_indices(rng: np.random.Generator, log_w: np.ndarray) -> np.ndarray:
    """One index per column of ``log_w`` (N, B), with probability ∝ ``exp(log_w[:, b])``.

    A column without a finite weight returns index 0 (the current particle).
    """
    log_w = np.where(np.isnan(log_w), -np.inf, log_w)
    top = log_w.max(axis=0)
    ok = np.isfinite(top)
    p = np.exp(log_w - np.where(ok, top, 0.0)[None, :])
    p[:, ~ok] = 0.0
    p[0, ~ok] = 1.0
    c = np.cumsum(p, axis=0)
    u = rng.random(log_w.shape[1]) * c[-1]
    return np.minimum((c < u[None, :]).sum(axis=0), log_w.shape[0] - 1)


def logsumexp0(a: np.ndarray):
    """``log Σ exp(a)`` over axis 0; NaN counts as ``-inf``, an all ``-inf`` column gives ``-inf``."""
    a = np.where(np.isnan(a), -np.inf, a)
    top = a.max(axis=0)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(a - safe).sum(axis=0)) + safe


def log_mean_exp(log_w: np.ndarray):
    """``log((1/N) Σ exp(log_w))`` over axis 0."""
    return logsumexp0(log_w) - math.log(log_w.shape[0])


def estimate_log_lik(log_w) -> float:
    r"""Log of the particle estimate: `\log\frac1N\sum_j w_j` for ``log_w`` (N,), or the
    factorised `\sum_b \log\frac1N\sum_j w_{jb}` for ``log_w`` (N, B)."""
    log_w = np.asarray(log_w, dtype=float)
    return float(np.sum(log_mean_exp(log_w))) if log_w.ndim == 2 else float(log_mean_exp(log_w))


def pick_particle(rng, log_w, particles):
    """Draw the particle written back: ``particles[k]``, k ∝ w (N,); or ``particles(k)`` with one
    index per block, k_b ∝ w_{·b}, for a factorised ``log_w`` (N, B)."""
    log_w = np.asarray(log_w, dtype=float)
    if log_w.ndim == 2:
        return particles(sample_indices(rng, log_w))
    return particles[int(sample_indices(rng, log_w[:, None])[0])]
