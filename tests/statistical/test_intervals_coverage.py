"""Frequentist coverage of nominal 95 % `pdp.intervals` (benchmarks/bench_intervals.py is the full study).

Claimed: the default interval (kind="both") covers >= 0.94 under DiscreteGaussian(sigma=3.18) and
under Laplace(epsilon=0.5) on counts for every true count measured (0 to 10**6), the true 0 under
Laplace included (the posterior interval alone covers about 0.91 there; docs/intervals.md), and the
confidence interval alone covers >= 0.94 everywhere too (its guarantee is >= 0.95).
With R = 4,000 and coverage near 0.955 the standard error is 0.0033, so 0.94 is 4.5 SE below.
"""

import numpy as np
import pytest

import pymc_dp as pdp

R = 4000
STAT = pdp.Counts(n_categories=2)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mech", "truths"),
    [
        (pdp.DiscreteGaussian(sigma=3.18), [0, 1, 3, 10, 10**6]),
        (pdp.Laplace(epsilon=0.5).bind(STAT, n=1, dim=2), [0, 1, 3, 100, 10**6]),
    ],
)
@pytest.mark.parametrize("kind", ["both", "confidence"])
def test_coverage_at_least_94_percent(mech, truths, kind):
    rng = np.random.default_rng(7)
    for c in truths:
        s = mech.sample(np.full(R, c, dtype=np.int64), rng)
        iv = pdp.intervals(s, 0.95, mechanism=mech, statistic=STAT, kind=kind)
        cover = np.mean((iv[:, 0] <= c) & (c <= iv[:, 1]))
        assert cover >= 0.94, (c, cover)


@pytest.mark.slow
def test_posterior_interval_alone_undercovers_a_laplace_zero():
    """The documented gap that kind="both" closes: 0.91 at a true 0 (s.e. 0.0045 at R = 4,000)."""
    mech = pdp.Laplace(epsilon=0.5).bind(STAT, n=1, dim=2)
    s = mech.sample(np.zeros(R, dtype=np.int64), np.random.default_rng(7))
    iv = pdp.intervals(s, 0.95, mechanism=mech, statistic=STAT, kind="posterior")
    assert np.mean(iv[:, 0] <= 0) < 0.93
