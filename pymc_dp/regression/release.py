r"""The curator's side: per-node noisy sufficient statistics of a linear regression (seed 000 §5.2).

Each of ``J`` data nodes holds rows ``(X_j, y_j)`` and releases, with the Gaussian mechanism
calibrated by Balle & Wang's analytic rule (`pymc_dp.mechanisms.analytic_gaussian_sigma`, raised
as `pymc_dp.Gaussian` does so the accountant never reports more than ε),

```text
\hat S_j = S_j + \sigma_s M_j,\qquad \hat z_j = z_j + \sigma_z v_j,\qquad
S_j = X_j^\top X_j,\; z_j = X_j^\top y_j,
```

where ``M_j`` is symmetric with i.i.d. N(0, 1) upper triangle (diagonal included) and
``v_j ~ N(0, I_d)`` (seed 000 eqs. 5.11, 5.15). The upper triangle of ``S_j`` and ``z_j`` are released
as one vector, so ``σ_s = σ_z = σ(ε, δ; Δ_sz)``, ``‖X‖`` a bound on the rows' Euclidean norm and
``‖Y‖`` a bound on ``|y|``. Records live in exactly one node, so the J releases compose in parallel
and the whole release is (ε, δ)-DP.

Neighbouring relation
---------------------
The release is calibrated for **replace-one** neighbours (``neighbouring="replace-one"``, the
seed's relation): one record ``(x, y)`` is replaced by another ``(x', y')`` in the same node, so the
node sizes ``n_j`` are public and released exactly. Its L2 sensitivity is (``a = ‖X‖²``, ``b = ‖Y‖²``)

```text
\Delta_{sz}^2 = \sup \|\mathrm{triu}(xx^\top - x'x'^\top)\|^2 + \|xy - x'y'\|^2
= \begin{cases} 2a^2 + 2ab + b^2/2, & b \le 2a,\\ 4ab, & b > 2a, \end{cases}
```

(from ``‖triu(M)‖_F ≤ ‖M‖_F`` and maximising over ``x^\top x'``; attained for ``d ≥ 2`` by
``x = (p, q)``, ``x' = -(q, p)``, ``pq = b/4``, ``y = y' = ‖Y‖``, or by ``x' = -x`` when ``b > 2a``).
The seed's eq. 5.12, ``sqrt(‖X‖⁴ + ‖X‖²‖Y‖²)``, is the **add/remove** sensitivity; under add/remove
``n_j`` would itself be private, and publishing it exactly is not DP, so
``neighbouring="add-remove"`` is refused (the analyst methods here need exact ``n_j``).

Two more schemes serve the baselines of seed 000 §7.1:

* ``"szu"`` (MCMC-B&S, §7.1.2) also releases ``u_j = y_j^\top y_j``; one σ for the whole vector with
  replace-one ``Δ² = max(2a² + 2ab + b²/2, 2a² + ab + b²)``: bounding the ``x^\top x'`` term by
  its unconstrained maximum leaves a function of ``(y², y'²)`` convex in each, maximal at a corner
  of ``[0, b]²``; the second corner (``y' = 0``, orthogonal rows) is attained for ``d ≥ 2``.
* ``"adassp"`` (Wang 2018, §7.1.1): three separate releases at (ε/3, δ/3) each — ``Ŝ_j``
  (Δ = √2‖X‖², two orthogonal rows), ``ẑ_j`` (Δ = 2‖X‖‖Y‖) and the smallest eigenvalue
  ``λ_min(S_j)`` (Δ = ‖X‖², Weyl).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from pymc_dp._checks import check_delta, check_epsilon, check_positive, check_rng
from pymc_dp.mechanisms.gaussian import Gaussian
from pymc_dp.regression._kwargs import explain_kwargs
from pymc_dp.regression.trust import check_node_split

__all__ = [
    "SuffStatsRelease",
    "release_suff_stats",
    "suff_stat_sensitivity",
    "adassp_sensitivities",
    "SCHEMES",
    "RELATIONS",
]

SCHEMES = ("sz", "szu", "adassp")
RELATIONS = ("replace-one", "add-remove")


def _check_relation(neighbouring):
    if neighbouring not in RELATIONS:
        raise ValueError(
            f"neighbouring must be one of {RELATIONS}, got neighbouring={neighbouring!r}. Use "
            "'replace-one' (one record substituted, node sizes public)."
        )
    return neighbouring


def suff_stat_sensitivity(
    x_bound: float, y_bound: float, *, include_yty: bool = False, neighbouring: str = "replace-one"
) -> float:
    r"""L2 sensitivity of ``(triu(XᵀX), Xᵀy[, yᵀy])`` for one record (module docstring).

    ``neighbouring="replace-one"`` (default): a record ``(x, y)`` replaced by ``(x', y')``;
    ``"add-remove"``: a record added or removed, which moves ``triu(XᵀX)`` by ``triu(x xᵀ)``, ``Xᵀy``
    by ``x y`` and ``yᵀy`` by ``y²`` (seed 000 eq. 5.12 and §7.1.2).
    """
    x_bound = check_positive(
        x_bound, name="x_bound", fix="Declare the largest row norm ‖x‖₂ allowed."
    )
    y_bound = check_positive(y_bound, name="y_bound", fix="Declare the largest |y| allowed.")
    a, b = x_bound**2, y_bound**2
    if _check_relation(neighbouring) == "add-remove":
        sq = a * a + a * b + (b * b if include_yty else 0.0)
        return math.sqrt(sq)
    if include_yty:
        return math.sqrt(max(2 * a * a + 2 * a * b + b * b / 2, 2 * a * a + a * b + b * b))
    sq = 2 * a * a + 2 * a * b + b * b / 2 if b <= 2 * a else 4 * a * b
    return math.sqrt(sq)


def adassp_sensitivities(x_bound: float, y_bound: float, *, neighbouring: str = "replace-one"):
    """L2 sensitivities of adaSSP's three releases ``(triu(S), z, λ_min(S))`` (module docstring)."""
    xx, xy = x_bound**2, x_bound * y_bound
    if _check_relation(neighbouring) == "add-remove":
        return xx, xy, xx
    return math.sqrt(2.0) * xx, 2.0 * xy, xx


def _finite_array(value, *, name: str, shape=None) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if shape is not None and arr.shape != shape:
        raise ValueError(
            f"{name} must have shape {shape}, got {name}.shape={arr.shape}. "
            "Pass one entry per node (node axis first)."
        )
    if not np.all(np.isfinite(arr)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ValueError(
            f"{name} must be finite, got a non-finite entry {float(arr[bad])!r} at index {bad}. "
            "A release is a finite number; re-check how it was read or transmitted."
        )
    return arr


@dataclasses.dataclass(frozen=True)
class SuffStatsRelease:
    """Noisy per-node sufficient statistics and everything the analyst needs to use them.

    Attributes
    ----------
    S_hat : ndarray, shape (J, d, d)
        Symmetric noisy ``X_jᵀX_j`` (the released upper triangle mirrored).
    z_hat : ndarray, shape (J, d)
        Noisy ``X_jᵀy_j``.
    n : ndarray of int, shape (J,)
        Node sizes ``n_j`` (public).
    sigma_s, sigma_z : float
        Noise sd on each released entry of ``S_hat`` / ``z_hat``.
    x_bound, y_bound : float
        Declared ``‖X‖`` (row-norm bound) and ``‖Y‖`` (bound on ``|y|``).
    epsilon, delta : float
        Privacy of the whole release (parallel composition over nodes).
    neighbouring : {"replace-one"}
        The relation the noise is calibrated for (``n`` public).
    scheme : {"sz", "szu", "adassp"}
        What was released (see the module docstring).
    u_hat, sigma_u : ndarray (J,), float, optional
        Noisy ``y_jᵀy_j`` and its noise sd (scheme ``"szu"``).
    lam_hat, sigma_lam : ndarray (J,), float, optional
        Noisy ``λ_min(S_j)`` and its noise sd (scheme ``"adassp"``).
    """

    S_hat: np.ndarray
    z_hat: np.ndarray
    n: np.ndarray
    sigma_s: float
    sigma_z: float
    x_bound: float
    y_bound: float
    epsilon: float
    delta: float
    scheme: str = "sz"
    u_hat: np.ndarray | None = None
    sigma_u: float | None = None
    lam_hat: np.ndarray | None = None
    sigma_lam: float | None = None
    neighbouring: str = "replace-one"

    def __post_init__(self):
        _check_relation(self.neighbouring)
        if self.scheme not in SCHEMES:
            raise ValueError(
                f"scheme must be one of {SCHEMES}, got scheme={self.scheme!r}. "
                "Use 'sz' for the seed's methods, 'szu' for MCMC-B&S, 'adassp' for adaSSP."
            )
        S = _finite_array(self.S_hat, name="S_hat")
        if S.ndim == 2:
            S = S[None]
        if S.ndim != 3 or S.shape[1] != S.shape[2]:
            raise ValueError(
                f"S_hat must have shape (J, d, d), got S_hat.shape={np.shape(self.S_hat)}. "
                "Stack one d×d matrix per node."
            )
        J, d = S.shape[0], S.shape[1]
        gap = np.abs(S - np.swapaxes(S, 1, 2)).max(initial=0.0)
        if gap > 1e-9 * max(1.0, np.abs(S).max(initial=0.0)):
            raise ValueError(
                f"S_hat must be symmetric (each node's noisy XᵀX is released once per entry of its "
                f"upper triangle and mirrored), got S_hat with |S_hat - S_hatᵀ| up to {gap:.3g}. "
                "If you hold the released upper triangle only, pass it mirrored: "
                "np.triu(S) + np.swapaxes(np.triu(S, 1), -1, -2)."
            )
        S = 0.5 * (S + np.swapaxes(S, 1, 2))
        z = np.asarray(self.z_hat, dtype=float)
        z = _finite_array(z[None] if z.ndim == 1 else z, name="z_hat", shape=(J, d))
        n = np.asarray(self.n).reshape(-1)
        if (
            n.dtype.kind not in "iuf"
            or n.shape != (J,)
            or not np.all(np.isfinite(n))
            or np.any(n < 1)
            or np.any(n != np.round(n))
        ):
            raise ValueError(
                f"n must hold J={J} positive integer node sizes, got n={self.n!r}. "
                "Pass the number of records of each node (public in this model)."
            )
        for name in ("sigma_s", "sigma_z"):
            object.__setattr__(self, name, check_positive(getattr(self, name), name=name))
        object.__setattr__(self, "x_bound", check_positive(self.x_bound, name="x_bound"))
        object.__setattr__(self, "y_bound", check_positive(self.y_bound, name="y_bound"))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        object.__setattr__(self, "S_hat", S)
        object.__setattr__(self, "z_hat", z)
        object.__setattr__(self, "n", n.astype(int))
        if self.scheme == "szu":
            if self.u_hat is None or self.sigma_u is None:
                raise ValueError(
                    "scheme='szu' needs u_hat (noisy yᵀy per node) and sigma_u, got None. "
                    "Release with release_suff_stats(..., scheme='szu')."
                )
            object.__setattr__(
                self, "u_hat", _finite_array(np.reshape(self.u_hat, -1), name="u_hat", shape=(J,))
            )
            object.__setattr__(self, "sigma_u", check_positive(self.sigma_u, name="sigma_u"))
        if self.scheme == "adassp":
            if self.lam_hat is None or self.sigma_lam is None:
                raise ValueError(
                    "scheme='adassp' needs lam_hat (noisy λ_min(S_j) per node) and sigma_lam, got None. "
                    "Release with release_suff_stats(..., scheme='adassp')."
                )
            object.__setattr__(
                self,
                "lam_hat",
                _finite_array(np.reshape(self.lam_hat, -1), name="lam_hat", shape=(J,)),
            )
            object.__setattr__(self, "sigma_lam", check_positive(self.sigma_lam, name="sigma_lam"))

    @property
    def n_nodes(self) -> int:
        """J, the number of nodes."""
        return self.S_hat.shape[0]

    @property
    def d(self) -> int:
        """Number of features."""
        return self.S_hat.shape[1]

    @property
    def n_total(self) -> int:
        return int(self.n.sum())

    def dp_event(self):
        """The privacy of one node's release as a ``dp_accounting`` event (nodes compose in parallel)."""
        from dp_accounting import dp_event

        if self.scheme == "adassp":
            ss, sz, sl = adassp_sensitivities(
                self.x_bound, self.y_bound, neighbouring=self.neighbouring
            )
            return dp_event.ComposedDpEvent(
                [
                    dp_event.GaussianDpEvent(self.sigma_s / ss),
                    dp_event.GaussianDpEvent(self.sigma_z / sz),
                    dp_event.GaussianDpEvent(self.sigma_lam / sl),
                ]
            )
        sigmas = [self.sigma_z] + ([self.sigma_u] if self.scheme == "szu" else [])
        if any(not math.isclose(sg, self.sigma_s, rel_tol=1e-12) for sg in sigmas):
            # noise of another sd on z (or u) than on S: not one Gaussian mechanism with the joint
            # sensitivity (reading sigma_s alone reported ε 50 for about 2,514): each block is its
            # own Gaussian mechanism with its own sensitivity, composed
            ss, sz, _ = adassp_sensitivities(
                self.x_bound, self.y_bound, neighbouring=self.neighbouring
            )
            events = [
                dp_event.GaussianDpEvent(self.sigma_s / ss),
                dp_event.GaussianDpEvent(self.sigma_z / sz),
            ]
            if self.scheme == "szu":  # one record moves yᵀy by at most y_bound²
                events.append(dp_event.GaussianDpEvent(self.sigma_u / self.y_bound**2))
            return dp_event.ComposedDpEvent(events)
        delta_2 = suff_stat_sensitivity(
            self.x_bound,
            self.y_bound,
            include_yty=self.scheme == "szu",
            neighbouring=self.neighbouring,
        )
        return dp_event.GaussianDpEvent(noise_multiplier=self.sigma_s / delta_2)


def _check_data(X, y, x_bound, y_bound, clip):
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(
            f"X must be a 2-D array (n records × d features), got X.shape={X.shape}. "
            "Reshape to (n, d); a single feature is (n, 1)."
        )
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(
            f"y must be 1-D with one entry per row of X, got y.shape={y.shape} and X.shape={X.shape}. "
            "Pass y of shape (n,) aligned with the rows of X."
        )
    for name, arr in (("X", X), ("y", y)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(
                f"{name} must be finite, but it holds NaN or inf entries. Drop or impute them "
                "before releasing."
            )
    norms = np.linalg.norm(X, axis=1)
    tol = 1e-12 * max(1.0, x_bound)
    if clip:
        scale = np.minimum(1.0, x_bound / np.maximum(norms, 1e-300))
        X = X * scale[:, None]
        y = np.clip(y, -y_bound, y_bound)
    else:
        if norms.max(initial=0.0) > x_bound + tol:
            raise ValueError(
                f"every row of X must have Euclidean norm <= x_bound={x_bound!r}, and some rows are "
                "longer. Declare a larger x_bound (chosen without looking at the data) or pass "
                "clip=True to scale such rows onto the ball."
            )
        if np.abs(y).max(initial=0.0) > y_bound + 1e-12 * max(1.0, y_bound):
            raise ValueError(
                f"every |y| must be <= y_bound={y_bound!r}, and some responses are larger. Declare a "
                "larger y_bound (chosen without looking at the data) or pass clip=True to clip y to "
                "[-y_bound, y_bound]."
            )
    return X, y


def _calibrated_sigma(epsilon, delta, sensitivity):
    """σ of `pymc_dp.Gaussian(epsilon=, delta=)` for this L2 sensitivity: Balle & Wang's analytic
    σ, raised (by about 1e-8 relative) until the default accountant reports at most ``epsilon``
    at ``delta`` (docs/privacy.md, "Calibration agrees with the accountant")."""
    return Gaussian(epsilon=epsilon, delta=delta, sensitivity=sensitivity).noise_sd


def _noisy(value, sigma, rng):
    """``value`` plus Gaussian(0, sigma²) noise from the package's exact lattice sampler
    (`pymc_dp.Gaussian.sample`: OpenDP when ``rng`` is None)."""
    value = np.asarray(value, dtype=float)
    return np.asarray(Gaussian(sigma=sigma).sample(value, rng), dtype=float).reshape(value.shape)


def _noisy_symmetric(S, sigma, rng):
    """Symmetric matrices: i.i.d. N(0, sigma²) noise on the upper triangle (diagonal included),
    mirrored below."""
    iu = np.triu_indices(S.shape[-1])
    upper = _noisy(S[:, iu[0], iu[1]], sigma, rng)
    out = np.empty_like(S, dtype=float)
    out[:, iu[0], iu[1]] = upper
    out[:, iu[1], iu[0]] = upper
    return out


@explain_kwargs
def release_suff_stats(
    X,
    y,
    *,
    x_bound,
    y_bound,
    epsilon,
    delta,
    n_nodes: int = 1,
    scheme: str = "sz",
    clip: bool = False,
    rng=None,
    neighbouring: str = "replace-one",
) -> SuffStatsRelease:
    """Release per-node noisy ``(XᵀX, Xᵀy)`` with the analytic Gaussian mechanism (seed 000 §5.2.1-2).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Confidential features; rows are split into ``n_nodes`` contiguous, nearly equal nodes
        (``numpy.array_split``), as the seed's distributed setting (eq. 5.14).
    y : array_like, shape (n,)
        Confidential responses.
    x_bound, y_bound : float
        Declared ``‖X‖ ≥ max ‖x_i‖₂`` and ``‖Y‖ ≥ max |y_i|``. They must not be read off the data
        (the seed's experiments do so; that leaks privacy). Data outside them raise unless ``clip``.
    epsilon, delta : float
        (ε, δ)-DP budget of the whole release.
    n_nodes : int
        J ≥ 1 data holders; each needs at least one row.
    scheme : {"sz", "szu", "adassp"}
        ``"sz"``: the seed's release (default); ``"szu"``: adds ``yᵀy`` (MCMC-B&S);
        ``"adassp"``: Wang's three releases at (ε/3, δ/3).
    clip : bool
        Scale rows of X onto the ``x_bound`` ball and clip y to ``±y_bound`` instead of raising.
    rng : numpy.random.Generator or int, optional
        ``None`` (default): noise from OpenDP's secure sampler, the only route fit for a real
        publication. A generator or seed drives the same exact lattice sampler, for simulations.
    neighbouring : {"replace-one"}
        The relation the noise is calibrated for: one record replaced by another, node sizes
        ``n_j`` public (released exactly). ``"add-remove"`` is refused: the node sizes would be
        private and the analyst methods here need them exactly.

    Returns
    -------
    SuffStatsRelease
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if _check_relation(neighbouring) == "add-remove":
        raise ValueError(
            "neighbouring='add-remove' is refused: under add/remove the node sizes n_j are private, "
            "and this release publishes them exactly (the analyst methods need them), which is not "
            "differentially private. Use neighbouring='replace-one' (n_j public; the noise is "
            "calibrated to the replace-one sensitivity)."
        )
    x_bound = check_positive(
        x_bound, name="x_bound", fix="Declare the largest row norm ‖x‖₂ allowed."
    )
    y_bound = check_positive(y_bound, name="y_bound", fix="Declare the largest |y| allowed.")
    if scheme not in SCHEMES:
        raise ValueError(
            f"scheme must be one of {SCHEMES}, got scheme={scheme!r}. "
            "Use 'sz' for the seed's methods, 'szu' for MCMC-B&S, 'adassp' for adaSSP."
        )
    if isinstance(n_nodes, bool) or not isinstance(n_nodes, (int, np.integer)):
        raise TypeError(
            f"n_nodes must be an int, got n_nodes={n_nodes!r}. Pass the number of nodes J."
        )
    X, y = _check_data(X, y, x_bound, y_bound, clip)
    n, d = X.shape
    if not 1 <= n_nodes <= n:
        raise ValueError(
            f"n_nodes must satisfy 1 <= n_nodes <= n = {n}, got n_nodes={n_nodes!r}. "
            "Every node needs at least one record; use n_nodes=1 for a single curator."
        )
    if rng is not None:  # None: OpenDP's secure sampler
        rng = check_rng(rng)
    parts = np.array_split(np.arange(n), n_nodes)
    check_node_split(X, y, parts)  # warns when the contiguous split depends on y given X
    S = np.stack([X[p].T @ X[p] for p in parts])
    z = np.stack([X[p].T @ y[p] for p in parts])
    u = np.array([y[p] @ y[p] for p in parts])
    sizes = np.array([len(p) for p in parts])
    extra = {}
    if scheme == "adassp":
        eps3, del3 = epsilon / 3.0, delta / 3.0
        ss, sz, sl = adassp_sensitivities(x_bound, y_bound, neighbouring=neighbouring)
        sigma_s = _calibrated_sigma(eps3, del3, ss)
        sigma_z = _calibrated_sigma(eps3, del3, sz)
        sigma_lam = _calibrated_sigma(eps3, del3, sl)
        lam = np.linalg.eigvalsh(S)[:, 0]
        extra = dict(lam_hat=_noisy(lam, sigma_lam, rng), sigma_lam=sigma_lam)
    else:
        sens = suff_stat_sensitivity(
            x_bound, y_bound, include_yty=scheme == "szu", neighbouring=neighbouring
        )
        sigma_s = sigma_z = _calibrated_sigma(epsilon, delta, sens)
    S_hat = _noisy_symmetric(S, sigma_s, rng)
    z_hat = _noisy(z, sigma_z, rng)
    if scheme == "szu":
        extra = dict(u_hat=_noisy(u, sigma_s, rng), sigma_u=sigma_s)
    return SuffStatsRelease(
        S_hat=S_hat,
        z_hat=z_hat,
        n=sizes,
        sigma_s=sigma_s,
        sigma_z=sigma_z,
        x_bound=x_bound,
        y_bound=y_bound,
        epsilon=epsilon,
        delta=delta,
        scheme=scheme,
        **extra,
    )
