"""Laplace mechanism (Dwork et al. 2006): release ``s + Laplace(0, b)``, ``b = Δ₁ / ε``.

The noise is drawn exactly on the lattice ``2^k ℤ`` (``k = lattice_exponent(b)``, so
``2^k ≤ b·2^-30``): the statistic is rounded to the nearest lattice point and ``2^k`` times a
discrete Laplace integer of scale ``b / 2^k`` is added — OpenDP's ``make_laplace`` over floats.
``docs/mechanisms.md`` bounds the difference to the continuous density the analyst uses.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

from pymc_dp._checks import check_noise_rng, check_positive
from pymc_dp.mechanisms import _calibrate, _exact
from pymc_dp.mechanisms._noise import laplace_release, reject_bool, scale_or_epsilon
from pymc_dp.mechanisms.base import LAPLACE_KERNEL, Mechanism

__all__ = ["Laplace"]


@dataclasses.dataclass(frozen=True, eq=False)
class Laplace(Mechanism):
    r"""Laplace noise on each coordinate of the statistic.

    ```text
    p(s_{dp} \mid s) = \prod_j \frac{1}{2b} e^{-|s_{dp,j} - s_j| / b},
    \qquad b = \Delta_1 / \varepsilon .
    ```

    Parameters
    ----------
    scale : float, optional
        The noise scale ``b`` directly. Exclusive with ``epsilon``.
    epsilon : float, optional
        Budget of this release; ``b = sensitivity / epsilon`` (pure ε-DP), rounded up to the
        float whose accounting event reports at most ``epsilon``.
    sensitivity : float, optional
        L1 sensitivity Δ₁. Defaults to the statistic's, from its declared bounds.
    """

    scale: float | None = None
    epsilon: float | None = None
    sensitivity: float | None = None

    norm = 1
    kernel_code = LAPLACE_KERNEL

    def __post_init__(self):
        scale_or_epsilon(self, "scale")
        if self.sensitivity is not None:
            reject_bool(self.sensitivity, "sensitivity")
            object.__setattr__(
                self,
                "sensitivity",
                check_positive(
                    self.sensitivity,
                    name="sensitivity",
                    fix="Use the L1 distance a replaced record can move the statistic.",
                ),
            )

    @property
    def calibrated(self) -> bool:
        return self.scale is not None or self.sensitivity is not None

    @property
    def noise_scale(self) -> float:
        """The noise scale ``b`` in use (``scale``, or ``sensitivity / epsilon``)."""
        self._require_calibrated()
        if self.scale is not None:
            return self.scale
        return _calibrate.laplace_scale(self.sensitivity, self.epsilon)

    @property
    def b(self) -> float:
        """Deprecated alias of `noise_scale`."""
        warnings.warn(
            "Laplace.b is deprecated; use Laplace.noise_scale.", DeprecationWarning, stacklevel=2
        )
        return self.noise_scale

    @property
    def lattice_k(self) -> int:
        """Releases lie on ``2^lattice_k ℤ`` (depends on the public noise scale only)."""
        return _exact.lattice_exponent(self.noise_scale)

    def noise_key(self):
        return ("scale", self.noise_scale)

    def noise_radius(self, statistic=None):
        """``1000 b``: ``P(|Z| > 1000 b) = e^-1000``."""
        return 1000.0 * self.noise_scale

    def kernel_params(self):
        b = self.noise_scale
        return 1.0 / b, -math.log(2.0 * b)

    @property
    def noise_sd(self) -> float:
        """``√2 b`` (for `DiscreteLaplace` an upper bound: its variance is ``1 / (2 sinh²(1/2b))``)."""
        return math.sqrt(2.0) * self.noise_scale

    def tail_radius(self, log_ratio):
        """``log_ratio · b``: the density ratio and ``P(|Z| > w)`` are both ``e^{-w/b}``."""
        return log_ratio / self.kernel_params()[0]

    def noise_distribution(self, loc=0.0):
        from scipy import stats

        return stats.laplace(loc=loc, scale=self.noise_scale)

    def sample(self, statistic, rng=None):
        """Return ``statistic`` plus Laplace noise on the lattice ``2^lattice_k ℤ``.

        Parameters
        ----------
        statistic : array_like of float
            The exact statistic (finite); rounded to the nearest lattice point first.
        rng : None, numpy.random.Generator or int, optional
            ``None`` (default) draws through OpenDP's ``make_laplace`` from the operating system's
            secure generator: **only this path is fit for a real publication.** A ``Generator``
            (or an int seed) drives the same exact sampler (Canonne et al. 2020, Algorithms 1–2)
            for simulations, tests and reproducible examples.
        """
        rng = check_noise_rng(rng, owner=f"{type(self).__name__}.sample")
        return laplace_release(
            statistic, self.noise_scale, rng, integer=False, name=type(self).__name__
        )

    def random_graph(self, statistic, size=None):
        import pymc as pm

        return pm.Laplace.dist(mu=statistic, b=self.noise_scale, size=size)

    @property
    def epsilon_spent(self) -> float:
        """ε of the guarantee, ``1 / (b / Δ₁)`` as its ``dp_event`` states it (at most the
        ``epsilon`` it was calibrated to)."""
        if self.sensitivity is None:
            raise ValueError(
                f"The privacy of {type(self).__name__}(scale=...) needs sensitivity=...; pass it."
            )
        return 1.0 / (self.noise_scale / self.sensitivity)

    def dp_event(self):
        from dp_accounting import dp_event

        if self.sensitivity is None:
            raise ValueError(
                f"{self!r} has no sensitivity, so its privacy is undefined. Pass sensitivity=..., "
                "or use the mechanism bound to a statistic (DPObserved / release do this)."
            )
        return dp_event.LaplaceDpEvent(noise_multiplier=self.noise_scale / self.sensitivity)
