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

OpenDP records each constructor's arguments on the object (``measurement.__opendp_dict__``), which
is how the scale, the noise granularity ``k`` and the input domain are read. A chain
``transformation >> measurement`` (e.g. clamp, sum, then Laplace) is read through its last
measurement, and its sensitivity is the transformation's stability map at the replace-one distance
of the dataset metric (``SymmetricDistance``: 2, ``ChangeOneDistance``/``HammingDistance``: 1),
the neighbouring relation of pymc_dp's statistics. A float measurement's output lies on
``2^k ℤ`` (OpenDP's default ``k = -1074``); the continuous density is used only when ``2^k`` is at
most ``scale · 2^-20`` (docs/mechanisms.md bounds the difference).
"""

from __future__ import annotations

import math

from pymc_dp.mechanisms.discrete_gaussian import DiscreteGaussian
from pymc_dp.mechanisms.discrete_laplace import DiscreteLaplace
from pymc_dp.mechanisms.gaussian import Gaussian
from pymc_dp.mechanisms.laplace import Laplace

__all__ = ["from_opendp"]

_INTEGERS = ("i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize")
_REPLACE_ONE = {"SymmetricDistance": 2, "ChangeOneDistance": 1, "HammingDistance": 1,
                "InsertDeleteDistance": 2}
#: coarsest float lattice, relative to the scale, for which the continuous density is used
MAX_RELATIVE_GRANULARITY = 2.0**-20


def _info(obj):
    info = getattr(obj, "__opendp_dict__", None)
    if not isinstance(info, dict) or "__function__" not in info:
        return None
    return info["__function__"], info.get("__kwargs__", {})


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
        Sensitivity of the statistic (L1 for Laplace, L2 for Gaussian), for the privacy
        accounting. Read from a chain's transformation when not given.

    Returns
    -------
    Laplace, DiscreteLaplace, Gaussian or DiscreteGaussian
        With the measurement's noise scale (and the sensitivity when known).
    """
    info = _info(measurement)
    if info is None:
        raise TypeError(
            f"from_opendp needs an OpenDP Measurement, got measurement={measurement!r} of type "
            f"{type(measurement).__name__}. Build it with opendp.prelude (dp.m.make_laplace ...)."
        )
    transformation = None
    function, kwargs = info
    if function == "make_chain_mt":
        transformation = kwargs["transformation0"]
        inner = _info(kwargs["measurement1"])
        if inner is None:
            raise _unsupported(measurement, "its last measurement cannot be read")
        function, kwargs = inner
    if function not in ("make_laplace", "make_gaussian"):
        raise _unsupported(measurement, f"this one is built by {function}")
    scale = float(kwargs["scale"])
    atom = _atom_type(kwargs["input_domain"])
    if atom == "f32":
        raise _unsupported(measurement, "f32 outputs are rounded to 24 bits; release with T=float (f64)")
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
    if sensitivity is None and transformation is not None:
        sensitivity = _chain_sensitivity(transformation)
    if function == "make_laplace":
        cls = DiscreteLaplace if integer else Laplace
        return cls(scale=scale, sensitivity=sensitivity)
    if integer:
        return DiscreteGaussian(sigma=scale, sensitivity=sensitivity)
    return Gaussian(sigma=scale, sensitivity=sensitivity)


def _chain_sensitivity(transformation) -> float:
    metric = str(transformation.input_metric)
    name = metric.split("(")[0]
    d_in = _REPLACE_ONE.get(name)
    if d_in is None:
        raise ValueError(
            f"from_opendp: cannot read a replace-one sensitivity from the chain's input metric "
            f"{metric}. Pass sensitivity=... (the statistic's sensitivity under pymc_dp's "
            "replace-one relation)."
        )
    return float(transformation.map(d_in))
