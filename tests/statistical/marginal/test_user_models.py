"""(a) of issue 17: the two-answer randomized-response table, summed out exactly by the default
assignment (Collapsed), against enumeration; 4 MCSE of the mean and the sd (ArviZ ESS)."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest

from pymc_dp.marginal import collapsed_plans
from tests.support import exact
from tests.support.mc import assert_mc_close
from tests.support.sampling import assigned, sample
from tests.support.user_models import rr_two_answers


@pytest.mark.slow
def test_two_answer_randomized_response_table_collapsed_exact():
    model, _ = rr_two_answers(n=16, eps=1.0, seed=11)
    assert assigned(model) == {"Collapsed": ["pi_simplex__", "x"]}
    plan = collapsed_plans(model)["x"]
    idata = sample(model, draws=1000, tune=500, seed=12)
    pi = idata.posterior["pi"].values
    for k in (0, 3):
        truth = exact.dirichlet_local_posterior(plan.eta, plan.weights, np.ones(4), k)
        assert_mc_close(pi[..., k], *truth, label=f"two-answer RR table π_{k}")
    ess = min(float(az.ess(pi[..., k])) for k in range(4))
    assert (
        ess / pi[..., 0].size >= 0.5
    )  # before (ConjugateTheta + DataAugmentation): 0.007 at N = 400
