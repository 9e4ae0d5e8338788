r"""Calibration that agrees with the accountant.

A mechanism calibrated to ``(epsilon, delta)`` must be reported by ``pdp.privacy_spent`` (the
default accountant, ``dp_accounting``) at no more than ``epsilon`` at ``delta``, not only by the
closed form it was calibrated with. Two gaps exist between them:

* **rounding** of the event's parameters (pure ε-DP mechanisms: ``1 / (b / Δ)`` may exceed
  ``ε`` by one unit in the last place): the noise scale is moved up to the next floats until
  the event's own ε is at most ``ε``;
* **the accountant's own bound** (the Gaussian's privacy loss distribution is discretised
  pessimistically; a zCDP event is converted through Rényi orders on a grid, so
  ``DiscreteGaussian(epsilon=0.1, delta=1e-6)`` calibrated by Canonne et al.'s conversion
  was reported at ε = 0.1038): the noise is raised, by bisection on ``log σ``, to the smallest
  value (within a relative ``1e-9``) the accountant reports at ``epsilon`` or below.

The accountant computations here are the ones ``pymc_dp.accounting.privacy_spent`` makes for a
single event (``tests/unit/mechanisms/test_calibration.py`` checks that they agree).
"""

from __future__ import annotations

import functools
import math

import dp_accounting
from dp_accounting.rdp import RdpAccountant

__all__ = [
    "EXTENDED_ORDERS",
    "discrete_laplace_scale",
    "event_leaves",
    "fit_to_accountant",
    "gaussian_pld_epsilon",
    "laplace_scale",
    "randomized_response_parameter",
    "rdp_epsilon",
    "rdp_orders",
]

_REPLACE = dp_accounting.NeighboringRelation.REPLACE_ONE
#: relative precision of the noise found by `fit_to_accountant`
RELATIVE_TOLERANCE = 1e-9


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Smallest float ``b ≥ Δ/ε`` whose ``LaplaceDpEvent(b/Δ)`` has ``1/(b/Δ) ≤ ε``."""
    b = sensitivity / epsilon
    while 1.0 / (b / sensitivity) > epsilon:
        b = math.nextafter(b, math.inf)
    return b


def discrete_laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Smallest float ``b ≥ Δ/ε`` whose ``DiscreteLaplaceDpEvent(1/b, Δ)`` has ``Δ/b ≤ ε``."""
    b = sensitivity / epsilon
    while (1.0 / b) * sensitivity > epsilon:
        b = math.nextafter(b, math.inf)
    return b


def randomized_response_parameter(epsilon: float, k: int) -> float:
    """``p = k / (e^ε + k - 1)`` (probability of answering uniformly at random), moved up to the
    next floats until ``log((1 - p + p/k) / (p/k)) ≤ ε`` in float64 (rounding only)."""
    p = k / (math.exp(epsilon) + k - 1)
    while p < 1.0 and math.log((1.0 - p + p / k) / (p / k)) > epsilon:
        p = math.nextafter(p, 1.0)
    return p


#: Rényi orders for zCDP and Gaussian events (`rdp_orders`):
#: dp_accounting's grid (1.1 … 1024) and powers of two up to 2^24. At a small ε the best order of
#: a zCDP event, about √(log(1/δ)/ρ), lies far above 1024, and on the default grid the conversion
#: has a floor (ε ≥ about 0.0068 at δ = 1e-6 whatever ρ): calibrating DiscreteGaussian(epsilon=
#: 0.001, delta=1e-6) to it gave σ = 741,620 where 2,437 suffices.
EXTENDED_ORDERS = (*RdpAccountant()._orders, *(2.0**k for k in range(11, 25)))

_CLOSED_FORM = (dp_accounting.ZCDpEvent, dp_accounting.GaussianDpEvent, dp_accounting.NoOpDpEvent)


def event_leaves(event, count=1):
    """``(leaf event, multiplicity)`` pairs of a composed event."""
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        yield from event_leaves(event.event, count * int(event.count))
    elif isinstance(event, dp_accounting.ComposedDpEvent):
        for e in event.events:
            yield from event_leaves(e, count)
    else:
        yield event, count


def rdp_orders(event):
    """The Rényi orders the accountant uses for ``event``: `EXTENDED_ORDERS` when every part is
    zCDP or Gaussian (RDP α·ρ at any order), else dp_accounting's default (None: subsampled
    events are costly at large orders)."""
    closed = all(isinstance(e, _CLOSED_FORM) for e, _ in event_leaves(event))
    return EXTENDED_ORDERS if closed else None


def rdp_epsilon(event, delta: float) -> float:
    """ε at ``delta`` of ``event`` by dp_accounting's Rényi accountant (replace-one), on the
    orders of `rdp_orders`."""
    acc = RdpAccountant(orders=rdp_orders(event), neighboring_relation=_REPLACE)
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def gaussian_pld_epsilon(noise_multiplier: float, delta: float) -> float:
    """ε at ``delta`` of one Gaussian by dp_accounting's privacy loss distribution, discretised
    as ``privacy_spent`` does (interval ``1e-4 · max(1, ε_rdp)``)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    rough = rdp_epsilon(dp_accounting.GaussianDpEvent(noise_multiplier), delta)
    interval = 1e-4 * max(1.0, rough)
    dist = pld.from_gaussian_mechanism(
        standard_deviation=noise_multiplier, value_discretization_interval=interval
    )
    return float(dist.get_epsilon_for_delta(delta))


def fit_to_accountant(scale: float, epsilon: float, spent) -> float:
    """Smallest noise ``≥ scale`` (within `RELATIVE_TOLERANCE`) with ``spent(noise) ≤ ε``.

    ``spent`` is decreasing in the noise. ``scale`` itself is returned when it already complies.
    """
    first = spent(scale)
    if first <= epsilon:
        return scale
    r = max(RELATIVE_TOLERANCE, 2.0 * (first / epsilon - 1.0))
    lo, hi = scale, scale * (1.0 + r)
    while spent(hi) > epsilon:
        lo, hi = hi, hi * (1.0 + 4.0 * r)
        r *= 4.0
    while hi / lo - 1.0 > RELATIVE_TOLERANCE:
        mid = math.sqrt(lo * hi)
        if spent(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    return hi


@functools.lru_cache(maxsize=512)
def fitted_gaussian_sigma(sigma: float, epsilon: float, delta: float, sensitivity: float) -> float:
    """``sigma`` raised until the accountant reports the Gaussian at ``epsilon`` or below."""
    return fit_to_accountant(sigma, epsilon, lambda s: gaussian_pld_epsilon(s / sensitivity, delta))


@functools.lru_cache(maxsize=512)
def fitted_zcdp_sigma(sigma: float, epsilon: float, delta: float, sensitivity: float) -> float:
    """``sigma`` raised until the accountant reports ``ZCDpEvent(Δ²/(2σ²))`` at ``epsilon``
    or below."""

    def spent(s):
        return rdp_epsilon(dp_accounting.ZCDpEvent(rho=sensitivity**2 / (2.0 * s * s)), delta)

    return fit_to_accountant(sigma, epsilon, spent)
