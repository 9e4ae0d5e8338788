r"""Truncated discrete Laplace mechanism: bounded integer noise, (ε, δ)-DP (the discrete form of
the truncated Laplace mechanism of Geng, Ding, Guo & Kumar 2020).

```text
P(Z = z) = \frac{q^{|z|}}{N} \quad (|z| \le A), \qquad q = e^{-1/t}, \qquad
N = 1 + \frac{2 q (1 - q^A)}{1 - q},
```

``z ∈ ℤ`` and 0 outside ``[-A, A]``: the published value is never more than ``A`` from the true
one, which agencies that publish counts often need. ``t ≥ Δ/ε`` is the scale (the smallest float
with ``t · ε ≥ Δ`` exactly, so ``Δ/t ≤ ε``) and ``A`` the radius: the smallest integer ``A ≥ Δ``
whose ``δ(A)`` below is at most ``delta``.

Privacy
-------
Neighbours are replace-one (pymc-dp's relation): the statistics ``s, s'`` of two neighbouring
datasets are integer vectors with ``‖s - s'‖₁ ≤ Δ``. Where both output densities are positive,
``| |y - s| - |y - s'| |`` summed over the coordinates is at most ``Δ``, so
``P(y | s) ≤ e^{Δ/t} P(y | s') ≤ e^ε P(y | s')``. The only outputs that break the ratio are those
``s`` can produce and ``s'`` cannot (some coordinate with ``|y_i - s'_i| > A``), so the hockey-stick
divergence at ``e^ε`` is exactly ``P_s(y outside the support of s')``. For one coordinate moved by
``k`` it is the mass of the ``k`` outermost values on one side,

```text
T(k) = \frac{1}{N} \sum_{m=A-k+1}^{A} q^m ,
```

and since ``T`` is convex with ``T(0) = 0`` (its increments ``q^{A-k}/N`` grow with ``k``),
``1 - Π_i (1 - T(k_i)) ≤ Σ_i T(k_i) ≤ T(Σ_i k_i) ≤ T(Δ)``: the mechanism is ``(ε, δ(A))``-DP with
``δ(A) = T(Δ) = q^{A-Δ+1} (1 - q^Δ) / ((1 - q) N)``, for a vector under an L1 sensitivity too.
``dp_accounting`` has no event for it: the guarantee is stated as ``epsilon_delta = (ε, δ(A))``
and composed by basic composition.

Sampling
--------
Exact, by rejection: discrete Laplace integers of scale ``t`` are drawn and each ``|L| > A`` is
drawn again (independently of the statistic, so the number of draws reveals nothing). With
``rng=None`` (publication) they come from OpenDP's ``make_laplace`` on ``i64``; with a
``Generator`` from pymc_dp's exact sampler (Canonne, Kamath & Steinke 2020).

The density has no compiled kernel (``kernel_code = None``): ``DPObserved`` models it through
``logp``, ``marginalize`` / ``Collapsed`` and ``intervals`` through ``logpdf`` and
``tail_radius``; the record-wise samplers (``DataAugmentation``, ``CountsSweep``, ``TableCells``)
refuse it. A model whose starting records put the statistic more than ``A`` from the release has
log density ``-inf`` there (PyMC reports a bad initial energy): start the records inside, e.g.
``pm.sample(initvals={"x": ...})``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction

import numpy as np

from pymc_dp._checks import check_delta, check_epsilon, check_noise_rng
from pymc_dp.mechanisms._noise import (
    integer_sensitivity,
    laplace_release,
    reject_bool,
    require_integer,
)
from pymc_dp.mechanisms.base import Mechanism

__all__ = ["TruncatedDiscreteLaplace"]

#: radii above this are refused: the noise would not fit the int64 releases
_MAX_RADIUS = 2**52


def _scale(sensitivity: int, epsilon: float) -> float:
    """Smallest float ``t`` with ``t · ε ≥ Δ`` in exact arithmetic (so ``Δ/t ≤ ε``)."""
    t = sensitivity / epsilon
    while Fraction(t) * Fraction(epsilon) < sensitivity:
        t = math.nextafter(t, math.inf)
    return t


def _log_mass_ratio(x: float) -> float:
    """``log(q / (1 - q))`` for ``q = e^{-x}``, without overflow at a large ``x``."""
    return -x - math.log(-math.expm1(-x))


def _log_normaliser(x: float, radius: int) -> float:
    """``log N = log(1 + 2 q (1 - q^A) / (1 - q))`` with ``q = e^{-x}``."""
    return math.log1p(2.0 * math.exp(_log_mass_ratio(x)) * -math.expm1(-radius * x))


def _log_delta(x: float, radius: int, width: int) -> float:
    """``log δ(A) = log T(Δ) = log(q^{A-Δ+1} (1 - q^Δ) / ((1 - q) N))`` (module docstring)."""
    return (
        -(radius - width) * x
        + _log_mass_ratio(x)
        + math.log(-math.expm1(-width * x))
        - _log_normaliser(x, radius)
    )


def _radius(x: float, width: int, delta: float) -> int:
    """The smallest ``A ≥ Δ`` with ``δ(A) ≤ delta``: ``δ(A)`` decreases in ``A``, so doubling
    then bisection; ``_MAX_RADIUS`` when even that radius is not enough (the caller refuses)."""
    log_delta = math.log(delta)
    if _log_delta(x, width, width) <= log_delta:
        return width
    lo, hi = width, 2 * width  # δ(lo) > delta
    while _log_delta(x, hi, width) > log_delta:
        if hi >= _MAX_RADIUS:
            return _MAX_RADIUS
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _log_delta(x, mid, width) <= log_delta else (mid, hi)
    return hi


@dataclasses.dataclass(frozen=True, eq=False)
class TruncatedDiscreteLaplace(Mechanism):
    r"""Discrete Laplace noise cut at a radius ``A``: every release is within ``A`` of the true
    integer statistic (module docstring).

    Parameters
    ----------
    epsilon : float
        ε of the ``(ε, δ)`` guarantee (replace-one neighbours); the scale is ``t = Δ/ε``.
    delta : float
        Largest δ allowed, ``0 < delta < 1``; the radius ``A`` is the smallest whose δ is at most
        it (`delta_spent`).
    sensitivity : int, optional
        Integer L1 sensitivity Δ of the statistic. Defaults to the statistic's, from its bounds.

    Examples
    --------
    ```python
    x = np.array([0, 2, 1, 3, 3])  # one category per record
    r = pdp.release(x, pdp.Counts(4), pdp.TruncatedDiscreteLaplace(epsilon=1.0, delta=1e-6))
    r.mechanism.radius  # 27: every released count is within 27 of the true one
    ```
    """

    epsilon: float
    delta: float
    sensitivity: float | None = None

    norm = 1
    integer = True
    kernel_code = None  # a new density: no compiled kernel

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(reject_bool(self.epsilon, "epsilon")))
        object.__setattr__(self, "delta", check_delta(reject_bool(self.delta, "delta")))
        if self.sensitivity is not None:
            object.__setattr__(
                self,
                "sensitivity",
                integer_sensitivity(self.sensitivity, "TruncatedDiscreteLaplace"),
            )
            if self.radius >= _MAX_RADIUS:
                raise ValueError(
                    f"TruncatedDiscreteLaplace(epsilon={self.epsilon!r}, delta={self.delta!r}) with "
                    f"sensitivity {int(self.sensitivity)} needs a radius of about {self.radius:.3g}, "
                    "beyond the int64 releases. Use a larger epsilon or delta, or a smaller "
                    "sensitivity (tighter bounds)."
                )

    # -- calibration ---------------------------------------------------------------------------
    @property
    def calibrated(self) -> bool:
        return self.sensitivity is not None

    def with_sensitivity(self, sensitivity):
        return dataclasses.replace(
            self, sensitivity=integer_sensitivity(sensitivity, "TruncatedDiscreteLaplace")
        )

    @property
    def width(self) -> int:
        """Δ, the integer L1 sensitivity."""
        self._require_calibrated()
        return int(self.sensitivity)

    @functools.cached_property  # derived from frozen fields: computed once
    def noise_scale(self) -> float:
        """``t``: ``P(Z = z) ∝ e^{-|z|/t}`` inside the radius; ``Δ/t ≤ ε`` exactly."""
        return _scale(self.width, self.epsilon)

    @functools.cached_property  # derived from frozen fields: computed once
    def radius(self) -> int:
        """``A``: the smallest integer ``≥ Δ`` whose ``δ(A)`` is at most ``delta``."""
        return _radius(1.0 / self.noise_scale, self.width, self.delta)

    @property
    def delta_spent(self) -> float:
        """``δ(A) ≤ delta``: the exact hockey-stick divergence at ``e^ε`` (module docstring)."""
        return math.exp(_log_delta(1.0 / self.noise_scale, self.radius, self.width))

    @property
    def log_normaliser(self) -> float:
        """``log N``."""
        return _log_normaliser(1.0 / self.noise_scale, self.radius)

    def noise_key(self):
        return ("truncated_discrete_laplace", self.noise_scale, self.radius, self.width)

    # -- densities -----------------------------------------------------------------------------
    def logpdf(self, release, statistic):
        """Log pmf of ``release`` given the integer ``statistic`` (-inf off the integers and
        beyond the radius)."""
        z = np.asarray(release, dtype=float) - np.asarray(statistic, dtype=float)
        out = -np.abs(z) / self.noise_scale - self.log_normaliser
        inside = (z == np.round(z)) & (np.abs(z) <= self.radius)
        return np.where(inside, out, -np.inf)

    def logp(self, value, statistic):
        import pytensor.tensor as pt

        z = pt.cast(value, "float64") - pt.cast(statistic, "float64")
        out = -pt.abs(z) / self.noise_scale - self.log_normaliser
        inside = pt.and_(pt.eq(z, pt.round(z)), pt.le(pt.abs(z), self.radius))
        return pt.switch(inside, out, -np.inf)

    # -- noise facts ---------------------------------------------------------------------------
    @property
    def noise_sd(self) -> float:
        """``√E[Z²]`` in closed form: ``E[Z²] = (2/N) Σ_{m=1}^{A} m² q^m`` with
        ``Σ_{m≥1} m² q^m = q(1+q)/(1-q)³`` and its tail beyond ``A`` subtracted."""
        x, a = 1.0 / self.noise_scale, self.radius
        ratio = math.exp(_log_mass_ratio(x))  # q / (1 - q)
        inv = 1.0 / -math.expm1(-x)  # 1 / (1 - q)
        s0, s1, s2 = ratio, ratio * inv, ratio * inv * (1.0 + math.exp(-x)) * inv
        tail = math.exp(-a * x) * (a * a * s0 + 2.0 * a * s1 + s2)
        return math.sqrt(max(2.0 * (s2 - tail), 0.0) / math.exp(self.log_normaliser))

    def tail_radius(self, log_ratio):
        """``min(A, ⌈log_ratio · t⌉)``: beyond it the pmf is at most ``e^-log_ratio`` times its
        maximum, and ``P(|Z| > w) < q^w ≤ e^-log_ratio`` (0 at ``w = A``)."""
        return float(min(self.radius, math.ceil(log_ratio * self.noise_scale)))

    def noise_radius(self, statistic=None):
        return float(self.radius)

    # -- accounting ----------------------------------------------------------------------------
    @property
    def epsilon_delta(self) -> tuple[float, float]:
        """``(ε, δ(A))``, composed by basic composition (no ``dp_accounting`` event)."""
        self._require_calibrated()
        return (self.epsilon, self.delta_spent)

    def dp_event(self):
        from dp_accounting import dp_event

        return dp_event.UnsupportedDpEvent()

    # -- sampling ------------------------------------------------------------------------------
    def sample(self, statistic, rng=None):
        """Return the integer ``statistic`` plus truncated discrete Laplace noise (int64).

        ``rng=None`` (default) draws through OpenDP's ``make_laplace`` on ``i64`` from the
        operating system's secure generator: **only this path is fit for a real publication.**
        A ``Generator`` (or int seed) runs the same exact algorithm on pymc_dp's exact sampler,
        for simulations and tests.
        """
        rng = check_noise_rng(rng, owner="TruncatedDiscreteLaplace.sample")
        self._require_calibrated()
        s = require_integer(statistic, "TruncatedDiscreteLaplace")
        name, t, a = "TruncatedDiscreteLaplace", self.noise_scale, self.radius
        noise = np.asarray(
            laplace_release(np.zeros(s.size, np.int64), t, rng, integer=True, name=name)
        )
        outside = np.flatnonzero(np.abs(noise) > a)
        while outside.size:  # draw again where |L| > A: the exact truncated law
            redraw = laplace_release(
                np.zeros(outside.size, np.int64), t, rng, integer=True, name=name
            )
            noise[outside] = redraw
            outside = outside[np.abs(redraw) > a]
        return s + noise.astype(np.int64).reshape(s.shape)

    def random_graph(self, statistic, size=None):
        """Predictive draws: 0 with probability ``1/N``, else a fair sign times ``|Z|`` drawn by
        inversion of its truncated geometric law on ``1..A``."""
        import pymc as pm
        import pytensor.tensor as pt

        x, a = 1.0 / self.noise_scale, self.radius
        zero = pm.Bernoulli.dist(p=math.exp(-self.log_normaliser), size=size)
        sign = 2 * pm.Bernoulli.dist(p=0.5, size=size) - 1
        u = pm.Uniform.dist(0.0, 1.0, size=size)
        # P(|Z| ≤ m | |Z| ≥ 1) = (1 - q^m) / (1 - q^A): m = ⌈-log(1 - u (1 - q^A)) / x⌉
        m = pt.ceil(-pt.log1p(-u * -math.expm1(-a * x)) / x)
        m = pt.clip(pt.cast(m, "int64"), 1, a)
        noise = pt.switch(zero, 0, sign * m)
        s = pt.as_tensor_variable(statistic)
        if s.dtype.startswith("float"):
            s = pt.round(s)
        return pt.cast(s, "int64") + pt.cast(noise, "int64")
