"""GammaCells: what pm.sample() gives it, what it refuses (naming the problem), one step's
invariants, the log-gamma draw. Exactness against enumeration:
tests/statistical/samplers/test_gamma_cells.py."""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.samplers.gamma_cells import log_gamma_draws
from tests.support.sampling import assigned

MECH = pdp.DiscreteGaussian(sigma=2.0)


def _model(*, prior=None, shape=(3,), margins=False, extra_child=False, transform=True):
    with pm.Model() as model:
        kwargs = {} if transform else {"default_transform": None}
        alpha, beta = (0.5, 0.1) if prior is None else prior(model)
        lam = pm.Gamma("lam", alpha, beta, shape=shape, **kwargs)
        c = pm.Poisson("c", lam, shape=shape)
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=MECH, observed=np.full(shape, 4))
        if margins:
            pdp.DPObserved(
                "t", c, statistic=pdp.Marginals(()), mechanism=MECH, observed=np.array(12.0)
            )
        if extra_child:
            pm.Poisson("y", lam, shape=shape, observed=np.ones(shape, dtype=int))
    return model


def test_pm_sample_assigns_rates_and_table_together():
    assert assigned(_model()) == {"GammaCells": ["c", "lam_log__"]}
    assert assigned(_model(shape=(4, 3))) == {"GammaCells": ["c", "lam_log__"]}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(prior=lambda m: (0.5, pm.HalfNormal("b", 1.0))),
            r"reads the free parameters \['b'\]",
        ),
        (dict(margins=True), "not released only cell by cell"),
        (dict(extra_child=True), "must have one child, a latent pm.Poisson table"),
        (dict(transform=False), "must keep PyMC's default log transform"),
    ],
)
def test_refusals_name_the_problem_and_leave_the_default_alone(kwargs, message):
    model = _model(**kwargs)
    with model, pytest.raises(ValueError, match=message):
        pdp.GammaCells([model["lam"], model["c"]])
    assert "GammaCells" not in assigned(model)


def test_rates_or_table_alone_and_bad_arguments_are_refused():
    model = _model()
    with model:
        with pytest.raises(ValueError, match=r"pass pdp\.TableCells\(\[c\]\) for the table too"):
            pdp.GammaCells([model["c"]])
        with pytest.raises(ValueError, match=r"pass each with its Poisson table c"):
            pdp.GammaCells([model["lam"]])
        with pytest.raises(ValueError, match=r"reps must be an integer >= 1, got reps=0"):
            pdp.GammaCells([model["lam"], model["c"]], reps=0)
        with pytest.raises(ValueError, match=r"width must be an integer >= 1 or None"):
            pdp.GammaCells([model["lam"], model["c"]], width=2.5)


def test_step_leaves_the_given_point_alone_and_moves():
    model = _model(shape=(2, 3))
    with model:
        step = pdp.GammaCells([model["lam"], model["c"]], rng=np.random.default_rng(0))
    step.start_chain()
    given = model.initial_point()
    copies = {k: v.copy() for k, v in given.items()}
    point = given
    for _ in range(3):
        point, stats_ = step.step(point)
        assert np.all(point["c"] >= 0) and np.all(np.isfinite(point["lam_log__"]))
        assert 0.0 < stats_[0]["dp_accept_rate"] <= 1.0
    assert not np.array_equal(point["c"], copies["c"])
    for k, v in copies.items():  # cores > 1: a step never writes into the arrays it was given
        np.testing.assert_array_equal(given[k], v)


@pytest.mark.parametrize("shape", [0.01, 0.3, 1.0, 7.5])
def test_log_gamma_draws_match_scipy(shape):
    """log X, X ~ Gamma(shape, rate 2): KS against scipy's Gamma (of exp) at p > 0.001, finite even
    where X underflows (shape 0.01)."""
    rng = np.random.default_rng(int(shape * 100))
    n = 20_000
    logx = log_gamma_draws(rng, np.full(n, shape), np.full(n, 2.0))
    assert np.all(np.isfinite(logx))
    p = stats.kstest(logx, lambda v: stats.gamma(shape, scale=0.5).cdf(np.exp(v))).pvalue
    assert p > 1e-3, p
    wrong = stats.kstest(logx, lambda v: stats.gamma(shape * 1.1, scale=0.5).cdf(np.exp(v)))
    assert wrong.pvalue < 1e-3  # the check can fail: a 10 % error in the shape is caught
