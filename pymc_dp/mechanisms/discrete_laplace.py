"""Discrete Laplace (two-sided geometric) mechanism for integer statistics (Ghosh et al. 2012)."""

from __future__ import annotations

import dataclasses
import math

from pymc_dp._checks import check_noise_rng
from pymc_dp.mechanisms import _calibrate
from pymc_dp.mechanisms._noise import integer_sensitivity, laplace_release, scale_or_epsilon
from pymc_dp.mechanisms.base import LAPLACE_KERNEL
from pymc_dp.mechanisms.laplace import Laplace

__all__ = ["DiscreteLaplace"]


@dataclasses.dataclass(frozen=True, eq=False)
class DiscreteLaplace(Laplace):
    r"""Integer noise with `P(Z = k) = \tanh\!\left(\tfrac{1}{2b}\right) e^{-|k|/b}`, ``k ∈ ℤ``.

    With ``b = Δ₁/ε`` and an integer statistic of L1 sensitivity Δ₁ this is ε-DP. Releases are
    integers; ``Z`` is the difference of two geometric variables with success ``1 - e^{-1/b}``.

    Parameters
    ----------
    scale : float, optional
        ``b`` directly. Exclusive with ``epsilon``.
    epsilon : float, optional
        Budget of this release; ``b = sensitivity / epsilon``.
    sensitivity : float, optional
        Integer L1 sensitivity. Defaults to the statistic's.
    """

    scale: float | None = None
    epsilon: float | None = None
    sensitivity: float | None = None

    norm = 1
    integer = True
    kernel_code = LAPLACE_KERNEL

    def __post_init__(self):
        scale_or_epsilon(self, "scale")
        if self.sensitivity is not None:
            sens = integer_sensitivity(self.sensitivity, "DiscreteLaplace")
            object.__setattr__(self, "sensitivity", sens)

    def with_sensitivity(self, sensitivity):
        sens = float(sensitivity)
        if sens != round(sens):
            raise ValueError(
                f"DiscreteLaplace needs an integer-valued statistic with integer sensitivity, got "
                f"sensitivity={sens!r}. Use integer bounds (e.g. Sum(lower=0, upper=5)) and not Mean."
            )
        return dataclasses.replace(self, sensitivity=sens)

    @property
    def noise_scale(self) -> float:
        """The noise scale ``b`` in use (``scale``, or ``sensitivity / epsilon`` rounded up to the
        float whose event reports at most ``epsilon``)."""
        self._require_calibrated()
        if self.scale is not None:
            return self.scale
        return _calibrate.discrete_laplace_scale(self.sensitivity, self.epsilon)

    def kernel_params(self):
        b = self.noise_scale
        return 1.0 / b, math.log(math.tanh(0.5 / b))

    @property
    def lattice_k(self) -> int:
        """Releases are integers (lattice ``2^0 ℤ``)."""
        return 0

    def sample(self, statistic, rng=None):
        """Return the integer ``statistic`` plus discrete Laplace noise (int64).

        A statistic value that is not an integer is refused (never rounded). ``rng=None``
        (default) draws through OpenDP's ``make_laplace`` on ``i64`` from the operating system's
        secure generator: **only this path is fit for a real publication.** A ``Generator`` (or
        an int seed) drives the exact sampler of Canonne et al. (2020), Algorithm 2, for
        simulations and tests.
        """
        rng = check_noise_rng(rng, owner="DiscreteLaplace.sample")
        return laplace_release(
            statistic, self.noise_scale, rng, integer=True, name="DiscreteLaplace"
        )

    def random_graph(self, statistic, size=None):
        import pymc as pm
        import pytensor.tensor as pt

        p = -math.expm1(-1.0 / self.noise_scale)
        g1 = pm.Geometric.dist(p=p, size=size)
        g2 = pm.Geometric.dist(p=p, size=size)
        s = pt.as_tensor_variable(statistic)
        if s.dtype.startswith("float"):
            s = pt.round(s)
        return pt.cast(s, "int64") + g1 - g2

    def noise_distribution(self, loc=0.0):
        return None  # integer noise: no continuous law

    @property
    def epsilon_spent(self) -> float:
        """ε of the guarantee, ``(1/b)·Δ₁`` as its ``dp_event`` states it."""
        if self.sensitivity is None:
            raise ValueError(
                "The privacy of DiscreteLaplace(scale=...) needs sensitivity=...; pass it."
            )
        return (1.0 / self.noise_scale) * int(self.sensitivity)

    def dp_event(self):
        from dp_accounting import dp_event

        if self.sensitivity is None:
            raise ValueError(
                f"{self!r} has no sensitivity, so its privacy is undefined. Pass sensitivity=..."
            )
        return dp_event.DiscreteLaplaceDpEvent(
            noise_parameter=1.0 / self.noise_scale, sensitivity=int(self.sensitivity)
        )
