"""Discrete records in z-space and local MHAAR, factorised/exact likelihoods (issue 10 items 3–4)."""

import math
import re

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.diagnostics import loglik_estimate_sd
from pymc_dp.samplers.latent import LatentTarget
from tests.support.models import rr_model

N = 40


def _records(kind):
    if kind == "bernoulli":
        return pm.Bernoulli("x", 0.3, shape=N), stats.bernoulli(0.3).pmf
    if kind == "categorical":
        p = np.array([0.2, 0.5, 0.3])
        return pm.Categorical("x", p, shape=N), lambda k: p[k]
    if kind == "binomial":
        return pm.Binomial("x", 5, 0.4, shape=N), stats.binom(5, 0.4).pmf
    if kind == "poisson":
        return pm.Poisson("x", 2.5, shape=N), stats.poisson(2.5).pmf
    if kind == "geometric":
        return pm.Geometric("x", 0.3, shape=N), stats.geom(0.3).pmf
    return pm.DiscreteUniform("x", -2, 3, shape=N), lambda k: np.where(
        (k >= -2) & (k <= 3), 1 / 6, 0.0
    )


KINDS = ["bernoulli", "categorical", "binomial", "poisson", "geometric", "discrete_uniform"]


@pytest.mark.parametrize("kind", KINDS)
def test_generalised_inverse_cdf(kind):
    """x = F^-(z) with z ~ U(0,1) has pmf f (χ², 0.1% false alarm); z from x reproduces x."""
    with pm.Model() as model:
        th = pm.Normal("th")
        x, pmf = _records(kind)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=-5, upper=50),
            mechanism=pdp.Laplace(scale=3.0),
            observed=1.0,
        )
        target = LatentTarget(model, [th], latent=[x], owner="MHAAR")
    target.compile_z_space()
    rng = np.random.default_rng(3)
    point = model.initial_point(random_seed=0)
    z = rng.random((500, N))
    xs = target.icdf(point, [z])[0].ravel()
    values, counts = np.unique(xs, return_counts=True)
    probs = pmf(values)
    assert np.all(probs > 0), values
    expected = probs * xs.size
    rest = xs.size - expected.sum()  # tail mass of values not drawn
    chi2 = np.sum((counts - expected) ** 2 / expected) + (
        rest**2 / max(rest, 1e-12) if rest > 1 else 0
    )
    assert stats.chi2.sf(chi2, values.size) > 1e-3, (values, counts, expected)
    # the uniform behind a record lies in its atom: F^-(z) gives the record back
    point["x"] = xs[:N].astype(point["x"].dtype)
    zz = target.z_of(point, rng)
    np.testing.assert_array_equal(target.icdf(point, [zz[0][None]])[0][0], point["x"])


def test_auto_space_never_refuses_and_z_space_takes_bernoulli():
    with pm.Model():
        p = pm.Beta("p", 2, 2)
        x = pm.Bernoulli("x", p, shape=10)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=0, upper=1),
            mechanism=pdp.Laplace(scale=1.0),
            observed=4.0,
        )
        assert pdp.MHAAR([p]).space == "z"
        r = pm.Bernoulli("r", p, shape=10)
        pdp.DPObserved(
            "rr",
            r,
            statistic=pdp.Local(),
            mechanism=pdp.RandomizedResponse(epsilon=1.0),
            observed=np.ones(10, dtype=int),
        )
        step = pdp.MHAAR([p], latent=[r])
        assert step.space == "local" and step.enumerate


def test_exact_sum_over_a_finite_support_has_zero_variance():
    model, r = rr_model()
    with model:
        step = pdp.PMMH([model["p"]], n_particles=5)
    point = model.initial_point(random_seed=0)
    assert loglik_estimate_sd(step, point, repeats=5, rng=np.random.default_rng(0)) < 1e-10
    p = 1 / (1 + math.exp(-float(point["p_logodds__"])))
    q = math.e / (math.e + 1)
    prob1 = p * q + (1 - p) * (1 - q)
    want = np.sum(np.where(r == 1, math.log(prob1), math.log1p(-prob1)))
    assert step.loglik_estimate(point, np.random.default_rng(1)) == pytest.approx(want, rel=1e-9)


def test_factorised_estimate_is_unbiased_per_record():
    """Local continuous releases: Ẑ = Π_i mean_j g(s_i|x_ij) — unbiased for Π_i p(s_i|θ)."""
    y = np.array([0.3, -1.0, 2.0])
    with pm.Model() as model:
        th = pm.Normal("th", 0.0, 1.0)
        x = pm.Normal("x", th, 1.0, shape=3)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Local(lower=-30, upper=30),
            mechanism=pdp.Gaussian(sigma=0.8),
            observed=y,
        )
        step = pdp.PMMH([th], n_particles=4)
    assert step.factorised
    point = model.initial_point(random_seed=0)
    rng = np.random.default_rng(4)
    z = np.exp([step.loglik_estimate(point, rng) for _ in range(4000)])
    want = np.prod(stats.norm.pdf(y, 0.0, math.sqrt(1 + 0.8**2)))
    assert abs(z.mean() - want) < 4 * z.std() / math.sqrt(z.size), (z.mean(), want)


def test_subset_size_only_in_z_space():
    with pm.Model():
        th = pm.Normal("th")
        x = pm.Normal("x", th, 1.0, shape=3)
        pdp.DPObserved(
            "s", x, statistic=pdp.Median(-3, 3), mechanism=pdp.SmoothLaplace(2.0, 0.1), observed=0.5
        )
        with pytest.raises(ValueError, match=re.escape("subset_size applies to z-space")):
            pdp.MHAAR([th], space="u", subset_size=2)


def test_loglik_estimate_sd_for_mhaar():
    """The N diagnostic works for MHAAR too: zero on a finite support, positive and ∝ 1/sqrt(N) else."""
    model, _ = rr_model(n=30)
    with model:
        step = pdp.MHAAR([model["p"]], n_particles=5)
    point = model.initial_point(random_seed=0)
    assert loglik_estimate_sd(step, point, repeats=5, rng=np.random.default_rng(0)) < 1e-10
    y = np.array([0.3, -1.0, 2.0, 0.5])
    with pm.Model() as model:
        th = pm.Normal("th", 0.0, 1.0)
        x = pm.Normal("x", th, 1.0, shape=4)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Local(lower=-30, upper=30),
            mechanism=pdp.Gaussian(sigma=0.8),
            observed=y,
        )
        sds = [
            loglik_estimate_sd(
                pdp.MHAAR([th], n_particles=k, rng=np.random.default_rng(0)),
                model.initial_point(random_seed=0),
                repeats=300,
                rng=np.random.default_rng(k),
            )
            for k in (10, 40)
        ]
    assert sds[1] > 0 and 1.4 < sds[0] / sds[1] < 2.8, sds  # sqrt(40/10) = 2
