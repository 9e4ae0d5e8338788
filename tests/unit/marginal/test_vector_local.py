"""Collapsed likelihoods of local releases with several answers per record (``Local(fn=...)``
returning a vector): the support is enumerated through ``fn`` and the answers' noise densities
multiply. Exact against brute-force enumeration; refusal of a release of the wrong width."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import special

import pymc_dp as pdp
from pymc_dp.marginal import marginal_plans
from tests.support.sampling import assigned
from tests.support.user_models import rr_two_answers


def _answers(x):
    return pt.stack([x // 2, x % 2], axis=-1)


def _model(r, mech):
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(4))
        x = pm.Categorical("x", pi, shape=len(r))
        pdp.DPObserved("r", x, statistic=pdp.Local(fn=_answers), mechanism=mech, observed=r)
    return model


def test_two_answers_per_record_matches_enumeration():
    mech = pdp.RandomizedResponse(epsilon=0.7, n_categories=2)
    r = np.array([[0, 1], [1, 1], [0, 0]])
    new = pdp.marginalize(_model(r, mech))
    (plan,) = marginal_plans(new).values()
    pi = np.array([0.1, 0.2, 0.3, 0.4])
    got = float(plan.loglik([pt.as_tensor_variable(pi)]).eval())
    terms = []
    for xs in itertools.product(range(4), repeat=len(r)):
        ans = np.stack([np.array(xs) // 2, np.array(xs) % 2], axis=-1)
        terms.append(np.sum(np.log(pi[list(xs)])) + np.sum(mech.logpdf(r, ans)))
    assert abs(got - special.logsumexp(terms)) < 1e-12


def test_default_assignment_collapses_the_two_answer_table():
    # before: "(2,) entries per record" refused it and θ got ConjugateTheta + DataAugmentation
    model, _ = rr_two_answers(n=40)
    assert assigned(model) == {"Collapsed": ["pi_simplex__", "x"]}


def test_release_of_the_wrong_width_is_refused():
    mech = pdp.RandomizedResponse(epsilon=0.7, n_categories=2)
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(4))
        x = pm.Categorical("x", pi, shape=3)
        pdp.DPObserved(
            "r",
            x,
            statistic=pdp.Local(fn=lambda v: pt.stack([v // 2, v % 2, v % 2], -1)),
            mechanism=mech,
            observed=np.zeros((3, 3), dtype=int),
        )
    # a release narrower than fn's answers cannot be built; check the plan's own rule directly
    from pymc_dp.marginal.plan import _local_eta
    from pymc_dp.marginal.records import record_law

    node = next(iter(pdp.distributions.dp_nodes(model).values()))
    with pytest.raises(ValueError, match=re.escape("the release has 2 entries per record but")):
        _local_eta(record_law(model["x"]), [node], [np.zeros((3, 2))], np.arange(4))
