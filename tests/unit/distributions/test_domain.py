"""Records whose support is not inside the statistic's domain are refused at DPObserved
(issue 20 item 7): categories beyond Counts(K), real or unbounded records under randomized response."""

import re

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_dp as pdp
from pymc_dp.distributions.domain import record_support


def test_counts_on_more_categories_refused():
    """Old code: accepted; code 3 silently dropped from the counts."""
    with (
        pm.Model(),
        pytest.raises(
            ValueError,
            match=re.escape(
                "DPObserved 'c': Counts(n_categories=3) takes category codes 0..2, but the records 'x' "
                "take values 0..3; codes outside 0..2 would be dropped from the counts silently. Use "
                "Counts(4) to cover every code the records take"
            ),
        ),
    ):
        x = pm.Categorical("x", np.full(4, 0.25), shape=10)
        pdp.DPObserved(
            "c",
            x,
            statistic=pdp.Counts(3),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=np.array([3.0, 3.0, 4.0]),
        )


def test_counts_on_poisson_records_refused():
    with pm.Model(), pytest.raises(ValueError, match=re.escape("take values 0..inf")):
        x = pm.Poisson("x", 1.0, shape=10)
        pdp.DPObserved(
            "c",
            x,
            statistic=pdp.Counts(3),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=np.array([3.0, 3.0, 4.0]),
        )


@pytest.mark.parametrize("records", ["normal", "poisson"])
def test_randomized_response_needs_codes(records):
    """Old code: accepted, with a finite logp."""
    match = "are real-valued" if records == "normal" else "take values 0..inf"
    with pm.Model(), pytest.raises(ValueError, match=re.escape(match)):
        x = pm.Normal("x", 0, 1, shape=5) if records == "normal" else pm.Poisson("x", 1.0, shape=5)
        pdp.DPObserved(
            "r",
            x,
            statistic=pdp.Local(),
            mechanism=pdp.RandomizedResponse(epsilon=1.0),
            observed=np.zeros(5, dtype=int),
        )


def test_randomized_response_message_names_the_mechanism_and_fix():
    with (
        pm.Model(),
        pytest.raises(
            ValueError,
            match=re.escape(
                "DPObserved 'r': RandomizedResponse(n_categories=2) takes category codes 0..1, but the "
                "records 'x' take values 0..2; codes outside 0..1 would be given a meaningless density "
                "silently. Use n_categories=3 to cover every code the records take"
            ),
        ),
    ):
        x = pm.Categorical("x", np.full(3, 1 / 3), shape=5)
        pdp.DPObserved(
            "r",
            x,
            statistic=pdp.Local(),
            mechanism=pdp.RandomizedResponse(epsilon=1.0),
            observed=np.zeros(5, dtype=int),
        )


@pytest.mark.parametrize(
    "make, stat, mech",
    [
        (
            lambda: pm.Categorical("x", np.full(3, 1 / 3), shape=5),
            pdp.Counts(3),
            pdp.Laplace(epsilon=1.0),
        ),
        (lambda: pm.Bernoulli("x", 0.3, shape=5), pdp.Counts(2), pdp.Laplace(epsilon=1.0)),
        (lambda: pm.Binomial("x", 2, 0.3, shape=5), pdp.Counts(3), pdp.Laplace(epsilon=1.0)),
        (lambda: pm.DiscreteUniform("x", 0, 2, shape=5), pdp.Counts(4), pdp.Laplace(epsilon=1.0)),
        (lambda: pm.Bernoulli("x", 0.3, shape=5), pdp.Local(), pdp.RandomizedResponse(epsilon=1.0)),
        (
            lambda: pm.Poisson("x", 1.0, shape=5),
            pdp.Local(0, 2),
            pdp.RandomizedResponse(epsilon=1.0, n_categories=3),
        ),  # the clamp bounds the codes
    ],
)
def test_records_inside_the_domain_accepted(make, stat, mech):
    with pm.Model():
        x = make()
        shape = (5,) if stat.local else (stat.n_categories,)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=np.zeros(shape, dtype=int))


def test_fixed_records_checked_by_value():
    with pm.Model(), pytest.raises(ValueError, match=re.escape("the fixed records")):
        pdp.DPObserved(
            "c",
            pt.as_tensor(np.array([0, 1, 5])),
            statistic=pdp.Counts(3),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=np.zeros(3),
        )


def test_record_support_table():
    assert record_support(pm.Bernoulli.dist(0.5, shape=3)) == (0, 1)
    assert record_support(pm.Categorical.dist(np.full(5, 0.2))) == (0, 4)
    assert record_support(pm.Binomial.dist(4, 0.5)) == (0, 4)
    assert record_support(pm.BetaBinomial.dist(1, 1, 6)) == (0, 6)
    assert record_support(pm.Geometric.dist(0.5)) == (1, None)
    assert record_support(pm.NegativeBinomial.dist(1, 1)) == (0, None)
    assert record_support(pm.Normal.dist()) == "real"
    assert record_support(pm.ZeroInflatedPoisson.dist(0.5, 1.0)) is None  # unknown: accepted


@pytest.mark.parametrize(
    "statistic", [pdp.Counts(3), pdp.Sum(0, 10), pdp.Local()], ids=["Counts", "Sum", "Local"]
)
@pytest.mark.parametrize("table", ["Multinomial", "DirichletMultinomial"])
def test_a_record_statistic_of_one_count_table_is_refused(statistic, table):
    """Counts(3) of a pm.Multinomial table read each cell's count as one person's category code:
    E[c] = [0.43, 9.28, 0.29] against [5.94, 3.03, 1.03] with pdp.Cells(), with only a warning
    that DataAugmentation could not take the table."""
    with pm.Model():
        if table == "Multinomial":
            c = pm.Multinomial("c", n=10, p=pm.Dirichlet("pi", np.ones(3)))
        else:
            c = pm.DirichletMultinomial("c", n=10, a=np.ones(3))
        mech = (
            pdp.RandomizedResponse(epsilon=1.0, n_categories=11)
            if statistic.local
            else pdp.DiscreteGaussian(sigma=1.0)
        )
        observed = (
            np.array([6, 3, 1]) if statistic.local or isinstance(statistic, pdp.Counts) else 6
        )
        with pytest.raises(
            ValueError, match=r"'c' is a (Dirichlet)?Multinomial count table.*pdp\.Cells\(\)"
        ):
            pdp.DPObserved("s", c, statistic=statistic, mechanism=mech, observed=observed)
