"""Route × record-family cells of docs/support.md that had no exactness test (issue 17 item 4).

Each cell runs one explicit step assignment on a zoo model (``tests/support/zoo.py``, which also
computes the exact posterior) and checks θ's posterior mean and sd within 4 MCSE.
"""

from __future__ import annotations

import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.mc import assert_mc_close
from tests.support.sampling import sample
from tests.support.zoo import _select, by_name

pytestmark = [pytest.mark.slow, pytest.mark.heavy]

DRAWS, TUNE, SEED = 1000, 500, 23

# (zoo model, θ name, record names)
PARTICLE_CELLS = {
    "categorical": ("categorical_counts_laplace", "pi", ["x"]),
    "poisson": ("poisson_sum_discrete_laplace", "lam", ["x"]),
    "binomial": ("binomial_sum_laplace", "p", ["x"]),
    "gamma": ("gamma_sum_gaussian", "beta", ["x"]),
    "exponential": ("exponential_sum_gaussian", "lam", ["x"]),
}


def _check(name, steps, draws=DRAWS, tune=TUNE):
    model, exact, _ = by_name(name).build()
    idata = sample(model, lambda: steps(model), draws=draws, tune=tune, seed=SEED)
    for key, (mean, sd) in exact.items():
        assert_mc_close(_select(idata.posterior, key), mean, sd, label=f"{name} {key}")


@pytest.mark.parametrize("records", list(PARTICLE_CELLS))
@pytest.mark.parametrize("sampler", ["PMMH", "MHAAR"])
def test_particle_samplers_on_record_families(sampler, records):
    name, theta, _ = PARTICLE_CELLS[records]
    cls = getattr(pdp, sampler)
    _check(name, lambda m: [cls([m[theta]], n_particles=20)])


@pytest.mark.parametrize(
    "name,theta", [("normal_sum_gaussian", "mu"), ("poisson_sum_discrete_laplace", "lam")]
)
def test_sufficient_theta_with_a_release(name, theta):
    _check(name, lambda m: [pdp.SufficientTheta([m[theta]]), pdp.DataAugmentation([m["x"]])])


def test_conjugate_theta_on_poisson_records_with_a_release():
    _check(
        "poisson_sum_discrete_laplace",
        lambda m: [pdp.ConjugateTheta([m["lam"]]), pdp.DataAugmentation([m["x"]])],
    )


@pytest.mark.parametrize(
    "name,theta", [("binomial_sum_laplace", "p"), ("geometric_sum_discrete_laplace", "p")]
)
def test_collapsed_on_binomial_and_geometric(name, theta):
    _check(name, lambda m: [pdp.Collapsed([m[theta], m["x"]])])


@pytest.mark.parametrize(
    "name,theta,records",
    [
        ("normal_sum_gaussian", "mu", ["x"]),  # NUTS alone on θ
        ("normal_clamped_mean_laplace_dims", "mu", ["x"]),  # the Mean statistic
        ("bernoulli_pair_records", "p", ["a", "b"]),  # a block of two record variables
    ],
)
def test_data_augmentation_with_nuts_alone_on_theta(name, theta, records):
    _check(name, lambda m: [pdp.DataAugmentation([m[r] for r in records]), pm.NUTS([m[theta]])])
