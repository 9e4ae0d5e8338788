"""MHAAR (seed 001 Algorithms 6–8): kernel branches, errors, exactness of each variant."""

import math
import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.samplers.mhaar import MHAARState, mhaar_kernel
from tests.support.models import records_model

# ------------------------------------------------------------------------------------------------
# kernel: the returned particle is drawn with w' when accepted and with w when rejected
# ------------------------------------------------------------------------------------------------
W = np.array([1.0, 2.0, 7.0])
WP = np.array([5.0, 3.0, 2.0])


def _weights(rng, theta, theta_p, latent):
    return np.log(W)[:, None], np.log(WP)[:, None], lambda k, acc: (int(k[0]), acc)


@pytest.mark.parametrize(
    "prior_shift, accepted, probs", [(-1e3, False, W / W.sum()), (1e3, True, WP / WP.sum())]
)
def test_particle_weights_in_accept_and_reject_branch(prior_shift, accepted, probs):
    rng = np.random.default_rng(5)
    state = MHAARState(np.zeros(1), 0.0, None)
    counts = np.zeros(3)
    K = 3000
    for _ in range(K):
        out, info = mhaar_kernel(
            rng,
            state,
            propose_theta=lambda rng, th: (th + 1.0, 0.0),
            log_prior=lambda th: float(th[0]) * prior_shift,
            weights=_weights,
        )
        k, acc = out.latent
        assert acc is accepted and info.accepted is accepted
        counts[k] += 1
    sd = np.sqrt(K * probs * (1 - probs))
    assert np.all(np.abs(counts - K * probs) < 4.5 * sd), (counts, K * probs)


def test_averaged_ratio_and_product_over_blocks():
    lw = np.log(np.array([[1.0, 2.0], [3.0, 1.0]]))
    lwp = np.log(np.array([[2.0, 1.0], [2.0, 5.0]]))
    _, info = mhaar_kernel(
        np.random.default_rng(0),
        MHAARState(np.zeros(1), 0.5, None),
        propose_theta=lambda rng, th: (th, 0.1),
        log_prior=lambda th: 0.2,
        weights=lambda rng, th, thp, lat: (lw, lwp, lambda k, acc: k),
    )
    want = math.log((4 / 4) * (6 / 3))
    assert info.log_ratio_estimate == pytest.approx(want)
    assert info.accept_prob == pytest.approx(min(1.0, math.exp(0.1 + 0.2 - 0.5 + want)))


# ------------------------------------------------------------------------------------------------
# errors
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, 7, -1, 2.0])
def test_subset_size_outside_one_to_n(bad):
    model = records_model(n=6)
    with (
        model,
        pytest.raises(
            ValueError,
            match=re.escape(
                f"subset_size must be an integer in 1..n=6 (records refreshed per particle), got subset_size={bad!r}."
            ),
        ),
    ):
        pdp.MHAAR([model["th"]], subset_size=bad)


def test_n_particles_checked():
    model = records_model()
    with (
        model,
        pytest.raises(
            ValueError, match=re.escape("n_particles must be an integer >= 1, got n_particles=0.")
        ),
    ):
        pdp.MHAAR([model["th"]], n_particles=0)


def test_z_space_refuses_records_drawn_from_each_other():
    with pm.Model():
        th = pm.Normal("th")
        c = pm.Bernoulli("c", 0.5, shape=4)
        f = pm.Normal("f", th + c, 1.0, shape=4)
        pdp.DPObserved(
            "s",
            (c, f),
            statistic=pdp.RecordSum(lambda c, f: f, sensitivity=1.0),
            mechanism=pdp.Laplace(scale=1.0),
            observed=0.5,
        )
        with pytest.raises(
            ValueError, match=re.escape("but 'f' depends on another record variable. Use space='u'")
        ):
            pdp.MHAAR([th], space="z")


def test_latent_statistic_needs_both_moments():
    with pm.Model():
        th = pm.HalfNormal("th")
        with pytest.raises(
            ValueError,
            match=re.escape("needs both moments of the per-record statistic s(X), got var=None"),
        ):
            pdp.CLTRelease(
                "s", th, None, 10, mechanism=pdp.Laplace(scale=1.0), sensitivity=1.0, observed=1.0
            )


def test_z_space_refuses_custom_dist_records_whose_icdf_redraws_theta():
    """Records from ``pm.CustomDist(dist=...)``: PyMC derives their icdf from a clone of the
    graph whose θ the value replacement cannot reach, so z-space drew θ afresh in every map and
    MHAAR([mu]) returned a wrong posterior (sd 37.7 against an exact 0.24) without a word.
    ``space="z"`` refuses; ``space="auto"`` takes u-space."""
    with pm.Model():
        mu = pm.Normal("mu", 0, 3)
        x = pm.CustomDist(
            "x", mu, dist=lambda mu, size: pm.Normal.dist(mu, 1.0, size=size), shape=20
        )
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(), mechanism=pdp.Gaussian(sigma=2.0), observed=18.0
        )
        with pytest.raises(ValueError, match=r"z-space.*copy of the model's graph.*space='u'"):
            pdp.MHAAR([mu], space="z", n_particles=5)
        assert pdp.MHAAR([mu], n_particles=5).space == "u"


def test_auto_space_falls_back_to_u_space_for_local_releases_without_an_icdf():
    """Censored records under a local release: space='auto' picked 'local', whose z-space map
    needs PyMC's icdf, and refused ("MHAAR z-space … needs PyMC's icdf"), although 'auto' is
    documented never to pick a space that refuses; only space='z' fell back to u-space."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        x = pm.Censored("x", pm.Normal.dist(mu, 2.0), lower=0, upper=8, shape=6)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Local(0, 8),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=np.array([0.5, 3.0, 9.0, -1.0, 2.0, 4.0]),
        )
        step = pdp.MHAAR([model["mu"]], n_particles=4)
    assert step.space == "u"
