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
    # PyMC's own transform on the (1500, K) stack of draws, compiled without the C build
    tr = model.rvs_to_transforms[pi]
    backward = pytensor.function([m := pt.matrix("m")], tr.backward(m), mode="FAST_COMPILE")
    pis = backward(np.array([step.step(point)[0]["pi_simplex__"] for _ in range(1500)]))
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
    # PyMC's own transform on the (1500, K) stack of draws, compiled without the C build
    tr = model.rvs_to_transforms[pi]
    backward = pytensor.function([m := pt.matrix("m")], tr.backward(m), mode="FAST_COMPILE")
    pis = backward(np.array([step.step(point)[0]["pi_simplex__"] for _ in range(1500)]))
    a = alpha + point["c"].sum(axis=0)
    for k in range(4):
        p = stats.kstest(pis[:, k], stats.beta(a[k], a.sum() - a[k]).cdf).pvalue
        assert p > 1e-3, (k, p)


def test_area_dirichlets_given_their_tables_agree_with_the_model_logp():
    """(G, K) Dirichlet rows around a shared mean, each with its own Multinomial row: the conditional
    ConjugateTheta draws from (Dirichlet(α·base + c_g) per row) against PyMC's joint logp, and the
    draws against the closed form."""
    g, k = 3, 4
    with pm.Model() as model:
        base = pm.Dirichlet("base", np.ones(k))
        alpha = pm.Gamma("alpha", 4.0, 1.0)
        pi = pm.Dirichlet("pi", alpha * base, shape=(g, k))
        c = pm.Multinomial("c", n=np.array([5, 9, 2]), p=pi, shape=(g, k))
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.ones((g, k), dtype=int),
        )
        step = pdp.ConjugateTheta([pi], rng=np.random.default_rng(3))
    assert [pat.family for pat in step.patterns] == ["dirichlet"]
    rng = np.random.default_rng(4)
    point = model.initial_point(random_seed=0)
    point["c"] = np.array([[1, 3, 0, 1], [5, 2, 1, 1], [0, 0, 2, 0]])
    # PyMC's logp graph and transform, evaluated without the C build (same graph, ~1/20 the compile)
    logp = model.compile_logp(jacobian=False, mode="FAST_COMPILE")
    tr = model.rvs_to_transforms[pi]
    m = pt.matrix("m")
    forward = pytensor.function([m], tr.forward(m), mode="FAST_COMPILE")
    backward = pytensor.function([m], tr.backward(m), mode="FAST_COMPILE")
    cond = step.conditional(point)["pi"]
    x0 = backward(point["pi_simplex__"])
    for _ in range(5):
        x1 = rng.dirichlet(np.ones(k), size=g)
        other = {**point, "pi_simplex__": forward(x1)}
        want = logp(other) - logp(point)
        got = cond.logpdf(x1) - cond.logpdf(x0)
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-8)
    draws = np.array([backward(step.step(point)[0]["pi_simplex__"]) for _ in range(1500)])
    base0 = backward(point["base_simplex__"][None, :])[0]
    a = np.exp(point["alpha_log__"]) * base0 + point["c"]  # Dirichlet(α·base + c_g) per row
    for row in range(g):
        for j in range(k):
            ab = a[row]
            p = stats.kstest(draws[:, row, j], stats.beta(ab[j], ab.sum() - ab[j]).cdf).pvalue
            assert p > 1e-3, (row, j, p)
