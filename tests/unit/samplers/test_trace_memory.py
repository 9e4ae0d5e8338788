"""pm.sample() leaves latent records above pdp's trace limit out of its default trace (issue 18.6).

Runs on both PyMC lines (5.28 and 6.4): the rule lives in a wrapper of
``pymc.sampling.mcmc.init_traces`` (pymc_dp/samplers/trace_memory.py), so a PyMC that stops calling
it makes these tests fail.
"""

import re
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.samplers.trace_memory import TRACE_LIMIT, latent_trace_plan

N = 40
KW = dict(draws=30, tune=20, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)
NUMBERS = 2 * 50 * N  # chains × iterations × records


def _model(n=N, family="normal"):
    rng = np.random.default_rng(1)
    stat, mech = pdp.Sum(lower=0.0, upper=4.0), pdp.Laplace(epsilon=1.0)
    s = float(pdp.release(rng.uniform(0.5, 3.0, n), stat, mech, rng=rng))
    with pm.Model() as model:
        mu = pm.Normal("mu", 1, 2)
        if family == "normal":
            x = pm.Normal("x", mu, 1.0, shape=n)
        else:  # transformed records: value variable x_log__
            x = pm.HalfNormal("x", pm.math.exp(mu), shape=n)
        pm.Deterministic("twice_mu", 2 * mu)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=s)
    return model


def _sample(model, **kw):
    with model, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = pm.sample(**{**KW, **kw})
    ours = [w for w in caught if issubclass(w.category, pdp.LatentTraceWarning)]
    return idata, ours


def test_rule_is_installed_in_pymc():
    from pymc.sampling import mcmc

    assert getattr(mcmc.init_traces, "_pdp_trace_rule", False)


def test_plan_at_the_default_limit():
    model = _model(n=5000)
    assert TRACE_LIMIT == 10**7
    at = latent_trace_plan(model, chains=2, iterations=1000)  # 2 × 1000 × 5000 = 10⁷: kept
    assert (at["latent"], at["size"], at["numbers"], at["drop"]) == (["x"], 5000, 10**7, False)
    assert at["trace_vars"] is None
    above = latent_trace_plan(model, chains=2, iterations=1001)
    assert above["drop"] and [v.name for v in above["trace_vars"]] == ["mu", "twice_mu"]


@pytest.mark.parametrize("family", ["normal", "half"])
def test_above_the_limit_records_are_dropped_with_a_message(family):
    model = _model(family=family)
    with pdp.keep_latent(limit=NUMBERS - 1):
        idata, warned = _sample(model, random_seed=5)
    assert len(warned) == 1
    msg = str(warned[0].message)
    assert "does not keep the latent variables 'x'" in msg
    assert f"2 chain(s) × 50 iterations × {N} values = {NUMBERS:.3g} numbers" in msg
    assert "with pdp.keep_latent(): pm.sample(...)" in msg and "var_names=" in msg
    post = idata.posterior
    assert "x" not in post and "x_log__" not in post
    assert "mu" in post and "twice_mu" in post
    assert post["mu"].shape == (2, 30)


def test_keep_latent_and_var_names_keep_the_records():
    model = _model()
    with pdp.keep_latent(limit=NUMBERS - 1):
        idata, warned = _sample(model, var_names=["mu", "x"], random_seed=5)
    assert not warned and set(idata.posterior.data_vars) == {"mu", "x"}
    with pdp.keep_latent(limit=NUMBERS - 1), pdp.keep_latent():  # innermost wins: no limit
        idata, warned = _sample(model, random_seed=5)
    assert not warned and idata.posterior["x"].shape == (2, 30, N)
    with pdp.keep_latent(limit=NUMBERS):  # at the limit: kept
        idata, warned = _sample(model, random_seed=5)
    assert not warned and "x" in idata.posterior


def test_below_the_default_limit_nothing_changes():
    model = _model()
    idata, warned = _sample(model, random_seed=5)
    assert not warned
    assert set(idata.posterior.data_vars) == {"mu", "x", "twice_mu"}


def test_theta_draws_identical_with_and_without_the_records():
    model = _model()
    with pdp.keep_latent(limit=0):
        dropped, warned = _sample(model, random_seed=11)
    assert warned and "x" not in dropped.posterior
    kept, _ = _sample(model, random_seed=11)
    np.testing.assert_array_equal(dropped.posterior["mu"].values, kept.posterior["mu"].values)
    stats = [k for k in dropped.sample_stats.data_vars if k.startswith("dp_")]
    assert stats
    for k in stats:
        np.testing.assert_array_equal(dropped.sample_stats[k].values, kept.sample_stats[k].values)


def test_models_without_releases_are_untouched():
    with pm.Model() as model:
        pm.Normal("z", 0, 1, shape=N)
    with pdp.keep_latent(limit=0), warnings.catch_warnings():
        warnings.simplefilter("error", pdp.LatentTraceWarning)
        idata = pm.sample(**KW, random_seed=1, model=model)
    assert idata.posterior["z"].shape == (2, 30, N)


@pytest.mark.parametrize("limit", [-1, 1.5, True, "10"])
def test_keep_latent_refuses_a_bad_limit(limit):
    with pytest.raises(ValueError, match=re.escape(f"got limit={limit!r}")):
        with pdp.keep_latent(limit=limit):
            pass


@pytest.mark.slow
def test_rule_with_one_process_per_chain():
    """cores=2: the trace lives in the main process, so the rule and keep_latent apply there."""
    model = _model()
    with pdp.keep_latent(limit=0):
        dropped, warned = _sample(model, cores=2, random_seed=3)
    assert warned and "x" not in dropped.posterior
    kept, warned = _sample(model, cores=2, random_seed=3)
    assert not warned and "x" in kept.posterior
    np.testing.assert_array_equal(dropped.posterior["mu"].values, kept.posterior["mu"].values)


# -- companions: the rows π of a latent count table (issue 18 items 4 and 6) -------------------
G, K = 3, 4


def _areas(det=False, n=6):
    noisy = np.array([[2, 1, 0, 3], [0, 4, 1, 1], [3, 0, 2, 0]])
    with pm.Model() as model:
        base = pm.Dirichlet("base", np.ones(K))
        alpha = pm.LogNormal("alpha", 1.0, 1.0)
        pi = pm.Dirichlet("pi", alpha * base, shape=(G, K))
        if det:  # a traced deterministic reads π: π must stay
            pm.Deterministic("share", pi[:, 0])
        c = pm.Multinomial("c", n=n, p=pi, shape=(G, K))
        mech = pdp.DiscreteGaussian(sigma=2.0)
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=noisy)
    return model


def test_companions_are_per_value_parameters_read_only_by_the_latent():
    plan = latent_trace_plan(_areas(), chains=1, iterations=1)
    # size: values of the value variables (π's simplex values: K − 1 per row)
    assert (plan["latent"], plan["companions"], plan["size"]) == (["c"], ["pi"], G * (2 * K - 1))
    plan = latent_trace_plan(_areas(det=True), chains=1, iterations=1)
    assert (plan["latent"], plan["companions"], plan["size"]) == (["c"], [], G * K)
    # a mean per record is one; the shared mean of the records is not
    rng = np.random.default_rng(2)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        m = pm.Normal("m", mu, 1, shape=N)
        x = pm.Normal("x", m, 1.0, shape=N)
        stat, mech = pdp.Sum(lower=-5.0, upper=5.0), pdp.Laplace(epsilon=1.0)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=float(rng.normal()))
    with pdp.keep_latent(limit=0):
        plan = latent_trace_plan(model, chains=2, iterations=10)
    assert (plan["latent"], plan["companions"], plan["size"]) == (["x"], ["m"], 2 * N)
    assert plan["drop"] and [v.name for v in plan["trace_vars"]] == ["mu"]


def test_rows_pi_dropped_and_not_drawn_with_the_same_hyperparameter_draws():
    """Above the limit π leaves the trace with c, DirichletHyper stops drawing it (it moves c
    itself), and α, base and every sampler stat are the draws of a run that keeps and draws π."""
    model = _areas()
    kw = dict(KW, var_names=None, draws=15, tune=10)
    kw.pop("var_names")
    with pdp.keep_latent(limit=0):
        dropped, warned = _sample(model, random_seed=4, **kw)
    assert len(warned) == 1
    assert "'c' of the DPObserved node(s) nor 'pi' (one value or more" in str(warned[0].message)
    assert "pi" not in dropped.posterior and "c" not in dropped.posterior
    with pdp.keep_latent():
        kept, warned = _sample(model, random_seed=4, **kw)
    assert not warned and kept.posterior["pi"].shape == (2, 15, G, K)
    for name in ("alpha", "base"):
        np.testing.assert_array_equal(dropped.posterior[name].values, kept.posterior[name].values)
    # π moves in the run that keeps it (a draw per iteration), and is left as it is otherwise
    assert np.all(np.diff(kept.posterior["pi"].values[0, :, 0, 0]) != 0)


def test_untraced_names_what_the_trace_does_not_read():
    from pymc_dp.samplers.trace_memory import untraced

    model = _areas(det=True)
    names = untraced(model, model.replace_rvs_by_values([model["share"], model["alpha"]]))
    assert names == {"base", "base_simplex__", "c"}  # π is read through the deterministic
    assert untraced(model, None) == frozenset()


def test_dirichlet_hyper_leaves_pi_only_when_untraced():
    model = _areas()
    with model:
        step = pdp.DirichletHyper([model["alpha"], model["base"], model["pi"], model["c"]])
    point = model.initial_point(0)
    step.tune = False
    step._fresh = False
    drawn, _ = step.step(dict(point))
    assert not np.array_equal(drawn["pi_simplex__"], point["pi_simplex__"])
    step.untraced = frozenset({"pi", "pi_simplex__", "c"})
    left, _ = step.step(dict(point))
    np.testing.assert_array_equal(left["pi_simplex__"], point["pi_simplex__"])


def test_guard_leaves_out_what_the_trace_does_not_read():
    """``var_names=["alpha", "base"]``: DirichletHyper leaves π undrawn (it moves the table
    itself), so π's values stay as they are; the convergence guard does not report π as stuck
    (R-hat inf) — it watches what the trace reads. Checked by hand: without that it warns
    "'pi' (moved by DirichletHyper): R-hat inf"."""
    from pymc_dp.samplers.convergence import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught, _areas():
        warnings.simplefilter("always")
        idata = pm.sample(
            **KW | {"draws": 120, "tune": 20, "var_names": ["alpha", "base"]}, random_seed=5
        )
    assert "pi" not in idata.posterior
    said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert not any("'pi'" in text for text in said), said
