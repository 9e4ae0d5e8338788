"""The one Monte Carlo tolerance of the test suite: an estimate is within ``z`` standard errors.

:func:`assert_mc_close` compares MCMC or i.i.d. draws with an exact posterior mean (and sd): the
Monte Carlo standard errors come from ArviZ (``az.mcse``, methods ``"mean"`` and ``"sd"``, ESS-based).
:func:`assert_within_se` is the same check for an estimator that reports its own standard error.
Both fail with a message that states every z-score.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import xarray as xr

__all__ = ["assert_mc_close", "assert_within_se", "mcse"]

_ARVIZ_1 = int(az.__version__.split(".")[0]) >= 1


def _as_chains(draws) -> np.ndarray:
    """(chain, draw, *event) float array; a 1-d array is one chain."""
    d = np.asarray(draws, dtype=float)
    if d.ndim == 1:
        d = d[None, :]
    if d.ndim < 2 or d.shape[1] < 4:
        raise ValueError(
            f"draws: need shape (chain, draw, ...) with at least 4 draws, got {d.shape}"
        )
    return d


def _ess_mean(d: np.ndarray) -> np.ndarray:
    ds = xr.Dataset({"q": (("chain", "draw", *[f"e{i}" for i in range(d.ndim - 2)]), d)})
    return np.asarray(az.ess(ds, method="mean")["q"], dtype=float)


def mcse(draws, method: str = "mean") -> np.ndarray:
    """Monte Carlo standard error of the posterior mean or sd, per component (ArviZ).

    ``draws`` has shape (chain, draw, *event) (a 1-d array is one chain). ``method="sd"`` on ArviZ
    0.x computes ArviZ's own formula here, because ``az.mcse(method="sd")`` fails there with NumPy 2:
    the delta method on the ESS of the squared deviations,
    ``sqrt((E[c²] − E[c]²) / ESS(c) / E[c] / 4)`` with ``c = (θ − θ̄)²``.
    """
    d = _as_chains(draws)
    if method not in ("mean", "sd"):
        raise ValueError(f"method: 'mean' or 'sd', got {method!r}")
    if method == "sd" and not _ARVIZ_1:
        c = (d - d.mean(axis=(0, 1))) ** 2
        evar = c.mean(axis=(0, 1))
        varvar = ((c**2).mean(axis=(0, 1)) - evar**2) / _ess_mean(c)
        return np.sqrt(varvar / evar / 4)
    ds = xr.Dataset({"q": (("chain", "draw", *[f"e{i}" for i in range(d.ndim - 2)]), d)})
    return np.asarray(az.mcse(ds, method=method)["q"], dtype=float)


def _check(rows, z: float, label: str) -> None:
    text = "\n".join(
        f"  {name}: estimate {est:.6g} exact {ex:.6g} ({zz:+.2f} SE, SE {se:.3g})"
        for name, est, ex, se, zz in rows
    )
    print(f"[mc] {label}\n{text}")
    bad = [r for r in rows if not abs(r[4]) < z]
    assert not bad, f"{label}: beyond {z} standard errors:\n{text}"


def assert_within_se(estimate, exact, se, *, z: float = 4.0, label: str = "estimate") -> np.ndarray:
    """``|estimate − exact| < z · se`` elementwise; returns the z-scores."""
    est, ex, s = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (estimate, exact, se)))
    zs = (est - ex) / s
    rows = [
        (f"{label}[{i}]" if est.ndim else label, est[i], ex[i], s[i], zs[i])
        for i in np.ndindex(est.shape)
    ]
    _check(rows, z, label)
    return zs


def assert_mc_close(draws, exact_mean, exact_sd=None, *, z: float = 4.0, label: str = "") -> dict:
    """Posterior mean (and sd, if given) of ``draws`` within ``z`` Monte Carlo standard errors.

    ``draws``: shape (chain, draw, *event) or 1-d (one chain); ``exact_mean``/``exact_sd``
    broadcast to the event shape. The standard errors are ArviZ's ESS-based MCSE of the mean
    and of the sd (:func:`mcse`). Returns ``{"mean": z-scores, "sd": z-scores}``.
    """
    d = _as_chains(draws)
    event = d.shape[2:]
    rows, out = [], {}
    checks = [("mean", d.mean(axis=(0, 1)), exact_mean)]
    if exact_sd is not None:
        checks.append(("sd", d.std(axis=(0, 1), ddof=1), exact_sd))
    for name, est, exact in checks:
        est = np.asarray(est, dtype=float)
        ex = np.broadcast_to(np.asarray(exact, dtype=float), event)
        se = mcse(d, name)
        zs = (est - ex) / se
        out[name] = zs
        for i in np.ndindex(event):
            rows.append((f"{name}{list(i) if i else ''}", est[i], ex[i], se[i], zs[i]))
    _check(rows, z, label or "draws")
    return out
