r"""Posterior intervals for released counts, one call: `intervals(release, prob=0.95)`.

For a release of counts (`pdp.Cells` or `pdp.Counts`) each released number is $s_k = c_k + e_k$
with $e_k$ the mechanism's noise. With the stated default prior — **flat on the non-negative
integers**, independently for each count — the posterior of a count given its own release is

$$p(c_k \mid s_k) \propto \eta(s_k - c_k), \qquad c_k \in \{0, 1, 2, \dots\},$$

summed exactly on the integer lattice (over $|c - s_k| \le R$, with $R$ the radius outside which the
noise has mass below $10^{-12}$): no MCMC. The interval is the highest-posterior-density set: the
most probable counts, in decreasing order, until their mass reaches ``prob`` (the posterior is
unimodal, so the set is an interval; away from 0 it is symmetric about the release). Equal-tailed
intervals would exclude 0 whenever 0 holds less than (1 − prob)/2 of the posterior, and under-cover
small true counts (92.5 % at a true 0 with discrete Laplace noise of scale 3).
Counts of one table are treated separately (the flat prior ignores the total). Near 0 the
interval is asymmetric and never negative, where the naive "noisy value ± 1.96 σ, clipped at 0"
covers poorly (see `tests/statistical/test_intervals.py`).
"""

from __future__ import annotations

import math

import numpy as np

from pymc_dp.mechanisms.base import GAUSSIAN_KERNEL, LAPLACE_KERNEL

__all__ = ["intervals"]

_TOL = 1e-12


def _radius(mech) -> int:
    a, _ = mech.kernel_params()
    if mech.kernel_code == GAUSSIAN_KERNEL:  # exp(-a z²) < tol
        return int(math.ceil(math.sqrt(math.log(1 / _TOL) / a))) + 1
    if mech.kernel_code == LAPLACE_KERNEL:  # exp(-a |z|) < tol
        return int(math.ceil(math.log(1 / _TOL) / a)) + 1
    raise ValueError(
        f"intervals needs additive noise (Laplace or Gaussian kernels), got {mech!r}. Randomized "
        "response releases categories, not counts."
    )


def intervals(release, prob: float = 0.95, *, mechanism=None, chunk: int = 4096):
    """Highest-density posterior intervals for every count behind a release (flat prior per count).

    Parameters
    ----------
    release : Release or array_like
        A `pdp.Release` of `pdp.Cells` or `pdp.Counts`, or the released numbers with `mechanism=`.
    prob : float
        Posterior probability of each interval, in (0, 1).
    mechanism : Mechanism, optional
        The (calibrated) mechanism, when `release` is a plain array.
    chunk : int
        Counts summed at once (memory: ``chunk × (2R + 1)`` floats).

    Returns
    -------
    numpy.ndarray
        Shape ``(*release.shape, 2)``: integer lower and upper bounds.
    """
    from pymc_dp.release import Release
    from pymc_dp.statistics import Cells, Counts

    if not (isinstance(prob, float | int) and 0.0 < float(prob) < 1.0):
        raise ValueError(f"prob must be in (0, 1), got prob={prob!r}. Pass e.g. prob=0.95.")
    if isinstance(release, Release) and release._info is not None:
        if not isinstance(release.statistic, Cells | Counts):
            raise ValueError(
                f"intervals covers releases of counts (pdp.Cells, pdp.Counts), got a release of "
                f"{release.statistic!r}. Sample the model with pm.sample() for other statistics."
            )
        mech = release.mechanism if mechanism is None else mechanism
    elif mechanism is None:
        raise ValueError(
            "intervals needs the noise: pass a pdp.Release (from pdp.release) or the released "
            "numbers with mechanism=..., e.g. intervals(noisy, mechanism=pdp.DiscreteGaussian(sigma=3.18))."
        )
    else:
        mech = mechanism
    s = np.asarray(release, dtype=float)
    if not np.all(np.isfinite(s)):
        raise ValueError("intervals needs finite released numbers; the release holds NaN or inf.")
    radius = _radius(mech)
    a, b = mech.kernel_params()
    code = mech.kernel_code
    flat = s.reshape(-1)
    out = np.empty((flat.size, 2), dtype=np.int64)
    offsets = np.arange(-radius, radius + 1)
    for start in range(0, flat.size, chunk):
        sk = flat[start:start + chunk, None]
        grid = np.floor(sk) + offsets  # candidate counts
        z = sk - grid
        logw = -z * z * a if code == GAUSSIAN_KERNEL else -np.abs(z) * a
        logw = np.where(grid >= 0, logw, -np.inf)
        top = logw.max(axis=1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        w = np.exp(logw - top)
        total = w.sum(axis=1, keepdims=True)
        if np.any(total == 0):  # every candidate negative: the release lies far below 0
            zero = np.zeros_like(w)
            zero[:, 0] = 1.0
            grid = np.where(total == 0, np.arange(w.shape[1])[None, :], grid)
            w = np.where(total == 0, zero, w)
            total = w.sum(axis=1, keepdims=True)
        p = w / total
        order = np.argsort(-p, axis=1, kind="stable")  # highest posterior first
        mass = np.cumsum(np.take_along_axis(p, order, axis=1), axis=1)
        n_in = np.argmax(mass >= prob - 1e-12, axis=1) + 1
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(order.shape[1])[None, :], axis=1)
        inside = rank < n_in[:, None]
        big = np.iinfo(np.int64).max
        g = grid.astype(np.int64)
        out[start:start + sk.shape[0], 0] = np.where(inside, g, big).min(axis=1)
        out[start:start + sk.shape[0], 1] = np.where(inside, g, -1).max(axis=1)
    return out.reshape(*s.shape, 2)
