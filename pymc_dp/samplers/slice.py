"""Univariate slice sampling (Neal 2003, *Ann. Statist.* 31(3), §4: stepping out, then shrinkage).

One implementation for every θ-move that slices: `Interweave` (along coordinate axes or learned
directions, `slice_along`) and `SufficientTheta` (coordinate sweeps, `slice_sweep`), both on
`slice_1d`; and its compiled shrinkage, `shrink_1d`, for the numba loops that slice a bounded
coordinate (`DirichletHyper`'s pairs of base and their columns): the same procedure (Neal 2003,
Fig. 5) and the same rule at a collapsed bracket, on a log density that is itself compiled.

**A collapsed bracket.** Shrinkage keeps the current point ``x0`` inside the bracket, and ``x0``
lies in the slice (its log density is above the level ``log p(x0) - Exp(1)``), so in exact
arithmetic the procedure always ends. In floating point the bracket can shrink to less than
``1e-12·(1 + scale)`` (``scale`` = ``|x0|`` or the size of θ) before a point is accepted: the slice
around ``x0`` is narrower than the resolution of the coordinates (a density spike). The exact draw
then lies within that width of ``x0``, so `slice_1d` returns ``x0`` — after checking that ``x0``
really is in the slice. If it is not (the log density given for ``x0`` is not the target's there:
a stale state, a target that is not a deterministic function, NaN at the current point), the
update could not leave the target invariant and `slice_1d` raises ``FloatingPointError``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

__all__ = [
    "generator_uniform",
    "shrink_1d",
    "SliceDraw",
    "SliceInfo",
    "SliceState",
    "as_log_density",
    "slice_1d",
    "slice_along",
    "slice_sweep",
    "tuned_width",
]

COLLAPSED = 1e-12  # a bracket narrower than this times (1 + scale) has collapsed onto x0


class SliceDraw(NamedTuple):
    """The new point, its log density, the number of density evaluations and the final bracket
    width (its running mean tunes the initial width, as in PyMC's ``Slice``)."""

    x: float
    logp: float
    n_evals: int
    bracket: float


def tuned_width(width, observed, n: int, *, floor: float = 0.0):
    """The one width rule of the slice samplers, warm-up only: the running mean of an observed
    width (the final bracket, as PyMC's ``Slice``; or twice the move size), ``n`` the number of
    observations including this one, at least ``floor``. The chain after warm-up uses a fixed
    width, so it stays exact for any value this gives."""
    return np.maximum(width + (observed - width) / n, floor)


def as_log_density(value) -> float:
    """``value`` as a float log density, NaN (outside the support) as ``-inf``."""
    value = float(value)
    return -math.inf if value != value else value  # NaN: outside the support


def slice_1d(rng, log_density, x0, logp0, width, max_steps_out, *, scale=None) -> SliceDraw:
    """One slice-sampling update of the scalar ``x0`` under ``exp(log_density)``.

    Parameters
    ----------
    rng : numpy.random.Generator
    log_density : callable
        ``float -> float`` log density up to a constant; NaN counts as ``-inf``.
    x0, logp0 : float
        The current point and ``log_density(x0)``.
    width : float
        Initial bracket width (stepping-out increment).
    max_steps_out : int
        Stepping-out budget shared between the two sides (Neal 2003, Fig. 3).
    scale : float, optional
        Magnitude of the coordinates for the collapse test (default ``|x0|``; see the module
        docstring).

    Returns
    -------
    SliceDraw
        Leaves ``exp(log_density)`` invariant for any fixed ``width`` and ``max_steps_out``.

    Raises
    ------
    FloatingPointError
        The bracket collapsed onto ``x0`` and ``x0`` is not in the slice (``logp0`` is not the
        target's log density at ``x0``).
    """
    n_evals = 0

    def at(x):
        nonlocal n_evals
        n_evals += 1
        return as_log_density(log_density(x))

    level = logp0 - rng.standard_exponential()
    left = x0 - width * rng.random()
    right = left + width
    j = int(max_steps_out * rng.random())
    k = max_steps_out - 1 - j
    while j > 0 and at(left) > level:
        left -= width
        j -= 1
    while k > 0 and at(right) > level:
        right += width
        k -= 1
    tiny = COLLAPSED * (1.0 + (abs(x0) if scale is None else scale))
    while True:
        x = left + (right - left) * rng.random()
        lp = at(x)
        if lp > level:
            return SliceDraw(x, lp, n_evals, right - left)
        if x < x0:
            left = x
        else:
            right = x
        if right - left <= tiny:
            lp0 = at(x0)
            if lp0 > level:  # a spike narrower than the coordinates' resolution: stay
                return SliceDraw(x0, lp0, n_evals, right - left)
            raise FloatingPointError(
                f"slice sampling shrank to the current point, whose log density {lp0} is below the "
                f"slice level {level} drawn from the log density {logp0} it was given: the state's "
                "log density is not the target's there (a stale state or a target that is not a "
                "deterministic function of θ)."
            )


def slice_along(rng, theta, logp0, direction, log_density, width, max_steps_out):
    """One slice update of ``theta`` along ``direction``: `slice_1d` in ``t`` for the point
    ``theta + t·direction`` from ``t = 0``. Returns ``(theta', logp', n_evals)``."""
    draw = slice_1d(
        rng,
        lambda t: log_density(theta + t * direction),
        0.0,
        logp0,
        width,
        max_steps_out,
        scale=float(np.max(np.abs(theta), initial=0.0)),
    )
    return theta + draw.x * direction, draw.logp, draw.n_evals


class SliceState(NamedTuple):
    """Coordinates of θ, their log density, and the per-coordinate widths."""

    q: np.ndarray
    logp: float
    width: np.ndarray


class SliceInfo(NamedTuple):
    evals: int
    brackets: np.ndarray  # final bracket width per coordinate (width adaptation)


def slice_sweep(
    rng, state: SliceState, logp_fn, max_steps: int = 64
) -> tuple[SliceState, SliceInfo]:
    """One sweep of `slice_1d` over every coordinate of ``state.q`` (the others held fixed)."""
    q, lp = np.array(state.q, dtype=float, copy=True), float(state.logp)
    evals, brackets = 0, np.empty_like(state.width, dtype=float)
    for i in range(q.size):

        def along(x, i=i):
            trial = q.copy()
            trial[i] = x
            return logp_fn(trial)

        draw = slice_1d(rng, along, q[i], lp, state.width[i], max_steps)
        q[i], lp = draw.x, draw.logp
        evals += draw.n_evals
        brackets[i] = draw.bracket
    return SliceState(q, lp, state.width), SliceInfo(evals, brackets)


# ------------------------------------------------------------------------------------------------
# compiled: shrinkage within a bounded coordinate
# ------------------------------------------------------------------------------------------------
@numba.njit(cache=True, inline="always")
def generator_uniform(rng):
    """A uniform on [0, 1) from a NumPy ``Generator`` (the ``uniform_of`` of `shrink_1d`)."""
    return rng.random()


# not cached: its arguments include dispatchers (``log_f``, ``uniform_of``), whose types differ in
# every process, so numba's on-disk index gained an entry per process that no later process
# matched, and loading it could fail with "underlying object has vanished" (numba issue 9348).
# Inlined (numba IR) into its callers, where ``log_f`` and ``uniform_of`` are then globals: a
# caller that passed them to a compiled shrink_1d held dispatcher objects and could not be
# cached itself (`DirichletHyper`'s pair moves: about 6 s of compilation in every process)
@numba.njit(cache=False, inline="always")
def shrink_1d(log_f, args, uniform_of, source, x0, lo, hi, level, tiny):
    """Slice sampling by shrinkage alone (Neal 2003, §4, Fig. 5) of a coordinate whose support
    is the open interval (``lo``, ``hi``), which is the initial bracket (no stepping out).

    ``log_f(x, args)`` is a compiled log density (``args`` a tuple), ``level`` is
    ``log_f(x0, args) − Exp(1)`` drawn by the caller, and ``uniform_of(source)`` draws a uniform
    on [0, 1) (`generator_uniform` with a ``Generator``, `streams.stream_uniform` with a row's
    stream). Returns ``(x, n_evals)``: the new point and the number of evaluations of ``log_f``.
    As `slice_1d`: a point is accepted when its log density is above the level; when the bracket
    shrinks to ``tiny`` or less around ``x0`` the slice is narrower than the coordinate's
    resolution and ``x0`` is kept, after checking that it is in the slice (else
    ``FloatingPointError``: the level was not drawn from the target at ``x0``). A level of −inf
    (the caller's log density at ``x0`` underflowed to −inf, e.g. release weights at a first,
    far-off table) leaves ``x0`` where it is, with no evaluation (the loops before accepted any
    point there, as ``f ≥ −inf``).
    """
    if level == -math.inf:  # log_f(x0) = −inf (its terms underflowed): no slice to draw from, stay
        return x0, 0
    a, b = lo, hi
    n = 0
    while True:
        x = lo + uniform_of(source) * (hi - lo)
        if x > a and x < b:
            n += 1
            if log_f(x, args) > level:
                return x, n
        if x < x0:
            lo = x
        else:
            hi = x
        if hi - lo <= tiny:
            n += 1
            if log_f(x0, args) > level:
                return x0, n
            raise FloatingPointError(
                "slice sampling shrank to the current point, which is not in the slice: the "
                "level was not drawn from the target's log density at the current point"
            )
