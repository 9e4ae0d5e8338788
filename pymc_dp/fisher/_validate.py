"""Argument checks of `pymc_dp.fisher`; messages name the argument, rule, value and fix."""

from __future__ import annotations

import numpy as np

from pymc_dp._checks import check_count, check_rng

__all__ = [
    "check_mc_size",
    "check_n",
    "check_rng",
    "check_theta_bounds",
    "require_density",
    "theta_array",
]


def check_n(n, *, name: str = "n") -> int:
    """Return ``n`` as an int after checking it is a positive integer number of records."""
    return check_count(
        n,
        name=name,
        rule="a positive integer",
        fix="Pass the number of confidential records behind the release (e.g. n=100).",
    )


def check_mc_size(value, *, name: str) -> int:
    """Return a Monte Carlo size as an int after checking ``value >= 1``."""
    return check_count(
        value,
        name=name,
        fix=f"Use a Monte Carlo size such as {name}=1000 (larger is more accurate).",
    )


def require_density(mechanism, probe_release, probe_statistic, *extras) -> None:
    """Raise a clear error if ``mechanism`` cannot evaluate ``log p(release | statistic)``."""
    logpdf = getattr(mechanism, "logpdf", None)
    err = None
    if logpdf is None or not callable(logpdf):
        err = "it has no logpdf method"
    else:
        try:
            val = np.asarray(logpdf(probe_release, probe_statistic, *extras), dtype=float)
            if val.size and np.all(np.isnan(val)):
                err = "its logpdf returned NaN"
        except NotImplementedError:
            err = "its logpdf is not implemented"
    if err is not None:
        raise ValueError(
            f"mechanism={mechanism!r} has no density p(release | statistic) ({err}). The Monte "
            "Carlo Fisher information weights simulated data by that density: use a mechanism "
            "with a logpdf (pdp.Laplace, pdp.Gaussian, pdp.DiscreteLaplace, "
            "pdp.RandomizedResponse), or pass release_logpdf=... for a custom one."
        )


def theta_array(theta, n_params, *, owner: str) -> np.ndarray:
    """θ as a float vector of length ``n_params or 1`` (scalar θ when ``n_params`` is None)."""
    arr = np.asarray(theta, dtype=float)
    d = 1 if n_params is None else int(n_params)
    if n_params is None and arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.shape != (d,):
        want = "a scalar" if n_params is None else f"a vector of length {d}"
        raise ValueError(
            f"theta for {owner} must be {want}, got theta={theta!r} with shape "
            f"{np.shape(theta)}. Pass one parameter value (use a loop or select_statistic(theta=grid) "
            "for a grid)."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"theta must be finite, got theta={theta!r}. Pass a finite parameter value."
        )
    return arr


def check_theta_bounds(arr, bounds, *, owner: str, theta) -> None:
    """Check θ lies in the open box ``bounds = (lower, upper)`` (either may be None)."""
    if bounds is None:
        return
    lo, hi = bounds
    lo = np.broadcast_to(-np.inf if lo is None else np.asarray(lo, float), arr.shape)
    hi = np.broadcast_to(np.inf if hi is None else np.asarray(hi, float), arr.shape)
    if np.any(arr <= lo) or np.any(arr >= hi):
        raise ValueError(
            f"theta={theta!r} is outside the parameter support of {owner}, which is the open "
            f"interval ({_fmt(lo)}, {_fmt(hi)}). Pass a parameter value inside it."
        )


def _fmt(v):
    v = np.asarray(v)
    return f"{float(v[0]):g}" if v.size == 1 or np.all(v == v.flat[0]) else str(v.tolist())
