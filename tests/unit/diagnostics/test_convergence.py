"""The convergence guard: `pdp.check_convergence` and the warning `pm.sample()` gives by itself."""

from __future__ import annotations

import re
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.models import normal_model
from tests.support.sampling import sample


def _idata(post):
    """InferenceData (ArviZ 0.x) or DataTree (ArviZ 1.x) with this posterior."""
    if int(az.__version__.split(".")[0]) >= 1:
        return az.from_dict({"posterior": post})
    return az.from_dict(posterior=post)


def _ar1(rng, rho, chains=2, draws=400):
    out = np.empty((chains, draws))
    for c in range(chains):
        v = rng.normal()
        for i in range(draws):
            v = rho * v + np.sqrt(1 - rho**2) * rng.normal()
            out[c, i] = v
    return out


def _bernoulli_weak(n=400, eps=0.05, seed=3):
    """Bernoulli records, a very weak Laplace-noised count: one-record-at-a-time moves stick."""
    rng = np.random.default_rng(seed)
    stat, mech = pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=eps)
    s = float(pdp.release(rng.binomial(1, 0.3, n), stat, mech, rng=rng))
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    return model


def test_check_convergence_table_names_the_stuck_parameter_and_its_step():
    model, _ = normal_model()
    rng = np.random.default_rng(0)
    mixed = _idata({"mu": rng.normal(size=(2, 400))})
    stuck = _idata({"mu": _ar1(rng, 0.995) + np.array([[0.0], [3.0]])})
    with warnings.catch_warnings():
        warnings.simplefilter("error", pdp.ConvergenceWarning)
        table = pdp.check_convergence(mixed, model, step=[])
    assert list(table["variable"]) == ["mu"] and bool(table["ok"].iloc[0])
    assert table["ess_per_draw"].iloc[0] > 0.5
    with model:
        steps = [pdp.ConjugateTheta([model["mu"]])]
    with pytest.warns(pdp.ConvergenceWarning) as record:
        table = pdp.check_convergence(stuck, model, step=steps)
    row = table.iloc[0]
    assert not row["ok"] and row["r_hat"] > 1.01 and row["ess_per_draw"] < 0.05
    text = str(record[0].message)
    assert "'mu' (moved by ConjugateTheta): R-hat" in text
    assert "To fix:" in text and "pdp.MHAAR([mu])" in text


def test_check_convergence_refuses_an_idata_of_another_model():
    model, _ = normal_model()
    other = _idata({"theta": np.zeros((2, 200))})
    with pytest.raises(
        ValueError, match=re.escape("idata: the posterior has no variable 'mu' of the model")
    ):
        pdp.check_convergence(other, model, step=[])


def test_pm_sample_warns_on_a_stuck_chain_and_names_parameter_and_step():
    """Weak count, records moved one at a time: ESS/draw of p ≪ 0.05 (measured 0.004–0.02)."""
    model = _bernoulli_weak()
    with pytest.warns(pdp.ConvergenceWarning) as record:
        sample(
            model,
            lambda: [pdp.DataAugmentation([model["x"]], interweave=False)],
            draws=300,
            tune=200,
            seed=1,
        )
    texts = [str(w.message) for w in record if issubclass(w.category, pdp.ConvergenceWarning)]
    assert texts, "no ConvergenceWarning"
    assert all("'p' (moved by ConjugateTheta)" in t for t in texts)
    assert re.search(r"bulk ESS/draw 0\.0[0-4]", texts[-1]), texts[-1]
    assert "over 2 chain(s) × 300 draws" in texts[-1]  # cores=1: the last check covers both chains
    assert re.search(r"'p' \(moved by ConjugateTheta\): R-hat \d\.\d+", texts[-1]), texts[-1]
    assert "To fix: its exact draw given the records" in texts[-1] and "pdp.MHAAR([p])" in texts[-1]


def test_pm_sample_does_not_warn_on_a_mixing_chain():
    model, _ = normal_model()
    with warnings.catch_warnings():
        warnings.simplefilter("error", pdp.ConvergenceWarning)
        idata = sample(model, draws=300, tune=200, seed=2)
    table = pdp.check_convergence(idata, model, warn=False)
    assert bool(table["ok"].all())


def test_no_guard_without_releases():
    """PenaltyMH's models have no DPObserved node: nothing to watch, no table rows."""
    with pm.Model() as model:
        pm.Normal("mu", 0, 1)
    with model:
        assert pdp.check_convergence(_idata({"mu": np.zeros((2, 200))}), warn=False).empty


def test_guard_names_the_theta_move_of_data_augmentation_and_advises_something_else():
    """θ moved by its own step *and* by DataAugmentation's non-centred θ-move: the warning names
    both and does not advise turning interweaving on (it already runs); without the move it does."""
    from tests.support.user_models import normal_scale

    model, _ = normal_scale(n=10)
    rng = np.random.default_rng(5)
    stuck = _idata(
        {
            "mu": _ar1(rng, 0.995) + np.array([[0.0], [3.0]]),
            "sigma": np.exp(0.1 * rng.normal(size=(2, 400))),
        }
    )
    for interweave in (True, False):
        with model:
            steps = [
                pdp.DataAugmentation(interweave=interweave),
                pdp.ConjugateTheta([model["mu"]]),
                pdp.SufficientTheta([model["sigma"]]),
            ]
        with pytest.warns(pdp.ConvergenceWarning) as record:
            table = pdp.check_convergence(stuck, model, step=steps)
        text = str(record[0].message)
        row = table.set_index("variable").loc["mu"]
        assert not row["ok"] and row["r_hat"] > 1.01
        if interweave:
            assert row["step"] == "ConjugateTheta and DataAugmentation's θ-move"
            assert "'mu' (moved by ConjugateTheta and DataAugmentation's θ-move): R-hat" in text
            assert (
                "To fix: DataAugmentation's non-centred move of the parameters already runs" in text
            )
            assert "pdp.MHAAR([mu])" in text and "interweave=True" not in text
        else:
            assert row["step"] == "ConjugateTheta"
            assert "'mu' (moved by ConjugateTheta): R-hat" in text
            assert "pdp.DataAugmentation(interweave=True)" in text


def test_pm_sample_names_pymc_metropolis_for_a_discrete_parameter():
    """A discrete θ (the upper bound of DiscreteUniform records) is moved by PyMC's Metropolis,
    not by NUTS: the in-sample guard must name the step that moved it (it named NUTS). θ has an
    infinite support (Geometric), so pdp.EnumeratedParents, which takes a DiscreteUniform(1, 5)
    bound since issue 17.2, cannot enumerate it."""
    rng = np.random.default_rng(47)
    n = 20
    stat = pdp.Sum(lower=0, upper=5)
    r = pdp.release(rng.integers(0, 4, n), stat, pdp.DiscreteLaplace(epsilon=1.0), rng=rng)
    with pm.Model() as model:
        up = pm.Geometric("up", 0.3)
        x = pm.DiscreteUniform("x", 0, up, shape=n)
        pdp.DPObserved(
            "s", x, statistic=stat, mechanism=pdp.DiscreteLaplace(epsilon=1.0), observed=r
        )
    with pytest.warns(pdp.ConvergenceWarning) as record:  # stuck: R-hat 3.6 at 150 draws
        sample(model, draws=150, tune=100, seed=1)
    texts = [str(w.message) for w in record if issubclass(w.category, pdp.ConvergenceWarning)]
    assert texts and all("'up' (moved by Metropolis)" in t for t in texts), texts
    assert "marginalise it" in texts[-1]


def test_guard_skips_theta_too_large_to_copy_each_draw():
    """π of a (G, K) table of areas (millions of numbers) is not copied per draw inside pm.sample();
    the small θ of the same chain is still checked."""
    from pymc_dp.samplers.convergence import WATCH_SIZE, _ChainWatch

    class Leader:
        pass

    leader = Leader()
    labels = {"small": "small", "big": "big"}
    watch = _ChainWatch(leader, labels, tune=1, draws=100, history=[])
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():  # the verdict on the small θ is not what this test is about
        warnings.simplefilter("ignore")
        for _ in range(101):
            watch.observe(leader, {"small": rng.normal(size=2), "big": np.zeros(WATCH_SIZE + 1)})
    (chain,) = watch.history
    assert set(chain) == {"small"} and chain["small"].shape == (100, 2)


def test_guard_advice_for_pi_of_a_table_released_only_through_a_margin():
    """Issue 17.3: π of a 2 × 3 table whose row margin alone is released mixes at ESS/draw 0.01
    (its split within a row is identified by the prior only); the generic ConjugateTheta advice
    (MHAAR, interweaving) did not help. The guard now says what the margins leave unidentified and
    what to model instead."""
    from pymc_dp.samplers.convergence import _diagnose, _hints

    stat = pdp.Marginals((0,), shape=(2, 3))
    with pm.Model():
        pi = pm.Dirichlet("pi", np.ones(6))
        t = pm.Multinomial("t", n=100, p=pi)
        pdp.DPObserved(
            "m", t, statistic=stat, mechanism=pdp.DiscreteGaussian(sigma=2.0), observed=[52, 48]
        )
        step = pdp.ConjugateTheta([pi])
    hints = _hints([step])
    assert set(hints) == {"pi_simplex__"}
    rng = np.random.default_rng(0)
    stuck = np.cumsum(rng.normal(size=(2, 200, 6)) * 0.01, axis=1)  # a random walk: not mixed
    table = _diagnose({"pi_simplex__": stuck}, {"pi_simplex__": "pi"}, {}, 1.01, 0.05, hints)
    (text,) = table["advice"]
    assert "only margins of the table 't'" in text and "pdp.Cells()" in text


@pytest.mark.parametrize("chains", [1, 2])
@pytest.mark.parametrize("defect", ["autocorrelated", "shifted"])
def test_screened_diagnosis_of_many_entries_finds_the_worst_one(chains, defect):
    """A θ of 500 entries is diagnosed on the screened entries only (`_screen`): its worst bulk ESS
    and R-hat are ArviZ's over all 500 entries, whether the defect is an autocorrelated entry
    (low ESS) or one whose chains (halves) disagree (high R-hat), at an arbitrary position."""
    from pymc_dp.samplers.convergence import SCREEN_KEEP, _diagnose

    rng = np.random.default_rng(3)
    d = rng.normal(size=(chains, 400, 500))
    if defect == "autocorrelated":  # entry 317: AR(1), ρ = 0.9 (bulk ESS/draw about 0.05)
        e = d[:, :, 317]
        for i in range(1, 400):
            e[:, i] = 0.9 * e[:, i - 1] + np.sqrt(1 - 0.81) * e[:, i]
    else:  # entry 317: the second half sits higher (R-hat > 1.01)
        d[:, 200:, 317] += 1.0
    assert 500 > 2 * SCREEN_KEEP
    table = _diagnose({"theta": d}, {"theta": "theta"}, {}, 1.01, 0.05)
    split = d if chains == 2 else np.stack([d[0, :200], d[0, 200:]])
    full = xr_dataset(split)
    ess = np.asarray(az.ess(full, method="bulk")["q"]).ravel()
    rhat = np.asarray(az.rhat(full)["q"]).ravel()
    assert (np.argmin(ess) if defect == "autocorrelated" else np.argmax(rhat)) == 317
    assert table["ess_bulk"][0] == pytest.approx(ess.min(), rel=1e-12)
    assert table["r_hat"][0] == pytest.approx(rhat.max(), rel=1e-12)
    assert not table["ok"][0]


def xr_dataset(d):
    import xarray as xr

    return xr.Dataset({"q": (("chain", "draw", "entry"), d)})


def test_guard_advice_for_rates_of_poisson_cells_released_only_through_margins():
    """Gamma rates of a (2, 3) table of Poisson cells whose row and column margins alone are
    released: the advice is the margins' (model the margin, or more table moves), not the generic
    ConjugateTheta advice (MHAAR or interweaving, which do not take a count table: they failed
    with a bare PyTensor reshape error)."""
    from pymc_dp.samplers.convergence import _diagnose, _hints

    with pm.Model():
        lam = pm.Gamma("lam", 2.0, 0.2, shape=(2, 3))
        c = pm.Poisson("c", lam, shape=(2, 3))
        gauss = pdp.DiscreteGaussian(sigma=1.0)
        pdp.DPObserved("rows", c, statistic=pdp.Marginals((0,)), mechanism=gauss, observed=[20, 31])
        pdp.DPObserved(
            "cols", c, statistic=pdp.Marginals((1,)), mechanism=gauss, observed=[9, 21, 20]
        )
        step = pdp.ConjugateTheta([lam])
    hints = _hints([step])
    assert set(hints) == {"lam_log__"}
    rng = np.random.default_rng(0)
    stuck = np.cumsum(rng.normal(size=(2, 200, 6)) * 0.01, axis=1)
    table = _diagnose({"lam_log__": stuck}, {"lam_log__": "lam"}, {}, 1.01, 0.05, hints)
    (text,) = table["advice"]
    assert "only margins of the table 'c'" in text and "Poisson cells over the margin" in text
    assert "MHAAR" not in text and "reps=40" in text


def test_parameters_of_a_table_law_moved_by_nuts_get_the_tables_advice():
    """A log-linear table (softmax of Normals, NUTS) whose z did not mix was told its "records are
    updated one at a time by DataAugmentation" and to use MHAAR, which refuses tables."""
    from pymc_dp.samplers.convergence import _hints

    with pm.Model():
        mu = pm.Normal("mu", 0, 1, shape=3)
        tau = pm.HalfNormal("tau", 1)
        z = pm.Normal("z", 0, 1, shape=(2, 3))
        pi = pm.Deterministic("pi", pm.math.softmax(mu + tau * z, axis=-1))
        c = pm.Multinomial("c", n=5, p=pi, shape=(2, 3))
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(total=5),
            mechanism=pdp.DiscreteGaussian(sigma=1.0),
            observed=np.array([[2, 2, 1], [1, 1, 3]]),
        )
        step = pdp.TableCells([c])
    hints = _hints([step])
    assert set(hints) == {"mu", "tau_log__", "z"}
    assert "count table 'c'" in hints["z"] and "MHAAR" not in hints["z"]
    assert "TableCells([c], reps=12)" in hints["z"]


def test_collapsed_advice_names_the_other_theta_kernel():
    """Collapsed's automatic NUTS on (mu, sigma) of Normal records mixed at ESS/draw 0.03 where
    theta_kernel='mh' gave 0.9; the advice said only "tune longer, raise target_accept"."""
    from pymc_dp.samplers.convergence import advice

    text = advice("Collapsed", "mu")
    assert "theta_kernel='mh'" in text and "theta_kernel='nuts'" in text


def test_parameters_above_the_records_parents_get_the_hierarchy_advice():
    """tau in mug ~ Normal(mu, tau), x_g ~ Normal(mug[g], 1) was told to use MHAAR([tau]), which
    does not help (MHAAR then takes the records while mug stays with ConjugateTheta); the advice
    now names the non-centred form (ESS/draw of tau 0.65 against 0.02-0.07). It is for variables
    PyMC's own steps move (here NUTS); a pymc-dp step's own advice stays."""
    from pymc_dp.samplers.convergence import _diagnose, _hints

    with pm.Model():
        mu = pm.Normal("mu", 0, 2)
        tau = pm.HalfNormal("tau", 1)
        mug = pm.Normal("mug", mu, tau, shape=3)
        xs = []
        for g in range(3):
            xs.append(pm.Normal(f"x{g}", mug[g], 1, shape=5))
            pdp.DPObserved(
                f"s{g}",
                xs[-1],
                statistic=pdp.Mean(-3, 3),
                mechanism=pdp.Laplace(epsilon=1),
                observed=0.5,
            )
        step = pdp.DataAugmentation(xs)
    stuck = np.cumsum(np.random.default_rng(0).normal(size=(2, 200)), axis=1)  # a random walk
    for mover, hierarchy in (("NUTS", True), ("MHAAR", False)):
        table = _diagnose(
            {"tau_log__": stuck},
            {"tau_log__": "tau"},
            {"tau_log__": mover},
            1.01,
            0.05,
            _hints([step]),
        )
        text = table["advice"].iloc[0]
        assert ("non-centred" in text and "['mug']" in text) == hierarchy, text


def test_one_chain_is_judged_with_the_one_chain_r_hat_limit():
    """A lone chain (each worker of pm.sample(cores=2)) is judged on its halves: the worst entry of a
    θ of iid draws reads 1.02–1.04 by chance, which warned in every worker; the limit for one chain
    is RHAT_MAX_ONE_CHAIN (1.05), and a drifting chain still fails it."""
    from pymc_dp.samplers.convergence import RHAT_MAX_ONE_CHAIN, _diagnose

    for seed in range(500):  # the first seed whose iid draws read a worst split R-hat of 1.02–1.04
        d = np.random.default_rng(seed).normal(size=(1, 200, 8))
        halves = np.stack([d[0, :100], d[0, 100:]])
        worst = float(np.asarray(az.rhat(xr_dataset(halves))["q"]).max())
        if 1.02 <= round(worst, 2) <= 1.04:
            break
    else:
        raise AssertionError("no seed reads a worst split R-hat of 1.02–1.04")
    one = _diagnose({"theta": d}, {"theta": "theta"}, {}, 1.01, 0.05)
    assert bool(one["ok"][0]) and one["r_hat"][0] == pytest.approx(worst, rel=1e-12)
    # the same numbers as two chains: the multi-chain limit 1.01 applies
    two = _diagnose({"theta": halves}, {"theta": "theta"}, {}, 1.01, 0.05)
    assert not bool(two["ok"][0])
    # a chain whose second half drifted by 0.8 standard deviations still fails alone
    d[0, 100:, 3] += 0.8
    drift = _diagnose({"theta": d}, {"theta": "theta"}, {}, 1.01, 0.05)
    assert drift["r_hat"][0] > RHAT_MAX_ONE_CHAIN and not bool(drift["ok"][0])


def _advice_for(step, value, label, mover):
    from pymc_dp.samplers.convergence import _diagnose, _hints

    stuck = np.cumsum(np.random.default_rng(0).normal(size=(2, 200)), axis=1)  # a random walk
    table = _diagnose({value: stuck}, {value: label}, {value: mover}, 1.01, 0.05, _hints([step]))
    return table["advice"].iloc[0]


def test_advice_for_the_records_parents_names_only_steps_this_model_takes():
    """The advice for a parent of records named DataAugmentation(interweave=True) and
    pdp.Collapsed for every model, and both refused Poisson records with one rate per record
    ("needs records with a θ-free representation", "not identically distributed"). It now names
    interweaving only where its move builds and Collapsed only where it takes the records."""
    y = np.array([3, 0, 7, 2, 10, 1])
    with pm.Model():  # Poisson records, rates from a covariate, a clamped sum: neither
        b = pm.Normal("b", 0, 1)  # interweave nor Collapsed
        x = pm.Poisson("x", pm.math.exp(b * np.linspace(-1, 1, 6)), shape=6)
        pdp.DPObserved(
            "y",
            x,
            statistic=pdp.Sum(0, 8),
            mechanism=pdp.DiscreteLaplace(epsilon=1),
            observed=int(y.sum()),
        )
        step = pdp.DataAugmentation([x])
        with pytest.raises(ValueError):
            pdp.DataAugmentation([x], interweave=True)
        with pytest.raises(Exception, match="identically distributed"):
            pdp.Collapsed([x])
    for mover in ("NUTS", "ConjugateTheta"):
        text = _advice_for(step, "b", "b", mover)
        assert "MHAAR([b])" in text and "interweave" not in text and "Collapsed" not in text
    with pm.Model():  # Normal records: interweaving builds, Collapsed does not take them
        mu = pm.Normal("mu", 0, 2)
        x = pm.Normal("x", mu, 1, shape=8)
        pdp.DPObserved(
            "s", x, statistic=pdp.Mean(-3, 3), mechanism=pdp.Laplace(epsilon=1), observed=0.5
        )
        step = pdp.DataAugmentation([x], interweave=False)
    text = _advice_for(step, "mu", "mu", "NUTS")
    assert "interweave=True" in text and "Collapsed" not in text
    with pm.Model():  # iid Bernoulli records: Collapsed takes them
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=8)
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(0, 1), mechanism=pdp.Laplace(epsilon=1), observed=3.2
        )
        step = pdp.DataAugmentation([x])
    text = _advice_for(step, "p_logodds__", "p", "ConjugateTheta")
    assert "pdp.Collapsed" in text and "MHAAR([p])" in text
    # a step of pymc-dp that integrates the records keeps its own advice
    assert "n_particles" in _advice_for(step, "p_logodds__", "p", "MHAAR")


@pytest.mark.parametrize("rate", ["gamma", "exponential"])
def test_per_record_rates_of_poisson_records_are_advised_to_be_summed_out(rate):
    """lam_i ~ Gamma(2, 2/mu), x_i ~ Poisson(lam_i), one local release per record: mu's ESS/draw
    was 0.012-0.018 under pm.sample() and the advice named steps that refuse the model. The
    advice for lam and for mu now gives the negative-binomial form of the records, which
    pm.sample() sums out exactly (tests/unit/marginal/test_collapsed.py; ESS/draw 0.93-1.0)."""
    y = np.array([3, 0, 7, 2, 10, 1])
    with pm.Model():
        mu = pm.LogNormal("mu", 1, 1)
        if rate == "gamma":
            lam = pm.Gamma("lam", 2, 2 / mu, shape=6)
        else:
            lam = pm.Exponential("lam", 1 / mu, shape=6)
        x = pm.Poisson("x", lam, shape=6)
        pdp.DPObserved(
            "y", x, statistic=pdp.Local(0, 8), mechanism=pdp.DiscreteLaplace(epsilon=1), observed=y
        )
        step = pdp.DataAugmentation([x])
    for value, label, mover in (("mu_log__", "mu", "NUTS"), ("lam_log__", "lam", "ConjugateTheta")):
        text = _advice_for(step, value, label, mover)
        assert "pm.NegativeBinomial('x'" in text and f"so {label} moves" in text, text
    with pm.Model():  # a rate per record that also feeds another variable: no such advice
        mu = pm.LogNormal("mu", 1, 1)
        lam = pm.Gamma("lam", 2, 2 / mu, shape=6)
        x = pm.Poisson("x", lam, shape=6)
        pm.Normal("z", lam, 1, observed=np.ones(6))
        pdp.DPObserved(
            "y", x, statistic=pdp.Local(0, 8), mechanism=pdp.DiscreteLaplace(epsilon=1), observed=y
        )
        step = pdp.DataAugmentation([x])
    assert "NegativeBinomial" not in _advice_for(step, "lam_log__", "lam", "ConjugateTheta")


@pytest.mark.parametrize("bad", ["idata", {"posterior": 1}, 3])
def test_check_convergence_names_a_wrong_first_argument(bad):
    """A string gave "string indices must be integers" and a model "No variable named
    'posterior'"."""
    model, _ = normal_model()
    with pytest.raises(TypeError, match=r"idata must be what pm.sample\(\) returned"):
        pdp.check_convergence(bad, model)
    with pytest.raises(TypeError, match=r"idata must be what pm.sample\(\) returned"):
        pdp.check_convergence(model, model)


def test_dirichlet_hyper_advice_names_its_own_remedy():
    """At G = 1,000 areas the guard told a user whose base mixed at 0.04 per draw to "pass a
    base-move from pymc_dp (MHAAR, PMMH, interweaving)", none of which takes base."""
    from pymc_dp.samplers.convergence import advice

    text = advice("DirichletHyper", "base")
    assert "cells=3" in text and "MHAAR" not in text and "base's coordinates" in text
