"""Regression that warns when it cannot be trusted (issue 22.6): noisy XᵀX, outcome-ordered node
splits, merging per-node releases (parallel composition), clear messages for misused arguments."""

import re
import warnings

import numpy as np
import pytest

import pymc_dp as pdp
from pymc_dp import regression as R
from pymc_dp.regression.trust import SPLIT_P, TRUST_FACTOR
from tests.support.models import simulate_regression

KW = {"x_bound": 3.0, "y_bound": 6.0, "delta": 1e-5}


def _data(n=3000, d=3, seed=7):
    X, y, _ = simulate_regression(n, d, np.random.default_rng(seed))
    return X, y


def _no_warning(category, fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", category)
        return fn(*args, **kw)


def test_noisy_xtx_warns_with_what_to_do():
    X, y = _data()
    noisy = R.release_suff_stats(X, y, epsilon=1.0, n_nodes=3, rng=np.random.default_rng(1), **KW)
    rep = R.noise_report(noisy)
    assert np.all(
        rep["ratio"] < TRUST_FACTOR
    )  # n_j = 1000, σ_s ≈ 120: noise norm ≈ 400 vs λ_min ≈ 300
    msg = "method='mcmc_fixedS' treats the released XᵀX of every node as exact, but 3 of 3 nodes"
    with pytest.warns(R.NoisyStatsWarning, match=re.escape(msg)) as rec:
        R.fit(noisy, "mcmc_fixedS", draws=20, tune=20, chains=1, rng=np.random.default_rng(0))
    text = str(rec[0].message)
    for fix in ("Use fewer nodes", "a larger epsilon", "method='mcmc_normalX'"):
        assert fix in text
    with pytest.warns(R.NoisyStatsWarning, match=re.escape("method='bayes_fixedS_fast'")):
        R.fit(noisy, "bayes_fixedS_fast", draws=10, rng=np.random.default_rng(0))
    # one node at ε = 50: λ_min(Ŝ) ≈ 1000 against a noise norm ≈ 10 — no warning
    clear = R.release_suff_stats(X, y, epsilon=50.0, n_nodes=1, rng=np.random.default_rng(1), **KW)
    assert R.noise_report(clear)["ratio"][0] > 10 * TRUST_FACTOR
    _no_warning(
        R.NoisyStatsWarning,
        R.fit,
        clear,
        "bayes_fixedS_fast",
        draws=10,
        rng=np.random.default_rng(0),
    )
    # mcmc_normalX models the noise in S: it never warns
    _no_warning(
        R.NoisyStatsWarning,
        R.fit,
        noisy,
        "mcmc_normalX",
        draws=5,
        tune=5,
        chains=1,
        rng=np.random.default_rng(0),
    )


def test_outcome_ordered_split_warns_and_random_split_does_not():
    X, y = _data()
    order = np.argsort(y)
    want = (
        f"the 3 nodes differ in y given X (their least-squares residual means differ beyond "
        f"chance, F test p < {SPLIT_P:g}): release_suff_stats splits rows contiguously"
    )
    with pytest.warns(R.NodeSplitWarning, match=re.escape(want)) as rec:
        R.release_suff_stats(
            X[order], y[order], epsilon=1.0, n_nodes=3, rng=np.random.default_rng(1), **KW
        )
    rev = order[::-1]
    with pytest.warns(R.NodeSplitWarning) as rec2:
        R.release_suff_stats(
            X[rev] * 0.5, y[rev], epsilon=1.0, n_nodes=3, rng=np.random.default_rng(1), **KW
        )
    assert str(rec[0].message) == str(
        rec2[0].message
    )  # other data, same text: no value of the data
    parts = R.random_split(len(y), 3, np.random.default_rng(2))
    assert sorted(np.concatenate(parts)) == list(range(len(y)))
    perm = np.concatenate(parts)
    _no_warning(
        R.NodeSplitWarning,
        R.release_suff_stats,
        X[order][perm],
        y[order][perm],
        epsilon=1.0,
        n_nodes=3,
        rng=np.random.default_rng(1),
        **KW,
    )


def test_merge_releases_is_parallel_composition():
    X, y = _data()
    parts = R.random_split(len(y), 3, np.random.default_rng(3))
    rels = [
        R.release_suff_stats(X[p], y[p], epsilon=1.0, rng=np.random.default_rng(10 + j), **KW)
        for j, p in enumerate(parts)
    ]
    merged = R.merge_releases(rels)
    assert merged.n_nodes == 3 and list(merged.n) == [len(p) for p in parts]
    np.testing.assert_array_equal(merged.S_hat[1], rels[1].S_hat[0])
    np.testing.assert_array_equal(merged.z_hat[2], rels[2].z_hat[0])
    one = float(pdp.privacy_spent(rels[0].dp_event(), delta=1e-5))
    assert float(pdp.privacy_spent(merged.dp_event(), delta=1e-5)) == pytest.approx(one)
    assert merged.epsilon == 1.0
    assert (
        float(pdp.privacy_spent([r.dp_event() for r in rels], delta=1e-5)) > 1.5 * one
    )  # sequential
    other = R.release_suff_stats(
        X[parts[0]], y[parts[0]], epsilon=2.0, rng=np.random.default_rng(0), **KW
    )
    with pytest.raises(
        ValueError, match=re.escape("releases must share sigma_s: releases[0].sigma_s=")
    ):
        R.merge_releases([rels[0], other])
    with pytest.raises(TypeError, match=re.escape("releases[1] must be a SuffStatsRelease")):
        R.merge_releases([rels[0], "x"])
    with pytest.raises(
        ValueError, match=re.escape("releases must hold at least one SuffStatsRelease")
    ):
        R.merge_releases([])


def test_random_split_errors():
    with pytest.raises(
        ValueError, match=re.escape("n_nodes must be an integer with 1 <= n_nodes <= n = 5")
    ):
        R.random_split(5, 6, np.random.default_rng(0))


def test_budget_and_cores_misuse_get_clear_messages():
    X, y = _data(n=300)
    st = R.release_suff_stats(X, y, epsilon=5.0, rng=np.random.default_rng(1), **KW)
    with pytest.raises(
        TypeError,
        match=re.escape("mcmc_fixed_s() does not take cores=; its keyword arguments are:"),
    ) as e:
        R.fit(st, cores=2)
    assert "Drop cores= and set chains=" in str(e.value)
    with pytest.raises(TypeError, match=re.escape("mcmc_fixed_s() does not take budget=;")) as e:
        R.fit(st, budget=1.0)
    assert "fitting the released statistics is post-processing and spends nothing" in str(e.value)
    with pytest.raises(
        TypeError, match=re.escape("release_suff_stats() does not take budget=;")
    ) as e:
        R.release_suff_stats(X, y, x_bound=3.0, y_bound=6.0, budget=1.0, delta=1e-5)
    assert "epsilon=... and delta=... to release_suff_stats" in str(e.value)
    with pytest.raises(TypeError, match=re.escape("adassp() does not take cores=")):
        R.adassp(st, cores=2)


def test_s_noise_error_matches_a_simulation_of_the_noise():
    rng = np.random.default_rng(4)
    d, J, sigma = 3, 2, 5.0
    S_j = np.stack([np.eye(d) * 200 + 20, np.eye(d) * 150 + 10])
    st = R.SuffStatsRelease(
        S_hat=S_j,
        z_hat=np.zeros((J, d)),
        n=[400, 300],
        sigma_s=sigma,
        sigma_z=sigma,
        x_bound=3.0,
        y_bound=6.0,
        epsilon=1.0,
        delta=1e-5,
    )
    theta = np.array([1.0, -2.0, 0.5])
    want = R.trust.s_noise_error(
        st, theta, np.eye(d)
    )  # with unit posterior sd: the error sd itself
    iu = np.triu_indices(d)
    E = np.zeros((20000, d, d))
    for _ in range(J):
        up = rng.normal(0.0, sigma, size=(20000, len(iu[0])))
        M = np.zeros((20000, d, d))
        M[:, iu[0], iu[1]] = up
        M[:, iu[1], iu[0]] = up
        E += M
    shift = np.linalg.solve(S_j.sum(0), (E @ theta).T).T
    np.testing.assert_allclose(shift.std(axis=0), want, rtol=4 / np.sqrt(2 * 20000))


def test_warns_after_the_fit_when_s_noise_moves_theta_by_half_a_posterior_sd():
    rng = np.random.default_rng(0)
    X, y, _ = simulate_regression(2000, 2, rng)
    st = R.release_suff_stats(X, y, epsilon=5.0, n_nodes=3, rng=rng, **KW)
    assert R.noise_report(st)["ratio"].min() > TRUST_FACTOR  # the λ_min rule is silent here
    mean, cov = R.theta_posterior_fixed(st, st.y_bound / 3)
    assert R.trust.s_noise_error(st, mean, cov).max() > R.trust.MAX_S_ERROR
    with pytest.warns(R.NoisyStatsWarning, match=re.escape("the noise in Ŝ (σ_s = ")):
        R.fit(st, "bayes_fixedS_fast", draws=10, rng=rng)
    with pytest.warns(R.NoisyStatsWarning, match=re.escape("posterior sd (rule: at most 0.5")):
        R.fit(st, "mcmc_fixedS", draws=200, tune=100, chains=1, rng=rng)
