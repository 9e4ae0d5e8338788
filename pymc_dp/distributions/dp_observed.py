r"""``DPObserved``: the density of a privatized release given a statistic of latent records.

.. math:: p(s_{dp} \mid x) = \eta\big(s_{dp} \mid S(x)\big)

where ``S`` is a :mod:`pymc_dp.statistics` statistic of the latent records ``x`` (a PyMC random
variable, or a tuple of them sharing the record axis 0) and ``η`` the noise density of a
:mod:`pymc_dp.mechanisms` mechanism. It is a ``pm.CustomDist`` whose parameter is the statistic
graph, so prior and posterior predictive draws, ``dims`` and ``pm.Data`` releases work as for any
PyMC observed variable. Each node is also registered on the model so the samplers in
:mod:`pymc_dp.samplers` can find it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pytensor.compile.sharedvalue import SharedVariable

from pymc_dp.release import bind_mechanism

__all__ = ["DPObserved", "DPNode", "dp_nodes"]


@dataclasses.dataclass(frozen=True)
class DPNode:
    """What the samplers need to know about one ``DPObserved`` node."""

    rv: pt.TensorVariable
    data: tuple
    statistic: object
    mechanism: object  # calibrated
    n: int
    dim: int  # entries per record contribution
    shape: tuple  # shape of the release


def dp_nodes(model=None) -> dict[str, DPNode]:
    """The ``DPObserved`` nodes registered on ``model`` (name → :class:`DPNode`)."""
    model = pm.modelcontext(model)
    return dict(getattr(model, "_pymc_dp_nodes", {}))


def _static_shape(var, what):
    shape = var.type.shape
    if all(s is not None for s in shape):
        return tuple(int(s) for s in shape)
    try:
        return tuple(int(s) for s in var.shape.eval())
    except Exception as err:
        raise ValueError(
            f"The shape of {what} must be fixed when the model is built. Give the record "
            "variables an explicit shape=(n, ...)."
        ) from err


def _observed_value(observed):
    if isinstance(observed, SharedVariable):
        return np.asarray(observed.get_value())
    if isinstance(observed, pt.TensorConstant):
        return np.asarray(observed.data)
    if isinstance(observed, pt.TensorVariable):
        raise TypeError(
            "observed must be the released numbers (array, or pm.Data), got a symbolic "
            f"expression {observed}. Pass the release itself."
        )
    return np.asarray(observed)


def _validate_release(name, value, shape, mechanism):
    if value.dtype.kind not in "biuf":
        raise TypeError(f"observed for {name!r} must be numeric, got dtype {value.dtype}.")
    if not np.all(np.isfinite(value)):
        bad = np.flatnonzero(~np.isfinite(value.ravel()))
        raise ValueError(
            f"observed for {name!r} must be finite, got {value.ravel()[bad[:3]].tolist()} at flat "
            f"position(s) {bad[:3].tolist()}. A release is a published number: drop missing "
            "entries or model them separately (PyMC would silently impute NaN)."
        )
    if value.shape != shape:
        raise ValueError(
            f"observed for {name!r} has shape {value.shape}, but the statistic has shape {shape}. "
            "Pass one released number per entry of the statistic (check the record shape, "
            "Counts(n_categories) or Local)."
        )
    if mechanism.integer and np.any(value != np.rint(value)):
        bad = value[value != np.rint(value)].ravel()[:3].tolist()
        raise ValueError(
            f"{type(mechanism).__name__} releases integers, but observed for {name!r} has "
            f"non-integer values {bad}. Use a continuous mechanism (pdp.Laplace) for real "
            "releases, or pass the integer release."
        )
    if getattr(mechanism, "n_categories", None) is not None:
        k = mechanism.n_categories
        if np.any((value < 0) | (value >= k)):
            raise ValueError(
                f"RandomizedResponse(n_categories={k}) releases categories 0..{k - 1}, got values "
                f"from {value.min()} to {value.max()} in observed for {name!r}. Recode them."
            )


def DPObserved(name, data, *, statistic, mechanism, observed, dims=None, model=None):
    """Add a privatized release of ``statistic(data)`` to the model.

    Parameters
    ----------
    name : str
    data : TensorVariable or tuple of TensorVariable
        The latent confidential records, record axis 0 (several arrays share it).
    statistic : pymc_dp statistic
        ``pdp.Sum``, ``pdp.Mean``, ``pdp.Counts``, ``pdp.RecordSum`` or ``pdp.Local``.
    mechanism : pymc_dp mechanism
        Calibrated here from the statistic's sensitivity when given ``epsilon``.
    observed : array_like or pm.Data
        The released values, shape of the statistic.
    dims : optional
        PyMC dims of the release.

    Returns
    -------
    TensorVariable
        The observed random variable.
    """
    model = pm.modelcontext(model)
    data_t = tuple(data) if isinstance(data, tuple | list) else (data,)
    for d in data_t:
        if not isinstance(d, pt.TensorVariable):
            raise TypeError(
                f"data must be the latent record variable(s) of the model, got {d!r}. "
                "Pass the PyMC random variable holding the confidential records."
            )
        if d.ndim == 0:
            raise ValueError(
                f"data {d.name!r} is a scalar; records live on axis 0. Give it shape=(n, ...)."
            )
    shapes = [_static_shape(d, f"data {d.name!r}") for d in data_t]
    n = shapes[0][0]
    if any(s[0] != n for s in shapes):
        raise ValueError(
            f"All record arrays need the same number of records on axis 0, got "
            f"{[s[0] for s in shapes]} for {[d.name for d in data_t]}."
        )
    contributions = statistic.contributions(*data_t)
    c_shape = _static_shape(contributions, f"the contributions of {statistic!r}")
    if c_shape[0] != n:
        raise ValueError(
            f"{statistic!r} must return one contribution per record (axis 0 of length {n}), "
            f"got shape {c_shape}. Make fn keep the record axis first."
        )
    dim = int(np.prod(c_shape[1:], dtype=int))
    mech = bind_mechanism(statistic, mechanism, n, dim)
    stat = statistic(*data_t)
    shape = c_shape if statistic.local else c_shape[1:]

    value = _observed_value(observed)
    _validate_release(name, value, shape, mech)

    dtype = "int64" if mech.integer else pytensor.config.floatX

    def _dist(s, size):
        return mech.random_graph(s, size=size)

    def _logp(value, s):
        return mech.logp(value, s)

    if not isinstance(observed, SharedVariable | pt.TensorVariable):
        observed = value.astype(dtype)
    params, signature = (stat,), "()->()"
    hook = getattr(mech, "dist_params", None)
    if hook is not None:  # density needs more than the statistic (e.g. SmoothLaplace)
        params = tuple(hook(statistic, data_t))
        signature = ",".join(["()"] * len(params)) + "->()"

        def _dist(*args):
            return mech.random_graph(*args[:-1], size=args[-1])

        def _logp(value, *args):
            return mech.logp(value, *args)

    rv = pm.CustomDist(
        name,
        *params,
        dist=_dist,
        logp=_logp,
        signature=signature,
        dtype=dtype,
        observed=observed,
        dims=dims,
        class_name="DPObserved",
    )
    registry = getattr(model, "_pymc_dp_nodes", None)
    if registry is None:
        registry = {}
        model._pymc_dp_nodes = registry
    registry[name] = DPNode(
        rv=rv, data=data_t, statistic=statistic, mechanism=mech, n=n, dim=dim, shape=shape
    )
    return rv
