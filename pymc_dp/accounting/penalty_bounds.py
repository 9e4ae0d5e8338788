r"""Closed-form privacy bounds of the DP penalty family (seed 002, Räisä 2020, §3.1, §4).

Every iteration of DP penalty releases the log acceptance ratio `\lambda(\theta, \theta')`
through a Gaussian mechanism whose noise is proportional to the sensitivity `c(\theta, \theta')`
of `\lambda`. Writing `\sigma(\theta, \theta') = z\, c(\theta, \theta')`, the released
quantity `\lambda / c` has sensitivity 1 and noise standard deviation `z`: every iteration
is a Gaussian mechanism with *noise multiplier* `z`, whatever `\theta, \theta'`.

Parameterisation used throughout the package: ``tau`` is the noise multiplier of the seed's
Theorems 6 and 7, `z = \tau n^{\alpha}` (``n`` and ``alpha`` default to 1 and 0, so
``tau`` is the noise multiplier itself). Theorem 9 and Lemma 3 of the seed write
`\sigma^2 = \tau_{\text{seed}} c^2`, i.e. `\tau_{\text{seed}} = z^2`.

The functions here are the seed's formulas; `pymc_dp.accounting.spent` composes the same
iterations with ``dp_accounting`` (RDP and PLD accountants) and the tests check that the two agree
or that the closed form is the looser.

Notes on the seed
-----------------
* Theorem 7 prints `\mu = 1/(\tau^2 n^{2\alpha})`; its proof plugs `\Delta = 1`,
  `\sigma = \tau n^\alpha` into Theorem 4, whose `\mu = \Delta^2/(2\sigma^2)`. We use
  `\mu = 1/(2\tau^2 n^{2\alpha})`, the value that matches the PLD accountant
  (``penalty_delta_tight(..., seed_printed=True)`` evaluates the printed variant).
* Lemma 1 bounds `\tfrac12\Delta\sigma_b^2` with a first term twice what the proof needs; we
  keep the seed's (valid, slightly looser) expression.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, log_ndtr, logsumexp

from pymc_dp._checks import check_delta, check_epsilon, check_positive
from pymc_dp.accounting._search import largest_within

__all__ = [
    "mala_iterations",
    "mala_rho",
    "mala_sensitivity",
    "penalty_delta_tight",
    "penalty_epsilon_tight",
    "penalty_iterations",
    "penalty_iterations_zcdp",
    "penalty_noise_multiplier",
    "penalty_tau",
    "rdp_epsilon",
    "subsampled_rdp",
    "subsampled_sensitivity",
    "zcdp_epsilon",
    "zcdp_rho",
]


def _check_iterations(iterations, name="iterations"):
    if not (isinstance(iterations, int | np.integer) and iterations >= 0):
        raise ValueError(
            f"{name} must be an integer >= 0, got {name}={iterations!r}. "
            "Count every data-touching iteration, tuning included."
        )
    return int(iterations)


def zcdp_epsilon(rho, delta) -> float:
    r"""ε of a ρ-zCDP mechanism at δ (seed 002, Theorem 1): `\rho + 2\sqrt{\rho\ln(1/\delta)}`."""
    delta = check_delta(delta)
    rho = float(rho)
    if rho < 0:
        raise ValueError(f"rho must be >= 0, got rho={rho!r}. zCDP parameters are non-negative.")
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def zcdp_rho(epsilon, delta) -> float:
    r"""Largest ρ with `zcdp_epsilon` ≤ ε (inverse of Theorem 1, used in Theorems 6 and 10).

    ```text
    \rho = \big(\sqrt{\varepsilon - \ln\delta} - \sqrt{-\ln\delta}\big)^2
    ```

    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    ld = -math.log(delta)
    return (math.sqrt(epsilon + ld) - math.sqrt(ld)) ** 2


def penalty_noise_multiplier(tau, *, n: int = 1, alpha: float = 0.0) -> float:
    r"""Per-iteration noise multiplier `z = \tau n^{\alpha}` (seed 002, Theorem 6)."""
    tau = check_positive(tau, name="tau", fix="tau is the noise multiplier sigma / c, e.g. tau=10.")
    n = check_positive(n, name="n", fix="Pass the number of confidential records.")
    return tau * n ** float(alpha)


def penalty_iterations_zcdp(epsilon, delta, tau, *, n: int = 1, alpha: float = 0.0) -> int:
    r"""Iterations DP penalty may run within (ε, δ) by zCDP (seed 002, Theorem 6).

    ```text
    k = \lfloor 2 \tau^2 n^{2\alpha} \rho \rfloor,\quad
    \rho = (\sqrt{\varepsilon - \ln\delta} - \sqrt{-\ln\delta})^2.
    ```

    """
    z = penalty_noise_multiplier(tau, n=n, alpha=alpha)
    # tiny slack so that exact products (k = 2 z^2 rho) are not lost to rounding
    return int(math.floor(2.0 * z * z * zcdp_rho(epsilon, delta) * (1 + 1e-12)))


def penalty_delta_tight(
    epsilon, iterations, tau, *, n: int = 1, alpha: float = 0.0, seed_printed: bool = False
) -> float:
    r"""Tight δ(ε) of ``iterations`` DP-penalty iterations (seed 002, Theorem 7; Theorem 4.3).

    ```text
    \delta(\varepsilon) = \tfrac12\Big(\operatorname{erfc}\Big(\frac{z(\varepsilon - k\mu)}{\sqrt{2k}}\Big)
    - e^{\varepsilon}\operatorname{erfc}\Big(\frac{z(\varepsilon + k\mu)}{\sqrt{2k}}\Big)\Big),
    \quad z = \tau n^\alpha,\ \mu = \frac{1}{2z^2},
    ```

    evaluated as `\Phi(-a) - e^{\varepsilon + \ln\Phi(-b)}` for stability. ``seed_printed=True``
    uses the seed's printed `\mu = 1/z^2` instead (see the module notes).
    """
    epsilon = float(epsilon)
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got epsilon={epsilon!r}.")
    k = _check_iterations(iterations)
    if k == 0:
        return 0.0
    z = penalty_noise_multiplier(tau, n=n, alpha=alpha)
    mu = 1.0 / (z * z) if seed_printed else 1.0 / (2.0 * z * z)
    a = z * (epsilon - k * mu) / math.sqrt(k)
    b = z * (epsilon + k * mu) / math.sqrt(k)
    first = math.exp(log_ndtr(-a))
    second = math.exp(epsilon + log_ndtr(-b))
    return max(first - second, 0.0)


def penalty_epsilon_tight(delta, iterations, tau, *, n: int = 1, alpha: float = 0.0) -> float:
    """Smallest ε with `penalty_delta_tight` ≤ δ (bisection; δ(ε) decreases in ε)."""
    delta = check_delta(delta)
    k = _check_iterations(iterations)
    if k == 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while penalty_delta_tight(hi, k, tau, n=n, alpha=alpha) > delta:
        hi *= 2.0
        if hi > 1e8:
            return math.inf
    if penalty_delta_tight(lo, k, tau, n=n, alpha=alpha) <= delta:
        return 0.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if penalty_delta_tight(mid, k, tau, n=n, alpha=alpha) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return hi


def penalty_iterations(
    epsilon, delta, tau, *, n: int = 1, alpha: float = 0.0, method: str = "tight"
) -> int:
    """Largest number of iterations within the budget (ε, δ) for noise multiplier ``tau``.

    ``method="zcdp"``: Theorem 6 (closed form); ``method="tight"``: Theorem 7 solved for k
    (δ(ε) grows with k; exponential then binary search).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if method == "zcdp":
        return penalty_iterations_zcdp(epsilon, delta, tau, n=n, alpha=alpha)
    if method != "tight":
        raise ValueError(f"method must be 'tight' or 'zcdp', got method={method!r}.")

    def ok(k):
        return penalty_delta_tight(epsilon, k, tau, n=n, alpha=alpha) <= delta

    return largest_within(ok, upper=10**15)


def penalty_tau(
    epsilon,
    delta,
    iterations,
    *,
    n: int = 1,
    alpha: float = 0.0,
    method: str = "accountant",
    batch_size=None,
    grad_noise_multiplier=None,
    accountant=None,
) -> float:
    """Smallest ``tau`` that lets ``iterations`` iterations stay within (ε, δ).

    ``method="accountant"`` (default): the accountant `PenaltyMH(budget=...)` enforces
    (`pymc_dp.accounting.penalty_plan.plan_tau`; PLD, RDP with ``batch_size``), so a step built with
    this τ and the same budget allows at least ``iterations`` iterations. ``n`` is then the number of
    records (needed with ``batch_size``); ``grad_noise_multiplier`` plans DP MALA. The seeds' closed
    forms: ``method="zcdp"`` inverts Theorem 6, `\\tau = \\sqrt{k / (2\\rho)}\\, n^{-\\alpha}`;
    ``method="tight"`` solves Theorem 7 for τ by bisection (δ decreases in τ) — mathematically tight,
    but the PLD accountant's pessimistic discretisation may then allow one iteration fewer.
    """
    if method == "accountant":
        if alpha != 0.0:
            raise ValueError(
                f"alpha={alpha!r} is the seed's n^alpha parameterisation of Theorems 6-7; use "
                "method='tight' or 'zcdp' with it, or alpha=0 (tau is the noise multiplier)."
            )
        from pymc_dp.accounting.penalty_plan import plan_tau

        return plan_tau(
            epsilon,
            delta,
            iterations,
            n=None if batch_size is None else n,
            batch_size=batch_size,
            grad_noise_multiplier=grad_noise_multiplier,
            accountant=accountant,
        )
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    k = _check_iterations(iterations)
    if k == 0:
        raise ValueError("iterations must be >= 1 to plan a noise level, got iterations=0.")
    scale = float(n) ** float(alpha)
    if method == "zcdp":
        return math.sqrt(k / (2.0 * zcdp_rho(epsilon, delta))) / scale
    if method != "tight":
        raise ValueError(f"method must be 'accountant', 'tight' or 'zcdp', got method={method!r}.")
    lo, hi = 1e-6, 1.0
    while penalty_delta_tight(epsilon, k, hi) > delta:
        hi *= 2.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if penalty_delta_tight(epsilon, k, mid) > delta:
            lo = mid
        else:
            hi = mid
        if hi / lo - 1 < 1e-12:
            break
    return hi / scale


# ---------------------------------------------------------------- subsampled penalty (§4.1)


def subsampled_sensitivity(n, batch_size, lipschitz, step_norm, *, temperature: float = 1.0):
    r"""Sensitivities of the subsampled penalty ratio (seed 002, Lemma 1 and Theorem 9).

    ```text
    \Delta_\lambda = \frac{2nTL}{b}\lVert\theta'-\theta\rVert_2,\qquad
    \Delta_\sigma = \Big(\frac{nT}{b}\Big)^2\Big(1-\frac1b\Big)L^2\lVert\theta'-\theta\rVert_2^2
    + \frac{2(b-1)}{b}\Big(\frac{nT}{b}\Big)^2 L^2\lVert\theta'-\theta\rVert_2^2,
    ```

    and `c = \Delta_\lambda + \Delta_\sigma` bounds the sensitivity of
    `\hat\lambda - \tfrac12\sigma_b^2` under substitution of one record. Vectorised in
    ``step_norm``. Returns ``(delta_lambda, delta_sigma, c)``.
    """
    step_norm = np.asarray(step_norm, dtype=float)
    f = n * temperature / batch_size
    d_lam = 2.0 * f * lipschitz * step_norm
    ls2 = (lipschitz * step_norm) ** 2
    d_sig = (
        f * f * abs(1.0 - 1.0 / batch_size) * ls2
        + 2.0 * (batch_size - 1) / batch_size * f * f * ls2
    )
    return d_lam, d_sig, d_lam + d_sig


def subsampled_rdp(orders, sampling_rate, tau) -> np.ndarray:
    r"""RDP of one subsampled-penalty iteration (seed 002, Theorem 9; Wang, Balle & Kasiviswanathan 2019).

    For integer orders `\alpha \ge 2`, sampling rate `q = b/n` (without replacement)
    and the Gaussian base mechanism with `\varepsilon'(j) = j / (2\tau^2)`:

    ```text
    \varepsilon(\alpha) = \frac{1}{\alpha-1}\ln\Big(1 + q^2\binom{\alpha}{2}
    \min\{4(e^{\varepsilon'(2)}-1), 2e^{\varepsilon'(2)}\}
    + 2\sum_{j=3}^{\alpha} q^j\binom{\alpha}{j} e^{(j-1)\varepsilon'(j)}\Big).
    ```

    Evaluated in log space; ``k`` iterations compose to `k\varepsilon(\alpha)`.
    """
    z = check_positive(tau, name="tau", fix="tau is the noise multiplier sigma / c.")
    q = float(sampling_rate)
    if not (0 < q <= 1):
        raise ValueError(f"sampling_rate must lie in (0, 1], got sampling_rate={sampling_rate!r}.")
    out = []
    for alpha in np.atleast_1d(orders):
        a = int(alpha)
        if a != alpha or a < 2:
            raise ValueError(f"orders must be integers >= 2 for Theorem 9, got {alpha!r}.")

        def eps_base(j):
            return j / (2.0 * z * z)

        e2 = eps_base(2)
        # min{4(e^e2 - 1), 2 e^e2} in log space
        t2 = min(math.log(4.0) + e2 + math.log1p(-math.exp(-e2)), math.log(2.0) + e2)
        terms = [0.0, 2 * math.log(q) + math.log(a * (a - 1) / 2) + t2]
        for j in range(3, a + 1):
            lbin = gammaln(a + 1) - gammaln(j + 1) - gammaln(a - j + 1)
            terms.append(math.log(2.0) + j * math.log(q) + lbin + (j - 1) * eps_base(j))
        out.append(float(logsumexp(terms)) / (a - 1))
    return np.asarray(out)


def rdp_epsilon(orders, rdp, delta) -> float:
    r"""ε from an RDP curve by Theorem 1 of the seed: `\min_\alpha \varepsilon(\alpha) + \ln(1/\delta)/(\alpha-1)`."""
    delta = check_delta(delta)
    orders = np.asarray(orders, dtype=float)
    rdp = np.asarray(rdp, dtype=float)
    return float(np.min(rdp + math.log(1.0 / delta) / (orders - 1.0)))


# ---------------------------------------------------------------- DP MALA (§4.2)


def mala_sensitivity(lipschitz, grad_bound, step_norm, step_size, a, n, *, total_grad_bound=None):
    r"""Sensitivity `c_l` of the DP-MALA log ratio (seed 002, §4.2).

    ```text
    c_l = 2L\lVert\theta-\theta'\rVert_2 + \frac{2}{a}L_g\lVert\theta-\theta'\rVert_2
    + \frac{\sigma_p^2}{a}(n-1)L_g^2 + \frac{\sigma_p^2 L_g^2}{2a},
    ```

    with `(n-1)L_g` replaced by `L_S + L_g` when a bound
    `\lVert\nabla\ln p(X\mid\theta)\rVert_2 \le L_S` (``total_grad_bound``) is given and tighter.
    ``step_size`` is `\sigma_p`. Vectorised in ``step_norm``.
    """
    step_norm = np.asarray(step_norm, dtype=float)
    s2 = float(step_size) ** 2
    other = (n - 1) * grad_bound
    if total_grad_bound is not None:
        other = min(other, total_grad_bound + grad_bound)
    return (
        2 * lipschitz * step_norm
        + 2.0 / a * grad_bound * step_norm
        + s2 / a * other * grad_bound
        + s2 * grad_bound**2 / (2 * a)
    )


def mala_rho(step_size, grad_bound, a, tau):
    r"""Per-iteration zCDP of DP MALA (seed 002, Lemmas 2 and 3 with clipped gradients).

    `\rho_g = \sigma_p^2 L_g^2 / (2a)` (proposal released with variance `a\sigma_p^2`,
    drift sensitivity `\sigma_p^2 L_g`) and `\rho_l = 1 / (2\tau^2)` (log ratio with
    noise standard deviation `\tau c_l`). Returns ``(rho_g, rho_l)``.
    """
    return float(step_size) ** 2 * float(grad_bound) ** 2 / (2.0 * a), 1.0 / (2.0 * float(tau) ** 2)


def mala_iterations(epsilon, delta, step_size, grad_bound, a, tau) -> int:
    r"""Iterations of DP MALA within (ε, δ) (seed 002, Theorem 10): `\lfloor\rho/(\rho_g+\rho_l)\rfloor`."""
    rho = zcdp_rho(epsilon, delta)
    rg, rl = mala_rho(step_size, grad_bound, a, tau)
    return int(math.floor(rho / (rg + rl) * (1 + 1e-12)))
