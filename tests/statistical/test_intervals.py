"""Coverage of ``pdp.intervals`` (flat prior per count, highest-density sets) vs the naive
"noisy ± 1.96 σ, clipped at 0" (issue 18 item 7).

4,000 simulated releases per true count (binomial sd of a coverage near 95 %: 0.34 %). Measured
(seed 18): DiscreteGaussian σ = 3.18 — 98 % at true counts 0–5, 93.6 % at 10 (≈ 3σ: the flat prior
truncated at 0 pulls the posterior up), 95–96 % from 20 to 10⁶; DiscreteLaplace scale 3 — 95–98 %
everywhere, where the naive interval (Gaussian quantile with the noise sd) gives 93.8–95 %. Asserted:
≥ 94 % at 0, 1, 3 and from 20 up, ≥ 92 % at 10 (the stated dip).
"""

import numpy as np
import pytest

import pymc_dp as pdp

pytestmark = pytest.mark.slow

FLOOR = {10: 0.92}


@pytest.mark.parametrize("mech", [pdp.DiscreteGaussian(sigma=3.18), pdp.DiscreteLaplace(scale=3.0)],
                         ids=["dgauss", "dlaplace"])
def test_coverage_from_0_to_a_million(mech):
    rng = np.random.default_rng(18)
    for true in [0, 1, 3, 10, 20, 100, 10**6]:
        truth = np.full(4000, true)
        noisy = mech.sample(truth, rng)
        iv = pdp.intervals(noisy, 0.95, mechanism=mech)
        assert np.all(iv[:, 0] >= 0)
        cover = np.mean((iv[:, 0] <= truth) & (truth <= iv[:, 1]))
        assert cover >= FLOOR.get(true, 0.94), (true, cover)
