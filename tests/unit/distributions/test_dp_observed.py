"""DPObserved: logp vs scipy, draws that agree with the logp, dims, pm.Data, several nodes, errors."""

import re
import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_dp as pdp


def test_model_logp_matches_scipy():
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, shape=3)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=2.0), observed=1.3)
        pdp.DPObserved(
            "m",
            x,
            statistic=pdp.Mean(lower=-1, upper=1),
            mechanism=pdp.Gaussian(sigma=0.5),
            observed=-0.2,
        )
    xv = np.array([0.3, -1.7, 2.2])
    lp = model.compile_logp()({"x": xv})
    ref = (
        stats.norm.logpdf(xv).sum()
        + stats.laplace.logpdf(1.3, loc=xv.sum(), scale=2.0)
        + stats.norm.logpdf(-0.2, loc=np.clip(xv, -1, 1).mean(), scale=0.5)
    )
    assert lp == pytest.approx(ref, rel=1e-10)


def test_counts_node_logp_and_dims():
    with pm.Model(coords={"cat": ["a", "b", "c"]}) as model:
        pi = pm.Dirichlet("pi", np.ones(3))
        x = pm.Categorical("x", pi, shape=6)
        node = pdp.DPObserved(
            "c",
            x,
            statistic=pdp.Counts(3),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=np.array([1.5, 2.0, 3.1]),
            dims="cat",
        )
    assert model.named_vars_to_dims["c"] == ("cat",)
    xv = np.array([0, 1, 1, 2, 2, 2])
    fn = model.compile_fn(
        model.logp(vars=[node], sum=False)[0],
        inputs=[model.rvs_to_values[x]],
        on_unused_input="ignore",
    )
    np.testing.assert_allclose(
        fn({"x": xv}), stats.laplace.logpdf([1.5, 2.0, 3.1], loc=[1, 2, 3], scale=2.0)
    )


def test_pm_data_release_can_be_swapped():
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, shape=4)
        obs = pm.Data("obs", 0.5)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=1.0), observed=obs)
    f = model.compile_logp()
    xv = np.zeros(4)
    a = f({"x": xv})
    pm.set_data({"obs": 2.0}, model=model)
    b = f({"x": xv})
    assert b - a == pytest.approx(stats.norm.logpdf(2.0) - stats.norm.logpdf(0.5))


FIXED = np.array([0, 1, 1, 2, 1, 0])


@pytest.mark.parametrize(
    "stat, mech",
    [
        (pdp.Sum(), pdp.Laplace(scale=1.5)),
        (pdp.Sum(), pdp.Gaussian(sigma=0.8)),
        (pdp.Counts(3), pdp.DiscreteLaplace(scale=1.2)),
        (pdp.Local(), pdp.RandomizedResponse(epsilon=0.8, n_categories=3)),
    ],
)
def test_draws_agree_with_logp(stat, mech):
    """Goodness of fit: predictive draws of a node vs its own logp (fixed records)."""
    data = pt.as_tensor(FIXED)
    with pm.Model():
        release = stat.evaluate(FIXED)
        rv = pdp.DPObserved(
            "r",
            data,
            statistic=stat,
            mechanism=mech,
            observed=np.rint(release) if mech.integer else release,
        )
    draws = pm.draw(rv, draws=20_000, random_seed=7)
    value = pt.tensor("v", dtype=rv.dtype, shape=rv.type.shape)
    logp = pytensor.function([value], pm.logp(rv, value))
    if mech.integer:
        flat = draws.reshape(20_000, -1)[:, 0]
        support = np.arange(flat.min(), flat.max() + 1)
        vals = (
            np.tile(np.asarray(release, dtype=np.int64), (support.size, 1))
            if np.ndim(release)
            else None
        )
        if vals is None:
            vals = support
        else:
            vals = vals.copy()
            vals[:, 0] = support
        probs = np.array([np.exp(logp(v).ravel()[0]) for v in vals])
        observed = np.array([(flat == k).sum() for k in support])
        keep = probs * 20_000 > 5
        expected = probs[keep] / probs[keep].sum() * observed[keep].sum()
        assert stats.chisquare(observed[keep], expected).pvalue > 1e-3
    else:
        s = float(stat.evaluate(FIXED))
        dist = stats.laplace(s, 1.5) if isinstance(mech, pdp.Laplace) else stats.norm(s, 0.8)
        assert stats.kstest(draws, dist.cdf).pvalue > 1e-3
        np.testing.assert_allclose(logp(0.37), dist.logpdf(0.37))


def test_prior_predictive_of_release_matches_marginal():
    with pm.Model():
        x = pm.Normal("x", 0.0, 1.0, shape=5)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=1.0), observed=0.0)
        prior = pm.sample_prior_predictive(draws=4000, random_seed=3)
    s = np.asarray(prior.prior_predictive["s"]).ravel()
    assert stats.kstest(s, stats.norm(0, np.sqrt(6)).cdf).pvalue > 1e-3


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [
        (dict(observed=np.nan), ValueError, "observed for 's' must be finite, got [nan]"),
        (dict(observed=np.array([1.0, np.inf])), ValueError, "observed for 's' must be finite"),
        (
            dict(observed=np.array([1.0, 2.0])),
            ValueError,
            "observed for 's' has shape (2,), but the statistic has shape ().",
        ),
        (
            dict(
                mechanism=pdp.DiscreteLaplace(epsilon=1.0),
                statistic=pdp.Sum(lower=0, upper=3),
                observed=2.5,
            ),
            ValueError,
            "DiscreteLaplace releases integers, but observed for 's' has non-integer values [2.5].",
        ),
        (
            dict(mechanism=pdp.Laplace(epsilon=1.0), statistic=pdp.Sum(), observed=1.0),
            ValueError,
            "declares no bounds. Declare bounds, e.g. pdp.Sum(lower=..., upper=...)",
        ),
        (
            dict(statistic=pdp.Counts(3), observed=np.zeros(3)),
            TypeError,
            "Counts needs integer category codes 0..2, got records of dtype float64.",
        ),
    ],
)
def test_bad_release_is_refused(kwargs, exc, message):
    args = dict(
        statistic=pdp.Sum(lower=0, upper=3), mechanism=pdp.Laplace(epsilon=1.0), observed=1.0
    )
    args.update(kwargs)
    with pm.Model():
        x = pm.Normal("x", 0, 1, shape=4)
        with pytest.raises(exc, match=re.escape(message)):
            pdp.DPObserved("s", x, **args)


def test_rr_release_out_of_range_and_scalar_data():
    with pm.Model():
        x = pm.Bernoulli("x", 0.5, shape=3)
        with pytest.raises(
            ValueError,
            match=re.escape("RandomizedResponse(n_categories=2) releases categories 0..1"),
        ):
            pdp.DPObserved(
                "r",
                x,
                statistic=pdp.Local(),
                mechanism=pdp.RandomizedResponse(1.0),
                observed=np.array([0, 1, 2]),
            )
        y = pm.Normal("y", 0, 1)
        with pytest.raises(
            ValueError, match=re.escape("data 'y' is a scalar; records live on axis 0.")
        ):
            pdp.DPObserved(
                "s", y, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=0.0
            )


def test_posterior_predictive_adds_fresh_noise_to_the_statistic():
    """s_rep - S(x_draw) must follow the noise distribution for posterior draws of the records."""
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        x = pm.Normal("x", mu, 1.0, shape=6)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=0.7), observed=1.0)
        idata = pm.sample(
            step=[pdp.DataAugmentation([x])],
            draws=300,
            tune=50,
            chains=2,
            random_seed=2,
            progressbar=False,
            compute_convergence_checks=False,
        )
        pp = pm.sample_posterior_predictive(idata, random_seed=3, progressbar=False)
    s_rep = np.asarray(pp.posterior_predictive["s"]).ravel()
    stat = np.asarray(idata.posterior["x"]).sum(axis=-1).ravel()
    assert stats.kstest(s_rep - stat, stats.norm(0, 0.7).cdf).pvalue > 1e-3


def test_computed_data_warns_and_names_the_records_and_fn():
    """``data`` computed from the records (a pm.Deterministic) builds a valid node, but pymc-dp's
    record samplers take only record variables: pm.sample() left the records to NUTS without a
    word and ``DataAugmentation([x])`` said 'x' feeds no release. DPObserved now says so at
    construction and names the record variable and the statistic's ``fn=``."""
    with pm.Model():
        mu = pm.Normal("mu")
        x = pm.Normal("x", mu, 1, shape=10)
        y = pm.Deterministic("y", 2 * x)
        with pytest.warns(UserWarning, match=r"'y' is not a random variable.*'x'.*fn=") as rec:
            pdp.DPObserved(
                "s", y, statistic=pdp.Sum(-3, 3), mechanism=pdp.Laplace(epsilon=1.0), observed=1.0
            )
        assert "PyMC's own samplers" in str(rec[0].message)
        with pytest.raises(ValueError, match=r"'x'.*only through 'y'.*fn="):
            pdp.DataAugmentation([x])


def test_record_variables_as_data_do_not_warn():
    with pm.Model():
        x = pm.Normal("x", 0, 1, shape=10)
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            pdp.DPObserved(
                "s", x, statistic=pdp.Sum(-3, 3), mechanism=pdp.Laplace(epsilon=1.0), observed=1.0
            )


def test_user_mistakes_get_named_errors():
    """Each of these ended in a bare IndexError / AttributeError, or a table of another size."""
    with pm.Model():
        x = pm.Normal("x", 0, 1, shape=10)
        with pytest.raises(TypeError, match=r"got the class Sum\. Create one with its arguments"):
            pdp.DPObserved(
                "a", x, statistic=pdp.Sum, mechanism=pdp.Laplace(scale=1.0), observed=3.0
            )
        fn_sums = pdp.RecordSum(lambda v: v.clip(0, 1).sum(), sensitivity=1.0)
        with pytest.raises(ValueError, match=r"one contribution per record.*got shape \(\)"):
            pdp.DPObserved(
                "b", x, statistic=fn_sums, mechanism=pdp.Laplace(scale=1.0), observed=3.0
            )
    with pm.Model():
        c = pm.Multinomial("c", n=10.5, p=[0.5, 0.5])
        with pytest.raises(ValueError, match=r"non-integer n=10\.5"):
            pdp.DPObserved(
                "s",
                c,
                statistic=pdp.Cells(),
                mechanism=pdp.DiscreteGaussian(sigma=1.0),
                observed=[5, 5],
            )
    with pm.Model():  # codes of Binomial records whose n may change: the cause is named
        x = pm.Binomial("x", n=pm.Data("trials", 3), p=0.5, shape=5)
        with pytest.raises(ValueError, match=r"binomial draws whose n is not a constant"):
            pdp.DPObserved(
                "c",
                x,
                statistic=pdp.Counts(4),
                mechanism=pdp.DiscreteGaussian(sigma=1.5),
                observed=[0, 3, 1, 0],
            )


@pytest.mark.parametrize(
    "kwargs",
    [{"lipschitz": "5"}, {"scale": "a"}, {"budget": (1.0,)}, {"budget": "1.0, 1e-5"}],
    ids=["lipschitz-text", "scale-text", "budget-one", "budget-text"],
)
def test_penalty_arguments_of_the_wrong_type_are_refused(kwargs):
    with pm.Model():
        b = pm.Normal("b", 0, 1)
        x = pm.Data("x", np.zeros(20))
        pm.Normal("y", b, 1, observed=x)
        args = {"lipschitz": 5.0, "tau": 2.0, "scale": 0.1} | kwargs
        with pytest.raises(TypeError, match=rf"{next(iter(kwargs))} must be"):
            pdp.PenaltyMH([b], **args)
    with pytest.raises(TypeError, match=r"delta must be a number, got delta='1e-6'"):
        pdp.privacy_spent(
            pdp.release(np.ones(5), pdp.Sum(0, 1), pdp.Laplace(epsilon=1.0), rng=0), delta="1e-6"
        )


def test_release_names_a_class_or_swapped_arguments():
    x = np.ones(5)
    with pytest.raises(TypeError, match=r"got the class Sum"):
        pdp.release(x, pdp.Sum, pdp.Laplace(epsilon=1.0), rng=0)
    with pytest.raises(TypeError, match=r"statistic and mechanism are swapped"):
        pdp.release(x, pdp.Laplace(epsilon=1.0), pdp.Sum(0, 1), rng=0)
    with pytest.raises(TypeError, match=r"privacy_spent got the text 'model'"):
        pdp.privacy_spent("model", delta=1e-6)


def test_float32_floatx_is_refused_by_the_node_and_the_steps():
    """floatX='float32' failed deep in a compiled function ("Vector(float32) cannot store a
    value of dtype float64") while the step was built or at its first iteration."""
    import pytensor

    with pytensor.config.change_flags(floatX="float32"), pm.Model():
        x = pm.Normal("x", pm.Normal("mu", 0, 10), 2, shape=10)
        with pytest.raises(ValueError, match=r"pdp.DPObserved: pymc-dp needs .*floatX = 'float64'"):
            pdp.DPObserved(
                "s", x, statistic=pdp.Sum(-2, 6), mechanism=pdp.Laplace(epsilon=0.5), observed=25.0
            )
    with pm.Model() as m:
        x = pm.Normal("x", pm.Normal("mu", 0, 10), 2, shape=10)
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(-2, 6), mechanism=pdp.Laplace(epsilon=0.5), observed=25.0
        )
    with pytensor.config.change_flags(floatX="float32"), m:
        with pytest.raises(ValueError, match=r"pdp.DataAugmentation: pymc-dp needs"):
            pdp.DataAugmentation([x])
