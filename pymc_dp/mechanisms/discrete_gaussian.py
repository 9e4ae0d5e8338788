r"""Discrete Gaussian mechanism for integer statistics (Canonne, Kamath & Steinke 2020, "CKS").

```text
P(s_{dp} = y \mid s) = \prod_j \frac{e^{-(y_j - s_j)^2 / (2\sigma^2)}}{Z(\sigma)},
\qquad y_j \in \mathbb Z, \qquad Z(\sigma) = \sum_{m \in \mathbb Z} e^{-m^2/(2\sigma^2)} .
```

The mechanism the US Census Bureau used for the 2020 TopDown release and OpenDP's ``make_gaussian``
on integer data. Privacy: adding it to an integer statistic of L2 sensitivity Δ₂ is ρ-zCDP with
ρ = Δ₂² / (2σ²) (CKS §2 for one coordinate, §4 for vectors), reported to ``dp_accounting`` as a
``ZCDpEvent(rho)``.

Calibrations
------------
* ``sigma=`` directly;
* ``rho=``: σ = Δ₂ / √(2ρ);
* ``epsilon=, delta=``: the smallest σ whose ρ-zCDP guarantee the accountant
  (``pdp.privacy_spent``, dp_accounting's Rényi conversion) reports at ε or below at δ. It starts
  from the σ of the tight conversion of CKS Corollary 13 (the one OpenDP uses) and raises it
  (by about 4 % at ε = 0.1, δ = 1e-6) where the accountant's conversion is looser,
  `\delta = \inf_{\alpha > 1} \frac{e^{(\alpha-1)(\alpha\rho-\varepsilon)}}{\alpha-1}
  (1 - 1/\alpha)^{\alpha}`. It holds for vectors; for one coordinate with integer Δ the exact
  privacy profile (CKS Theorem 7, `discrete_gaussian_delta_exact`) is at most this δ.

Normaliser
----------
`log_normaliser` computes log Z by the truncated sum ``|m| ≤ M`` (σ < 2) or by Poisson
summation `Z = \sqrt{2\pi}\sigma\,(1 + 2\sum_{m \ge 1} e^{-2\pi^2\sigma^2 m^2})` (σ ≥ 2), each
with a geometric tail bound it returns; both bounds are below 1e-300 relative.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction

import numpy as np
from pytensor.tensor.random.op import RandomVariable
from scipy import optimize

from pymc_dp._checks import check_delta, check_epsilon, check_noise_rng, check_positive
from pymc_dp.mechanisms import _calibrate, _exact
from pymc_dp.mechanisms._noise import gaussian_release, reject_bool
from pymc_dp.mechanisms.base import GAUSSIAN_KERNEL, Mechanism

__all__ = [
    "DiscreteGaussian",
    "log_normaliser",
    "zcdp_delta",
    "discrete_gaussian_delta_exact",
    "discrete_gaussian_sigma",
]


def log_normaliser(sigma: float) -> tuple[float, float]:
    """``(log Z(σ), bound)`` with ``|Z_computed / Z - 1| ≤ bound`` from the truncated tail."""
    s2 = sigma * sigma
    if sigma < 2.0:
        m_max = int(math.ceil(sigma * math.sqrt(2.0 * 760.0))) + 1
        m = np.arange(1, m_max + 1, dtype=float)
        z = 1.0 + 2.0 * np.exp(-m * m / (2.0 * s2)).sum()
        # tail Σ_{m > M} e^{-m²/2σ²} ≤ e^{-(M+1)²/2σ²} / (1 - e^{-(2M+3)/2σ²})
        tail = (
            2.0
            * math.exp(-((m_max + 1) ** 2) / (2.0 * s2))
            / -math.expm1(-(2 * m_max + 3) / (2.0 * s2))
        )
        return math.log(z), tail / z
    m_max = 6
    m = np.arange(1, m_max + 1, dtype=float)
    c = 2.0 * math.pi**2 * s2
    theta = 1.0 + 2.0 * np.exp(-c * m * m).sum()
    tail = 2.0 * math.exp(-c * (m_max + 1) ** 2) / -math.expm1(-c * (2 * m_max + 3))
    return math.log(math.sqrt(2.0 * math.pi) * sigma) + math.log(theta), tail


def zcdp_delta(rho: float, epsilon: float) -> float:
    """δ(ε) of a ρ-zCDP mechanism by CKS 2020 Corollary 13 (infimum over the Rényi order α)."""
    if rho <= 0:
        return 0.0

    def log_delta(log_am1):  # α = 1 + e^t
        am1 = math.exp(log_am1)
        a = 1.0 + am1
        return am1 * (a * rho - epsilon) - math.log(am1) + a * math.log1p(-1.0 / a)

    # the optimum is near α* = (ε + ρ) / (2ρ) + ... ; bracket widely in log(α - 1)
    res = optimize.minimize_scalar(
        log_delta, bounds=(-30.0, 30.0), method="bounded", options={"xatol": 1e-12}
    )
    return float(min(1.0, math.exp(res.fun)))


def discrete_gaussian_delta_exact(sigma: float, epsilon: float, sensitivity: int = 1) -> float:
    """Exact δ(ε) of one integer coordinate of sensitivity Δ (CKS 2020 Theorem 7).

    ``δ = P[Y > εσ²/Δ − Δ/2] − e^ε P[Y > εσ²/Δ + Δ/2]``, ``Y ~ N_ℤ(0, σ²)``, by summing the pmf.
    """
    if int(sensitivity) != sensitivity or sensitivity < 1:
        raise ValueError(
            f"sensitivity must be a positive integer, got sensitivity={sensitivity!r}."
        )
    log_z, _ = log_normaliser(sigma)
    half_width = (
        int(math.ceil(sigma * 40.0))
        + int(abs(epsilon) * sigma * sigma / sensitivity)
        + sensitivity
        + 2
    )
    y = np.arange(-half_width, half_width + 1, dtype=float)
    pmf = np.exp(-y * y / (2.0 * sigma * sigma) - log_z)
    t = epsilon * sigma * sigma / sensitivity
    first = pmf[y > t - sensitivity / 2.0].sum()
    second = pmf[y > t + sensitivity / 2.0].sum()
    return float(max(0.0, first - math.exp(epsilon) * second))


def discrete_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ with ``zcdp_delta(Δ²/(2σ²), ε) ≤ δ`` (the (ε, δ) calibration)."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    sensitivity = check_positive(sensitivity, name="sensitivity")

    def excess(log_sigma):
        rho = sensitivity**2 / (2.0 * math.exp(2.0 * log_sigma))
        return math.log(max(zcdp_delta(rho, epsilon), 1e-300)) - math.log(delta)

    lo, hi = math.log(sensitivity) - 8.0, math.log(sensitivity) + 8.0
    while excess(lo) < 0:
        lo -= 8.0
    while excess(hi) > 0:
        hi += 8.0
    sigma = math.exp(optimize.brentq(excess, lo, hi, xtol=1e-13))
    while zcdp_delta(sensitivity**2 / (2.0 * sigma * sigma), epsilon) > delta:
        sigma *= 1 + 1e-12
    return sigma


@dataclasses.dataclass(frozen=True, eq=False)
class DiscreteGaussian(Mechanism):
    r"""Discrete Gaussian noise on each coordinate of an integer statistic (module docstring).

    Parameters
    ----------
    sigma : float, optional
        The parameter σ directly (the noise variance is slightly below σ², CKS Cor. 9).
    epsilon, delta : float, optional
        (ε, δ)-DP target, σ by the zCDP conversion of CKS Corollary 13.
    rho : float, optional
        zCDP target ρ; σ = Δ₂ / √(2ρ).
    sensitivity : float, optional
        L2 sensitivity Δ₂ (e.g. √2 for ``Counts`` under replace-one). Defaults to the statistic's.

    Exactly one of ``sigma``, ``(epsilon, delta)``, ``rho`` is given.
    """

    sigma: float | None = None
    epsilon: float | None = dataclasses.field(default=None, kw_only=True)
    delta: float | None = dataclasses.field(default=None, kw_only=True)
    rho: float | None = dataclasses.field(default=None, kw_only=True)
    sensitivity: float | None = dataclasses.field(default=None, kw_only=True)

    norm = 2
    gaussian = True
    integer = True
    kernel_code = GAUSSIAN_KERNEL
    _scale_name = "sigma"

    def __post_init__(self):
        for name in ("sigma", "epsilon", "delta", "rho", "sensitivity"):
            reject_bool(getattr(self, name), name)
        given = [
            n
            for n, v in (("sigma", self.sigma), ("epsilon", self.epsilon), ("rho", self.rho))
            if v is not None
        ]
        if len(given) != 1:
            raise ValueError(
                f"DiscreteGaussian takes exactly one of sigma, epsilon (with delta) and rho, got "
                f"sigma={self.sigma!r}, epsilon={self.epsilon!r}, rho={self.rho!r}. For example "
                "pdp.DiscreteGaussian(sigma=6.25), (epsilon=1.0, delta=1e-6) or (rho=0.5)."
            )
        if self.sigma is not None:
            object.__setattr__(
                self,
                "sigma",
                check_positive(self.sigma, name="sigma", fix="Give a positive noise parameter."),
            )
        if self.rho is not None:
            object.__setattr__(self, "rho", check_epsilon(self.rho, name="rho"))
        if self.epsilon is not None:
            object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
            if self.delta is None:
                raise ValueError(
                    "DiscreteGaussian(epsilon=...) needs delta, got delta=None. Pass e.g. "
                    "delta=1e-6, or rho=... for a zCDP budget, or sigma=... directly."
                )
        if self.delta is not None:
            if self.epsilon is None:
                raise ValueError(
                    f"DiscreteGaussian(delta={self.delta!r}) needs epsilon too; delta alone "
                    "calibrates nothing. Pass epsilon=..., delta=... together."
                )
            object.__setattr__(self, "delta", check_delta(self.delta))
        if self.sensitivity is not None:
            object.__setattr__(
                self,
                "sensitivity",
                check_positive(
                    self.sensitivity,
                    name="sensitivity",
                    fix="Use the L2 distance a replaced record can move the integer statistic.",
                ),
            )

    @property
    def calibrated(self) -> bool:
        return self.sigma is not None or self.sensitivity is not None

    @functools.cached_property
    def noise_sd(self) -> float:
        """The parameter σ in use (``sigma``, or calibrated from ρ or (ε, δ) and Δ₂)."""
        self._require_calibrated()
        if self.sigma is not None:
            return self.sigma
        if self.rho is not None:
            sigma = self.sensitivity / math.sqrt(2.0 * self.rho)
            while self.sensitivity**2 / (2.0 * sigma * sigma) > self.rho:  # rounding only
                sigma = math.nextafter(sigma, math.inf)
            return sigma
        sigma = discrete_gaussian_sigma(self.epsilon, self.delta, self.sensitivity)
        # the accountant converts zCDP through Rényi orders on a grid (looser than CKS Cor. 13)
        return _calibrate.fitted_zcdp_sigma(sigma, self.epsilon, self.delta, self.sensitivity)

    def noise_key(self):
        return ("sd", self.noise_sd)

    def noise_radius(self, statistic=None):
        """``45 σ``: ``P(|Z| > 45 σ) < e^-1000``."""
        return 45.0 * self.noise_sd

    @property
    def rho_spent(self) -> float:
        """The zCDP parameter ρ = Δ₂² / (2σ²) of the guarantee."""
        if self.sensitivity is None:
            raise ValueError(
                f"{self!r} has no sensitivity, so its zCDP parameter is undefined. Pass "
                "sensitivity=..., or bind it to a statistic (DPObserved / release do this)."
            )
        return self.sensitivity**2 / (2.0 * self.noise_sd**2)

    @property
    def lattice_k(self) -> int:
        """Releases are integers (lattice ``2^0 ℤ``)."""
        return 0

    def kernel_params(self):
        s = self.noise_sd
        return 0.5 / (s * s), -log_normaliser(s)[0]

    def tail_radius(self, log_ratio):
        """``σ √(2 log_ratio)``: the pmf ratio is ``e^{-w²/2σ²}``."""
        return math.sqrt(log_ratio / self.kernel_params()[0])

    def sample(self, statistic, rng=None):
        """Return the integer ``statistic`` plus discrete Gaussian noise (int64).

        A statistic value that is not an integer is refused (never rounded). ``rng=None``
        (default) draws through OpenDP's ``make_gaussian`` on ``i64`` from the operating system's
        secure generator: **only this path is fit for a real publication.** A ``Generator`` (or
        int seed) drives the exact sampler of CKS Algorithm 3, for simulations and tests.
        """
        rng = check_noise_rng(rng, owner="DiscreteGaussian.sample")
        return gaussian_release(
            statistic, self.noise_sd, rng, integer=True, name="DiscreteGaussian"
        )

    def random_graph(self, statistic, size=None):
        import pytensor.tensor as pt

        from pymc_dp._compat import call_rv

        return call_rv(
            discrete_gaussian_rv, pt.as_tensor_variable(statistic), self.noise_sd, size=size
        )

    def dp_event(self):
        from dp_accounting import dp_event

        return dp_event.ZCDpEvent(rho=self.rho_spent)


# -- PyTensor random variable: exact draws for prior/posterior predictive -----------------------
class DiscreteGaussianRV(RandomVariable):
    """``mu + N_ℤ(0, σ²)`` with integer ``mu``, drawn by CKS Algorithm 3 from the node's Generator.

    PyMC 6's numba backend runs it in object mode (a Python ``perform``).
    """

    name = "discrete_gaussian"
    signature = "(),()->()"
    dtype = "int64"
    _print_name = ("DiscreteGaussian", "\\operatorname{DiscreteGaussian}")

    @classmethod
    def rng_fn(cls, rng, mu, sigma, size):
        mu, sigma = np.asarray(mu), np.asarray(sigma, dtype=float)
        shape = tuple(size) if size is not None else np.broadcast_shapes(mu.shape, sigma.shape)
        mu_f = np.broadcast_to(mu, shape).astype(float)
        if np.any(mu_f != np.round(mu_f)):
            raise ValueError(
                "DiscreteGaussian predictive draws need an integer statistic, and some values are "
                "not integers. Use integer records."
            )
        sig = np.broadcast_to(sigma, shape)
        out = np.empty(shape, dtype=np.int64)
        flat_mu, flat_sig, flat = mu_f.ravel(), sig.ravel(), out.reshape(-1)
        cache = {}
        for i in range(flat.size):
            s2 = cache.get(flat_sig[i])
            if s2 is None:
                s2 = cache[flat_sig[i]] = Fraction(float(flat_sig[i])) ** 2
            flat[i] = int(flat_mu[i]) + _exact.discrete_gaussian(rng, s2.numerator, s2.denominator)
        return out


discrete_gaussian_rv = DiscreteGaussianRV()
