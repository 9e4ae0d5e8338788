"""DataAugmentation on the fast record-proposal route (``pymc_dp.samplers.fast_draws``) against exact
posteriors of families the older exactness tier does not cover (gamma, binomial records); 4 MCSE of
the mean and the sd (ArviZ ESS). The fast draws themselves are checked in
``tests/unit/samplers/test_fast_proposals.py``.
"""

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support import exact
from tests.support.mc import assert_mc_close
from tests.support.sampling import sample

SAMPLE = {"draws": 1500, "tune": 500}


@pytest.mark.slow
def test_exact_gamma_records_sum_gaussian():
    """λ ~ Gamma(2, 1), x_i ~ Gamma(k=2.5, rate λ) (log value space), s = Σx + N(0, 1): quadrature."""
    rng = np.random.default_rng(21)
    n, k = 4, 2.5
    s = float(rng.gamma(k, 1 / 1.5, n).sum() + rng.normal(0, 1.0))
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=2.0, beta=1.0)
        x = pm.Gamma("x", alpha=k, beta=lam, shape=n)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=1.0), observed=s)
        step = pdp.DataAugmentation([x])
    idata = sample(model, [step], seed=2, **SAMPLE)
    assert step.fast_proposals == [True]
    # Σx | λ ~ Gamma(n·k, rate λ): the exponential quadrature with shape n·k
    assert_mc_close(
        np.asarray(idata.posterior["lam"]),
        *exact.exponential_sum_gaussian(s, n * k, 2.0, 1.0, 1.0),
        label="gamma records (fast)",
    )


@pytest.mark.slow
def test_exact_binomial_records_sum_laplace():
    """p ~ Beta(2, 3), x_i ~ Binomial(4, p), s = clamped Σx + Laplace(4/ε): Σx ~ Binomial(4n, p), enumerated."""
    rng = np.random.default_rng(22)
    n, m, eps = 12, 4, 1.0
    stat, mech = pdp.Sum(lower=0, upper=m), pdp.Laplace(epsilon=eps)
    s = float(pdp.release(rng.binomial(m, 0.4, n), stat, mech, rng=rng))
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 3.0)
        x = pm.Binomial("x", m, p, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
        step = pdp.DataAugmentation([x])
    idata = sample(model, [step], seed=3, **SAMPLE)
    assert step.fast_proposals == [True]
    assert_mc_close(
        np.asarray(idata.posterior["p"]),
        *exact.beta_bernoulli_laplace(s, n * m, 2.0, 3.0, m / eps),
        label="binomial records (fast)",
    )
