r"""Maximum mean discrepancy with an RBF kernel (seed 002, Räisä 2020, §7.1; Gretton et al. 2012).

```text
\mathrm{MMD}^2(p, q) = \mathbb E k(x, x') + \mathbb E k(y, y') - 2\,\mathbb E k(x, y),\qquad
k(x, y) = \exp\Big(-\frac{\lVert x-y\rVert_2^2}{2\sigma^2}\Big).
```

The bandwidth σ follows the seed: draw ``n_subsample`` (50) points with replacement from each
sample and take the median of the pairwise distances of the pooled subsample. Used to compare DP
chains, which may not target the exact posterior (clipping), with exact posterior draws.
"""

from __future__ import annotations

import numpy as np

__all__ = ["median_bandwidth", "mmd", "mmd2"]


def _as_2d(x, name):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(
            f"{name} must be a (draws, dims) array with at least 2 draws, got shape {np.shape(x)}. "
            "Stack chains and flatten parameters first."
        )
    if not np.all(np.isfinite(x)):
        raise ValueError(
            f"{name} contains non-finite values; drop diverged draws before computing MMD."
        )
    return x


def _sqdist(a, b):
    d = np.sum(a * a, 1)[:, None] + np.sum(b * b, 1)[None, :] - 2.0 * a @ b.T
    return np.maximum(d, 0.0)


def median_bandwidth(x, y, *, rng, n_subsample: int = 50) -> float:
    """Median pairwise distance of ``n_subsample`` draws (with replacement) from each sample (seed §7.1)."""
    x, y = _as_2d(x, "x"), _as_2d(y, "y")
    pool = np.vstack(
        [x[rng.integers(len(x), size=n_subsample)], y[rng.integers(len(y), size=n_subsample)]]
    )
    d = np.sqrt(_sqdist(pool, pool))[np.triu_indices(len(pool), k=1)]
    med = float(np.median(d[d > 0])) if np.any(d > 0) else 1.0
    return med


def mmd2(x, y, *, bandwidth: float, unbiased: bool = True) -> float:
    """MMD² estimate between samples ``x`` (m, d) and ``y`` (n, d) with RBF bandwidth ``bandwidth``.

    ``unbiased=True`` drops the diagonal terms (U-statistic; may be slightly negative).
    """
    x, y = _as_2d(x, "x"), _as_2d(y, "y")
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            f"x and y must have the same dimension, got {x.shape[1]} and {y.shape[1]}."
        )
    if not bandwidth > 0:
        raise ValueError(
            f"bandwidth must be > 0, got bandwidth={bandwidth!r}. Use median_bandwidth(x, y, rng=rng)."
        )
    g = 1.0 / (2.0 * bandwidth**2)
    kxx = np.exp(-g * _sqdist(x, x))
    kyy = np.exp(-g * _sqdist(y, y))
    kxy = np.exp(-g * _sqdist(x, y))
    m, n = len(x), len(y)
    if unbiased:
        sxx = (kxx.sum() - np.trace(kxx)) / (m * (m - 1))
        syy = (kyy.sum() - np.trace(kyy)) / (n * (n - 1))
    else:
        sxx, syy = kxx.mean(), kyy.mean()
    return float(sxx + syy - 2.0 * kxy.mean())


def mmd(x, y, *, bandwidth=None, rng=None, n_subsample: int = 50) -> float:
    """MMD (square root of the biased, non-negative MMD² estimate) with the seed's median bandwidth."""
    if bandwidth is None:
        if rng is None:
            raise ValueError(
                "mmd needs rng= to pick the median-heuristic bandwidth, or an explicit bandwidth=."
            )
        bandwidth = median_bandwidth(x, y, rng=rng, n_subsample=n_subsample)
    return float(np.sqrt(max(mmd2(x, y, bandwidth=bandwidth, unbiased=False), 0.0)))
