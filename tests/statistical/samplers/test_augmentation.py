"""DataAugmentation next to a user-written Gibbs step against the exact posterior."""

import numpy as np
import pymc as pm

import pymc_dp as pdp
from tests.support.exact import exact_records_sum
from tests.support.mc import assert_mc_close
from tests.support.models import normal_model
from tests.support.sampling import sample


def test_user_conjugate_step_alongside():
    """A user-written Gibbs step for mu | x next to DataAugmentation: the pair is exact.

    mu ~ N(0, 3²), x_i ~ N(mu, 1), n = 40, s = Σx + Laplace(2): posterior of mu by quadrature.
    """
    from pymc.step_methods.compound import BlockedStep

    class MuGibbs(BlockedStep):
        name = "mu_gibbs"
        stats_dtypes_shapes = {}

        def __init__(self, vars, model=None, rng=None, blocked=True):
            self.vars = [pm.modelcontext(model).rvs_to_values[v] for v in vars]
            self.rng = np.random.default_rng(rng)

        def step(self, point):
            x = point["x"]
            prec = 1 / 9 + len(x)
            return {**point, "mu": np.array(self.rng.normal(x.sum() / prec, prec**-0.5))}, [{}]

    model, s = normal_model(n=40, b=2.0)
    idata = sample(
        model,
        lambda: [pdp.DataAugmentation([model["x"]]), MuGibbs([model["mu"]])],
        draws=1500,
        tune=300,
        seed=1,
    )
    assert_mc_close(
        idata.posterior["mu"],
        *exact_records_sum(y=s, n=40, prior_sd=3.0, b=2.0),
        label="DataAugmentation + user Gibbs step",
    )
