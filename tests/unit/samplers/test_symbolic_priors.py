"""Parameters with a symbolic-RV prior (``pm.Truncated``): step assignment read every child's
distribution parameters with ``op.dist_params``, which a ``TruncatedRV`` does not have
("extended_signature must be provided"), so ``pm.sample()`` crashed on such a model."""

import arviz as az
import numpy as np
import pymc as pm
from scipy import stats

import pymc_dp as pdp
from tests.support.sampling import sample

N, RELEASE, EPS = 10, 4.0, 1.0


def test_a_truncated_prior_on_the_parameter_of_records_samples_the_exact_posterior():
    with pm.Model() as model:
        p = pm.Truncated("p", pm.Beta.dist(2.0, 2.0), lower=0.1, upper=0.6)
        x = pm.Bernoulli("x", p, shape=N)
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(0, 1), mechanism=pdp.Laplace(epsilon=EPS), observed=RELEASE
        )
    idata = sample(model, draws=1000, tune=500, seed=4)
    # exact: p on a fine grid, S = Σx ~ Binomial(N, p), release | S ~ Laplace(S, 1/EPS)
    grid = np.linspace(0.1, 0.6, 4001)
    s = np.arange(N + 1)
    like = stats.binom.pmf(s[None, :], N, grid[:, None]) @ stats.laplace.pdf(RELEASE, s, 1 / EPS)
    w = stats.beta.pdf(grid, 2.0, 2.0) * like
    mean = float(np.sum(w * grid) / np.sum(w))
    draws = idata.posterior["p"]
    mcse = float(az.mcse(idata, var_names=["p"])["p"])
    assert abs(float(draws.mean()) - mean) < 4 * mcse, (float(draws.mean()), mean, mcse)
