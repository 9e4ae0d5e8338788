"""The model zoo (issue 17 item 5): every model run by ``pm.sample()`` without ``step=``.

Where the exact posterior is computable (``tests/support/zoo.py``: conjugate, enumeration over the
latent statistic, quadrature) its mean and sd must be within 4 Monte Carlo standard errors; every
run prints the route ``pm.sample()`` picked, bulk ESS/draw and R-hat (``benchmarks/bench_zoo.py``
writes the same numbers to ``benchmarks/ZOO_RESULTS.md``). A fast subset runs in the default tier.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.mc import assert_mc_close
from tests.support.zoo import CASES, _select, run_case

DRAWS, TUNE, SEED = 500, 300, 17


def _param(c):
    marks = [] if c.fast else [pytest.mark.slow, pytest.mark.heavy]
    if c.xfail:
        marks.append(pytest.mark.xfail(strict=True, reason=c.xfail))
    return pytest.param(c, id=c.name, marks=marks)


def test_zoo_covers_the_support_matrix():
    """≥ 30 models; every statistic class, mechanism family and record family appears."""
    assert len(CASES) >= 30
    stats_ = {c.statistic for c in CASES}
    mechs = " ".join(c.mechanism for c in CASES)
    recs = " ".join(c.records for c in CASES)
    assert {"additive", "local", "counts", "recordsum", "order", "latent"} <= stats_
    for m in (
        "Laplace",
        "Gaussian",
        "DiscreteLaplace",
        "DiscreteGaussian",
        "RandomizedResponse",
        "SmoothLaplace",
    ):
        assert m in mechs
    for r in (
        "Bernoulli",
        "Categorical",
        "Binomial",
        "Poisson",
        "Geometric",
        "Exponential",
        "Gamma",
        "continuous",
    ):
        assert r in recs
    assert sum(c.fast for c in CASES) >= 5


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_zoo_model(case):
    res = run_case(case, draws=DRAWS, tune=TUNE, seed=SEED)
    summary = "; ".join(
        f"{k}: ESS/draw {r['ess_per_draw']:.3f}, R-hat {r['r_hat']:.3f}"
        for k, r in res["rows"].items()
    )
    print(f"[zoo] {case.name}: route {res['route']}; {summary}")
    post = res["idata"].posterior
    for key in res["rows"]:
        assert np.all(np.isfinite(_select(post, key))), key
    if res["exact"] is None:
        return
    for key, (mean, sd) in res["exact"].items():
        assert_mc_close(
            _select(post, key), mean, sd, label=f"{case.name} {key} route {res['route']}"
        )
