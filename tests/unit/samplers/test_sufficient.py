"""SufficientTheta: θ | records from sufficient statistics by slice sampling (unit tier: the reduced
log density against PyMC's, assignment, refusals). Exactness against quadrature is in
``tests/statistical/samplers/test_sufficient.py``."""

from __future__ import annotations

import re

import numpy as np
import pymc as pm
from pymc.step_methods import STEP_METHODS
import pytest

import pymc_dp as pdp
from pymc_dp.samplers.sufficient import sufficient_competence
from tests.support.models import quickstart_like_model
from tests.support.sampling import assigned

# -- every family: the reduced log density equals PyMC's up to a constant ------------------------
rng0 = np.random.default_rng(0)
FAMILY_MODELS = {
    "normal": lambda t: pm.Normal("y", t, 2.0, observed=rng0.normal(1, 2, 30)),
    "normal_sigma": lambda t: pm.Normal("y", 0.3, t, observed=rng0.normal(0, 2, 30)),
    "halfnormal": lambda t: pm.HalfNormal("y", t, observed=np.abs(rng0.normal(0, 2, 30))),
    "lognormal": lambda t: pm.LogNormal("y", t, 0.7, observed=rng0.lognormal(0, 1, 30)),
    "gamma_shape": lambda t: pm.Gamma("y", alpha=t, beta=1.5, observed=rng0.gamma(2, 1, 30)),
    "gamma_mean": lambda t: pm.Gamma("y", alpha=2.0, beta=2.0 / t, observed=rng0.gamma(2, 1, 30)),
    "exponential": lambda t: pm.Exponential("y", t, observed=rng0.exponential(1, 30)),
    "beta": lambda t: pm.Beta("y", t, 2.0, observed=rng0.beta(2, 2, 30)),
    "poisson": lambda t: pm.Poisson("y", t, observed=rng0.poisson(2, 30)),
    "bernoulli_logit": lambda t: pm.Bernoulli(
        "y", logit_p=pm.math.log(t), observed=rng0.binomial(1, 0.4, 30)
    ),
    "binomial": lambda t: pm.Binomial("y", 5, t / (1 + t), observed=rng0.binomial(5, 0.4, 30)),
    "geometric": lambda t: pm.Geometric("y", t / (1 + t), observed=rng0.geometric(0.4, 30)),
    "categorical": lambda t: pm.Categorical(
        "y", pm.math.stack([t, 1.0, 2.0]) / (t + 3.0), observed=rng0.integers(0, 3, 30)
    ),
}


@pytest.mark.parametrize("family", sorted(FAMILY_MODELS))
def test_reduced_logp_matches_pymc(family):
    with pm.Model() as model:
        theta = pm.LogNormal("theta", 0.0, 1.0)
        FAMILY_MODELS[family](theta)
        step = pdp.SufficientTheta([theta])
    # the reference needs PyMC's logp graph, not its fast C build: FAST_COMPILE evaluates the same graph
    # (agrees with the default mode to 1e-13 on every family here) for ~1/20 of the compile time
    logp = model.compile_logp(mode="FAST_COMPILE")
    point = model.initial_point(0)
    args = [point[n] for n in step.input_names]
    fixed = [point[v.name] for v in step.others] + list(step._stats(*args))
    a, b = np.array([-0.4]), np.array([0.9])
    ours = step._logp(a, *fixed) - step._logp(b, *fixed)
    theirs = logp({**point, "theta_log__": a[0]}) - logp({**point, "theta_log__": b[0]})
    assert step.children and not step.small_terms
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)  # PyMC keeps some constants in float32


# -- (c) assignment and refusals --------------------------------------------------------------------
def test_refuses_terms_it_cannot_write():
    x = np.linspace(-1, 1, 30)
    with pm.Model() as model:
        b = pm.Laplace("b", 0, 1)
        pm.Normal("y", b * x, 1.0, observed=np.zeros(30))  # not iid: the mean differs per value
    with (
        model,
        pytest.raises(
            ValueError,
            match=re.escape(
                "SufficientTheta writes every term that depends on 'b' from sufficient statistics"
            ),
        ),
    ):
        pdp.SufficientTheta([b])
    with pm.Model() as model:
        lam = pm.LogNormal("lam", 0, 1)
        pm.Potential("pot", -lam)
    with model, pytest.raises(ValueError, match=re.escape("cannot write 'pot' (a Potential)")):
        pdp.SufficientTheta([lam])
    with (
        model,
        pytest.raises(ValueError, match=re.escape("width must be a positive finite number")),
    ):
        pdp.SufficientTheta([lam], width=0.0)


def test_small_non_record_terms_enter_with_their_own_logp():
    with pm.Model():
        tau = pm.HalfNormal("tau", 1.0)
        mu = pm.StudentT("mu", nu=3, mu=0, sigma=tau, shape=3)  # small child: own logp
        pm.Normal("y", tau, 1.0, observed=np.ones(50))
        step = pdp.SufficientTheta([tau])
    assert step.small_terms == [mu] and [c.name for c in step.children] == ["y"]


def test_assignment_only_with_records_and_not_conjugate():
    model, *_ = quickstart_like_model()
    assert STEP_METHODS.index(pdp.SufficientTheta) == STEP_METHODS.index(pdp.ConjugateTheta) + 1
    assert (
        sufficient_competence(model["p"]) == pm.step_methods.compound.Competence.INCOMPATIBLE
    )  # conjugate
    with pm.Model() as plain:  # no DPObserved node: PyMC's defaults
        lam = pm.LogNormal("lam", 0, 1)
        pm.Poisson("y", lam, observed=np.ones(5, dtype=int))
    assert assigned(plain) == {"NUTS": ["lam_log__"]}
    rng = np.random.default_rng(1)
    with pm.Model() as other:  # a Potential on θ: not writable, NUTS keeps it, never a refusal
        lam = pm.LogNormal("lam", 0, 1)
        x = pm.Poisson("x", lam, shape=20)
        pm.Potential("pot", -lam)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(),
            mechanism=pdp.DiscreteLaplace(scale=2.0),
            observed=pdp.DiscreteLaplace(scale=2.0).sample(
                np.asarray(rng.poisson(2, 20).sum()), rng
            ),
        )
    assert sufficient_competence(other["lam"]) == pm.step_methods.compound.Competence.INCOMPATIBLE
    assert "SufficientTheta" not in assigned(other)  # (pm.sample() collapses this Poisson sum)


def test_dirichlet_rows_hyperparameters_reduce_to_the_models_logp():
    """Area cell probabilities π_g ~ Dirichlet(α·base) (rows of a (G, K) Dirichlet, issue 18 item 4):
    the reduced density of (α, base) from (G, Σ_g log π_g) equals PyMC's joint logp up to a constant."""
    g, k = 5, 4
    rng = np.random.default_rng(3)
    with pm.Model() as model:
        base = pm.Dirichlet("base", np.ones(k))
        alpha = pm.LogNormal("alpha", 1.0, 1.0)
        pi = pm.Dirichlet("pi", alpha * base, shape=(g, k))
        c = pm.Multinomial("c", n=np.full(g, 6), p=pi, shape=(g, k))
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=2.0),
            observed=np.ones((g, k), dtype=int),
        )
        step = pdp.SufficientTheta([alpha, base], rng=np.random.default_rng(0))
    assert step.children == [pi]
    logp = model.compile_logp(mode="FAST_COMPILE")  # same graph, cheap compile (see above)
    point = model.initial_point(random_seed=0)
    point["pi_simplex__"] = rng.normal(0, 1, point["pi_simplex__"].shape)
    target = step.conditional_logp(point)
    q = step.flat(point)
    for _ in range(5):
        q_new = q + rng.normal(0, 0.5, size=q.size)
        moved = {**point, "alpha_log__": q_new[0], "base_simplex__": q_new[1:]}
        np.testing.assert_allclose(
            float(target(q_new) - target(q)), float(logp(moved) - logp(point)), rtol=1e-9, atol=1e-9
        )
