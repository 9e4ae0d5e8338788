"""Argument checks whose messages name the argument, the rule, the value and the fix."""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "check_epsilon",
    "check_delta",
    "check_positive",
    "check_bounds",
    "check_count",
    "check_rng",
    "check_noise_rng",
    "child_rng",
    "check_partition",
]


def _as_float(value, name: str) -> float:
    """``float(value)`` for a number; text and booleans are refused (``float("5")`` would take
    the string a caller meant as something else, ``True`` would be 1)."""
    if isinstance(value, str | bytes | bool | np.bool_):
        raise TypeError(f"{name} must be a number, got {name}={value!r}.")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {name}={value!r}.") from None


def check_epsilon(epsilon, *, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float after checking ``0 < epsilon < inf``."""
    value = _as_float(epsilon, name)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"{name} must be finite and > 0, got {name}={epsilon!r}. "
            "Pass the privacy budget of this release (for example 1.0), not 0, inf or nan."
        )
    return value


def check_delta(delta, *, name: str = "delta") -> float:
    """Return ``delta`` as a float after checking ``0 < delta < 1``."""
    value = _as_float(delta, name)
    if not (0.0 < value < 1.0):
        raise ValueError(
            f"{name} must lie in the open interval (0, 1), got {name}={delta!r}. "
            "Use a small failure probability such as 1e-5 (below 1/n for n records)."
        )
    return value


def check_positive(value, *, name: str, fix: str = "") -> float:
    """Return ``value`` as a float after checking ``0 < value < inf``."""
    out = _as_float(value, name)
    if not math.isfinite(out) or out <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {name}={value!r}. {fix}".rstrip())
    return out


def check_bounds(lower, upper, *, owner: str):
    """Check declared clamping bounds; both ``None`` means "no bounds"."""
    if lower is None and upper is None:
        return None, None
    if lower is None or upper is None:
        raise ValueError(
            f"{owner} needs both lower and upper or neither, got lower={lower!r}, upper={upper!r}. "
            f"Declare both, e.g. {owner}(lower=0, upper=1)."
        )
    lo, hi = float(lower), float(upper)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(
            f"{owner} bounds must be finite, got lower={lower!r}, upper={upper!r}. "
            "Declare finite clamping bounds; records are clipped to them."
        )
    if lo >= hi:
        raise ValueError(
            f"{owner} needs lower < upper, got lower={lower!r}, upper={upper!r}. "
            "Swap them or widen the interval."
        )
    return lo, hi


def check_count(
    value, *, name: str, minimum: int = 1, rule: str | None = None, fix: str = ""
) -> int:
    """Return ``value`` as an int after checking it is an integer (not a bool) ``>= minimum``.

    ``rule`` words the requirement in the message (default ``"an integer >= {minimum}"``).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        rule = rule or f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {rule}, got {name}={value!r}. {fix}".rstrip())
    return int(value)


def check_rng(rng, *, name: str = "rng") -> np.random.Generator:
    """The package's one rule for randomness passed in.

    A ``np.random.Generator`` is used as it is; an int or ``SeedSequence`` seeds a new one (runs
    reproducible by seed); ``None`` gives a fresh, unseeded one. Anything else is refused.
    (Releases treat ``rng=None`` differently: there it means secure noise from OpenDP.)
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if (
        rng is None
        or isinstance(rng, np.random.SeedSequence)
        or (isinstance(rng, numbers.Integral) and not isinstance(rng, bool))
    ):
        return np.random.default_rng(rng)
    raise TypeError(
        f"{name} must be a numpy.random.Generator or an int seed, got {name}={rng!r}. "
        f"Pass {name}=np.random.default_rng(seed)."
    )


def check_noise_rng(rng, *, owner: str) -> np.random.Generator | None:
    """The package's one rule for ``rng`` where it draws privacy noise (`pdp.release`,
    ``Mechanism.sample``).

    ``None`` is returned as it is: the caller draws secure noise from OpenDP (a real publication).
    A ``np.random.Generator`` is used as it is and a non-negative int seeds a new one (a
    simulation, reproducible by seed). Anything else is refused, naming ``owner``.
    """
    if rng is None or isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(
                f"{owner}: rng must be a non-negative int seed, got rng={rng!r}. Pass e.g. rng=1."
            )
        return np.random.default_rng(int(rng))
    raise TypeError(
        f"{owner}: rng must be None (secure noise from OpenDP, for a real publication), a "
        f"numpy.random.Generator or an int seed (simulations), got rng={rng!r} of type "
        f"{type(rng).__name__}. Pass rng=None to publish, or np.random.default_rng(seed) to simulate."
    )


def child_rng(rng) -> np.random.Generator:
    """A generator for a library decision (a probe, a numeric check) made with ``rng``'s
    randomness: a child spawned from ``rng`` (its own stream of draws is left untouched), a new
    generator seeded by an int or ``SeedSequence``, or fresh OS entropy for ``None``. No
    decision uses a seed of its own."""
    if isinstance(rng, np.random.Generator):
        return rng.spawn(1)[0]
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        rng = np.random.SeedSequence(int(rng))
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng.spawn(1)[0])
    return check_rng(rng)


def model_context(model, *, owner: str):
    """``model`` if it is a ``pm.Model``, the model of the ``with`` block for ``None``; anything
    else (a model's name, an InferenceData) refused, naming ``owner``."""
    import pymc as pm

    if model is not None and not isinstance(model, pm.Model):
        raise TypeError(
            f"{owner}: model must be a pm.Model (or None inside a `with model:` block), got "
            f"{type(model).__name__} {model!r:.60}. Pass the model object itself."
        )
    return pm.modelcontext(model)


def check_float64(owner: str) -> None:
    """Refuse PyTensor's ``floatX = "float32"``: the releases' densities and the steps' compiled
    updates compute in float64 (a sum of many records, a density far in the tail) and read the
    model's values as float64."""
    import pytensor

    if pytensor.config.floatX != "float64":
        raise ValueError(
            f"{owner}: pymc-dp needs pytensor.config.floatX = 'float64' (the default), got "
            f"{pytensor.config.floatX!r}: releases' densities and its steps compute in float64. "
            "Build and sample the model inside `with pytensor.config.change_flags(floatX="
            "'float64'):`, or do not set floatX to float32 (PYTENSOR_FLAGS / .pytensorrc). "
            "Single variables may still be float32 (dtype=...)."
        )


def check_partition(partition):
    """Check ``partition``: ``None`` or a pair ``(key, cell)`` with a str key and a hashable cell."""
    if partition is None:
        return None
    ok = isinstance(partition, tuple) and len(partition) == 2 and isinstance(partition[0], str)
    if ok:
        try:
            hash(partition[1])
        except TypeError:
            ok = False
    if not ok:
        raise ValueError(
            f"partition must be a pair (key, cell) with a str key and a hashable cell, got "
            f'partition={partition!r}. Pass e.g. partition=("age_band", "30-39"): releases '
            "with the same key and different cells are computed from disjoint groups of people."
        )
    return partition
