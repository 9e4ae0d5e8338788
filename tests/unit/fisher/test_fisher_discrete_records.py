"""Discrete records in the Fisher planning module.

* Algorithm 2 (``marginal_mc``) with ``pdp.Counts``: the statistic used to be handed the (B, n)
  batch of simulated databases and refused it ("Counts needs one category per record (a 1-d record
  array), got ndim=2"); each simulated database is now one 1-d record vector. Checked against the
  exact Fisher information of the noisy counts (sum over the binomial count, the Laplace densities
  integrated on a grid) and, database by database, against ``Counts.evaluate``.
* ``QuadratureMoments`` integrates over a continuous scalar record: a discrete population used to
  be accepted and fail inside PyTensor at ``evaluate``; it is refused at construction.
"""

import re

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.fisher import Population, QuadratureMoments, fisher_information
from pymc_dp.fisher.monte_carlo import _database_evaluator
from tests.support.mc import assert_within_se

BERN = Population(pm.Bernoulli, lambda t: {"p": t}, theta_bounds=(0.0, 1.0))


def exact_counts_laplace_fisher(theta, n, b, h):
    """F(θ) of y = (n − k, k) + two iid Laplace(0, b) draws, k ~ Bin(n, θ) (the Counts(2) of n
    Bernoulli records): p(y | θ) = Σ_k Bin(k) L(y₁ − n + k) L(y₂ − k), F = ∫∫ (∂_θ p)² / p dy on a
    midpoint grid of spacing h (the Laplace tails beyond 40 are below e⁻²⁰ for b = 2)."""
    k = np.arange(n + 1)
    w = stats.binom.pmf(k, n, theta)
    dw = w * (k / theta - (n - k) / (1 - theta))
    y = np.arange(-40.0, n + 40.0, h) + h / 2
    A = stats.laplace.pdf(y[None, :], loc=(n - k)[:, None], scale=b)
    B = stats.laplace.pdf(y[None, :], loc=k[:, None], scale=b)
    p = (A * w[:, None]).T @ B
    dp = (A * dw[:, None]).T @ B
    return float(np.sum(dp**2 / p) * h * h)


def test_counts_release_in_algorithm2_matches_the_exact_marginal():
    theta, n = 0.3, 10
    mech = pdp.Laplace(epsilon=1.0)  # Counts: L1 sensitivity 2, scale b = 2
    est = fisher_information(
        theta,
        n=n,
        population=BERN,
        statistic=pdp.Counts(2),
        mechanism=mech,
        n_outer=400,
        n_inner=200,
        rng=np.random.default_rng(1),
    )
    assert est.method == "marginal_mc"
    coarse = exact_counts_laplace_fisher(theta, n, 2.0, h=0.1)
    exact = exact_counts_laplace_fisher(theta, n, 2.0, h=0.05)
    assert exact == pytest.approx(coarse, rel=1e-3)  # the grid has converged (≈ 19.49)
    assert_within_se(est.value, exact, est.stderr, z=4.0, label="Counts(2) Fisher information")


def test_batched_statistic_matches_each_databases_own_evaluation():
    """The compiled batch path gives, database by database, what ``statistic.evaluate`` gives for
    that database's 1-d records (Counts with integer codes; Mean/Local with a record function)."""
    rng = np.random.default_rng(0)
    n = 7
    X = rng.integers(0, 3, size=(5, n))
    mech = pdp.Laplace(scale=1.0)
    for stat in (pdp.Counts(3), pdp.Mean(lower=0, upper=2), pdp.Local(lower=0, upper=2)):
        S, extras = _database_evaluator(stat, mech, n)(X)
        assert extras == ()
        for i in range(X.shape[0]):
            np.testing.assert_allclose(S[i], np.asarray(stat.evaluate(X[i])))
    Xf = rng.normal(size=(4, n))
    stat = pdp.Sum(lower=0, upper=4, fn=lambda x: x**2)
    S, _ = _database_evaluator(stat, mech, n)(Xf)
    np.testing.assert_allclose(S, [float(stat.evaluate(x)) for x in Xf])


def test_quadrature_moments_refuses_a_discrete_population_at_construction():
    pop = Population(pm.Poisson, lambda t: {"mu": t}, theta_bounds=(0, None))
    msg = (
        "QuadratureMoments integrates s(x) p(x | theta) dx over a continuous scalar record, but "
        "population=Population(Poisson) has discrete records (dtype int64). For discrete records "
        "use fisher_information(theta, n=..., population=population, statistic=..., "
        "mechanism=...) (method='marginal_mc'"
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        QuadratureMoments(pop, lambda x: x, lower=0)
    with pytest.raises(ValueError, match=re.escape("Population(Bernoulli) has discrete records")):
        QuadratureMoments(BERN, lambda x: x, lower=0, upper=1)
    mv = Population(pm.MvNormal, lambda t: {"mu": pt.stack([t, t]), "cov": np.eye(2)})
    with pytest.raises(ValueError, match=re.escape("Population(MvNormal) has 1-dimensional")):
        QuadratureMoments(mv, lambda x: x)
    # a continuous scalar record is accepted
    QuadratureMoments(Population(pm.Normal, lambda t: {"mu": t, "sigma": 1.0}), lambda x: x)
