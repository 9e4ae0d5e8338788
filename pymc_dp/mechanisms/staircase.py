r"""Discrete staircase mechanism for an integer statistic (Geng & Viswanath 2014; the
discrete form of Geng, Kairouz, Oh & Viswanath 2015).

```text
P(Z = z) = \frac{e^{-\varphi(|z|)/t}}{N}, \qquad
\varphi(m) = \Big\lfloor \frac{m + \Delta - r}{\Delta} \Big\rfloor, \qquad
N = (2r - 1) + \frac{2\Delta}{e^{1/t} - 1},
```

``z ∈ ℤ``: a flat centre of ``2r - 1`` values (``|z| < r``), then steps of ``Δ`` values on each side,
each ``e^{-1/t}`` times the one before. ``Δ`` is the statistic's integer L1 sensitivity and
``1 ≤ r ≤ Δ``; with ``Δ = 1`` it is the discrete Laplace mechanism.

Privacy
-------
Neighbours are replace-one (pymc-dp's relation): the statistics ``s, s'`` of two neighbouring
datasets are integers with ``|s - s'| ≤ Δ``. For every output ``y``,
``| |y - s| - |y - s'| | ≤ Δ``, and ``φ`` is non-decreasing with ``φ(m + Δ) = φ(m) + 1``, so the
two exponents differ by at most 1 and

```text
P(y \mid s) \le e^{1/t}\, P(y \mid s') .
```

The mechanism is ``1/t``-DP (pure, δ = 0); ``t`` is the smallest float with ``t ≥ 1/ε`` exactly,
so ``1/t ≤ ε``. ``dp_accounting`` has no staircase event: the guarantee is stated as
``epsilon_delta = (ε, 0)`` and composed by basic composition. It holds for one coordinate:
independent noises on a vector lose up to ``1/t`` on each entry a neighbour changes, whatever
the L1 sensitivity. A release of several values is accepted when a neighbour changes one of
them (``Statistic.entries_changed``: ``Cells`` / ``Marginals`` under add/remove, where a person
changes one cell by 1) and refused otherwise (``Counts``, replace-one tables, vector records).

Sampling
--------
Exact, from two primitives: a discrete Laplace integer ``L`` with ``P(L = l) ∝ e^{-|l|/t}`` and a
uniform integer. ``L`` is kept with probability ``(2r - 1)/M`` when ``L = 0`` and ``Δ/M`` otherwise
(``M = max(2r - 1, Δ)``; a uniform integer below ``M`` decides), so the kept block index has
``P(0) ∝ 2r - 1`` and ``P(±j) ∝ Δ e^{-j/t}``; then ``Z`` is uniform on the values of that block.
With ``rng=None`` (publication) ``L`` is OpenDP's ``make_laplace`` on ``i64`` (exact discrete
Laplace of scale ``t``) and the uniform integers are built by rejection from fair bits of
OpenDP's ``make_randomized_response_bool(0.5)`` (an exact Bernoulli(1/2)); with a ``Generator``
the same algorithm runs on pymc_dp's exact samplers (Canonne, Kamath & Steinke 2020).

The density has no compiled kernel (``kernel_code = None``): ``DPObserved`` models it through
``logp``, ``marginalize`` / ``Collapsed`` through ``logpdf`` and ``tail_radius``; the record-wise
samplers (``DataAugmentation``, ``CountsSweep``, ``TableCells``) refuse it.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np

from pymc_dp._checks import check_epsilon, check_noise_rng
from pymc_dp.mechanisms import _exact
from pymc_dp.mechanisms._noise import integer_sensitivity, reject_bool, require_integer
from pymc_dp.mechanisms.base import Mechanism

__all__ = ["Staircase"]


def _step_scale(epsilon: float) -> float:
    """Smallest float ``t`` with ``t · ε ≥ 1`` in exact arithmetic (so ``1/t ≤ ε``)."""
    t = 1.0 / epsilon
    while Fraction(t) * Fraction(epsilon) < 1:
        t = math.nextafter(t, math.inf)
    return t


@dataclasses.dataclass(frozen=True, eq=False)
class Staircase(Mechanism):
    r"""Staircase noise on an integer statistic whose neighbours differ in one entry (module
    docstring).

    Parameters
    ----------
    epsilon : float
        Budget of the release (pure ε-DP under replace-one neighbours).
    r : int, optional
        Half-width of the flat centre, ``1 ≤ r ≤ Δ``. Default: the nearest integer to
        ``γ* Δ`` with Geng & Viswanath's optimal ``γ* = 1 / (1 + e^{ε/2})`` (at least 1).
    sensitivity : int, optional
        Integer L1 sensitivity Δ of the statistic. Defaults to the statistic's, from its bounds.
    """

    epsilon: float
    r: int | None = None
    sensitivity: float | None = None

    norm = 1
    integer = True
    kernel_code = None  # a new density: no compiled kernel

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(reject_bool(self.epsilon, "epsilon")))
        if self.r is not None:
            r = self.r
            if isinstance(r, bool | np.bool_) or not isinstance(r, int | np.integer) or r < 1:
                raise ValueError(
                    f"r must be an integer >= 1 (half-width of the flat centre), got r={r!r}."
                )
            object.__setattr__(self, "r", int(r))
        if self.sensitivity is not None:
            sens = integer_sensitivity(self.sensitivity, "Staircase")
            object.__setattr__(self, "sensitivity", sens)
            if self.r is not None and self.r > sens:
                raise ValueError(
                    f"r must be at most the sensitivity {int(sens)}, got r={self.r}. Use "
                    f"1 <= r <= {int(sens)}, or leave r=None for the optimal width."
                )

    # -- calibration ---------------------------------------------------------------------------
    @property
    def calibrated(self) -> bool:
        return self.sensitivity is not None

    def bind(self, statistic, n: int, dim: int) -> Staircase:
        changed = statistic.entries_changed(dim)
        if changed != 1:
            raise ValueError(
                f"Staircase is epsilon-DP when a neighbour changes one released value, but under "
                f"{statistic!r} (neighbouring {statistic.neighbouring!r}) a neighbour changes up to "
                f"{changed} values, and the privacy loss of independent staircase noises adds up "
                f"over them (up to {changed}·epsilon, whatever the L1 sensitivity). Release each "
                "value separately, use neighbouring='add/remove' for a count table, or use "
                "pdp.DiscreteLaplace."
            )
        return super().bind(statistic, n, dim)

    def with_sensitivity(self, sensitivity):
        sens = float(sensitivity)
        if sens != round(sens):
            raise ValueError(
                f"Staircase needs an integer sensitivity, but the statistic's is {sens!r}. Use "
                "integer bounds for the integer statistic."
            )
        return dataclasses.replace(self, sensitivity=sens)

    @property
    def width(self) -> int:
        """Δ, the integer sensitivity: the number of values in each step."""
        self._require_calibrated()
        return int(self.sensitivity)

    @property
    def flat(self) -> int:
        """``r``: the centre holds the ``2r - 1`` values with ``|z| < r``."""
        if self.r is not None:
            return self.r
        gamma = 1.0 / (1.0 + math.exp(min(self.epsilon / 2.0, 700.0)))  # e^700: gamma ≈ 0
        return max(1, round(gamma * self.width))

    @property
    def step_scale(self) -> float:
        """``t``: each step is ``e^{-1/t}`` times the one before; ``1/t ≤ ε``."""
        return _step_scale(self.epsilon)

    @property
    def log_normaliser(self) -> float:
        """``log N = log((2r - 1) + 2Δ / (e^{1/t} - 1))``."""
        x = 1.0 / self.step_scale  # 1 / (e^x - 1) without overflow at a large ε
        return math.log((2 * self.flat - 1) + 2.0 * self.width * math.exp(-x) / -math.expm1(-x))

    def noise_key(self):
        return ("staircase", self.step_scale, self.flat, self.width)

    # -- densities -----------------------------------------------------------------------------
    def _steps(self, m, floor_div):
        return floor_div(m + (self.width - self.flat), self.width)

    def logpdf(self, release, statistic):
        """Log pmf of ``release`` given the integer ``statistic`` (-inf off the integers)."""
        z = np.asarray(release, dtype=float) - np.asarray(statistic, dtype=float)
        steps = self._steps(np.abs(z), np.floor_divide)
        out = -steps / self.step_scale - self.log_normaliser
        return np.where(z == np.round(z), out, -np.inf)

    def logp(self, value, statistic):
        import pytensor.tensor as pt

        z = pt.cast(value, "float64") - pt.cast(statistic, "float64")
        steps = self._steps(pt.abs(z), lambda a, b: pt.floor(a / b))
        out = -steps / self.step_scale - self.log_normaliser
        return pt.switch(pt.eq(z, pt.round(z)), out, -np.inf)

    # -- noise facts ---------------------------------------------------------------------------
    @property
    def noise_sd(self) -> float:
        """``√E[Z²]``, summed over the steps until they are below 1e-17 of the first."""
        t, r, d = self.step_scale, self.flat, self.width
        centre = np.arange(1, r, dtype=float)
        total = 2.0 * float(np.sum(centre**2))
        n_steps = int(math.ceil(40.0 * t)) + 1
        j = np.arange(1, n_steps + 1, dtype=float)
        first = r + (j - 1) * d  # Σ_{m=first}^{first+d-1} m² in closed form
        last = first + d - 1
        squares = (last * (last + 1) * (2 * last + 1) - (first - 1) * first * (2 * first - 1)) / 6
        total += 2.0 * float(np.sum(np.exp(-j / t) * squares))
        return math.sqrt(total / math.exp(self.log_normaliser))

    def tail_radius(self, log_ratio):
        """``r - 1 + ⌈log_ratio · t⌉ Δ``: beyond it the pmf is at most ``e^-log_ratio`` times its
        maximum, and ``P(|Z| > w) ≤ e^{-⌈log_ratio·t⌉/t} ≤ e^-log_ratio``."""
        return float(self.flat - 1 + math.ceil(log_ratio * self.step_scale) * self.width)

    def noise_radius(self, statistic=None):
        return self.tail_radius(1000.0)

    # -- accounting ----------------------------------------------------------------------------
    @property
    def epsilon_spent(self) -> float:
        """ε: the privacy loss ``1/t`` is at most ``epsilon`` (module docstring)."""
        return self.epsilon

    @property
    def epsilon_delta(self) -> tuple[float, float]:
        """``(ε, 0)``: pure ε-DP, composed by basic composition (no ``dp_accounting`` event)."""
        self._require_calibrated()
        return (self.epsilon, 0.0)

    def dp_event(self):
        from dp_accounting import dp_event

        return dp_event.UnsupportedDpEvent()

    # -- sampling ------------------------------------------------------------------------------
    def sample(self, statistic, rng=None):
        """Return the integer ``statistic`` plus staircase noise (int64).

        ``rng=None`` (default) draws through OpenDP (``make_laplace`` on ``i64`` and
        ``make_randomized_response_bool(0.5)``) from the operating system's secure generator:
        **only this path is fit for a real publication.** A ``Generator`` (or int seed) runs the
        same exact algorithm on pymc_dp's exact samplers, for simulations and tests.
        """
        rng = check_noise_rng(rng, owner="Staircase.sample")
        self._require_calibrated()
        s = require_integer(statistic, "Staircase")
        source = _OpenDPSource() if rng is None else _GeneratorSource(rng)
        noise = [self._noise(source) for _ in range(s.size)]
        return s + np.asarray(noise, dtype=np.int64).reshape(s.shape)

    def _noise(self, source) -> int:
        r, d, t = self.flat, self.width, self.step_scale
        centre = 2 * r - 1
        most = max(centre, d)
        while True:
            block = source.laplace(t)
            if source.below(most) < (centre if block == 0 else d):
                break
        if block == 0:
            return source.below(centre) - (r - 1)
        offset = r + (abs(block) - 1) * d + source.below(d)
        return offset if block > 0 else -offset

    def random_graph(self, statistic, size=None):
        """Predictive draws: the centre with probability ``(2r-1)/N``, else a geometric step
        index, a fair sign and a uniform value within the step."""
        import pymc as pm
        import pytensor.tensor as pt

        r, d, t = self.flat, self.width, self.step_scale
        p_centre = (2 * r - 1) / math.exp(self.log_normaliser)
        centre = pm.Bernoulli.dist(p=p_centre, size=size)
        step = pm.Geometric.dist(p=-math.expm1(-1.0 / t), size=size)  # 1, 2, ...
        sign = 2 * pm.Bernoulli.dist(p=0.5, size=size) - 1

        def below(k):  # uniform on 0..k-1 as the floor of a uniform: native on every backend
            u = pm.Uniform.dist(0.0, 1.0, size=size)
            return pt.minimum(pt.cast(pt.floor(u * k), "int64"), k - 1)

        in_centre = below(2 * r - 1) - (r - 1)
        in_step = below(d)
        noise = pt.switch(centre, in_centre, sign * (r + (step - 1) * d + in_step))
        s = pt.as_tensor_variable(statistic)
        if s.dtype.startswith("float"):
            s = pt.round(s)
        return pt.cast(s, "int64") + pt.cast(noise, "int64")


class _GeneratorSource:
    """Exact primitives driven by a ``numpy.random.Generator`` (simulations)."""

    def __init__(self, rng):
        self.rng = rng

    def laplace(self, t: float) -> int:
        num, den = Fraction(t).as_integer_ratio()
        return _exact.discrete_laplace(self.rng, num, den)

    def below(self, n: int) -> int:
        return _exact.randbelow(self.rng, n)


class _OpenDPSource:
    """Exact primitives from OpenDP's secure samplers (publication)."""

    def __init__(self):
        import opendp.prelude as dp

        dp.enable_features("contrib")
        self._dp = dp
        self._coin = dp.m.make_randomized_response_bool(prob=0.5)
        self._laplace = {}

    def laplace(self, t: float) -> int:
        meas = self._laplace.get(t)
        if meas is None:
            dp = self._dp
            meas = self._laplace[t] = dp.m.make_laplace(
                dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), scale=t
            )
        return int(meas(0))

    def below(self, n: int) -> int:
        if n == 1:
            return 0
        nbits = (n - 1).bit_length()
        while True:
            value = 0
            for _ in range(nbits):
                value = (value << 1) | int(self._coin(True))
            if value < n:
                return value
