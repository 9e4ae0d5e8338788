"""Batched matrix helpers: nearest PSD matrix and Wishart draws over a leading node axis."""

from __future__ import annotations

import numpy as np

__all__ = ["nearest_psd", "wishart_rvs", "invwishart_rvs"]


def nearest_psd(S, floor: float = 0.0):
    """Nearest symmetric PSD matrix in Frobenius norm (Higham 1988): clip eigenvalues at ``floor``.

    Works on a stack ``(..., d, d)``; returns ``(S_tilde, eigenvalues, eigenvectors)`` with the
    clipped eigenvalues, so callers can reuse the decomposition.
    """
    S = np.asarray(S, dtype=float)
    S = 0.5 * (S + np.swapaxes(S, -1, -2))
    w, E = np.linalg.eigh(S)
    w = np.maximum(w, floor)
    return (E * w[..., None, :]) @ np.swapaxes(E, -1, -2), w, E


def wishart_rvs(rng: np.random.Generator, scale, df):
    r"""Draw ``W ~ Wishart(scale, df)`` (mean ``df·scale``) for a stack of scales, Bartlett's method.

    ``scale`` has shape ``(..., d, d)``; ``df`` is a scalar or broadcasts against ``scale[..., 0, 0]``
    and must exceed ``d - 1``.
    """
    scale = np.asarray(scale, dtype=float)
    d = scale.shape[-1]
    batch = scale.shape[:-2]
    df = np.broadcast_to(np.asarray(df, dtype=float), batch)
    L = np.linalg.cholesky(scale)
    A = np.zeros(batch + (d, d))
    il = np.tril_indices(d, -1)
    A[..., il[0], il[1]] = rng.standard_normal(batch + (len(il[0]),))
    ks = np.arange(d)
    A[..., ks, ks] = np.sqrt(rng.chisquare(df[..., None] - ks))
    LA = L @ A
    return LA @ np.swapaxes(LA, -1, -2)


def invwishart_rvs(rng: np.random.Generator, scale, df):
    """Draw ``Σ ~ InverseWishart(scale, df)`` (density ∝ |Σ|^{-(df+d+1)/2} exp(-tr(scale Σ⁻¹)/2))."""
    W = wishart_rvs(rng, np.linalg.inv(scale), df)
    out = np.linalg.inv(W)
    return 0.5 * (out + np.swapaxes(out, -1, -2))
