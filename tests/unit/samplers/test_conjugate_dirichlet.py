"""ConjugateTheta on a Dirichlet parameter (issue 18, item 2): counts by ``np.bincount``.

Dirichlet(a + counts) from several children at once (observed and latent, 1-d and 2-d), by KS
tests on every coordinate; children with codes outside the Dirichlet's categories are refused.
"""

import re

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_dp as pdp


def test_dirichlet_from_several_children_matches_the_closed_form():
    rng = np.random.default_rng(0)
    alpha = np.array([0.5, 1.0, 2.0, 1.0, 3.0])
    yc = rng.integers(0, 5, 40)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", alpha)
        pm.Categorical("yc", pi, observed=yc)
        x = pm.Categorical("x", pi, shape=(12, 2))
        pdp.DPObserved(
            "c",
            x[:, 0],
            statistic=pdp.Counts(5),
            mechanism=pdp.Laplace(scale=1.0),
            observed=np.ones(5),
        )
        step = pdp.ConjugateTheta([pi], rng=np.random.default_rng(1))
    assert [pat.family for pat in step.patterns] == ["dirichlet"]
    point = model.initial_point(random_seed=0)
    point["x"] = rng.integers(0, 5, (12, 2))
    backward = pytensor.function([v := pt.vector("v")], model.rvs_to_transforms[pi].backward(v))
    pis = np.array([backward(step.step(point)[0]["pi_simplex__"]) for _ in range(1500)])
    a = alpha + np.bincount(yc, minlength=5) + np.bincount(point["x"].ravel(), minlength=5)
    for k in range(5):
        p = stats.kstest(pis[:, k], stats.beta(a[k], a.sum() - a[k]).cdf).pvalue
        assert p > 1e-3, (k, p)


def test_codes_outside_the_categories_are_refused():
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(3))
        x = pm.Categorical("x", pi, shape=6)
        pdp.DPObserved(
            "c", x, statistic=pdp.Counts(3), mechanism=pdp.Laplace(scale=1.0), observed=np.ones(3)
        )
        step = pdp.ConjugateTheta([pi])
    point = model.initial_point(random_seed=0)
    point["x"] = np.array([0, 1, 2, 3, 0, 1])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "ConjugateTheta counts categories 0..2 for a Dirichlet parameter, but the children hold "
            "categories outside that range at this point"
        ),
    ):
        step.step(point)


def test_dirichlet_from_multinomial_tables():
    """Multinomial children (a latent (2, K) table released by pdp.Cells): Dirichlet(a + Σ tables)."""
    alpha = np.array([1.0, 2.0, 0.5, 1.5])
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", alpha)
        c = pm.Multinomial("c", n=np.array([7, 12]), p=pi, shape=(2, 4))
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.ones((2, 4), dtype=int),
        )
        step = pdp.ConjugateTheta([pi], rng=np.random.default_rng(2))
    point = model.initial_point(random_seed=0)
    point["c"] = np.array([[1, 3, 0, 3], [5, 2, 4, 1]])
    backward = pytensor.function([v := pt.vector("v")], model.rvs_to_transforms[pi].backward(v))
    pis = np.array([backward(step.step(point)[0]["pi_simplex__"]) for _ in range(1500)])
    a = alpha + point["c"].sum(axis=0)
    for k in range(4):
        p = stats.kstest(pis[:, k], stats.beta(a[k], a.sum() - a[k]).cdf).pvalue
        assert p > 1e-3, (k, p)
