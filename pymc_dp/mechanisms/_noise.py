"""Noise for a release: OpenDP without ``rng`` (secure), the exact lattice samplers with one.

Both routes draw the same distribution:

* integer mechanisms add discrete Laplace / discrete Gaussian noise to an integer statistic;
* continuous mechanisms round the statistic to the nearest multiple of ``2^k``
  (``k = lattice_exponent(scale)``, ties away from zero) and add ``2^k`` times integer noise of
  scale ``scale / 2^k`` — OpenDP's ``make_laplace`` / ``make_gaussian`` over floats with that ``k``.

See ``docs/mechanisms.md`` for why the analyst's continuous density models this output.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from pymc_dp._checks import check_epsilon, check_positive
from pymc_dp.mechanisms import _exact

__all__ = [
    "laplace_release",
    "gaussian_release",
    "require_integer",
    "reject_bool",
    "integer_sensitivity",
    "scale_or_epsilon",
    "CalibrationError",
]


class CalibrationError(AttributeError, ValueError):
    """An uncalibrated mechanism's noise scale was read (an ``AttributeError`` so ``hasattr`` works)."""


def reject_bool(value, name: str):
    """Refuse anything but a real number (or None) where a number is expected: bools
    (``float(True)`` would be 1.0), strings (``float('1')`` would be 1.0) and other objects."""
    if value is None:
        return value
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be a number, got {name}={bool(value)!r} (a bool). Pass the number itself, "
            f"e.g. {name}=1.0."
        )
    is_real = isinstance(value, numbers.Real) or (
        isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf"
    )
    if not is_real and type(value).__module__.startswith("pytensor"):
        raise TypeError(
            f"{name} must be a number, but {name}={value} is a PyTensor variable (a random "
            "variable, pm.Data or an expression). A mechanism's parameters are public: pass "
            f"the published number, e.g. {name}=1.0; an unknown noise parameter is not supported."
        )
    if not is_real:
        raise TypeError(
            f"{name} must be a real number, got {name}={value!r} (type {type(value).__name__}). "
            f"Pass the number itself, e.g. {name}=1.0, not a string."
        )
    return value


def integer_sensitivity(sensitivity, mech_name: str) -> float:
    """A declared sensitivity of an integer mechanism as a float, refusing anything but a
    positive integer (a number, not a bool)."""
    sens = float(reject_bool(sensitivity, "sensitivity"))
    if not (sens >= 1 and sens == round(sens)):
        raise ValueError(
            f"{mech_name} needs a positive integer sensitivity, got sensitivity={sensitivity!r}. "
            "Use integer bounds for the integer statistic (e.g. pdp.Sum(lower=0, upper=5) or "
            "pdp.Counts), not a Mean."
        )
    return sens


def _numeric(statistic, mech_name: str) -> np.ndarray:
    """The statistic as an array of numbers: text and booleans are refused (``"3"`` would be read
    as 3, ``True`` as 1)."""
    s = np.asarray(statistic)
    if s.dtype.kind not in "iuf":
        raise TypeError(
            f"{mech_name}.sample needs a numeric statistic (int or float values), got dtype "
            f"{s.dtype} ({type(statistic).__name__}). Pass the statistic's value as numbers, "
            "e.g. np.asarray(values, dtype=float)."
        )
    return s


def _magnitude_message(mech_name: str) -> str:
    return (
        f"{mech_name}: statistic values must be below 2^62 in magnitude (integer noise is added in "
        "int64, which would wrap around). Declare bounds that keep the statistic in that range."
    )


def require_integer(statistic, mech_name: str) -> np.ndarray:
    """The statistic as an int64 array, or a ``ValueError`` if any value is not an integer."""
    s = _numeric(statistic, mech_name)
    if s.dtype.kind in "iu":
        # compared before the cast: uint64 2^64 − 1 would wrap to −1, int64 near its limits would
        # wrap once the noise is added (neighbouring statistics 2^64 apart in the output)
        too_big = (s >= 2**62) if s.dtype.kind == "u" else ((s >= 2**62) | (s <= -(2**62)))
        if np.any(too_big):
            raise ValueError(_magnitude_message(mech_name))
        return s.astype(np.int64)
    f = s.astype(float)
    bad = ~np.isfinite(f) | (f != np.floor(f))
    if np.any(bad):
        raise ValueError(
            f"{mech_name} adds integer noise to an integer statistic, but some statistic values "
            f"are not integers. Use an integer statistic (e.g. pdp.Sum of integer records with "
            f"integer bounds, or pdp.Counts), or the continuous mechanism "
            f"({mech_name.replace('Discrete', '')}). Rounding would break the guarantee."
        )
    if np.any(np.abs(f) >= 2.0**62):
        raise ValueError(_magnitude_message(mech_name))
    return f.astype(np.int64)


def _float_input(statistic, mech_name: str) -> np.ndarray:
    s = _numeric(statistic, mech_name).astype(float)
    if not np.all(np.isfinite(s)):
        raise ValueError(
            f"{mech_name}: the statistic must be finite, and some values are NaN or inf. Check "
            "the records for NaN/inf and declare clamping bounds."
        )
    return s


def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def _run_opendp(kind: str, values: np.ndarray, scale: float, integer: bool, k):
    dp = _opendp()
    flat = values.ravel()
    size = flat.size
    if integer:
        atom, data = dp.atom_domain(T="i64"), [int(v) for v in flat]
        metric = dp.l1_distance(T="i64") if kind == "laplace" else dp.l2_distance(T="i64")
    else:
        atom, data = dp.atom_domain(T=float, nan=False), [float(v) for v in flat]
        metric = dp.l1_distance(T=float) if kind == "laplace" else dp.l2_distance(T=float)
    domain = dp.vector_domain(atom, size=size)
    make = dp.m.make_laplace if kind == "laplace" else dp.m.make_gaussian
    meas = make(domain, metric, scale=float(scale), k=None if integer else k)
    out = np.asarray(meas(data), dtype=np.int64 if integer else float)
    return _no_inf(out.reshape(values.shape))


def _no_inf(out: np.ndarray) -> np.ndarray:
    """Map a float overflow (probability below e^-1000 once ``release`` checked the public
    magnitudes) to ±the largest float64: a post-processing, never ``inf``."""
    if out.dtype.kind == "f" and not np.all(np.isfinite(out)):
        big = np.finfo(np.float64).max
        out = np.clip(np.nan_to_num(out, nan=0.0, posinf=big, neginf=-big), -big, big)
    return out


def laplace_release(statistic, scale: float, rng, *, integer: bool, name: str, k=None):
    """``statistic`` + (discrete or lattice) Laplace noise of ``scale``; see module docstring."""
    if integer:
        s = require_integer(statistic, name)
        if rng is None:
            return _run_opendp("laplace", s, scale, True, None)
        noise = _exact.discrete_laplace_array(rng, Fraction(scale), s.shape)
        return (s + noise.astype(np.int64)).astype(np.int64)
    s = _float_input(statistic, name)
    k = _exact.lattice_exponent(scale) if k is None else k
    if rng is None:
        return _run_opendp("laplace", s, scale, False, k)
    noise = _exact.discrete_laplace_array(rng, Fraction(scale) / Fraction(2) ** k, s.shape)
    return _no_inf(_exact.lattice_value(_exact.lattice_index(s, k) + noise, k))


def gaussian_release(statistic, sigma: float, rng, *, integer: bool, name: str, k=None):
    """``statistic`` + (discrete or lattice) Gaussian noise of ``sigma``; see module docstring."""
    if integer:
        s = require_integer(statistic, name)
        if rng is None:
            return _run_opendp("gaussian", s, sigma, True, None)
        noise = _exact.discrete_gaussian_array(rng, Fraction(sigma) ** 2, s.shape)
        return (s + noise.astype(np.int64)).astype(np.int64)
    s = _float_input(statistic, name)
    k = _exact.lattice_exponent(sigma) if k is None else k
    if rng is None:
        return _run_opendp("gaussian", s, sigma, False, k)
    noise = _exact.discrete_gaussian_array(rng, (Fraction(sigma) / Fraction(2) ** k) ** 2, s.shape)
    return _no_inf(_exact.lattice_value(_exact.lattice_index(s, k) + noise, k))


def log_lattice_error(granularity: float, scale: float) -> float:
    """Bound η on |log(P(y)/g) − log Laplace density(y)| per coordinate (docs/mechanisms.md).

    With ``u = g/(2b)``: ``u`` from rounding the statistic to the lattice, ``−log(1 − u²/3)``
    from the lattice normaliser ``tanh(u)/u ≥ 1 − u²/3``.
    """
    u = 0.5 * granularity / scale
    return u - math.log1p(-u * u / 3.0)


def scale_or_epsilon(mech, scale_name: str) -> None:
    """Shared validation: exactly one of the noise scale and epsilon."""
    scale = getattr(mech, scale_name)
    name = type(mech).__name__
    reject_bool(scale, scale_name)
    reject_bool(mech.epsilon, "epsilon")
    if scale is not None and mech.epsilon is not None:
        raise ValueError(
            f"{name} takes either {scale_name} or epsilon, got {scale_name}={scale!r} and "
            f"epsilon={mech.epsilon!r}. Give the noise scale directly or the budget, not both."
        )
    if scale is None and mech.epsilon is None:
        raise ValueError(
            f"{name} needs {scale_name}=... or epsilon=..., got neither. "
            f"For example pdp.{name}(epsilon=1.0) calibrates from the statistic's bounds."
        )
    if scale is not None:
        object.__setattr__(
            mech,
            scale_name,
            check_positive(scale, name=scale_name, fix=f"Give a positive noise {scale_name}."),
        )
    else:
        object.__setattr__(mech, "epsilon", check_epsilon(mech.epsilon))
