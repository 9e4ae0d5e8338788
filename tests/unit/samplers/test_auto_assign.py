"""``pm.sample()`` without ``step=`` picks DataAugmentation for latent records, ConjugateTheta for their
conjugate parents and interweaving for weak releases (issue 10 item 5, issue 11 items 2-3)."""

import logging
import re

import numpy as np
import pymc as pm
from pymc.step_methods import STEP_METHODS
import pytest
from pymc.sampling.mcmc import assign_step_methods

import pymc_dp as pdp
from tests.support.models import (
    clamped_model,
    normal_model,
    poisson_model,
    quickstart_model,
)


def _assigned(model):
    _, selected = assign_step_methods(model, None, methods=STEP_METHODS)
    return {cls.__name__: sorted(v.name for v in vars_) for cls, vars_ in selected.items()}


def test_registered_and_assigned_to_the_records():
    assert pdp.DataAugmentation in STEP_METHODS
    model, _ = normal_model()
    order = [
        STEP_METHODS.index(c) for c in (pdp.Collapsed, pdp.DataAugmentation, pdp.ConjugateTheta)
    ]
    assert order == sorted(order) and order[0] == 0
    model, _ = normal_model()
    assert _assigned(model) == {"ConjugateTheta": ["mu"], "DataAugmentation": ["x"]}
    model, _ = poisson_model()
    assert _assigned(model) == {"Collapsed": ["lam_log__", "x"]}  # cheap collapsed likelihood


def test_not_assigned_to_records_other_terms_depend_on():
    with pm.Model() as model:
        mu = pm.Normal("mu")
        x = pm.Normal("x", mu, 1.0, shape=5)
        pm.Normal("z", x.sum(), 1.0, observed=1.0)  # a non-DP term on the records
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=2.0)
    with pytest.warns(UserWarning, match=re.escape("'z' depends on 'x'")):
        assert "DataAugmentation" not in _assigned(model)


def test_not_assigned_to_records_that_are_not_iid():
    """Records drawn one from another (a random walk): refused at construction, so never assigned."""
    with pm.Model() as model:
        mu = pm.Normal("mu")
        x = pm.GaussianRandomWalk("x", mu=mu, sigma=1.0, init_dist=pm.Normal.dist(0, 1), shape=5)
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=2.0)
    with pytest.warns(UserWarning, match="cannot take them"):
        assigned = _assigned(model)
    assert "DataAugmentation" not in assigned
    with model, pytest.warns(UserWarning, match="cannot take them"):  # pm.sample() runs with PyMC's
        pm.sample(
            draws=5,
            tune=5,
            chains=1,
            progressbar=False,
            random_seed=0,
            compute_convergence_checks=False,
        )


def test_non_additive_statistic_warns_and_names_mhaar():
    """Records NonAdditiveRoute cannot take (their parent also drives records of another
    release) go to PyMC's samplers, with the warning naming MHAAR."""
    with pm.Model() as model:
        p = pm.Beta("p", 2, 2)
        x = pm.Geometric("x", p, shape=3)
        y = pm.Geometric("y", p, shape=4)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Median(1, 4),
            mechanism=pdp.SmoothLaplace(epsilon=2.0, delta=0.1),
            observed=1.2,
        )
        pdp.DPObserved(
            "t", y, statistic=pdp.Sum(1, 4), mechanism=pdp.Laplace(epsilon=1.0), observed=9.0
        )
    with pytest.warns(UserWarning, match=re.escape("pass step=[pdp.MHAAR([theta])]")):
        assigned = _assigned(model)
    assert "DataAugmentation" not in assigned or "x" not in assigned["DataAugmentation"]


def test_groups_of_different_sizes_get_one_block_each_and_print_like_pymc(caplog):
    with pm.Model():
        p = pm.Normal("p", 0, 2)  # continuous records: not collapsible, DataAugmentation's
        x = pm.Normal("x", p, 1.0, shape=7)
        w = pm.Normal("w", p, 1.0, shape=4)
        pdp.DPObserved(
            "s1",
            x,
            statistic=pdp.Sum(lower=-2, upper=4),
            mechanism=pdp.Laplace(scale=1.0),
            observed=3.0,
        )
        pdp.DPObserved(
            "s2",
            w,
            statistic=pdp.Sum(lower=-2, upper=4),
            mechanism=pdp.Laplace(scale=1.0),
            observed=2.0,
        )
        step = pdp.DataAugmentation()
        assert [g.block.n for g in step.groups] == [7, 4]
        logger = logging.getLogger("pymc")
        logger.addHandler(caplog.handler)
        try:
            with caplog.at_level(logging.INFO, logger="pymc"):
                pm.sample(
                    draws=5,
                    tune=5,
                    chains=1,
                    progressbar=False,
                    random_seed=1,
                    compute_convergence_checks=False,
                )
        finally:
            logger.removeHandler(caplog.handler)
    assert "DataAugmentation: [x, w]" in caplog.text
    assert "ConjugateTheta: [p]" in caplog.text


def test_model_without_latent_records_says_why():
    with pm.Model():
        mu = pm.Normal("mu")
        x = pm.Normal("x", mu, 1.0, observed=np.ones(3))  # the records are known: nothing latent
        pdp.DPObserved("s", x, statistic=pdp.Sum(), mechanism=pdp.Laplace(scale=1.0), observed=2.0)
        with pytest.raises(
            ValueError, match=re.escape("there are no free record variables to sample")
        ):
            pdp.DataAugmentation()


def test_sample_outside_a_with_block_uses_our_steps():
    model, _ = poisson_model(n=10)
    idata = pm.sample(
        model=model,
        draws=20,
        tune=20,
        chains=1,
        progressbar=False,
        random_seed=2,
        compute_convergence_checks=False,
    )
    assert "dp_accept_rw" in idata.sample_stats  # pdp.Collapsed


def test_quickstart_and_weak_release_assignments():
    model, *_ = quickstart_model()
    assert _assigned(model) == {
        "Collapsed": ["has_condition", "p_logodds__"],
        "SufficientTheta": ["mean_stay_log__"],
        "DataAugmentation": ["length_of_stay_log__"],
    }
    model, *_ = clamped_model(50, 0.1)
    assert _assigned(model) == {"ConjugateTheta": ["mu"], "DataAugmentation": ["x"]}


def test_model_without_dp_nodes_keeps_pymc_defaults():
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("k", p, shape=3)  # latent, conjugate, but no DPObserved node
        mu = pm.Normal("mu", 0, 3)
        pm.Normal("y", mu, 1.0, observed=np.ones(4))  # conjugate, observed
    ours = _assigned(model)
    methods = [m for m in STEP_METHODS if m not in (pdp.DataAugmentation, pdp.ConjugateTheta)]
    _, selected = assign_step_methods(model, None, methods=methods)
    assert ours == {cls.__name__: sorted(v.name for v in vs) for cls, vs in selected.items()}
    assert "ConjugateTheta" not in ours and "DataAugmentation" not in ours


def test_interweave_auto_measures_every_group_and_reports_the_weakness_ratio():
    """``interweave="auto"``: every group with a θ-free representation gets the move, measured at
    warm-up; the weakness ratio is reported, and decides nothing (it is drawn before PyMC hands the
    step its seeded generator)."""
    model, *_ = clamped_model(50, 0.1)
    with model:
        weak = pdp.DataAugmentation()
        off = pdp.DataAugmentation(interweave=False)
    (d,) = weak.interweave_decisions
    assert weak.interweaving and d["enabled"] and d["parents"] == ["mu"]
    # noise sd √2·60 = 85 against sd(Σ clip x) ≈ √50·0.98 ≈ 7: r ≈ 12
    assert 9.0 < d["ratio"] < 16.0
    assert d["measured"] == [] and weak._movers[0].trial is not None
    assert not off.interweaving and off.interweave_decisions[0]["reason"] == "interweave=False"
    model, *_ = clamped_model(1000, 1.0)
    with model:
        informative = pdp.DataAugmentation()
    (d,) = informative.interweave_decisions
    assert 0.2 < d["ratio"] < 0.4  # √2·6 = 8.5 vs √1000 ≈ 31
    assert d["reason"].startswith("release informative: r = ")
    trial = informative._movers[0].trial  # measured like the weak one, not guessed
    assert trial is not None and trial.fallback  # too short to measure: kept
    model, _ = poisson_model(n=10)
    with model:
        discrete = pdp.DataAugmentation()
    assert not discrete.interweaving
    assert (
        "needs records with a θ-free representation" in discrete.interweave_decisions[0]["reason"]
    )


def test_interweave_argument_checked():
    model, _ = poisson_model(n=10)
    with model:
        with pytest.raises(
            ValueError,
            match=re.escape("interweave must be 'auto', True or False, got interweave='yes'."),
        ):
            pdp.DataAugmentation(interweave="yes")
        with pytest.raises(
            ValueError,
            match=re.escape(
                "DataAugmentation(interweave=True): Interweave "
                "needs records with a θ-free representation"
            ),
        ):
            pdp.DataAugmentation(interweave=True)


def test_default_sampling_interweaves_and_reports_stats():
    """CompoundStep with the θ-move inside DataAugmentation: θ moved by two steps, stats per draw."""
    model, *_ = clamped_model(50, 0.1)
    with model:
        idata = pm.sample(
            draws=30,
            tune=30,
            chains=2,
            cores=1,
            progressbar=False,
            random_seed=4,
            compute_convergence_checks=False,
        )
    evals = np.asarray(idata.sample_stats["dp_iw_evals"])
    assert evals.shape == (2, 30) and (evals > 0).all()
    assert np.asarray(idata.sample_stats["dp_iw_move"]).mean() > 0
    mu = np.asarray(idata.posterior["mu"])
    assert np.all(np.diff(mu, axis=1) != 0)  # ConjugateTheta and the θ-move both redraw mu
    x = np.asarray(idata.posterior["x"])
    assert np.isfinite(x).all() and x.shape == (2, 30, 50)


def test_competence_builds_the_block_the_step_builds():
    """Binomial records whose n is a `pm.Data` (PyMC stores 4 as float64): PyMC's own draw of
    the graph fails (NumPy's binomial refuses a float n), but DataAugmentation's default fast
    proposals draw them. The competence built the block with graph proposals only, so
    pm.sample() refused records the step takes, with NumPy's cast error as the reason."""
    import warnings

    from pymc.step_methods.compound import Competence

    from pymc_dp.samplers.assign import augmentation_competence

    with pm.Model() as model:
        big_n = pm.Data("N", 4)
        p = pm.Beta("p", 2, 2)
        x = pm.Binomial("x", big_n, p, shape=20)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(0, 4),
            mechanism=pdp.DiscreteGaussian(sigma=3.0),
            observed=40,
        )
    with model:
        pdp.DataAugmentation([x])  # the step accepts the records
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert augmentation_competence(x) == Competence.IDEAL
