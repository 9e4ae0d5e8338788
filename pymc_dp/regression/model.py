r"""The analyst's model of seed 000 §5.2 and its shared building blocks.

```text
\theta \sim \mathcal N(m, C),\quad \sigma_y^2 \sim \mathcal{IG}(a, b),\quad
\Sigma_x \sim \mathcal{IW}(\Lambda, \kappa)\qquad (\text{eq. 5.13})

\hat z_j \mid S_j, \theta, \sigma_y^2 \sim
\mathcal N(S_j\theta,\; \sigma_y^2 S_j + \sigma_z^2 I_d)
\qquad (\text{Proposition 1 with } z_j \text{ integrated out, eq. 5.17}).
```

Every node's ``S_j`` enters through its eigen-decomposition ``S_j = E_j D_j E_jᵀ``: in the rotated
coordinates ``r_j = E_jᵀ(ẑ_j − S_jθ)`` the covariance is diagonal, ``σ_y² D_j + σ_z²``, so the
likelihood, the θ full conditional (Proposition 3) and the σ_y² update (Algorithm 15) are O(J d²).
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from pymc_dp._checks import _as_float

__all__ = [
    "RegressionPrior",
    "NodeEig",
    "node_eig",
    "theta_conditional",
    "draw_theta",
    "z_loglik",
    "sigma2_rw_step",
]


@dataclasses.dataclass(frozen=True)
class RegressionPrior:
    r"""Hyper-parameters of eq. 5.13: ``θ ~ N(m, C)``, ``σ_y² ~ IG(a, b)``, ``Σ_x ~ IW(Λ, κ)``.

    ``None`` entries are filled by `resolve`: ``m = 0``, ``C = 10·I``, ``Λ = I``, ``κ = d + 1``.
    The baseline MCMC-B&S reads the same numbers as a normal-inverse-gamma prior
    ``θ | σ_y² ~ N(m, σ_y² C)`` (seed 000 §7.1.2, ``Λ₀ = C⁻¹``).
    """

    m: np.ndarray | None = None
    C: np.ndarray | None = None
    a: float = 2.0
    b: float = 1.0
    Lam: np.ndarray | None = None
    kappa: float | None = None

    @classmethod
    def seed000(cls, d: int, Lam=None):
        """The hyper-parameters of seed 000 §7.2: a = 20, b = 0.5, m = 0, C = (a−1)/b·I, κ = d + 1."""
        a, b = 20.0, 0.5
        return cls(
            m=np.zeros(d),
            C=(a - 1) / b * np.eye(d),
            a=a,
            b=b,
            Lam=np.eye(d) if Lam is None else np.asarray(Lam, float),
            kappa=d + 1.0,
        )

    def resolve(self, d: int) -> RegressionPrior:
        """Fill defaults for ``d`` features and check shapes and positivity."""
        m = np.zeros(d) if self.m is None else np.asarray(self.m, dtype=float).reshape(-1)
        C = 10.0 * np.eye(d) if self.C is None else np.asarray(self.C, dtype=float)
        if C.ndim == 0:
            C = float(C) * np.eye(d)
        Lam = np.eye(d) if self.Lam is None else np.asarray(self.Lam, dtype=float)
        kappa = d + 1.0 if self.kappa is None else _as_float(self.kappa, "prior kappa")
        if m.shape != (d,) or C.shape != (d, d) or Lam.shape != (d, d):
            raise ValueError(
                f"prior shapes must match d={d} features: m (d,), C and Lam (d, d); got "
                f"m.shape={m.shape}, C.shape={C.shape}, Lam.shape={Lam.shape}. Resize the prior."
            )
        for name, M in (("m", m), ("C", C), ("Lam", Lam)):
            if not np.all(np.isfinite(M)):
                raise ValueError(
                    f"prior {name} must be finite, got {name}={M!r}. Pass finite numbers (the "
                    "default m = 0, C = 10·I, Lam = I when left None)."
                )
        for name, M in (("C", C), ("Lam", Lam)):
            if not np.allclose(M, M.T) or np.linalg.eigvalsh(M)[0] <= 0:
                raise ValueError(
                    f"prior {name} must be symmetric positive definite, got {name}={M!r}."
                )
        a_, b_ = (_as_float(v, f"prior {k}") for k, v in (("a", self.a), ("b", self.b)))
        if not (0 < a_ < math.inf and 0 < b_ < math.inf):
            raise ValueError(
                f"prior a and b must be finite and > 0, got a={self.a!r}, b={self.b!r}."
            )
        if not d - 1 < kappa < math.inf:
            raise ValueError(
                f"prior kappa must be finite and exceed d - 1 = {d - 1}, got kappa={kappa!r}."
            )
        return dataclasses.replace(self, m=m, C=C, a=a_, b=b_, Lam=Lam, kappa=kappa)

    def log_sigma2(self, s2):
        """Log IG(a, b) density of σ_y² up to a constant (``-inf`` for s2 ≤ 0)."""
        s2 = np.asarray(s2, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = -(self.a + 1.0) * np.log(s2) - self.b / s2
        return np.where(s2 > 0, out, -np.inf)


class NodeEig(NamedTuple):
    """Per-node eigen-decomposition ``S_j = E_j diag(w_j) E_jᵀ`` and ``zr_j = E_jᵀ ẑ_j``."""

    w: np.ndarray  # (J, d)
    E: np.ndarray  # (J, d, d)
    zr: np.ndarray  # (J, d)


def node_eig(S, z_hat) -> NodeEig:
    """Eigen-decompose a stack of symmetric PSD ``S_j`` (eigenvalues clipped at 0)."""
    w, E = np.linalg.eigh(0.5 * (S + np.swapaxes(S, -1, -2)))
    w = np.maximum(w, 0.0)
    return NodeEig(w, E, np.einsum("jkd,jk->jd", E, z_hat))


def theta_conditional(eig: NodeEig, sigma2: float, sigma_z: float, prior: RegressionPrior):
    r"""Precision ``P`` and linear term ``h`` of θ | S, σ_y², ẑ (seed 000, Proposition 3).

    ``P = Σ_j S_j(σ_y² S_j + σ_z² I)⁻¹S_j + C⁻¹``, ``h = Σ_j S_j(σ_y² S_j + σ_z² I)⁻¹ẑ_j + C⁻¹m``;
    the conditional is ``N(P⁻¹h, P⁻¹)``.
    """
    Cinv = np.linalg.inv(prior.C)
    v = sigma2 * eig.w + sigma_z**2
    P = np.einsum("jak,jk,jbk->ab", eig.E, eig.w**2 / v, eig.E) + Cinv
    h = np.einsum("jak,jk->a", eig.E, eig.w * eig.zr / v) + Cinv @ prior.m
    return 0.5 * (P + P.T), h


def draw_theta(rng: np.random.Generator, P, h):
    """One draw from ``N(P⁻¹h, P⁻¹)`` via the Cholesky factor of the precision."""
    L = np.linalg.cholesky(P)
    mean = np.linalg.solve(L.T, np.linalg.solve(L, h))
    return mean + np.linalg.solve(L.T, rng.standard_normal(len(h)))


def z_loglik(eig: NodeEig, theta, sigma2, sigma_z):
    """``log N(ẑ_j; S_jθ, σ_y² S_j + σ_z² I)`` per node, shape (J,)."""
    r = eig.zr - eig.w * np.einsum("jkd,k->jd", eig.E, theta)
    v = sigma2 * eig.w + sigma_z**2
    return -0.5 * np.sum(np.log(2.0 * np.pi * v) + r * r / v, axis=-1)


def sigma2_rw_step(rng, sigma2, log_target, step):
    r"""Seed 000 Algorithm 15: random-walk MH for σ_y² with a N(σ_y², step²) proposal.

    ``log_target(s2)`` is ``log p(s2) + Σ_j log p(ẑ_j | S_j, θ, s2)``; a proposal ≤ 0 has prior density
    0 and is rejected (the proposal is symmetric, so no correction is needed). NaN rejects.
    Returns ``(sigma2, accepted)``.
    """
    prop = sigma2 + step * rng.standard_normal()
    if prop <= 0:
        return sigma2, False
    log_a = log_target(prop) - log_target(sigma2)
    if np.isfinite(log_a) and np.log(rng.uniform()) < log_a:
        return prop, True
    return sigma2, False
