r"""Subsampled DP penalty (seed 002, Räisä 2020, §4.1, Lemma 1 and Theorem 9).

Each iteration draws a batch `B` of `b` records without replacement, clips the ratios
`r_j` to `\pm L\lVert\theta'-\theta\rVert_2` and forms

```text
\hat\lambda = \frac{nT}{b}\sum_{j\in B} r_j + \ln\frac{p(\theta')}{p(\theta)},\qquad
\sigma_b^2 = \kappa\Big(\frac{nT}{b}\Big)^2\Big(\sum_{j\in B} r_j^2 - \frac{R^2}{b}\Big),\ R = \sum_{j\in B} r_j,
\qquad \kappa = \min\Big\{1, \Big(1 - \frac{b}{n}\Big)\frac{b}{b - 1}\Big\}.
```

The seed's `\sigma_b^2` (`\kappa = 1`) is the variance of `\frac{nT}{b}R` for a batch drawn *with*
replacement. The batch here is drawn without replacement (as the accountant's
``SampledWithoutReplacementDpEvent`` assumes), whose sum has variance
`(nT)^2 (1 - b/n) S^2 / b`: `\kappa` is that finite-population correction with the unbiased sample
variance, so `\sigma_b^2` is unbiased for it (exactly so when `n \le b^2`, where the cap does not
bind). Without it the test over-penalised every move by `(b/n)\sigma_b^2/2` and the chain targeted
about `\pi^{1.12}` at `n = 2000, b = 500` (variance 0.90 of the posterior's). `\kappa \le 1`, so
Lemma 1's bound on the sensitivity of `\tfrac12\sigma_b^2` still holds (it is only looser).

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
    r"""Scaled batch sum `\frac{nT}{b}R` and its CLT variance `\sigma_b^2` (the seed's §4.1 times
    the finite-population correction `\kappa` of a batch drawn without replacement; module
    docstring)."""
    b = r_clipped.size
    f = n * temperature / b
    R = float(r_clipped.sum())
    kappa = min(1.0, (1.0 - b / n) * b / (b - 1)) if b > 1 else 0.0
    var = kappa * f * f * max(float(np.dot(r_clipped, r_clipped)) - R * R / b, 0.0)
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
