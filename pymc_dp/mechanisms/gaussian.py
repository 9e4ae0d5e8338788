r"""Gaussian mechanism: release ``s + N(0, σ² I)``, σ calibrated to (ε, δ, Δ₂).

Calibrations
------------
``"analytic"`` (default; Balle & Wang 2018, Theorem 8): the smallest σ with

```text
\Phi\!\left(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\right)
- e^{\varepsilon}\,\Phi\!\left(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\right)
\le \delta ,
```

found by root finding (the left side decreases in σ); valid for every ε > 0.

``"classic"`` (Dwork & Roth 2014, Theorem A.1): ``σ = Δ √(2 ln(1.25/δ)) / ε``, valid for ε < 1.

Sampling
--------
The noise is drawn exactly on the lattice ``2^k ℤ`` (``k = lattice_exponent(σ)``, ``2^k ≤ σ·2^-30``):
the statistic is rounded to the nearest lattice point and ``2^k`` times a discrete Gaussian integer
with parameter ``σ / 2^k`` is added (Canonne, Kamath & Steinke 2020) — OpenDP's ``make_gaussian``
over floats. ``docs/mechanisms.md`` bounds the difference to the continuous density.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings

from scipy import optimize, special

from pymc_dp._checks import check_delta, check_epsilon, check_noise_rng, check_positive
from pymc_dp.mechanisms import _calibrate, _exact
from pymc_dp.mechanisms._noise import gaussian_release, reject_bool
from pymc_dp.mechanisms.base import GAUSSIAN_KERNEL, Mechanism

__all__ = ["Gaussian", "analytic_gaussian_sigma", "analytic_gaussian_delta"]

_CALIBRATIONS = ("analytic", "classic")


def analytic_gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """The exact δ(ε) of the Gaussian mechanism with noise σ (Balle & Wang 2018, Theorem 8)."""
    a = sensitivity / (2.0 * sigma)
    c = epsilon * sigma / sensitivity
    # Φ(a - c) - e^ε Φ(-a - c), the second term in log space for large ε
    first = special.ndtr(a - c)
    second = math.exp(epsilon + special.log_ndtr(-a - c))
    return float(first - second)


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ whose Gaussian mechanism is (ε, δ)-DP for L2 sensitivity ``sensitivity``."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    sensitivity = check_positive(sensitivity, name="sensitivity")

    def excess(log_sigma):
        return analytic_gaussian_delta(math.exp(log_sigma), epsilon, sensitivity) - delta

    lo, hi = math.log(sensitivity) - 10.0, math.log(sensitivity) + 10.0
    while excess(lo) < 0:
        lo -= 10.0
    while excess(hi) > 0:
        hi += 10.0
    root = optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=1e-13)
    sigma = math.exp(root)
    # step up to the conservative side of the root
    while analytic_gaussian_delta(sigma, epsilon, sensitivity) > delta:
        sigma *= 1 + 1e-12
    return sigma


#: the smallest δ an (ε, δ)-calibrated Gaussian takes (the accountant's privacy loss
#: distribution cannot report below about 1e-23)
_MIN_DELTA = 1e-20


@dataclasses.dataclass(frozen=True, eq=False)
class Gaussian(Mechanism):
    r"""Gaussian noise on each coordinate of the statistic.

    ```text
    p(s_{dp} \mid s) = \prod_j \mathcal N(s_{dp,j};\, s_j,\, \sigma^2)
    ```

    Parameters
    ----------
    sigma : float, optional
        Noise standard deviation directly. Exclusive with ``epsilon``.
    epsilon, delta : float, optional
        (ε, δ)-DP target; σ from ``calibration`` and the L2 sensitivity, raised (by about
        1e-8 relative) where the accountant's discretised privacy loss distribution would report
        more than ``epsilon`` at ``delta``.
    sensitivity : float, optional
        L2 sensitivity Δ₂. Defaults to the statistic's, from its declared bounds.
    calibration : {"analytic", "classic"}
        Balle & Wang's exact calibration (default) or Dwork & Roth's bound (needs ε < 1).
    """

    sigma: float | None = None
    epsilon: float | None = None
    delta: float | None = None
    sensitivity: float | None = None
    calibration: str = "analytic"

    norm = 2
    gaussian = True
    kernel_code = GAUSSIAN_KERNEL
    _scale_name = "sigma"

    def __post_init__(self):
        from pymc_dp.mechanisms._noise import scale_or_epsilon

        scale_or_epsilon(self, "sigma")
        if not isinstance(self.calibration, str):
            raise TypeError(
                f"calibration must be a string, got calibration={self.calibration!r}. Use "
                "'analytic' or 'classic'."
            )
        reject_bool(self.delta, "delta")
        reject_bool(self.sensitivity, "sensitivity")
        if self.calibration not in _CALIBRATIONS:
            raise ValueError(
                f"calibration must be one of {_CALIBRATIONS}, got calibration={self.calibration!r}. "
                "Use 'analytic' (Balle & Wang 2018, tight) unless you must match the classic bound."
            )
        if self.epsilon is not None:
            if self.delta is None:
                raise ValueError(
                    "Gaussian(epsilon=...) needs delta, got delta=None. The Gaussian mechanism is "
                    "(epsilon, delta)-DP: pass e.g. delta=1e-5, or give sigma directly."
                )
            object.__setattr__(self, "delta", check_delta(self.delta))
            if self.delta < _MIN_DELTA:
                raise ValueError(
                    f"Gaussian(epsilon=..., delta=...) needs delta >= {_MIN_DELTA:g}, got "
                    f"delta={self.delta!r}: the accountant (dp_accounting's privacy loss "
                    "distribution, which calibrates the noise and reports pdp.privacy_spent) "
                    "truncates the privacy loss below about 1e-23 and cannot state a smaller delta. "
                    f"Pass delta >= {_MIN_DELTA:g}, or sigma= directly."
                )
            if self.calibration == "classic" and self.epsilon >= 1:
                raise ValueError(
                    f"calibration='classic' holds only for epsilon < 1, got epsilon={self.epsilon!r}. "
                    "Use calibration='analytic', which is exact for every epsilon."
                )
        elif self.delta is not None:
            object.__setattr__(self, "delta", check_delta(self.delta))
        if self.sensitivity is not None:
            object.__setattr__(
                self,
                "sensitivity",
                check_positive(
                    self.sensitivity,
                    name="sensitivity",
                    fix="Use the L2 distance a replaced record can move the statistic.",
                ),
            )

    @property
    def calibrated(self) -> bool:
        return self.sigma is not None or self.sensitivity is not None

    @property
    def s(self) -> float:
        """Deprecated alias of `noise_sd`."""
        warnings.warn(
            "Gaussian.s is deprecated; use Gaussian.noise_sd.", DeprecationWarning, stacklevel=2
        )
        return self.noise_sd

    @functools.cached_property
    def noise_sd(self) -> float:
        """The noise standard deviation σ in use (``sigma``, or calibrated from (ε, δ, Δ₂))."""
        self._require_calibrated()
        if self.sigma is not None:
            return self.sigma
        if self.calibration == "classic":
            sigma = self.sensitivity * math.sqrt(2.0 * math.log(1.25 / self.delta)) / self.epsilon
        else:
            sigma = analytic_gaussian_sigma(self.epsilon, self.delta, self.sensitivity)
        # the accountant's (discretised) privacy loss distribution must not report more than ε
        return _calibrate.fitted_gaussian_sigma(sigma, self.epsilon, self.delta, self.sensitivity)

    def noise_key(self):
        return ("sd", self.noise_sd)

    def noise_radius(self, statistic=None):
        """``45 σ``: ``P(|Z| > 45 σ) < e^-1000``."""
        return 45.0 * self.noise_sd

    @property
    def lattice_k(self) -> int:
        """Releases lie on ``2^lattice_k ℤ`` (depends on the public σ only)."""
        return _exact.lattice_exponent(self.noise_sd)

    def kernel_params(self):
        s = self.noise_sd
        return 0.5 / (s * s), -0.5 * math.log(2.0 * math.pi * s * s)

    def tail_radius(self, log_ratio):
        """``σ √(2 log_ratio)``: the density ratio is ``e^{-w²/2σ²}``, a bound on ``P(|Z| > w)``."""
        return math.sqrt(log_ratio / self.kernel_params()[0])

    def noise_distribution(self, loc=0.0):
        from scipy import stats

        return stats.norm(loc=loc, scale=self.noise_sd)

    @property
    def rho_spent(self) -> float:
        """ρ = 1 / (2 z²) of zCDP with ``z = σ / Δ₂`` the event's noise multiplier."""
        if self.sensitivity is None:
            raise ValueError(
                f"{self!r} has no sensitivity, so its zCDP parameter is undefined. Pass "
                "sensitivity=..., or bind it to a statistic (DPObserved / release do this)."
            )
        return 1.0 / (2.0 * (self.noise_sd / self.sensitivity) ** 2)

    def sample(self, statistic, rng=None):
        """Return ``statistic`` plus Gaussian noise on the lattice ``2^lattice_k ℤ``.

        ``rng=None`` (default) draws through OpenDP's ``make_gaussian`` from the operating
        system's secure generator: **only this path is fit for a real publication.** A
        ``Generator`` (or an int seed) drives the same exact sampler (Canonne et al. 2020,
        Algorithm 3) for simulations, tests and reproducible examples.
        """
        rng = check_noise_rng(rng, owner="Gaussian.sample")
        return gaussian_release(statistic, self.noise_sd, rng, integer=False, name="Gaussian")

    def random_graph(self, statistic, size=None):
        import pymc as pm

        return pm.Normal.dist(mu=statistic, sigma=self.noise_sd, size=size)

    def dp_event(self):
        from dp_accounting import dp_event

        if self.sensitivity is None:
            raise ValueError(
                f"{self!r} has no sensitivity, so its privacy is undefined. Pass sensitivity=..., "
                "or use the mechanism bound to a statistic (DPObserved / release do this)."
            )
        return dp_event.GaussianDpEvent(noise_multiplier=self.noise_sd / self.sensitivity)
