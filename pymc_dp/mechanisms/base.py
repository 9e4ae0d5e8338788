"""The mechanism interface shared by every noise distribution.

A mechanism owns every fact about itself; samplers, ``marginal``, ``fisher``, ``intervals`` and the
accountant ask it and never switch on its type or kernel code:

=============================  ===================================================================
``logpdf`` / ``logp``           density of the release in NumPy / PyTensor
``kernel_code``,                its compiled kernel (below) and the kernel's ``(a, b)``;
``kernel_params``,              ``compiled_kernel()`` returns ``(code, a, b)`` or refuses a
``compiled_kernel()``           mechanism without one (``kernel_code = None``)
``noise_sd``                    standard deviation of the noise (``inf``: no scale, categorical)
``tail_radius(log_ratio)``      ``w`` with density at ``|z| ≥ w`` at most ``e^-log_ratio`` times its
                                maximum and ``P(|Z| > w) ≤ e^-log_ratio`` (None: no known form)
``noise_distribution(loc)``     the continuous noise law as a frozen ``scipy.stats`` distribution
                                (None: none in closed form)
``gaussian``, ``gaussian_sd``   the density is the Gaussian kernel (class flag, known before
                                calibration) and its σ (else None): ``fisher`` / ``CLTRelease``
``dp_event()``                  the guarantee as a ``dp_accounting`` event
``epsilon_delta``               ``(ε, δ)`` stated directly when there is no event (else None)
``epsilon_spent`` / ``rho_spent``  pure ε / zCDP ρ of the guarantee, or None
``sample(statistic, rng)``      the release: OpenDP-backed when ``rng`` is None (secure)
=============================  ===================================================================

Compiled kernel convention
--------------------------
Every mechanism reduces to ``kernel_logpdf(code, a, b, z)`` with ``z = release - statistic``:

* ``code 0``: ``-|z| a + b``  (Laplace, discrete Laplace),
* ``code 1``: ``-z**2 a + b`` (Gaussian),
* ``code 2``: ``a if z == 0 else b`` (randomized response: ``a = log P(keep)``).

The samplers' numba loops evaluate it per coordinate; see `kernel_logpdf`. A subclass declares
one of these codes or ``kernel_code = None`` (no compiled kernel: ``DPObserved`` models it through
``logp``, and the record-wise numba samplers refuse it when they are built); any other code is
refused when the class is defined.
"""

from __future__ import annotations

import dataclasses

import numba
import numpy as np

__all__ = [
    "Mechanism",
    "kernel_logpdf",
    "kernel_quadratic",
    "check_kernel_codes",
    "KERNEL_CODES",
    "LAPLACE_KERNEL",
    "GAUSSIAN_KERNEL",
    "CATEGORICAL_KERNEL",
]

LAPLACE_KERNEL = 0
GAUSSIAN_KERNEL = 1
CATEGORICAL_KERNEL = 2
#: the compiled kernels `kernel_logpdf` evaluates
KERNEL_CODES = (LAPLACE_KERNEL, GAUSSIAN_KERNEL, CATEGORICAL_KERNEL)


@numba.njit(cache=True, inline="always")
def kernel_logpdf(code, a, b, z):
    """Log density of the noise ``z`` under the compiled kernel ``code`` (see module docstring)."""
    if code == 0:
        return -abs(z) * a + b
    if code == 1:
        return -z * z * a + b
    if code == 2:
        if z == 0.0:
            return a
        return b
    raise ValueError("kernel_logpdf: unknown kernel code (see pymc_dp.mechanisms.base)")


@numba.njit(cache=True, inline="always")
def kernel_quadratic(code, a):
    """``A`` when the compiled kernel ``code`` with parameter ``a`` is quadratic in the noise,
    ``ℓ(z) = −A z² + B`` (the Gaussian), NaN for every other kernel: loops that exploit a
    quadratic log density (a weight walk with one ``exp`` per row) ask here instead of testing
    the code."""
    if code == 1:
        return a
    if code == 0 or code == 2:
        return np.nan
    raise ValueError("kernel_quadratic: unknown kernel code (see pymc_dp.mechanisms.base)")


def check_kernel_codes(codes) -> np.ndarray:
    """``codes`` as an int64 array, refusing any code `kernel_logpdf` does not know."""
    arr = np.asarray(codes, dtype=np.int64)
    bad = sorted(set(arr.ravel().tolist()) - set(KERNEL_CODES))
    if bad:
        raise ValueError(
            f"unknown compiled kernel code(s) {bad}; the known ones are {KERNEL_CODES} "
            "(pymc_dp.mechanisms.base). Give the mechanism one of them or kernel_code=None."
        )
    return arr


@dataclasses.dataclass(frozen=True)
class Mechanism:
    """Base class. Subclasses are frozen dataclasses; ``bind`` returns a calibrated copy."""

    #: which sensitivity the calibration uses: 1 (L1), 2 (L2) or None (local, no sensitivity)
    norm = 1
    #: releases are integers (the release must be integer-valued)
    integer = False
    #: the mechanism randomizes one record at a time (needs a ``Local`` statistic)
    local_only = False
    #: the density is the Gaussian kernel ``N(0, σ²)`` up to its normaliser (known before calibration)
    gaussian = False
    #: compiled kernel (module docstring), or None when the density has no compiled kernel
    kernel_code = None
    _scale_name = "scale"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("kernel_code", cls.kernel_code)
        if code is not None and (isinstance(code, bool) or code not in KERNEL_CODES):
            raise TypeError(
                f"{cls.__name__}.kernel_code={code!r} is not a compiled kernel; use one of "
                f"{KERNEL_CODES} (pymc_dp.mechanisms.base) or None (no compiled kernel)."
            )

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
    # ``logpdf`` / ``logp`` below evaluate the compiled kernel's density; a mechanism without a
    # compiled kernel (``kernel_code = None``) overrides both.
    def logpdf(self, release, statistic):
        """Elementwise log density of ``release`` given the statistic (NumPy)."""
        code, a, b = self.compiled_kernel()
        z = np.asarray(release, dtype=float) - np.asarray(statistic, dtype=float)
        if code == LAPLACE_KERNEL:
            return -np.abs(z) * a + b
        if code == GAUSSIAN_KERNEL:
            return -z * z * a + b
        return np.where(z == 0, a, b)

    def logp(self, value, statistic):
        """Elementwise log density as a PyTensor graph."""
        import pytensor.tensor as pt

        code, a, b = self.compiled_kernel()
        z = pt.cast(value, "float64") - pt.cast(statistic, "float64")
        if code == LAPLACE_KERNEL:
            return -pt.abs(z) * a + b
        if code == GAUSSIAN_KERNEL:
            return -pt.sqr(z) * a + b
        return pt.switch(pt.eq(z, 0), a, b)

    def kernel_params(self) -> tuple[float, float]:
        """``(a, b)`` of the compiled kernel (module docstring)."""
        raise NotImplementedError(f"{type(self).__name__} has no compiled kernel.")

    def compiled_kernel(self) -> tuple[int, float, float]:
        """``(code, a, b)`` for `kernel_logpdf`; refuses a mechanism without a compiled kernel.

        The record-wise samplers (``DataAugmentation``, ``CountsSweep``, ``TableCells``) call it
        when they are built, so a mechanism they cannot evaluate is refused there.
        """
        if self.kernel_code is None:
            raise ValueError(
                f"{type(self).__name__} has no compiled noise kernel, so the record-wise samplers "
                "(DataAugmentation, CountsSweep, TableCells) cannot evaluate it. Sample the model "
                "with PyMC's own steps through the release's logp, e.g. "
                "pm.sample(step=pm.Metropolis(...)) or NUTS for continuous parents, or use a "
                "mechanism with a compiled kernel (pdp.Laplace, pdp.Gaussian, ...)."
            )
        a, b = self.kernel_params()
        return self.kernel_code, a, b

    # -- noise facts ---------------------------------------------------------------------------
    @property
    def noise_sd(self) -> float:
        """Standard deviation of the noise (``inf`` when the noise has no scale)."""
        raise NotImplementedError(f"{type(self).__name__} states no noise standard deviation.")

    def tail_radius(self, log_ratio: float) -> float | None:
        """``w`` such that the noise density at ``|z| ≥ w`` is at most ``e^-log_ratio`` times its
        maximum and ``P(|Z| > w) ≤ e^-log_ratio``; None when the tails have no known form."""
        return None

    def noise_distribution(self, loc=0.0):
        """The continuous noise law shifted by ``loc`` (a frozen ``scipy.stats`` distribution),
        or None when there is none in closed form (discrete, categorical, data-dependent)."""
        return None

    @property
    def gaussian_sd(self) -> float | None:
        """σ when the density is the Gaussian kernel ``N(0, σ²)`` up to its normaliser (`gaussian`;
        the Gaussian formulas of ``fisher`` apply), else None."""
        return self.noise_sd if self.gaussian else None

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
        """The mechanism's guarantee as a ``dp_accounting.DpEvent`` (``UnsupportedDpEvent`` when
        it has none; `epsilon_delta` states the guarantee then)."""
        raise NotImplementedError

    @property
    def epsilon_delta(self) -> tuple[float, float] | None:
        """``(ε, δ)`` of a guarantee stated without a ``dp_accounting`` event (composed by basic
        composition; δ = 0 for pure ε-DP), or None when `dp_event` states it."""
        return None

    @property
    def epsilon_spent(self) -> float | None:
        """ε of a pure ε-DP guarantee under replace-one neighbours, or None."""
        return None

    @property
    def rho_spent(self) -> float | None:
        """ρ of a ρ-zCDP guarantee under replace-one neighbours, or None."""
        return None

    def _require_calibrated(self):
        from pymc_dp.mechanisms._noise import CalibrationError

        if not self.calibrated:
            raise CalibrationError(
                f"{self!r} is not calibrated yet: it knows its privacy budget but not the statistic's "
                f"sensitivity. Pass sensitivity=..., or use it through pdp.release / pdp.DPObserved "
                "which calibrate it from the statistic's bounds."
            )
