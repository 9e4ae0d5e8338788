r"""Closed-form Fisher information (seed 001 §3.1 and Example 4; seed 000 §4.2.1).

Additive statistic, Gaussian mechanism
--------------------------------------
With `S_n \approx \mathcal N(\mu_s(\theta), \Sigma_s(\theta)/n)` (CLT) and Gaussian noise of
standard deviation `\tau` on the mean scale, the release is approximately

```text
Y \sim \mathcal N\big(\mu_s(\theta),\ H(\theta)\big), \qquad
H(\theta) = \Sigma_s(\theta)/n + \tau^2 I ,
```

and the Fisher information of a Gaussian family gives (seed 001 §3.1)

```text
[F(\theta)]_{ij} = \partial_i\mu_s^T H^{-1} \partial_j\mu_s
+ \tfrac12 \operatorname{tr}\Big(H^{-1}\frac{\partial_i\Sigma_s}{n} H^{-1}\frac{\partial_j\Sigma_s}{n}\Big).
```

The seed writes `\tau^2 = \Delta_{s,2}^2/(n^2\varepsilon^2)` (ε-Gaussian DP); here τ is the
noise of whatever Gaussian mechanism is passed (``pdp.Gaussian(sigma=...)`` reproduces the seed,
``pdp.Gaussian(epsilon=, delta=)`` uses the analytic (ε, δ) calibration), divided by the statistic's
scale ``c n`` (``c = statistic.factor(n)``; 1 for ``Mean``, ``n`` for ``Sum``).

Binary responses (Example 4)
----------------------------
``X_i ~ Bern(θ)``: randomized response of every record, `F_1 = n\alpha^2/(\tau(1-\tau))`,
`\alpha = \tanh(\varepsilon/2)`, `\tau = \theta e^\varepsilon/(1+e^\varepsilon) + (1-\theta)/(1+e^\varepsilon)`;
noisy individual values `Z_i = X_i + \mathcal N(0, 1/\varepsilon^2)` and noisy mean
`\bar X + \mathcal N(0, 1/(n\varepsilon)^2)` by the normal approximation of their average,
`\mathcal N(\theta, v/n)` with `v = \theta(1-\theta) + 1/\varepsilon^2` (`F_2`) or
`v = \theta(1-\theta) + 1/(n\varepsilon^2)` (`F_3`):

```text
F = \frac{n}{v} + \frac{(1-2\theta)^2}{2 v^2}.
```

The seed prints `(nv + (1-2\theta)^2)/v^2`, i.e. without the factor 1/2 of the Gaussian
variance term; ``printed=True`` returns that form. The two differ by `(1-2\theta)^2/(2v^2)`,
below 0.5 % of F for n = 100.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from pymc_dp.fisher._validate import check_n

__all__ = [
    "clt_gaussian_fisher",
    "fisher_noisy_mean",
    "fisher_noisy_mean_exact",
    "fisher_noisy_values",
    "fisher_randomized_response",
    "gaussian_fisher_from_moments",
    "noise_scale",
]


def gaussian_fisher_from_moments(mu, cov, dmu, dcov, *, n: int, noise_sd: float) -> np.ndarray:
    """The §3.1 matrix from evaluated moments (shapes as ``Moments.evaluate``); returns ``(d, d)``."""
    ds = mu.shape[0]
    H = cov / n + noise_sd**2 * np.eye(ds)
    Hinv = np.linalg.inv(H)
    F = dmu.T @ Hinv @ dmu
    A = np.einsum("ab,bck->ack", Hinv, dcov / n)  # H^{-1} dΣ_k / n, (ds, ds, d)
    F = F + 0.5 * np.einsum("abi,baj->ij", A, A)
    return 0.5 * (F + F.T)


def noise_scale(mechanism, statistic, *, n: int, dim: int):
    """``(calibrated mechanism, k)`` with the release ``= k · mean + noise`` (``k = c n``).

    ``statistic=None`` means the statistic is the mean of ``s(x_i)`` (seed 001 eq. 2), ``k = 1``,
    and the mechanism must already know its noise scale.
    """
    if mechanism is None:
        return None, 1.0
    if statistic is None:
        if getattr(mechanism, "calibrated", True) is False:
            raise ValueError(
                f"mechanism={mechanism!r} is not calibrated and no statistic was given to calibrate "
                "it from. Pass statistic=pdp.Mean(lower=..., upper=..., fn=s) (its bounds give the "
                "sensitivity), or give the noise scale directly, e.g. pdp.Gaussian(sigma=...)."
            )
        return mechanism, 1.0
    from pymc_dp.release import bind_mechanism

    if getattr(statistic, "local", False):
        raise ValueError(
            f"statistic={statistic!r} releases every record (local/sequential release); the "
            "normal approximation is for one aggregate release. Use method='sequential'."
        )
    mech = bind_mechanism(statistic, mechanism, n, dim)
    return mech, float(statistic.factor(n)) * n


def clt_gaussian_fisher(moments, theta, *, n: int, mechanism=None, statistic=None):
    r"""Fisher information of the CLT + Gaussian-mechanism release (seed 001 §3.1).

    Parameters
    ----------
    moments : Moments or QuadratureMoments
        `\mu_s(\theta)`, `\Sigma_s(\theta)` of the per-record statistic.
    theta : float or array_like
        One parameter value (scalar, or length ``d`` for ``n_params=d``).
    n : int
        Number of records.
    mechanism : pdp.Gaussian or None
        ``None`` is the non-private case (ε = ∞).
    statistic : pdp.Mean / pdp.Sum, optional
        Calibrates ``mechanism`` when it is given ``epsilon`` and sets the release scale.

    Returns
    -------
    float or numpy.ndarray
        F(θ) (a ``(d, d)`` matrix for vector θ).
    """
    n = check_n(n)
    mu, cov, dmu, dcov = moments.evaluate(theta)
    mech, k = noise_scale(mechanism, statistic, n=n, dim=mu.shape[0])
    if mech is None:
        tau = 0.0
    else:
        if mech.gaussian_sd is None:
            raise ValueError(
                f"method='clt' needs a Gaussian mechanism, got mechanism={mech!r}. Use "
                "method='normal_approx_mc' (seed 001 Algorithm 1) for Laplace or other noise."
            )
        tau = mech.gaussian_sd / k
    F = gaussian_fisher_from_moments(mu, cov, dmu, dcov, n=n, noise_sd=tau)
    return float(F[0, 0]) if moments.n_params is None else F


# -- Example 4 ---------------------------------------------------------------------------------
def _check_binary(theta, n, epsilon):
    n = check_n(n)
    th = np.asarray(theta, dtype=float)
    if np.any(~(th > 0) | ~(th < 1)):
        raise ValueError(
            f"theta={theta!r} is outside the support of Bern(theta), the open interval (0, 1). "
            "Pass success probabilities strictly between 0 and 1."
        )
    eps = float(epsilon)
    if not eps > 0:
        raise ValueError(
            f"epsilon must be > 0 (math.inf for no privacy), got epsilon={epsilon!r}. "
            "Pass the budget of each release."
        )
    return th, n, eps


def fisher_randomized_response(theta, n: int, epsilon: float):
    r"""`F_1(\theta) = n\alpha^2 / (\tau(1-\tau))` for randomized response of n Bernoulli records.

    `\alpha = (e^\varepsilon - 1)/(e^\varepsilon + 1)`, `\tau = P(Y=1)` (seed 001 Ex. 4.1).
    """
    th, n, eps = _check_binary(theta, n, epsilon)
    alpha = math.tanh(eps / 2)
    keep = special.expit(eps)
    tau = th * keep + (1 - th) * (1 - keep)
    return n * alpha**2 / (tau * (1 - tau))


def _gauss_mean_fisher(th, n, v, printed):
    if printed:
        return (n * v + (1 - 2 * th) ** 2) / v**2
    return n / v + (1 - 2 * th) ** 2 / (2 * v**2)


def fisher_noisy_values(theta, n: int, epsilon: float, *, printed: bool = False):
    r"""`F_2`: n noisy values `X_i + \mathcal N(0, 1/\varepsilon^2)` through their average
    `\approx \mathcal N(\theta, v/n)`, `v = \theta(1-\theta) + 1/\varepsilon^2` (Ex. 4.2)."""
    th, n, eps = _check_binary(theta, n, epsilon)
    return _gauss_mean_fisher(th, n, th * (1 - th) + 1 / eps**2, printed)


def fisher_noisy_mean(theta, n: int, epsilon: float, *, printed: bool = False):
    r"""`F_3`: the mean plus `\mathcal N(0, 1/(n\varepsilon)^2)`,
    `\approx \mathcal N(\theta, v/n)`, `v = \theta(1-\theta) + 1/(n\varepsilon^2)` (Ex. 4.3)."""
    th, n, eps = _check_binary(theta, n, epsilon)
    return _gauss_mean_fisher(th, n, th * (1 - th) + 1 / (n * eps**2), printed)


def fisher_noisy_mean_exact(theta, n: int, sigma: float) -> float:
    r"""Exact F of `\bar X + \mathcal N(0, \sigma^2)`, `X_i \sim \mathrm{Bern}(\theta)`.

    The release's density is the binomial mixture `p(y) = \sum_k \binom nk\theta^k(1-\theta)^{n-k}
    \phi_\sigma(y - k/n)`; F = ∫ (∂_θ p)² / p dy by Simpson's rule over ±10σ beyond [0, 1].
    The reference against which `fisher_noisy_mean` (a normal approximation) and Algorithm 2
    are checked.
    """
    from scipy import integrate, stats

    n = check_n(n)
    k = np.arange(n + 1)
    pk = stats.binom.pmf(k, n, theta)
    dpk = pk * (k / theta - (n - k) / (1 - theta))
    y = np.linspace(-10 * sigma, 1 + 10 * sigma, 40_001)
    phi = stats.norm.pdf(y[:, None], k[None, :] / n, sigma)
    p, dp = phi @ pk, phi @ dpk
    return float(integrate.simpson(np.where(p > 0, dp**2 / np.maximum(p, 1e-300), 0.0), x=y))
