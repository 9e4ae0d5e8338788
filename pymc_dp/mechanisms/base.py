"""The mechanism interface shared by every noise distribution.

A mechanism owns its noise density (NumPy, PyTensor and a compiled scalar kernel), sampling with a
passed ``np.random.Generator``, its calibration from (epsilon, delta, sensitivity) and its privacy
guarantee as a ``dp_accounting`` event.

Compiled kernel convention
--------------------------
Every mechanism reduces to ``kernel_logpdf(code, a, b, z)`` with ``z = release - statistic``:

* ``code 0``: ``-|z| a + b``  (Laplace, discrete Laplace),
* ``code 1``: ``-z**2 a + b`` (Gaussian),
* ``code 2``: ``a if z == 0 else b`` (randomized response: ``a = log P(keep)``).

The samplers' numba loops evaluate it per coordinate; see `kernel_logpdf`.
"""

from __future__ import annotations

import dataclasses

import numba
import numpy as np

__all__ = ["Mechanism", "kernel_logpdf", "LAPLACE_KERNEL", "GAUSSIAN_KERNEL", "CATEGORICAL_KERNEL"]

LAPLACE_KERNEL = 0
GAUSSIAN_KERNEL = 1
CATEGORICAL_KERNEL = 2


@numba.njit(cache=True, inline="always")
def kernel_logpdf(code, a, b, z):
    """Log density of the noise ``z`` under the compiled kernel ``code`` (see module docstring)."""
    if code == 0:
        return -abs(z) * a + b
    if code == 1:
        return -z * z * a + b
    if z == 0.0:
        return a
    return b


@dataclasses.dataclass(frozen=True)
class Mechanism:
    """Base class. Subclasses are frozen dataclasses; ``bind`` returns a calibrated copy."""

    #: which sensitivity the calibration uses: 1 (L1), 2 (L2) or None (local, no sensitivity)
    norm = 1
    #: releases are integers (the release must be integer-valued)
    integer = False
    #: the mechanism randomizes one record at a time (needs a ``Local`` statistic)
    local_only = False

    # -- identity ------------------------------------------------------------------------------
    def noise_key(self) -> tuple:
        """What defines the mechanism's output distribution and guarantee once calibrated
        (e.g. ``("scale", b)``); equality and hashing use it with the type and the sensitivity.

        ``Laplace(epsilon=1.0)`` bound to sensitivity 0.12 and ``Laplace(scale=0.12)`` bound to
        the same sensitivity are the same mechanism: same noise, same guarantee.
        """
        return ("fields", *(getattr(self, f.name) for f in dataclasses.fields(self)))

    def _identity(self) -> tuple:
        calibrated = self.calibrated
        key = self.noise_key() if calibrated else Mechanism.noise_key(self)
        return (type(self), calibrated, key, getattr(self, "sensitivity", None))

    def __eq__(self, other):
        if not isinstance(other, Mechanism):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self):
        return hash(self._identity())

    def noise_radius(self, statistic=None) -> float | None:
        """A public bound on ``|noise|`` exceeded with probability below ``e^-1000`` (used by
        ``release`` to refuse releases that could overflow float64); None if not applicable."""
        return None

    # -- calibration ---------------------------------------------------------------------------
    @property
    def calibrated(self) -> bool:
        raise NotImplementedError

    def bind(self, statistic, n: int, dim: int) -> Mechanism:
        """Return a copy calibrated to ``statistic``'s sensitivity for ``n`` records, ``dim`` outputs.

        A mechanism given its noise scale directly is returned unchanged (its accounting still
        uses the statistic's sensitivity when one is declared).
        """
        if not self.norm or getattr(self, "sensitivity", None) is not None:
            return self
        sens = statistic.sensitivity(self.norm, n=n, dim=dim)
        if sens is None:
            if self.calibrated:
                return self
            raise ValueError(
                f"{type(self).__name__}(epsilon={getattr(self, 'epsilon', None)!r}) needs the "
                f"L{self.norm} sensitivity of the statistic, but {statistic!r} declares no bounds. "
                f"Declare bounds, e.g. pdp.{type(statistic).__name__}(lower=..., upper=...) "
                "(records are clamped to them), or give the noise scale directly, e.g. "
                f"pdp.{type(self).__name__}({self._scale_name}=...)."
            )
        return self.with_sensitivity(sens)

    def with_sensitivity(self, sensitivity: float) -> Mechanism:
        return dataclasses.replace(self, sensitivity=float(sensitivity))

    # -- densities -----------------------------------------------------------------------------
    def logpdf(self, release, statistic):
        """Elementwise log density of ``release`` given the statistic (NumPy)."""
        a, b = self.kernel_params()
        z = np.asarray(release, dtype=float) - np.asarray(statistic, dtype=float)
        code = self.kernel_code
        if code == LAPLACE_KERNEL:
            return -np.abs(z) * a + b
        if code == GAUSSIAN_KERNEL:
            return -z * z * a + b
        return np.where(z == 0, a, b)

    def logp(self, value, statistic):
        """Elementwise log density as a PyTensor graph."""
        import pytensor.tensor as pt

        a, b = self.kernel_params()
        z = pt.cast(value, "float64") - pt.cast(statistic, "float64")
        code = self.kernel_code
        if code == LAPLACE_KERNEL:
            return -pt.abs(z) * a + b
        if code == GAUSSIAN_KERNEL:
            return -pt.sqr(z) * a + b
        return pt.switch(pt.eq(z, 0), a, b)

    def kernel_params(self) -> tuple[float, float]:
        """``(a, b)`` of the compiled kernel (module docstring)."""
        raise NotImplementedError

    kernel_code = LAPLACE_KERNEL
    _scale_name = "scale"

    # -- sampling ------------------------------------------------------------------------------
    def sample(self, statistic, rng=None):
        """Return ``statistic`` plus noise.

        ``rng=None`` draws through OpenDP (secure; the only path fit for a real publication); a
        ``numpy.random.Generator`` or int seed drives the same exact sampler for simulations.
        """
        raise NotImplementedError

    def random_graph(self, statistic, size=None):
        """PyTensor graph of ``statistic`` plus noise (used by ``DPObserved`` predictive draws)."""
        raise NotImplementedError

    # -- accounting ----------------------------------------------------------------------------
    def dp_event(self):
        """The mechanism's guarantee as a ``dp_accounting.DpEvent``."""
        raise NotImplementedError

    def _require_calibrated(self):
        from pymc_dp.mechanisms._noise import CalibrationError

        if not self.calibrated:
            raise CalibrationError(
                f"{self!r} is not calibrated yet: it knows its privacy budget but not the statistic's "
                f"sensitivity. Pass sensitivity=..., or use it through pdp.release / pdp.DPObserved "
                "which calibrate it from the statistic's bounds."
            )
