"""``pm.sample()`` on a discrete θ bounding discrete records is exact (issue 17.2, slow tier)."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest

from tests.support.mc import assert_mc_close
from tests.support.sampling import sample
from tests.unit.marginal.test_enumerate import _model, exact_up


@pytest.mark.slow
def test_default_sample_matches_enumeration():
    idata = sample(_model(), draws=1000, tune=100, seed=3)
    up = idata.posterior["up"].values
    p = exact_up()
    v = np.arange(1, 6)
    mean, sd = float(p @ v), float(np.sqrt(p @ v**2 - (p @ v) ** 2))
    assert_mc_close(up, mean, sd, label="up")
    for k in (1, 2, 3):  # P(up = k) within 4 MCSE
        assert_mc_close((up == k).astype(float), p[k - 1], label=f"P(up = {k})")
    assert float(az.rhat(idata, var_names=["up"])["up"]) <= 1.01
    assert float(az.ess(idata, var_names=["up"])["up"]) / up.size >= 0.5
