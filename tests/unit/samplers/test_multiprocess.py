"""Every step method runs with ``cores=2`` and is reproducible by ``random_seed`` (per-chain rngs)."""

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp


def records_model():
    with pm.Model() as model:
        th = pm.Normal("th", 0, 2)
        x = pm.Normal("x", th, 1.0, shape=6)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(lower=-5, upper=5),
            mechanism=pdp.Laplace(scale=1.0),
            observed=3.0,
        )
    return model


def _confidential_model():
    data = np.random.default_rng(0).normal(1.0, 1.0, size=(200, 1))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 10, shape=1)
        pm.Normal("y", mu, 1.0, observed=data)
    return model


CASES = {
    "PMMH": (records_model, "th", lambda m: [pdp.PMMH([m["th"]], n_particles=8)]),
    "MHAAR": (records_model, "th", lambda m: [pdp.MHAAR([m["th"]], n_particles=8)]),
    "PenaltyMH": (
        _confidential_model,
        "mu",
        lambda m: [pdp.PenaltyMH(lipschitz=10.0, tau=1.0, scale=0.05)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_two_cores_reproducible_by_seed(name):
    make_model, var, make_step = CASES[name]
    model = make_model()
    runs = []
    for seed in (5, 5, 6):
        with model:
            idata = pm.sample(
                step=make_step(model),
                draws=100,
                tune=50,
                chains=2,
                cores=2,
                random_seed=seed,
                progressbar=False,
                compute_convergence_checks=False,
            )
        runs.append(np.asarray(idata.posterior[var]))
    assert runs[0].shape[:2] == (2, 100)
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])
    assert not np.array_equal(runs[0][0], runs[0][1])  # the two chains got different rngs


def _quickstart_default():
    from tests.support.models import quickstart_model

    return quickstart_model(n=60)[0], None


def _penalty_with_other_step():
    data = np.random.default_rng(1).normal(1.0, 1.5, size=(80, 1))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 10, shape=1)
        sigma = pm.HalfNormal("sigma", 3.0)
        pm.Normal("y", mu, sigma, observed=data)
    return model, lambda m: [
        pdp.PenaltyMH([m["mu"]], lipschitz=20.0, tau=1.0, scale=0.05),
        pm.Slice([m["sigma"]]),
    ]


def _weak_default():
    from tests.support.models import clamped_model

    return clamped_model(50, 0.1)[0], None  # ConjugateTheta + DataAugmentation with interweaving


def _mhaar_with_nuts():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        sigma = pm.HalfNormal("sigma", 1.0)
        x = pm.Normal("x", mu, sigma, shape=8)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Local(lower=-4, upper=4),
            mechanism=pdp.Gaussian(sigma=1.0),
            observed=np.linspace(-1, 2, 8),
        )
    return model, lambda m: [pdp.MHAAR([m["mu"]], n_particles=8), pm.NUTS([m["sigma"]])]


@pytest.mark.parametrize(
    "make",
    [_quickstart_default, _penalty_with_other_step, _weak_default, _mhaar_with_nuts],
    ids=[
        "Collapsed+SufficientTheta+DataAugmentation",
        "PenaltyMH+Slice",
        "ConjugateTheta+DataAugmentation+interweave",
        "MHAAR+NUTS",
    ],
)
def test_two_cores_draw_what_one_core_draws(make):
    """PyMC's parallel workers pass every step the same point arrays and write the next point into
    them in place: a step that keeps a reference to a point array across iterations (a cache keyed
    on other variables' values) sees it change under it. With per-chain rngs seeded alike, cores=2
    must give exactly the draws of cores=1."""
    model, make_step = make()
    runs = []
    for cores in (1, 2):
        with model:
            step = None if make_step is None else make_step(model)
            idata = pm.sample(
                step=step,
                draws=60,
                tune=60,
                chains=2,
                cores=cores,
                random_seed=3,
                progressbar=False,
                compute_convergence_checks=False,
            )
        runs.append({k: np.asarray(v) for k, v in idata.posterior.items()})
    for name in runs[0]:
        np.testing.assert_array_equal(runs[0][name], runs[1][name], err_msg=name)
