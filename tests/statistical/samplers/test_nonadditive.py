"""``pm.sample()`` on a Median release (issue 17): NonAdditiveRoute is exact (slow tier)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.mc import assert_mc_close
from tests.support.sampling import sample
from tests.support.zoo import by_name


@pytest.mark.slow
@pytest.mark.parametrize("route", ["auto", "both"])
def test_median_laplace_default_route_exact(route):
    """Median(1, 4) of 9 N(mu, 1) records + Laplace: the order statistic's density in closed form
    against pm.sample() (auto: the trial's choice; both: NUTS then MHAAR)."""
    import pymc_dp as pdp

    model, exact, _ = by_name("normal_median_laplace").build()
    step = None
    if route != "auto":
        step = lambda: pdp.NonAdditiveRoute([model["mu"], model["x"]], route=route)  # noqa: E731
    idata = sample(model, step, draws=600, tune=500, seed=5)  # ESS ~240 (2 chains)
    mean, sd = exact["mu"]
    assert_mc_close(idata.posterior["mu"].values, mean, sd, label=f"median route={route}")
    if route == "auto":
        assert np.all(idata.sample_stats["dp_route"].values[:, -1] > 0)
