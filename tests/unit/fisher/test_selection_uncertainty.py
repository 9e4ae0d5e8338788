"""select_statistic with Monte Carlo uncertainty: flags, margins in standard errors, cost (issue 22.5)."""

import dataclasses
import re
import time

import numpy as np
import pytest

import pymc_dp as pdp
from pymc_dp.fisher import (
    Candidate,
    FisherEstimate,
    PlanningCostWarning,
    normal_variance_example,
    select_statistic,
)
from pymc_dp.fisher.monte_carlo import UNSTABLE_RSE, stability


@dataclasses.dataclass(frozen=True)
class Fixed(Candidate):
    """A candidate whose Monte Carlo estimate is given: ``values[i]`` ± ``ses[i]`` at θ point i."""

    values: tuple = ()
    ses: tuple = ()
    delay: float = 0.0

    def fisher(self, theta, *, n=None, rng=None, **overrides):
        time.sleep(self.delay)
        i = round(float(theta))
        v, se = self.values[i], self.ses[i]
        return FisherEstimate(v, se, "marginal_mc", stability(v, se))


def test_stability_flags_negative_and_noisy_estimates():
    assert stability(-245.6, 30.0)["unstable"] and not stability(-245.6, 30.0)["positive"]
    assert (
        stability(10.0, 1.0)["relative_se"] == pytest.approx(0.1)
        and not stability(10.0, 1.0)["unstable"]
    )
    assert stability(10.0, 10.0 * UNSTABLE_RSE * 1.01)["unstable"]
    assert stability(np.diag([4.0, -1.0]), np.full((2, 2), 0.1))["unstable"]


def test_a_negative_fisher_estimate_is_never_selected():
    # at θ = 0 "median" returned −245.6 (the split estimator's failure of issue 22); 1/F < 0 used to win
    median = Fixed("median", values=(-245.6, 50.0), ses=(60.0, 2.0))
    mean = Fixed("mean", values=(40.0, 45.0), ses=(1.0, 1.0))
    sel = select_statistic([median, mean], theta=[0.0, 1.0], n=10, max_seconds=None)
    assert sel.best_at == ["mean", "median"] and sel.best is None
    assert list(sel.unstable["median"]) == [True, False]
    prior_like = select_statistic([median, mean], theta_samples=[0.0, 1.0], n=10, max_seconds=None)
    assert prior_like.best == "mean" and prior_like.score_se["median"] == np.inf
    alone = select_statistic([median], theta=[0.0], n=10, max_seconds=None)
    assert alone.best is None and alone.best_at == [None]


def test_margin_is_reported_in_standard_errors():
    a = Fixed("a", values=(50.0,), ses=(1.0,))
    b = Fixed("b", values=(40.0,), ses=(1.0,))
    sel = select_statistic([a, b], theta=[0.0], n=10, max_seconds=None)
    se_a, se_b = 1.0 / 50.0**2, 1.0 / 40.0**2  # delta method: se(1/F) = se(F)/F²
    want = (1 / 40 - 1 / 50) / np.hypot(se_a, se_b)
    assert (
        sel.best == "a"
        and sel.margin_at[0] == pytest.approx(want)
        and sel.margin == pytest.approx(want)
    )
    assert sel.stderr["a"][0] == 1.0
    close = select_statistic(
        [a, Fixed("c", values=(49.0,), ses=(1.0,))], theta=[0.0], n=10, max_seconds=None
    )
    assert close.margin < 1.0  # a winner by less than one standard error is visible as such


def test_closed_form_margins_are_infinite():
    cands = [
        Candidate(
            f"a={a}",
            statistic=pdp.Mean(-10, 10),
            mechanism=pdp.Gaussian(epsilon=1.0, delta=1e-5),
            moments=normal_variance_example(a),
            n=100,
        )
        for a in (1, 2)
    ]
    sel = select_statistic(cands, theta=[1.0, 2.0], max_seconds=None)
    assert all(np.isinf(sel.margin_at)) and not any(u.any() for u in sel.unstable.values())


def test_cost_is_estimated_before_the_run_and_warns_above_the_threshold():
    slow = Fixed(
        "slow", values=(5.0, 5.0, 5.0), ses=(0.1,) * 3, delay=0.05, options={"n_outer": 20}
    )
    msg = "select_statistic will take about"
    with pytest.warns(PlanningCostWarning, match=re.escape(msg)) as rec:
        sel = select_statistic([slow], theta=[0.0, 1.0, 2.0], n=10, max_seconds=0.01)
    assert "max_seconds=0.01" in str(rec[0].message)
    # the pilot's time per evaluation × 3 points, predicted before the run and close to the actual
    assert sel.cost["slow"] == pytest.approx(3 * 0.05, rel=0.5)
    assert sel.cost["elapsed"] == pytest.approx(sel.cost["total"], rel=0.5)
