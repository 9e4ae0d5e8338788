"""Release objects: array behaviour, metadata, checks against the model, and bad input."""

import math
import pickle
import re

import dp_accounting
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_dp as pdp
from pymc_dp.release import Release

X = np.random.default_rng(0).normal(1.0, 1.0, size=50)
MEAN = pdp.Mean(lower=-2, upper=4)


def _integer_mechanisms():
    mechs = [pdp.DiscreteLaplace(epsilon=1.0)]
    if hasattr(pdp, "DiscreteGaussian"):
        mechs.append(pdp.DiscreteGaussian(sigma=2.0))
    return mechs


# ---------------------------------------------------------------- the object
def test_release_is_an_array_with_metadata():
    r = pdp.release(X, MEAN, pdp.Laplace(epsilon=1.0), rng=3)
    assert isinstance(r, Release) and isinstance(r, np.ndarray)
    assert r.shape == () and r.dtype == np.float64
    assert type(np.asarray(r)) is np.ndarray and type(r.value) is np.ndarray
    assert float(r) == float(np.asarray(r))
    for derived in (r + 1, 2 * r, np.exp(r), r.sum()):
        assert not isinstance(derived, Release)  # arithmetic is no longer the release
    assert r.statistic is MEAN and r.n == 50 and r.dim == 1 and r.neighbouring == "replace-one"
    assert r.mechanism.sensitivity == pytest.approx(6.0 / 50)  # calibrated: (upper - lower) / n
    assert r.mechanism.noise_scale == pytest.approx(6.0 / 50)
    assert r.dp_event() == dp_accounting.LaplaceDpEvent(noise_multiplier=pytest.approx(1.0))
    back = pickle.loads(pickle.dumps(r))
    assert back.n == 50 and float(back) == float(r) and isinstance(back, Release)
    assert repr(r).startswith("Release(array(") and "n=50" in repr(r)


def test_vector_release_indexes_to_plain_values():
    x = np.array([0, 2, 2, 1, 2])
    r = pdp.release(x, pdp.Counts(3), pdp.Laplace(epsilon=1.0), rng=1)
    assert r.shape == (3,) and r.dim == 3
    assert not isinstance(r[0], Release) and not isinstance(r[:2], Release)
    assert [float(v) for v in r] == [float(v) for v in np.asarray(r)]
    assert r.mechanism.sensitivity == 2.0  # replace-one L1 of a histogram
    assert r.dp_event() == dp_accounting.LaplaceDpEvent(noise_multiplier=pytest.approx(1.0))


def test_release_is_observed_as_is_and_checked():
    r = pdp.release(X, MEAN, pdp.Laplace(epsilon=1.0), rng=3)
    logps = []
    for obs in (r, float(r)):
        with pm.Model() as model:
            mu = pm.Normal("mu", 0, 3)
            x = pm.Normal("x", mu, 1.0, shape=50)
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Mean(lower=-2, upper=4),
                mechanism=pdp.Laplace(epsilon=1.0),
                observed=obs,
            )
            pm.Normal("plain", 0, 1, observed=obs)  # a Release works as any observed array
        logps.append(model.compile_logp()({"mu": 0.3, "x": X}))
    assert logps[0] == logps[1]


def _model_with(n, **kw):
    args = dict(statistic=MEAN, mechanism=pdp.Laplace(epsilon=1.0))
    args.update(kw)
    with pm.Model():
        x = pm.Normal("x", 0, 1, shape=n)
        return pdp.DPObserved("s", x, **args)


def test_release_from_other_records_is_refused():
    r500 = pdp.release(
        np.random.default_rng(1).normal(size=500),
        pdp.Sum(lower=-2, upper=4),
        pdp.Laplace(epsilon=1.0),
        rng=2,
    )
    with pytest.raises(
        ValueError,
        match=re.escape(
            "observed for 's' is a Release computed from n=500 records, but the model's data ['x'] "
            "have n=400 records."
        ),
    ):
        _model_with(400, statistic=pdp.Sum(lower=-2, upper=4), observed=r500)
    r = pdp.release(X, MEAN, pdp.Laplace(epsilon=1.0), rng=3)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "observed for 's' is a Release of statistic=Mean(lower=-2.0, upper=4.0), but the node "
            "says statistic=Mean(lower=-2.0, upper=5.0). Pass statistic=release.statistic"
        ),
    ):
        _model_with(50, statistic=pdp.Mean(lower=-2, upper=5), observed=r)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "observed for 's' is a Release made with mechanism=Laplace(scale=None, epsilon=1.0, "
            "sensitivity=0.12), but the node calibrates mechanism=Laplace(scale=None, epsilon=0.5"
        ),
    ):
        _model_with(50, mechanism=pdp.Laplace(epsilon=0.5), observed=r)
    with pytest.raises(ValueError, match=re.escape("but the node says statistic=Sum(")):
        _model_with(50, statistic=pdp.Sum(lower=-2, upper=4), observed=r)
    _model_with(50, observed=r)  # the matching node
    _model_with(50, observed=np.asarray(r))  # a bare array (a release made elsewhere) is trusted
    _model_with(40, observed=float(r))


def test_statistics_that_print_alike_but_read_other_values_are_named():
    """A RecordSum whose fn reads a NumPy covariate and one reading pm.Data printed the same repr
    in the refusal, which then read as a contradiction."""
    import pytensor.tensor as pt

    x = np.abs(np.random.default_rng(2).normal(size=30))
    w = np.linspace(0, 1, 30)
    r = pdp.release(
        x, pdp.RecordSum(lambda v: pt.clip(v, 0, 4) * w, 4.0), pdp.Laplace(epsilon=1.0), rng=1
    )
    other = np.linspace(0, 2, 30)
    with pytest.raises(ValueError, match="They print alike: their fn differ"):
        _model_with(
            30, statistic=pdp.RecordSum(lambda v: pt.clip(v, 0, 4) * other, 4.0), observed=r
        )


def test_statistics_with_the_same_fn_code_match():
    x = np.abs(np.random.default_rng(2).normal(size=30))
    r = pdp.release(
        x, pdp.Sum(lower=0, upper=4, fn=lambda v: v**2), pdp.Laplace(epsilon=1.0), rng=1
    )
    _model_with(30, statistic=pdp.Sum(lower=0, upper=4, fn=lambda v: v**2), observed=r)
    with pytest.raises(
        ValueError, match=re.escape("is a Release of statistic=Sum(lower=0.0, upper=4.0, fn=...)")
    ):
        _model_with(30, statistic=pdp.Sum(lower=0, upper=4, fn=lambda v: v**3), observed=r)


# ---------------------------------------------------------------- bad input at release time
@pytest.mark.parametrize(
    "data, stat, mech, kw, exc, message",
    [
        (
            np.array([1.0, np.nan, 2.0]),
            pdp.Sum(lower=0, upper=3),
            pdp.Laplace(epsilon=1.0),
            {},
            ValueError,
            "data must be finite, but it holds NaN or inf values. NaN or inf records",
        ),
        (
            (np.array([1.0, 2.0]), np.array([np.inf, 0.0])),
            pdp.RecordSum(lambda a, b: a + b, 1.0),
            pdp.Laplace(epsilon=1.0),
            {},
            ValueError,
            "data[1] must be finite, but it holds NaN or inf values.",
        ),
        (
            np.zeros(0),
            pdp.Mean(lower=0, upper=1),
            pdp.Laplace(epsilon=1.0),
            {},
            ValueError,
            "data must hold at least one record on axis 0, got shape (0,).",
        ),
        (
            np.array(["a", "b"]),
            pdp.Sum(lower=0, upper=1),
            pdp.Laplace(epsilon=1.0),
            {},
            TypeError,
            "data must be numeric records, got dtype <U1.",
        ),
        (
            X,
            MEAN,
            pdp.Laplace(epsilon=1.0),
            dict(rng=1.5),
            TypeError,
            "release: rng must be None (secure noise from OpenDP, for a real publication), a "
            "numpy.random.Generator or an int seed (simulations), got rng=1.5 of type float.",
        ),
        (X, MEAN, pdp.Laplace(epsilon=1.0), dict(rng=True), TypeError, "got rng=True of type bool"),
        (
            X,
            MEAN,
            pdp.Laplace(epsilon=1.0),
            dict(rng=np.random.RandomState(1)),
            TypeError,
            "release: rng must be None (secure noise from OpenDP",
        ),
        (
            np.array([0, 1, 3, 2, -1]),
            pdp.Counts(3),
            pdp.Laplace(epsilon=1.0),
            {},
            ValueError,
            "Counts(n_categories=3) needs every record's category code in 0..2, and some records are "
            "outside it; they would be dropped from the histogram silently.",
        ),
        (
            X,
            pdp.Sum(lower=-2, upper=4),
            pdp.Laplace(epsilon=1.0, sensitivity=3.0),
            {},
            ValueError,
            "Laplace(sensitivity=3.0) is below the L1 sensitivity 6.0 that Sum(lower=-2.0, upper=4.0) "
            "has for n=50 records (dim=1): the noise would be too small for the privacy claimed. Drop "
            "sensitivity= to calibrate from the bounds, or pass sensitivity >= 6.0.",
        ),
        (
            X,
            pdp.Sum(lower=-2, upper=4),
            pdp.Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0),
            {},
            ValueError,
            "Gaussian(sensitivity=1.0) is below the L2 sensitivity 6.0",
        ),
    ],
)
def test_bad_release_input(data, stat, mech, kw, exc, message):
    with pytest.raises(exc, match=re.escape(message)):
        pdp.release(data, stat, mech, **kw)


def test_mean_of_no_records_is_a_clear_error():
    with pytest.raises(
        ValueError, match=re.escape("is a mean and needs at least one record, got n=0")
    ):
        pdp.Mean(lower=0, upper=1).factor(0)
    with pm.Model():
        x = pm.Normal("x", 0, 1, shape=0)
        with pytest.raises(ValueError, match=re.escape("hold no records (axis 0 has length 0)")):
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Mean(lower=0, upper=1),
                mechanism=pdp.Laplace(epsilon=1.0),
                observed=0.5,
            )


def test_larger_explicit_sensitivity_is_kept():
    r = pdp.release(X, pdp.Sum(lower=-2, upper=4), pdp.Laplace(epsilon=1.0, sensitivity=8.0), rng=1)
    assert r.mechanism.sensitivity == 8.0


# ---------------------------------------------------------------- integer mechanisms stay integer
@pytest.mark.parametrize("mech", _integer_mechanisms(), ids=lambda m: type(m).__name__)
def test_integer_mechanism_refuses_non_integer_statistics(mech):
    name = type(mech).__name__
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{name} adds integer noise, so the statistic must be integer-valued, but "
            "Sum(lower=0.0, upper=1.0) of data is not an integer; it would be rounded silently."
        ),
    ):
        pdp.release(np.array([0.5, 0.0]), pdp.Sum(lower=0, upper=1), mech, rng=1)
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{name} adds integer noise, so every record's contribution must be an integer, but "
            "Sum(lower=0.0, upper=1.0) gives non-integer contributions for some records"
        ),
    ):
        pdp.release(np.array([0.5, 0.5]), pdp.Sum(lower=0, upper=1), mech, rng=1)
    r = pdp.release(np.array([0, 1, 1, 3]), pdp.Sum(lower=0, upper=2), mech, rng=1)
    assert r.dtype.kind == "i" and r.mechanism.integer


@pytest.mark.parametrize("mech", _integer_mechanisms(), ids=lambda m: type(m).__name__)
def test_integer_mechanism_on_continuous_records_is_refused(mech):
    name = type(mech).__name__
    with pm.Model():
        x = pm.Normal("x", 0, 1, shape=4)
        with pytest.raises(
            ValueError,
            match=re.escape(
                f"{name} releases integers and its density is a pmf on the integers, but 's' "
                "computes Sum(lower=0.0, upper=3.0) of records of dtype ['float64'], which is not an "
                "integer by construction"
            ),
        ):
            pdp.DPObserved("s", x, statistic=pdp.Sum(lower=0, upper=3), mechanism=mech, observed=2)
        k = pm.Poisson("k", 2.0, shape=4)
        with pytest.raises(
            ValueError, match=re.escape("records of dtype ['int64'], which is not an integer")
        ):
            pdp.DPObserved(
                "h", k, statistic=pdp.Sum(lower=0.5, upper=2.5), mechanism=mech, observed=2
            )
        pdp.DPObserved("ok", k, statistic=pdp.Sum(lower=0, upper=5), mechanism=mech, observed=2)
        c = pm.Categorical("c", np.ones(3) / 3, shape=5)
        pdp.DPObserved(
            "hist", c, statistic=pdp.Counts(3), mechanism=mech, observed=np.array([1, 2, 2])
        )


# ---------------------------------------------------------------- DPObserved.dist
def test_dist_without_a_model_matches_the_node_logp():
    x = np.array([0.3, -1.7, 2.2])
    rv = pdp.DPObserved.dist(x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=2.0))
    lp = pm.logp(rv, 1.3).eval()
    assert lp == pytest.approx(-abs(1.3 - x.sum()) / 2.0 - math.log(4.0), rel=1e-12)
    draws = pm.draw(rv, draws=4000, random_seed=1)
    assert abs(draws.mean() - x.sum()) < 4 * math.sqrt(2 * 4.0 / 4000)
    latent = pt.vector("latent", shape=(3,))
    rv2 = pdp.DPObserved.dist(
        latent, statistic=pdp.Mean(lower=-1, upper=1), mechanism=pdp.Gaussian(sigma=0.5)
    )
    f = pm.logp(rv2, -0.2).eval({latent: x})
    assert f == pytest.approx(
        -0.5 * ((-0.2 - np.clip(x, -1, 1).mean()) / 0.5) ** 2
        - math.log(0.5 * math.sqrt(2 * math.pi))
    )
    with pytest.raises(ValueError, match=re.escape("declares no bounds")):
        pdp.DPObserved.dist(x, statistic=pdp.Sum(), mechanism=pdp.Laplace(epsilon=1.0))
