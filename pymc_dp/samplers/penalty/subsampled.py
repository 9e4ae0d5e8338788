r"""Subsampled DP penalty (seed 002, Räisä 2020, §4.1, Lemma 1 and Theorem 9).

Each iteration draws a batch `B` of `b` records without replacement, clips the ratios
`r_j` to `\pm L\lVert\theta'-\theta\rVert_2` and forms

```text
\hat\lambda = \frac{nT}{b}\sum_{j\in B} r_j + \ln\frac{p(\theta')}{p(\theta)},\qquad
\sigma_b^2 = \Big(\frac{nT}{b}\Big)^2\Big(\sum_{j\in B} r_j^2 - \frac{R^2}{b}\Big),\ R = \sum_{j\in B} r_j .
```

It releases `V = \hat\lambda - \tfrac12\sigma_b^2 + \mathcal N(0, \sigma^2)` with
`\sigma = z c` (z the noise multiplier), `c = \Delta_\lambda + \Delta_\sigma`
(Lemma 1, Theorem 9), and accepts with probability `\min\{1, \exp(V - \sigma^2/2)\}`, i.e.
`\min\{1, e^{\lambda^* - (\sigma^2 + \sigma_b^2)/2}\}`. By the CLT the subsampling error of
`\hat\lambda` is approximately `\mathcal N(0, \sigma_b^2)`, so the penalty corrects it
approximately (the target is exact only in the CLT limit). Cost O(b) per iteration. Privacy:
subsampled Gaussian mechanism, composed by the RDP accountant with
``SampledWithoutReplacementDpEvent`` (Theorem 9 is the closed form).

`SubsampledTest` is this estimate as a pluggable acceptance test of
`penalty_kernel` (nothing is cached: ``state.loglik`` stays
``None``).
"""

from __future__ import annotations

import numpy as np

from pymc_dp.accounting.penalty_bounds import subsampled_sensitivity
from pymc_dp.samplers.penalty.kernel import (
    AcceptanceTest,
    PenaltyState,
    clipped_sum,
    penalty_kernel,
)

__all__ = ["SubsampledTest", "subsampled_kernel", "batch_log_ratio"]


def batch_log_ratio(r_clipped, n, temperature=1.0):
    r"""Scaled batch sum `\frac{nT}{b}R` and the CLT variance `\sigma_b^2` of the seed's §4.1."""
    b = r_clipped.size
    f = n * temperature / b
    R = float(r_clipped.sum())
    var = f * f * max(float(np.dot(r_clipped, r_clipped)) - R * R / b, 0.0)
    return f * R, var


class SubsampledTest(AcceptanceTest):
    """Penalty test on a batch of ``batch_size`` records with the batch-variance correction."""

    name = "subsampled"
    caches_loglik = False

    def __init__(self, batch_size: int):
        self.batch_size = int(batch_size)

    def sensitivity(self, params, norm, n):
        return float(
            subsampled_sensitivity(
                n, self.batch_size, params.lipschitz, norm, temperature=params.temperature
            )[2]
        )

    def estimate(self, rng, state, target, move, proposal, params):
        n = target.n
        idx = rng.choice(n, size=self.batch_size, replace=False)
        r = target.loglik(move.theta, idx) - target.loglik(state.theta, idx)
        _, frac, rc = clipped_sum(r, params.lipschitz * move.norm)
        lam_hat, var_b = batch_log_ratio(rc, n, params.temperature)
        return lam_hat - 0.5 * var_b, frac, None, None


def subsampled_kernel(rng, state: PenaltyState, target, params, batch_size, temperature=1.0):
    """One subsampled-penalty iteration: `penalty_kernel` with `SubsampledTest`."""
    return penalty_kernel(
        rng,
        state,
        target,
        params._replace(acceptance=SubsampledTest(batch_size), temperature=temperature),
    )
