"""`privacy_spent(idata)` and `publishable` count every iteration the run made, or refuse.

ε of a PenaltyMH run is read from the per-chain counter ``dp_iterations`` of the last draw. A
trace sliced or thinned before accounting (``idata.sel(draw=slice(0, 50))``) used to report the ε
of the iterations it still shows: 510.7 instead of 949.8 for the run below. The counter and
PyMC's ``tuning_steps`` attribute tell whether draws are missing, so such a trace is refused
(accounting needs the full result; slicing the published result afterwards is post-processing).
A trace cut at its end, or with chains dropped, looked like a shorter run (``idata.sel(chain=[0])``
of 4 chains: ε 8.39 instead of 20.1); the run's numbers of chains and draws are now in the
sample stats' attrs (``pymc_dp_chains``, ``pymc_dp_draws``), so it is refused too.
"""

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp

TUNE, DRAWS = 30, 40


@pytest.fixture(scope="module")
def run():
    x = np.random.default_rng(1).normal(0.5, 1, 60)
    with pm.Model():
        mu = pm.Normal("mu", 0, 2)
        pm.Normal("y", mu, 1.0, observed=x)
        step = pdp.PenaltyMH(lipschitz=10, tau=0.8, scale=0.05, init=(-1, 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(
                draws=DRAWS,
                tune=TUNE,
                chains=2,
                cores=1,
                step=[step],
                random_seed=3,
                progressbar=False,
                compute_convergence_checks=False,
            )
    return idata, step


def _isel(idata, **kw):
    return idata.isel(**kw)


def test_full_run_counts_tuning_and_every_chain(run):
    idata, _ = run
    spent = pdp.privacy_spent(idata, delta=1e-5)
    ref = pdp.accounting.epsilon_of_event(
        pdp.accounting.run_event(pdp.accounting.iteration_event(0.8), 2 * (TUNE + DRAWS)), 1e-5
    )
    assert float(spent) == pytest.approx(ref, rel=1e-5)  # (PLD discretisations differ)


@pytest.mark.parametrize(
    "sel",
    [
        {"draw": slice(10, None)},  # burn-in removed
        {"draw": slice(None, None, 2)},  # thinned
        {"draw": [0, 1, 2, 5, 6]},  # a gap
        {"draw": slice(0, 20)},  # cut at its end
        {"chain": [0]},  # a chain dropped
    ],
    ids=["head", "thinned", "gap", "tail", "chain"],
)
def test_a_sliced_trace_is_refused(run, sel):
    idata, step = run
    part = _isel(idata, **sel)
    with pytest.raises(ValueError, match=r"were (dropped|removed).*full result of pm.sample"):
        pdp.privacy_spent(part, delta=1e-5)
    with pytest.raises(ValueError, match=r"were (dropped|removed).*full result of pm.sample"):
        pdp.publishable(part, step, delta=1e-5, allow_unmixed=True)


def test_two_penalty_steps_count_their_iterations():
    """Stats of two PenaltyMH steps are (chain, draw, step); publishable's ``dp_iterations`` used
    to sum the counter over every draw (20100 for 2 chains × 150 iterations × 2 steps)."""
    x = np.random.default_rng(1).normal([0.5, -1], 1, (80, 2))
    with pm.Model():
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 2)
        pm.Normal("y", pm.math.stack([a, b]), 1.0, observed=x)
        s1 = pdp.PenaltyMH([a], lipschitz=10, tau=0.8, scale=0.05, init=(-1, 1))
        s2 = pdp.PenaltyMH([b], lipschitz=10, tau=2.0, scale=0.05, init=(-1, 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(
                draws=DRAWS,
                tune=TUNE,
                chains=2,
                cores=1,
                step=[s1, s2],
                random_seed=3,
                progressbar=False,
                compute_convergence_checks=False,
            )
            pub = pdp.publishable(idata, [s1, s2], delta=1e-5, allow_unmixed=True)
    assert pub.attrs["dp_iterations"] == 2 * 2 * (TUNE + DRAWS)
