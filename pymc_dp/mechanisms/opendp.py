"""Read an OpenDP measurement as the pymc_dp mechanism with the same output distribution.

``pdp.from_opendp(measurement)`` lets an analyst model a release a curator made with OpenDP
directly: ``DPObserved(..., mechanism=pdp.from_opendp(meas), observed=value)``.

=======================================  =============================  ==========================
OpenDP measurement (0.16)                 input atom                     pymc_dp mechanism
=======================================  =============================  ==========================
``make_laplace`` (scalar or vector)       integer (``i8`` … ``u64``)     ``DiscreteLaplace(scale)``
``make_laplace`` (scalar or vector)       ``f64``                        ``Laplace(scale)``
``make_gaussian`` (scalar or vector)      integer                        ``DiscreteGaussian(sigma)``
``make_gaussian`` (scalar or vector)      ``f64``                        ``Gaussian(sigma)``
=======================================  =============================  ==========================

Everything is read through OpenDP's public API: ``dp.serialize(measurement)`` (the JSON record of
the constructors and their arguments) gives the scale, the noise granularity ``k`` and, through
``dp.deserialize``, the input domain of the noise; the **privacy loss is OpenDP's own privacy map**,
``measurement.map(d_in)`` (ε for ``MaxDivergence``, ρ for ``ZeroConcentratedDivergence``), and the
mechanism's sensitivity is set so that its ``dp_event()`` states exactly that loss
(Laplace: ``Δ = ε b``; Gaussian: ``Δ = σ √(2ρ)``).

``d_in`` is pymc_dp's neighbouring relation, replace-one, in the chain's input metric:
``SymmetricDistance`` and ``InsertDeleteDistance``: 2 (one record out, one in);
``ChangeOneDistance`` and ``HammingDistance``: 1. So a clamp → sum → Laplace(scale=2) chain on
records in [0, 1] is reported at ``map(2) = 1.0`` on unsized data (OpenDP's sum does not know
``n`` and bounds each edit by ``max(|L|, |U|)``), and at ``map(2) = 0.5`` when the input domain
has a known size (``vector_domain(..., size=n)``, OpenDP then uses ``U - L`` per replaced record).
``map(1) = 0.5`` on unsized data is the add/remove-one guarantee, not the replace-one one that
pymc_dp composes. For a bare measurement, ``sensitivity=`` is its ``d_in`` (the statistic's
replace-one sensitivity in the measurement's input metric).

A float measurement's output lies on ``2^k ℤ`` (OpenDP's default ``k = -1074``); the continuous
density is used only when ``2^k`` is at most ``scale · 2^-20`` (docs/mechanisms.md bounds the
difference).
"""

from __future__ import annotations

import math

from pymc_dp.mechanisms.discrete_gaussian import DiscreteGaussian
from pymc_dp.mechanisms.discrete_laplace import DiscreteLaplace
from pymc_dp.mechanisms.gaussian import Gaussian
from pymc_dp.mechanisms.laplace import Laplace

__all__ = ["from_opendp"]

_INTEGERS = ("i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize")
_REPLACE_ONE = {
    "SymmetricDistance": 2,
    "ChangeOneDistance": 1,
    "HammingDistance": 1,
    "InsertDeleteDistance": 2,
}
_MEASURES = {"make_laplace": "MaxDivergence", "make_gaussian": "ZeroConcentratedDivergence"}
#: coarsest float lattice, relative to the scale, for which the continuous density is used
MAX_RELATIVE_GRANULARITY = 2.0**-20


def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def _spec(measurement):
    """``(function name, kwargs)`` of the measurement's JSON record (``dp.serialize``), or None."""
    import json

    dp = _opendp()
    if not isinstance(measurement, dp.Measurement):
        return None
    try:
        spec = json.loads(dp.serialize(measurement))
    except Exception:  # noqa: BLE001 - any measurement OpenDP cannot serialize (Python callbacks)
        return "unserializable", {}
    return spec.get("__function__"), spec.get("__kwargs__", {})


def _atom_type(domain) -> str:
    text = str(domain)
    for t in ("f64", "f32", *_INTEGERS):
        if f"T={t})" in text or f"T={t}," in text:
            return t
    raise ValueError(f"from_opendp: cannot read the atom type of the input domain {text}.")


def _unsupported(measurement, why: str):
    return ValueError(
        f"from_opendp supports OpenDP's make_laplace and make_gaussian (integer or f64, scalar or "
        f"vector), optionally chained after a transformation; {why}. Got {measurement!r}. Give "
        "the pymc_dp mechanism directly instead, e.g. pdp.Laplace(scale=...)."
    )


def from_opendp(measurement, *, sensitivity: float | None = None):
    """The pymc_dp mechanism matching an OpenDP Laplace or Gaussian measurement.

    Parameters
    ----------
    measurement : opendp.mod.Measurement
        ``make_laplace``/``make_gaussian`` (or ``then_…``), alone or as the last step of a chain.
    sensitivity : float, optional
        Sensitivity of the statistic the noise is added to (L1 for Laplace, L2 for Gaussian):
        the ``d_in`` at which the last measurement's privacy map is read. Without it, a chain's
        map is read at the replace-one distance of its input metric (module docstring); a bare
        measurement then has no privacy to account for.

    Returns
    -------
    Laplace, DiscreteLaplace, Gaussian or DiscreteGaussian
        With the measurement's noise scale, and a sensitivity for which the mechanism's
        ``dp_event()`` states OpenDP's privacy map (when ``d_in`` is known).
    """
    import json

    spec = _spec(measurement)
    if spec is None:
        raise TypeError(
            f"from_opendp needs an OpenDP Measurement, got measurement={measurement!r} of type "
            f"{type(measurement).__name__}. Build it with opendp.prelude (dp.m.make_laplace ...)."
        )
    dp = _opendp()
    function, kwargs = spec
    chained = False
    while function == "make_chain_mt":
        chained = True
        inner = kwargs["measurement1"]
        function, kwargs = inner.get("__function__"), inner.get("__kwargs__", {})
    if function not in _MEASURES:
        raise _unsupported(measurement, f"this one is built by {function}")
    if str(measurement.output_measure) != _MEASURES[function]:
        raise _unsupported(measurement, f"its privacy measure is {measurement.output_measure}")
    scale = float(kwargs["scale"])
    noise_domain = dp.deserialize(json.dumps(kwargs["input_domain"]))
    atom = _atom_type(noise_domain)
    if atom == "f32":
        raise _unsupported(
            measurement, "f32 outputs are rounded to 24 bits; release with T=float (f64)"
        )
    integer = atom in _INTEGERS
    if not integer:
        k = kwargs.get("k")
        k = -1074 if k is None else int(k)
        if math.ldexp(1.0, k) > scale * MAX_RELATIVE_GRANULARITY:
            raise ValueError(
                f"from_opendp: the measurement's noise lattice 2^k = 2^{k} is coarse for its scale "
                f"{scale} (more than scale·2^-20), so the continuous density would misstate the "
                "output. Release with OpenDP's default k (None) or a smaller k."
            )
    loss = _privacy_loss(measurement, sensitivity, chained, dp)
    laplace = function == "make_laplace"
    sens = None if loss is None else _sensitivity_for(loss, scale, laplace, integer)
    if laplace:
        cls = DiscreteLaplace if integer else Laplace
        return cls(scale=scale, sensitivity=sens)
    if integer:
        return DiscreteGaussian(sigma=scale, sensitivity=sens)
    return Gaussian(sigma=scale, sensitivity=sens)


def _privacy_loss(measurement, sensitivity, chained, dp):
    """OpenDP's privacy map: ε (MaxDivergence) or ρ (zCDP), at pymc_dp's ``d_in``; None if unknown."""
    if sensitivity is not None:
        if chained:  # the last measurement, rebuilt from its public JSON record
            measurement = _last_measurement(measurement, dp)
        d_in = float(sensitivity)
        if str(measurement.input_metric).startswith(
            ("L1Distance(i", "L2Distance(i", "AbsoluteDistance(i")
        ):
            if d_in != round(d_in):
                raise ValueError(
                    f"from_opendp: an integer measurement needs an integer sensitivity, got "
                    f"sensitivity={sensitivity!r}. Pass the statistic's integer sensitivity."
                )
            d_in = int(d_in)
        return float(measurement.map(d_in))
    if not chained:
        return None
    metric = str(measurement.input_metric)
    d_in = _REPLACE_ONE.get(metric.split("(")[0])
    if d_in is None:
        raise ValueError(
            f"from_opendp: cannot read a replace-one distance from the chain's input metric "
            f"{metric}. Pass sensitivity=... (the statistic's sensitivity under pymc_dp's "
            "replace-one relation)."
        )
    return float(measurement.map(d_in))


def _last_measurement(measurement, dp):
    import json

    spec = json.loads(dp.serialize(measurement))
    while spec.get("__function__") == "make_chain_mt":
        spec = spec["__kwargs__"]["measurement1"]
    return dp.deserialize(json.dumps(spec))


def _sensitivity_for(loss: float, scale: float, laplace: bool, integer: bool) -> float | None:
    """The sensitivity whose pymc_dp event states OpenDP's privacy loss (never less)."""
    if loss <= 0:
        return None
    if laplace:
        sens = loss * scale
        if integer:  # the discrete Laplace event needs an integer sensitivity: round up
            near = round(sens)
            sens = (
                float(near)
                if near >= 1 and abs(sens - near) <= 1e-9 * max(1.0, sens)
                else float(math.ceil(sens))
            )
            return sens
        while 1.0 / (scale / sens) < loss:
            sens = math.nextafter(sens, math.inf)
        return sens
    sens = scale * math.sqrt(2.0 * loss)
    while sens**2 / (2.0 * scale * scale) < loss:
        sens = math.nextafter(sens, math.inf)
    return sens
