r"""DP Barker acceptance test on the full data (seed 002, Räisä 2020, §3.2; Heikkilä et al. 2019).

The Barker test (Barker 1965) accepts a proposal `\theta'` when `\lambda + V_{log} > 0`
with `V_{log}\sim\mathrm{Logistic}(0, 1)`, i.e. with probability
`g(\lambda) = 1/(1+e^{-\lambda})`; `g(\lambda)/g(-\lambda) = e^{\lambda}` gives detailed
balance. The data holder releases the clipped log ratio of `pymc_dp.samplers.penalty.kernel` with
Gaussian noise, `\lambda^* = \lambda + \mathcal N(0, \sigma_i^2)`, `\sigma_i = z c` (z the noise multiplier),
`c = 2L\lVert\theta'-\theta\rVert_2`, then (post-processing) adds a top-up
`\mathcal N(0, \bar\sigma^2 - \sigma_i^2)`, so the total Gaussian noise has the *fixed*
variance `\bar\sigma^2` (the seed's `\sigma^2`; Algorithm 2 tops up the CLT variance
`\sigma_b^2` the same way), and a draw of the correction `V_{cor}`, and accepts when

```text
\lambda^* + \mathcal N(0, \bar\sigma^2 - \sigma_i^2) + V_{cor} > 0 .
```

If `\mathcal N(0,\bar\sigma^2) + V_{cor} \sim \mathrm{Logistic}(0,1)` this is exactly the Barker
test. No such `V_{cor}` exists for `\bar\sigma > 0` (its characteristic function would be
`\frac{\pi t}{\sinh \pi t}e^{\bar\sigma^2t^2/2}`, unbounded), so, as Heikkilä et al. (after
Seita et al. 2017) do, `V_{cor}` is a Gaussian mixture fitted so that the CDF of
`\mathcal N(0,\bar\sigma^2) + V_{cor}` is close to the logistic CDF `F_L`.

Mixture fit (`fit_correction`): symmetric components `\pm m_j` on a grid of spacing
`h` with common sd `s = h`; the weights solve non-negative least squares on the CDF,
`\min_{w\ge 0}\sum_x (\sum_j w_j \tfrac12[\Phi(\tfrac{x-m_j}{t}) + \Phi(\tfrac{x+m_j}{t})] - F_L(x))^2`
with `t^2 = \bar\sigma^2 + s^2` and `\sum_j w_j = 1` (a heavily weighted row, then
renormalised). The reported ``error`` is a certified bound on
`\sup_x |F_{\mathcal N(0,\bar\sigma^2)+V_{cor}}(x) - F_L(x)|`: the maximum on a grid of step
`\delta` plus `\delta^2/8\,\sup|e''|` (linear-interpolation bound,
`|F_L''| \le 1/(6\sqrt3)`, `|F''_{mix}| \le 1/(t^2\sqrt{2\pi e})`) plus both tail masses
beyond the grid. Every acceptance probability is then within ``error`` of Barker's
`g(\lambda)`. Fits are cached per `\bar\sigma`.

Proposals far enough apart that `\sigma_i > \bar\sigma` cannot be topped up; they are
rejected without touching the data (`\sigma_i` is symmetric in `(\theta,\theta')`, so
this only truncates the symmetric proposal and keeps the target). The ``noise_sd`` of the info is
`\sigma_i`, so such iterations show ``noise_sd > sigma``. Invariant target: the posterior of
the clipped likelihood, up to the mixture error. Privacy: as the penalty test — one Gaussian
mechanism with noise multiplier `z` per iteration (the top-up, the correction and the test
are post-processing; truncated iterations touch no data and are counted anyway).

Not implemented: the seed's subsampled DP Barker (Algorithm 2 with a batch, the CLT variance
`\sigma_b^2` and Theorem 8's data-dependent-variance RDP bound) — the CLT step is only
approximate and cannot be tested exactly; ``batch_size`` is refused with ``acceptance="barker"``.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
from scipy.optimize import nnls
from scipy.special import expit, ndtr

from pymc_dp.samplers.penalty.kernel import AcceptanceTest, PenaltyState, penalty_kernel

__all__ = [
    "MAX_ERROR",
    "SIGMA_MAX",
    "SIGMA_MIN",
    "BarkerCorrection",
    "BarkerTest",
    "barker_accept",
    "barker_kernel",
    "check_sigma",
    "correction_cdf",
    "fit_correction",
    "sample_correction",
]

SIGMA_MIN = 0.1
"""Smallest total noise sd `\\bar\\sigma` fitted (smaller needs a finer grid and gains nothing:
the Barker acceptance probability does not depend on `\\bar\\sigma`)."""
SIGMA_MAX = 1.25
"""Largest `\\bar\\sigma` supported: the fitted error grows fast beyond it (about 2e-3 at 1.5,
1e-2 at 1.7; `\\bar\\sigma^2 < \\pi^2/3` is necessary, not sufficient)."""
MAX_ERROR = 1e-4
"""A fit whose certified sup-norm CDF error exceeds this is refused (RuntimeError)."""

_GRID_H = 0.05
_MEAN_MAX = 12.0
_FIT_XMAX, _FIT_NX = 30.0, 1500
_CHECK_XMAX, _CHECK_STEP = 60.0, 1e-3


class BarkerCorrection(NamedTuple):
    """Fitted correction `V_{cor} = \\sum_k w_k \\mathcal N(m_k, s_k^2)` for total noise sd ``sigma``.

    ``means``/``sds``/``weights`` list every component (both signs of a symmetric pair);
    ``cum_weights`` is their running sum (last entry exactly 1); ``error`` is the certified
    `\\sup_x|F_{\\mathcal N(0,\\sigma^2)+V_{cor}}(x) - F_L(x)|`.
    """

    sigma: float
    means: np.ndarray
    sds: np.ndarray
    weights: np.ndarray
    cum_weights: np.ndarray
    error: float


def check_sigma(sigma, name="barker_sigma"):
    """Return ``sigma`` as a float after checking ``SIGMA_MIN <= sigma <= SIGMA_MAX``."""
    try:
        value = float(sigma)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {name}={sigma!r}.") from None
    if not (SIGMA_MIN <= value <= SIGMA_MAX):
        raise ValueError(
            f"{name} must lie in [{SIGMA_MIN}, {SIGMA_MAX}], got {name}={sigma!r}: the Gaussian-mixture "
            f"correction N({name}^2) + V_cor ~ Logistic(0, 1) is only accurate to {MAX_ERROR:g} there "
            f"(and impossible for {name}^2 >= pi^2/3). Use e.g. {name}=1.0; the Barker acceptance "
            "probability does not depend on it, a larger value only truncates fewer proposals."
        )
    return value


def correction_cdf(x, corr: BarkerCorrection, extra_var=0.0):
    r"""CDF at ``x`` of `\mathcal N(0, \text{extra\_var}) + V_{cor}`.

    With ``extra_var = sigma**2`` this is the approximation of the logistic CDF; the Barker
    acceptance probability given the released `\lambda^*` is
    ``correction_cdf(lam_star, corr, sigma**2 - sigma_i**2)`` (the mixture is symmetric).
    """
    x = np.asarray(x, dtype=float)
    t = np.sqrt(corr.sds**2 + float(extra_var))
    return ndtr((x[..., None] - corr.means) / t) @ corr.weights


def sample_correction(rng, corr: BarkerCorrection, size=None, extra_var=0.0):
    r"""Draws of `\mathcal N(0, \text{extra\_var}) + V_{cor}` (one uniform and one normal each)."""
    u = rng.random(size)
    k = np.minimum(np.searchsorted(corr.cum_weights, u, side="right"), corr.means.size - 1)
    z = rng.standard_normal(size)
    return corr.means[k] + np.sqrt(corr.sds[k] ** 2 + float(extra_var)) * z


def _pair_cdf(x, mu, t):
    return 0.5 * (ndtr((x[:, None] - mu) / t) + ndtr((x[:, None] + mu) / t))


@functools.lru_cache(maxsize=32)
def _fit(sigma: float) -> BarkerCorrection:
    h = _GRID_H
    s = h
    mu = np.arange(0.0, _MEAN_MAX + 1e-9, h)
    t = math.sqrt(sigma * sigma + s * s)
    x = np.linspace(0.0, _FIT_XMAX, _FIT_NX)  # symmetric: fit x >= 0 of F - 1/2
    A = _pair_cdf(x, mu, t) - 0.5
    b = expit(x) - 0.5
    big = 1e3
    w, _ = nnls(np.vstack([A, big * np.ones(mu.size)]), np.append(b, big), maxiter=50 * mu.size)
    keep = w > 0
    mu, w = mu[keep], w[keep] / w[keep].sum()
    means = np.concatenate([-mu[::-1], mu])
    weights = np.concatenate([w[::-1], w]) / 2.0
    sds = np.full(means.size, s)
    cum = np.cumsum(weights)
    cum[-1] = 1.0
    # certified sup-norm error (by symmetry on x >= 0)
    xc = np.arange(0.0, _CHECK_XMAX + _CHECK_STEP / 2, _CHECK_STEP)
    grid_err = 0.0
    for chunk in np.array_split(xc, max(1, xc.size // 20000)):
        grid_err = max(grid_err, float(np.max(np.abs(_pair_cdf(chunk, mu, t) @ w - expit(chunk)))))
    curvature = 1.0 / (6.0 * math.sqrt(3.0)) + 1.0 / (t * t * math.sqrt(2.0 * math.pi * math.e))
    tails = float(expit(-_CHECK_XMAX)) + float(ndtr(-(_CHECK_XMAX - mu.max()) / t))
    error = grid_err + _CHECK_STEP**2 / 8.0 * curvature + tails
    for a in (means, sds, weights, cum):
        a.setflags(write=False)
    return BarkerCorrection(sigma, means, sds, weights, cum, error)


def fit_correction(sigma=1.0) -> BarkerCorrection:
    r"""Fit (and cache) the Gaussian-mixture correction for total noise sd ``sigma``.

    Raises ``ValueError`` outside ``[SIGMA_MIN, SIGMA_MAX]`` and ``RuntimeError`` if the certified
    error exceeds `MAX_ERROR`.
    """
    sigma = check_sigma(sigma, name="sigma")
    corr = _fit(sigma)
    if corr.error > MAX_ERROR:  # pragma: no cover - guarded by SIGMA_MAX
        raise RuntimeError(
            f"the correction for sigma={sigma} has error {corr.error:.2e} > {MAX_ERROR}."
        )
    return corr


def barker_accept(rng, lam, sigma_i, corr: BarkerCorrection):
    r"""Release `\lambda^* = \lambda + \mathcal N(0,\sigma_i^2)` and run the corrected Barker test.

    Requires ``sigma_i <= corr.sigma``. Returns ``(accepted, accept_prob, noisy_lambda)`` where
    ``accept_prob`` is the acceptance probability given `\lambda^*`. A NaN ratio rejects.
    Draws exactly three variates (normal, uniform, normal).
    """
    noisy = lam + sigma_i * rng.standard_normal()
    extra = max(corr.sigma * corr.sigma - sigma_i * sigma_i, 0.0)
    v = float(sample_correction(rng, corr, extra_var=extra))
    if math.isnan(noisy):
        return False, 0.0, noisy
    p = float(correction_cdf(noisy, corr, extra))
    return bool(noisy + v > 0.0), p, noisy


class BarkerTest(AcceptanceTest):
    r"""The corrected DP Barker test on the full data, as a pluggable acceptance test of
    `penalty_kernel`: same estimate and sensitivity as the
    penalty test; proposals with `\sigma_i > \bar\sigma` are rejected unread."""

    name = "barker"

    def __init__(self, correction: BarkerCorrection):
        self.correction = correction

    def releasable(self, sigma):
        return sigma <= self.correction.sigma

    def decide(self, rng, lam, sigma):
        return barker_accept(rng, lam, sigma, self.correction)


def barker_kernel(rng, state: PenaltyState, target, params, corr: BarkerCorrection):
    """One DP-Barker iteration on the full data (seed 002 §3.2): `penalty_kernel` with
    `BarkerTest` (``params`` a `PenaltyParams` with a
    symmetric proposal; ``corr`` from `fit_correction`). Returns ``(state, info)``."""
    return penalty_kernel(rng, state, target, params._replace(acceptance=BarkerTest(corr)))
