r"""Normal (CLT) approximation of an additive statistic (seed 001, eq. 8–9, Algorithm 4).

For `S_n(x) = \frac1n\sum_i s(x_i)` with per-record moments
`\mu_s(\theta) = E_\theta[s(X)]`, `\Sigma_s(\theta) = \mathrm{Var}_\theta[s(X)]`,

```text
U = S_n(X_{1:n}) \approx \mathcal N\big(\mu_s(\theta), \Sigma_s(\theta)/n\big). \qquad (8)
```

* `CLTStatistic` adds the latent statistic `u` as a PyMC variable (a single "record" of
  shape ``(1,)`` or ``(1, d)``) to release with ``pdp.DPObserved(name, u,
  statistic=pdp.LatentValue(sensitivity), ...)``; `pymc_dp.PMMH` / `pymc_dp.MHAAR`
  (u-space, Algorithm 6) integrate it.
* `CLTRelease` builds the release in one call. With a Gaussian mechanism of standard deviation
  σ the marginal is closed form,

  ```text
  s_{dp} \sim \mathcal N\big(\mu_s(\theta), \Sigma_s(\theta)/n + \sigma^2 I\big), \qquad (9)
  ```

  an ordinary observed PyMC variable that NUTS samples directly (Algorithm 4, done with gradients);
  with any other mechanism it adds the latent statistic and a ``DPObserved`` node.

Moment helpers for the seed's Examples 1–3 return PyTensor (or NumPy) expressions of θ.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pymc_dp.statistics.additive import RecordSum

__all__ = [
    "CLTStatistic",
    "CLTRelease",
    "LatentValue",
    "normal_mean_moments",
    "normal_variance_moments",
    "uniform_width_moments",
    "bernoulli_moments",
    "check_moment_power",
    "releases_latent_statistic",
]


class LatentValue(RecordSum):
    """The statistic of a latent statistic variable: its own value (one record, ``S(u) = u``).

    Parameters
    ----------
    sensitivity : float or dict
        Sensitivity of the *underlying* statistic of the records, e.g. ``A / n`` for the mean of
        values in ``[0, A]``; it calibrates ``epsilon``-given mechanisms.
    """

    def __init__(self, sensitivity):
        super().__init__(lambda u: u, sensitivity)

    def __repr__(self):
        return f"LatentValue(sensitivity={self._sens})"


def releases_latent_statistic(nodes) -> bool:
    """True if every node in ``nodes`` releases a latent statistic (``LatentValue``), the u-space
    of seed 001 Algorithm 6, rather than a statistic of records."""
    nodes = list(nodes)
    return bool(nodes) and all(isinstance(node.statistic, LatentValue) for node in nodes)


def _check_moments(mu, var, n, owner):
    missing = [name for name, v in (("mu", mu), ("var", var)) if v is None]
    if missing:
        raise ValueError(
            f"{owner} is the normal approximation N(mu_s(θ), Σ_s(θ)/n) of an additive statistic and "
            f"needs both moments of the per-record statistic s(X), got {missing[0]}=None. Give "
            "mu=E[s(X)|θ] and var=Var[s(X)|θ] as PyTensor expressions (helpers: "
            "pdp.normal_mean_moments, normal_variance_moments, uniform_width_moments); for a "
            "statistic without moments (Median, Max) model the records and use pdp.MHAAR."
        )
    if not (isinstance(n, int | np.integer) and n >= 1):
        raise ValueError(
            f"{owner} needs n, the number of records behind the statistic, as an integer >= 1, "
            f"got n={n!r}."
        )
    mu = pt.as_tensor_variable(mu)
    var = pt.as_tensor_variable(var)
    if mu.ndim > 1 or var.ndim > 2 or (mu.ndim == 0 and var.ndim != 0):
        raise ValueError(
            f"{owner} needs mu of shape () with var of shape (), or mu of shape (d,) with var of "
            f"shape (d,) (diagonal) or (d, d) (covariance); got ndim {mu.ndim} and {var.ndim}."
        )
    return mu, var


def _normal(name, mu, var, extra_var, n, shape, observed=None):
    if var.ndim == 2:
        d = mu.shape[0]
        cov = var / n + extra_var * pt.eye(d)
        return pm.MvNormal(name, mu=mu, cov=cov, shape=shape, observed=observed)
    return pm.Normal(
        name, mu=mu, sigma=pt.sqrt(var / n + extra_var), shape=shape, observed=observed
    )


def CLTStatistic(name, mu, var, n, *, model=None):
    r"""Latent statistic `u \sim \mathcal N(\mu_s(\theta), \Sigma_s(\theta)/n)` (eq. 8).

    Returns a PyMC variable of shape ``(1,)`` (scalar statistic) or ``(1, d)``: one "record" holding
    the statistic, the form ``DPObserved`` and the samplers expect. Release it with
    ``pdp.DPObserved(..., u, statistic=pdp.LatentValue(sensitivity), ...)``.
    """
    model = pm.modelcontext(model)
    mu, var = _check_moments(mu, var, n, "CLTStatistic")
    shape = (1,) if mu.ndim == 0 else (1, int(mu.type.shape[0] or mu.shape[0].eval()))
    with model:
        return _normal(name, mu, var, 0.0, n, shape)


def CLTRelease(name, mu, var, n, *, mechanism, observed, sensitivity, latent_name=None, model=None):
    r"""A release of an additive statistic through its normal approximation (eq. 8–9).

    Parameters
    ----------
    name : str
        Name of the observed release.
    mu, var : PyTensor expressions of θ
        Per-record moments `\mu_s(\theta)`, `\Sigma_s(\theta)`.
    n : int
        Number of records.
    mechanism : pymc_dp mechanism
        ``pdp.Gaussian`` gives the closed-form marginal (9); others add a latent statistic.
    observed : array_like
        The released value(s).
    sensitivity : float
        Sensitivity of the released statistic (calibrates epsilon-given mechanisms).
    latent_name : str, optional
        Name of the latent statistic (non-Gaussian mechanisms); default ``name + "_u"``.

    Returns
    -------
    TensorVariable
        The observed release variable.
    """
    from pymc_dp.distributions.dp_observed import DPObserved
    from pymc_dp.mechanisms.base import Mechanism
    from pymc_dp.release import bind_mechanism

    model = pm.modelcontext(model)
    mu, var = _check_moments(mu, var, n, "CLTRelease")
    statistic = LatentValue(sensitivity)
    if isinstance(mechanism, Mechanism) and mechanism.gaussian and not mechanism.integer:
        d = 1 if mu.ndim == 0 else int(mu.type.shape[0] or mu.shape[0].eval())
        mech = bind_mechanism(statistic, mechanism, 1, d)  # continuous Gaussian noise
        if isinstance(observed, pt.TensorVariable):  # e.g. pm.Data: a release set later
            obs = observed
            value = observed.get_value() if hasattr(observed, "get_value") else None
            obs_shape = np.shape(value) if value is not None else tuple(observed.type.shape)
        else:
            obs = np.asarray(observed, dtype=float)
            obs_shape = obs.shape
        shape = () if mu.ndim == 0 else (d,)
        if tuple(obs_shape) != shape:
            raise ValueError(
                f"observed for {name!r} has shape {tuple(obs_shape)}, but the statistic has shape {shape}."
            )
        return _normal(name, mu, var, mech.gaussian_sd**2, n, shape, observed=obs)
    u = CLTStatistic(latent_name or f"{name}_u", mu, var, n, model=model)
    return DPObserved(name, u, statistic=statistic, mechanism=mechanism, observed=observed)


# -- moments of the seed's examples (the one definition; pymc_dp.fisher wraps these) -----------
def _normal_raw_moment(theta, k: int):
    """E[X^k] for X ~ N(θ, 1): Σ_{j even} C(k, j) θ^{k-j} (j-1)!!."""
    total = 0.0
    for j in range(0, k + 1, 2):
        total = total + math.comb(k, j) * _double_factorial(j - 1) * theta ** (k - j)
    return total


def _double_factorial(m: int) -> int:
    """m!! with (-1)!! = 0!! = 1."""
    out = 1
    while m > 1:
        out *= m
        m -= 2
    return out


def normal_mean_moments(theta, a: int = 1):
    r"""Example 1: `X \sim \mathcal N(\theta, 1)`, `s(x) = x^a` (integer a ≥ 1).

    `\mu_s = \mathbb E X^a`, `\Sigma_s = \mathbb E X^{2a} - (\mathbb E X^a)^2` with
    `\mathbb E X^k = \sum_{j\ \mathrm{even}} \binom kj (j-1)!!\,\theta^{k-j}`; for a = 3 this is
    `\theta^3 + 3\theta` and `9\theta^4 + 36\theta^2 + 15`. ``theta`` may be a number or a
    PyTensor variable.
    """
    if isinstance(a, bool) or not (isinstance(a, int | np.integer) and a >= 1):
        raise ValueError(
            f"normal_mean_moments needs an integer a >= 1 (s(x) = x**a), got a={a!r}. "
            "The seed uses a = 1 and a = 3."
        )
    a = int(a)
    if a == 1:  # exact, without cancellation
        return theta, 1.0 + 0.0 * theta
    mean = _normal_raw_moment(theta, a)
    return mean + 0.0 * theta, _normal_raw_moment(theta, 2 * a) - mean**2 + 0.0 * theta


def normal_variance_moments(theta, a: float = 1):
    r"""Example 2: `X \sim \mathcal N(0, \theta)` (θ the variance), `s(x) = |x|^a`.

    ```text
    \mu_s = (2\theta)^{a/2}\frac{\Gamma(\frac{a+1}{2})}{\sqrt\pi}, \quad
    \Sigma_s = (2\theta)^a\Big[\frac{\Gamma(\frac{2a+1}{2})}{\sqrt\pi}
    - \frac{\Gamma(\frac{a+1}{2})^2}{\pi}\Big].
    ```

    """
    a = check_moment_power(a)
    g1 = math.gamma((a + 1) / 2) / math.sqrt(math.pi)
    g2 = math.gamma((2 * a + 1) / 2) / math.sqrt(math.pi)
    return (2 * theta) ** (a / 2) * g1, (2 * theta) ** a * (g2 - g1**2)


def uniform_width_moments(theta, a: float = 1):
    r"""Example 3: `X \sim \mathrm{U}(-\theta, \theta)`, `s(x) = |x|^a`.

    ```text
    \mu_s = \frac{\theta^a}{a+1}, \quad \Sigma_s = \frac{\theta^{2a} a^2}{(a+1)^2(2a+1)}.
    ```

    """
    a = check_moment_power(a)
    return theta**a / (a + 1), theta ** (2 * a) * a**2 / ((a + 1) ** 2 * (2 * a + 1))


def bernoulli_moments(theta):
    r"""Example 4: `X \sim \mathrm{Bern}(\theta)`, `s(x) = x`: `\mu_s = \theta`,
    `\Sigma_s = \theta(1-\theta)`."""
    return theta, theta * (1 - theta)


def check_moment_power(a) -> float:
    """The power ``a`` of `s(x) = |x|^a` as a float, checked finite and > 0."""
    if isinstance(a, bool):
        raise TypeError(f"a must be a number, got a={a!r}.")
    try:
        value = float(a)
    except (TypeError, ValueError):
        raise TypeError(f"a must be a number, got a={a!r}.") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"a must be finite and > 0, got a={a!r}. Use s(x) = |x|**a with a > 0.")
    return value
