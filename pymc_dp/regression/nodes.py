r"""Several data holders: random node splits and one release from per-node releases.

Each node releases its own ``(XᵀX, Xᵀy)`` (``release_suff_stats(X_j, y_j, ..., n_nodes=1)``). When
the nodes hold **disjoint** records (no person in two nodes), the releases compose in *parallel*:
the whole is (ε, δ)-DP with the ε and δ of one node, not their sum. `merge_releases` makes the one
`SuffStatsRelease` the analyst methods take, carrying that single (ε, δ) (its ``dp_event`` is one
node's event, so ``privacy_spent(merged)`` reports ε, where ``privacy_spent([r1, r2, r3])``
composes sequentially: 1.83 for three ε = 1 nodes).

``release_suff_stats(X, y, n_nodes=J)`` splits the rows **contiguously**; rows ordered by the
outcome (or by anything related to it) then give nodes whose residuals differ systematically, which
biases σ_y² and every interval (`pymc_dp.regression.trust.check_node_split` warns). Shuffle with a
data-independent permutation first, e.g. with `random_split`.
"""

from __future__ import annotations

import numpy as np

from pymc_dp._checks import check_rng
from pymc_dp.regression.release import SuffStatsRelease

__all__ = ["merge_releases", "random_split"]

_SHARED = (
    "scheme",
    "sigma_s",
    "sigma_z",
    "x_bound",
    "y_bound",
    "epsilon",
    "delta",
    "neighbouring",
    "sigma_u",
    "sigma_lam",
)


def random_split(n: int, n_nodes: int, rng) -> list[np.ndarray]:
    """Row indices of ``n_nodes`` nearly equal nodes, from a uniformly random permutation.

    The permutation depends only on ``rng`` (never on the data), so the split is independent of
    the outcome. Use as ``parts = random_split(len(y), 3, rng)`` then ``X[parts[j]], y[parts[j]]``.
    """
    rng = check_rng(rng)
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be a positive integer number of rows, got n={n!r}.")
    if (
        isinstance(n_nodes, bool)
        or not isinstance(n_nodes, int | np.integer)
        or not 1 <= n_nodes <= n
    ):
        raise ValueError(
            f"n_nodes must be an integer with 1 <= n_nodes <= n = {n}, got n_nodes={n_nodes!r}. "
            "Every node needs at least one record."
        )
    return [np.sort(p) for p in np.array_split(rng.permutation(int(n)), int(n_nodes))]


def merge_releases(releases) -> SuffStatsRelease:
    """One `SuffStatsRelease` from the releases of nodes holding disjoint records.

    Parameters
    ----------
    releases : sequence of SuffStatsRelease
        One per node (or group of nodes), released with the same ``epsilon``, ``delta``, bounds and
        scheme (hence the same noise sd). The caller asserts that no record is in two of them:
        parallel composition holds only for disjoint records.

    Returns
    -------
    SuffStatsRelease
        The nodes stacked in the order given, with the common (ε, δ): parallel composition.
    """
    items = list(releases)
    if not items:
        raise ValueError("releases must hold at least one SuffStatsRelease, got none.")
    for i, r in enumerate(items):
        if not isinstance(r, SuffStatsRelease):
            raise TypeError(
                f"releases[{i}] must be a SuffStatsRelease (from release_suff_stats), got "
                f"{type(r).__name__}."
            )
    first = items[0]
    for i, r in enumerate(items[1:], start=1):
        for name in _SHARED:
            a, b = getattr(first, name), getattr(r, name)
            same = (
                a == b
                if isinstance(a, str) or a is None or b is None
                else np.isclose(a, b, rtol=1e-12)
            )
            if not same:
                raise ValueError(
                    f"releases must share {name}: releases[0].{name}={a!r}, releases[{i}].{name}={b!r}. "
                    "The analyst methods assume one noise level and one set of bounds; release every "
                    "node with the same epsilon, delta, x_bound, y_bound and scheme."
                )
        if r.d != first.d:
            raise ValueError(
                f"releases must have the same number of features: releases[0].d={first.d}, "
                f"releases[{i}].d={r.d}."
            )

    def cat(name):
        vals = [getattr(r, name) for r in items]
        return None if vals[0] is None else np.concatenate(vals)

    return SuffStatsRelease(
        S_hat=cat("S_hat"),
        z_hat=cat("z_hat"),
        n=cat("n"),
        sigma_s=first.sigma_s,
        sigma_z=first.sigma_z,
        x_bound=first.x_bound,
        y_bound=first.y_bound,
        epsilon=first.epsilon,
        delta=first.delta,
        scheme=first.scheme,
        u_hat=cat("u_hat"),
        sigma_u=first.sigma_u,
        lam_hat=cat("lam_hat"),
        sigma_lam=first.sigma_lam,
        neighbouring=first.neighbouring,
    )
