"""PenaltyMH budgets are global (issues 20.2, 22.2): planned before sampling, shared across chains and
processes, stopping marked with the draws kept; chains start from dispersed data-independent points."""

import re

import numpy as np
import pymc as pm
import pytest
from packaging.version import Version

import pymc_dp as pdp
from pymc_dp.accounting import PrivacyBudgetExceeded, budget_iterations
from tests.support.models import penalty_model
from tests.support.sampling import sample

# PyMC >= 6.3 passes each chain's tune and draws (setup_chain): a chain that cannot fit is refused
# before it touches the data; older versions stop it at the budget, marked
PLANS_CHAINS = Version(pm.__version__) >= Version("6.3")


def _step(model, **kw):
    with model:
        return pdp.PenaltyMH(lipschitz=10.0, tau=20.0, scale=0.002, **kw)


def test_planned_run_checked_against_the_budget_at_construction():
    model, _ = penalty_model()
    k = budget_iterations(20.0, 1.0, 1e-5)
    msg = f"allows {k} PenaltyMH iterations with tau=20, iterations={k + 1} were planned"
    with pytest.raises(PrivacyBudgetExceeded, match=re.escape(msg)):
        _step(model, budget=(1.0, 1e-5), chains=1, iterations=k + 1)
    step = _step(model, budget=(1.0, 1e-5), chains=2, iterations=k)
    assert step.run_cap == k and step.chain_cap == k // 2
    with pytest.raises(
        ValueError, match=re.escape("chains and iterations declare how a budget is shared")
    ):
        _step(model, chains=2)
    with pytest.raises(
        ValueError, match=re.escape("chains must be an integer >= 1, got chains=0.")
    ):
        _step(model, budget=(1.0, 1e-5), chains=0)


def test_cores2_without_declared_chains_is_refused():
    model, _ = penalty_model()
    step = _step(model, budget=(1.0, 1e-5))
    with pytest.raises(
        Exception, match=re.escape("runs in a worker process (pm.sample with cores > 1)")
    ):
        sample(model, [step], draws=10, tune=0, chains=2, cores=2, seed=1)


def test_cores2_budget_covers_every_chain():
    """Old code: each worker kept its own count, ε spent ≈ 1.4 for budget 1 with no error."""
    model, _ = penalty_model()
    k = budget_iterations(20.0, 1.0, 1e-5)
    step = _step(model, budget=(1.0, 1e-5), chains=2, init="model")
    share = k // 2
    idata = sample(model, [step], draws=share, tune=0, chains=2, cores=2, seed=3)
    its = np.asarray(idata["sample_stats"]["dp_iterations"])
    assert its.max(axis=1).tolist() == [share, share]
    assert not np.asarray(idata["sample_stats"]["dp_budget_exhausted"]).any()
    assert pdp.privacy_spent(idata, delta=1e-5) <= 1.0
    if PLANS_CHAINS:
        with pytest.raises(
            Exception, match=re.escape(f"({share} per chain for chains=2), 0 already ran")
        ):
            sample(model, [step], draws=share + 10, tune=0, chains=2, cores=2, seed=3)
        return
    # the BudgetExhaustedWarning is emitted in the workers; the stat marks the stop (a new step:
    # this one's shares are spent, `test_shares_are_counted_across_processes_and_calls`)
    step = _step(model, budget=(1.0, 1e-5), chains=2, init="model")
    idata = sample(model, [step], draws=share + 10, tune=0, chains=2, cores=2, seed=3)
    done = np.asarray(idata["sample_stats"]["dp_budget_exhausted"])
    assert done.sum(axis=1).tolist() == [10, 10]
    assert np.asarray(idata["sample_stats"]["dp_iterations"]).max(axis=1).tolist() == [share, share]
    assert pdp.privacy_spent(idata, delta=1e-5) <= 1.0


def test_shares_are_counted_across_processes_and_calls():
    """A step declared for chains=2 gives out two shares of its budget, whatever process runs the
    chains: more chains than declared, or the same step in a second pm.sample call, read no data.
    Old code: each worker took a full share, ε spent 1.465 for a budget of 1 in both cases."""
    model, _ = penalty_model()
    k = budget_iterations(20.0, 1.0, 1e-5)
    share = k // 2
    step = _step(model, budget=(1.0, 1e-5), chains=2, iterations=k, init="model")
    draws = min(share, 40)
    idata = sample(model, [step], draws=draws, tune=0, chains=4, cores=2, seed=5)
    its = np.asarray(idata["sample_stats"]["dp_iterations"]).max(axis=1)
    done = np.asarray(idata["sample_stats"]["dp_budget_exhausted"]).all(axis=1)
    assert sorted(its.tolist()) == [0, 0, draws, draws]
    assert done.tolist() == (its == 0).tolist()
    assert pdp.privacy_spent(idata, delta=1e-5) <= 1.0
    # the same step again (in new worker processes): no share is left
    again = sample(model, [step], draws=draws, tune=0, chains=2, cores=2, seed=6)
    assert np.asarray(again["sample_stats"]["dp_iterations"]).max() == 0
    assert np.asarray(again["sample_stats"]["dp_budget_exhausted"]).all()
    assert pdp.privacy_spent([idata, again], delta=1e-5) <= 1.0
    # in this process too (cores=1): the warning names the declared chains
    with pytest.warns(Warning, match=re.escape("declared for chains=2, and 2 chains of this step")):
        sample(model, [step], draws=5, tune=0, chains=1, cores=1, seed=7)


@pytest.mark.parametrize("chains", [None, 1])
def test_a_copy_of_a_budgeted_step_shares_its_budget(chains):
    """A pickled copy of a budgeted step ran a full budget of its own: without chains= always
    (each object counted its own iterations), with chains= once the original was collected (its
    slot files were deleted). ε spent 1.444 for a budget of 1 in both cases."""
    import gc

    import cloudpickle as pickle  # as PyMC pickles steps for its worker processes

    model, _ = penalty_model()
    kw = {} if chains is None else {"chains": chains}
    step = _step(model, budget=(1.0, 1e-5), init="model", **kw)
    draws = min(step.run_cap, 30)
    blob = pickle.dumps((model, step))  # a copy made before the original ran (saved to disk)
    first = sample(model, [step], draws=draws, tune=0, chains=1, cores=1, seed=5)
    after = pickle.dumps((model, step))  # and a copy of a step that has run
    del step
    gc.collect()
    for copied in (pickle.loads(blob), pickle.loads(after)):
        with pytest.warns(Warning, match="reads no data"):
            again = sample(*copied, draws=draws, tune=0, chains=1, cores=1, seed=6)
        assert np.asarray(again["sample_stats"]["dp_iterations"]).max() == 0
        assert np.asarray(again["sample_stats"]["dp_budget_exhausted"]).all()
        assert pdp.privacy_spent([first, again], delta=1e-5) <= 1.0


def test_chains_start_from_dispersed_data_independent_points():
    model, _ = penalty_model()
    step = _step(model, init="prior")
    idata = sample(model, [step], draws=3, tune=0, chains=2, seed=4)
    mu = np.asarray(idata["posterior"]["mu"])
    assert np.abs(mu[0, 0] - mu[1, 0]).min() > 1e-3  # old code: both at the model's initial point
    box = _step(model, init=([-5.0, 5.0], [-4.0, 6.0]))
    mu = np.asarray(sample(model, [box], draws=1, tune=0, chains=3, seed=5)["posterior"]["mu"])[
        :, 0
    ]
    assert np.all((mu[:, 0] > -5.5) & (mu[:, 0] < -3.5)) and np.all(
        (mu[:, 1] > 4.5) & (mu[:, 1] < 6.5)
    )
    assert len(np.unique(mu[:, 0])) == 3
    with pytest.raises(
        ValueError, match=re.escape("init must be 'prior', 'model' or a public box (lower, upper)")
    ):
        _step(model, init=(1.0, 0.0))
