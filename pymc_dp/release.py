"""The curator's side: compute a statistic of confidential data and add calibrated noise."""

from __future__ import annotations

import numpy as np

__all__ = ["release", "bind_mechanism"]


def bind_mechanism(statistic, mechanism, n: int, dim: int):
    """Calibrate ``mechanism`` to ``statistic`` and check that the pair is usable."""
    from pymc_dp.mechanisms.base import Mechanism
    from pymc_dp.statistics.additive import Statistic

    if not isinstance(statistic, Statistic):
        raise TypeError(
            f"statistic must be a pymc_dp statistic (pdp.Sum, pdp.Mean, ...), got {statistic!r}."
        )
    if not isinstance(mechanism, Mechanism):
        raise TypeError(
            f"mechanism must be a pymc_dp mechanism (pdp.Laplace, pdp.Gaussian, ...), got {mechanism!r}."
        )
    if mechanism.local_only and not statistic.local:
        raise ValueError(
            f"{type(mechanism).__name__} randomizes one record at a time, but statistic={statistic!r} "
            "aggregates records. Use statistic=pdp.Local()."
        )
    return mechanism.bind(statistic, n=n, dim=dim)


def release(data, statistic, mechanism, rng=None):
    """Release ``mechanism(statistic(data))``.

    Parameters
    ----------
    data : array_like or tuple of array_like
        Confidential records, record axis first (a tuple for statistics of several arrays).
    statistic : pymc_dp statistic
    mechanism : pymc_dp mechanism
        Calibrated here from the statistic's sensitivity when given ``epsilon``.
    rng : numpy.random.Generator or int, optional
        Source of the noise; an int seeds a new generator.

    Returns
    -------
    numpy.ndarray
        The privatized release (integer for integer mechanisms).
    """
    data = tuple(np.asarray(d) for d in (data if isinstance(data, tuple) else (data,)))
    n = data[0].shape[0] if data[0].ndim else 1
    for d in data[1:]:
        if d.shape[0] != n:
            raise ValueError(
                f"All record arrays need the same number of records on axis 0, got "
                f"{[d.shape[0] for d in data]}. Align the arrays record by record."
            )
    value = statistic.evaluate(*data)
    dim = _per_record_dim(statistic, value, n)
    mech = bind_mechanism(statistic, mechanism, n, dim)
    if mech.integer and mech.local_only:
        k = getattr(mech, "n_categories", None)
        if k is not None and (np.any(value < 0) or np.any(value >= k) or np.any(value != np.rint(value))):
            raise ValueError(
                f"{type(mech).__name__}(n_categories={k}) needs records in 0..{k - 1}, got values "
                f"from {value.min()} to {value.max()}. Recode the categories."
            )
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    hook = getattr(mech, "sample_records", None)
    if hook is not None:  # noise depends on the records themselves (e.g. SmoothLaplace)
        return hook(statistic, data, rng)
    return mech.sample(value, rng)


def _per_record_dim(statistic, value, n):
    if statistic.local:
        return int(np.prod(value.shape[1:], dtype=int)) if value.ndim > 1 else 1
    return int(np.prod(value.shape, dtype=int)) if value.ndim else 1
