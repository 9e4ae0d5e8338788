"""Regression release: the replace-one sensitivity against a search over worst-case neighbours."""

import functools
import math
import re

import numpy as np
import pytest
from scipy import optimize

from pymc_dp import regression as R
from pymc_dp.regression.release import adassp_sensitivities


def _phi(x, y, *, yty):
    """What one record contributes to the released vector: (triu(x xᵀ), x y[, y²])."""
    d = x.shape[-1]
    iu = np.triu_indices(d)
    parts = [(x[..., :, None] * x[..., None, :])[..., iu[0], iu[1]], x * y[..., None]]
    if yty:
        parts.append((y * y)[..., None])
    return np.concatenate(parts, axis=-1)


@functools.lru_cache
def _worst_replace_one(d, xb, yb, *, yty=False, seed=0):
    """Largest ‖φ(x, y) − φ(x', y')‖ found: random rows (inside and on the boundary of the norm
    balls), adversarial constructions, and local maximisation from random starts."""
    rng = np.random.default_rng(seed)
    m = 10_000
    u = rng.normal(size=(2, m, d))
    radius = np.where(
        rng.uniform(size=(2, m, 1)) < 0.5, 1.0, rng.uniform(size=(2, m, 1)) ** (1 / d)
    )
    x = xb * radius * u / np.linalg.norm(u, axis=-1, keepdims=True)
    y = yb * np.where(
        rng.uniform(size=(2, m)) < 0.5,
        rng.choice([-1.0, 1.0], size=(2, m)),
        rng.uniform(-1, 1, size=(2, m)),
    )
    best = np.linalg.norm(_phi(x[0], y[0], yty=yty) - _phi(x[1], y[1], yty=yty), axis=-1).max()
    # adversarial: x' = -x (only Xᵀy moves), and x = (p, q), x' = -(q, p) with pq = ‖Y‖²/4
    e = np.zeros(d)
    e[0] = xb
    f = np.zeros(d)
    f[1] = xb
    cands = [(e, yb, -e, yb), (e, yb, np.zeros(d), 0.0), (e, yb, f, 0.0)]
    pq = min(yb**2 / 4, xb**2 / 2)
    s = math.sqrt(xb**2 + 2 * pq)
    t = math.sqrt(max(xb**2 - 2 * pq, 0.0))
    p, q = (s + t) / 2, (s - t) / 2
    a = np.zeros(d)
    b = np.zeros(d)
    a[:2], b[:2] = (p, q), (-q, -p)
    cands.append((a, yb, b, yb))
    for x1, y1, x2, y2 in cands:
        diff = _phi(x1, np.float64(y1), yty=yty) - _phi(x2, np.float64(y2), yty=yty)
        best = max(best, np.linalg.norm(diff))

    def neg(v):
        x1 = xb * math.tanh(np.linalg.norm(v[:d])) * v[:d] / max(np.linalg.norm(v[:d]), 1e-300)
        x2 = (
            xb
            * math.tanh(np.linalg.norm(v[d : 2 * d]))
            * v[d : 2 * d]
            / max(np.linalg.norm(v[d : 2 * d]), 1e-300)
        )
        y1, y2 = yb * np.tanh(v[2 * d :])
        diff = _phi(x1, np.float64(y1), yty=yty) - _phi(x2, np.float64(y2), yty=yty)
        return -float(diff @ diff)

    for _ in range(6):
        res = optimize.minimize(neg, rng.normal(scale=2.0, size=2 * d + 2), method="L-BFGS-B")
        best = max(best, math.sqrt(-res.fun))
    return best


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("xb, yb", [(1.0, 1.0), (1.0, 2.0), (3.0, 1.0)])
def test_replace_one_sensitivity_is_an_attained_upper_bound(d, xb, yb):
    delta = R.suff_stat_sensitivity(xb, yb)
    found = _worst_replace_one(d, xb, yb)
    assert found <= delta * (1 + 1e-9)
    assert found >= delta * (1 - 1e-4)


@pytest.mark.parametrize("xb, yb", [(1.0, 1.0), (2.0, 3.0), (3.0, 1.0)])
def test_replace_one_sensitivity_with_yty_is_an_attained_upper_bound(xb, yb):
    delta = R.suff_stat_sensitivity(xb, yb, include_yty=True)
    found = _worst_replace_one(2, xb, yb, yty=True)
    assert found <= delta * (1 + 1e-9)
    assert found >= delta * (1 - 1e-4)


def test_add_remove_calibration_is_too_small_for_replace_one():
    """The issue's numbers: ‖X‖ = ‖Y‖ = 1 moves the vector by 2.12 under replace-one, not 1.41."""
    found = _worst_replace_one(2, 1.0, 1.0)
    assert R.suff_stat_sensitivity(1.0, 1.0, neighbouring="add-remove") == pytest.approx(
        math.sqrt(2)
    )
    assert found == pytest.approx(math.sqrt(4.5), rel=1e-4)
    assert R.suff_stat_sensitivity(1.0, 1.0) == pytest.approx(math.sqrt(4.5), rel=1e-12)


def test_adassp_replace_one_sensitivities_are_attained():
    xb, yb, d = 2.0, 3.0, 3
    ss, sz, sl = adassp_sensitivities(xb, yb)
    iu = np.triu_indices(d)
    e1, e2 = np.eye(d)[0] * xb, np.eye(d)[1] * xb
    assert np.linalg.norm((np.outer(e1, e1) - np.outer(e2, e2))[iu]) == pytest.approx(ss)
    assert np.linalg.norm(e1 * yb - e1 * (-yb)) == pytest.approx(sz)
    rng = np.random.default_rng(3)
    u = rng.normal(size=(2, 20_000, d))
    x = xb * u / np.linalg.norm(u, axis=-1, keepdims=True)
    moves_s = np.linalg.norm(
        (x[0][:, :, None] * x[0][:, None, :] - x[1][:, :, None] * x[1][:, None, :])[
            :, iu[0], iu[1]
        ],
        axis=1,
    )
    assert moves_s.max() <= ss * (1 + 1e-12)
    # λ_min moves by at most ‖x xᵀ − x' x'ᵀ‖₂ ≤ ‖X‖² (Weyl)
    S = rng.normal(size=(d, d))
    S = S @ S.T
    lam = [
        np.linalg.eigvalsh(S + np.outer(a, a) - np.outer(b, b))[0]
        for a, b in zip(x[0][:500], x[1][:500])
    ]
    assert np.max(np.abs(np.asarray(lam) - np.linalg.eigvalsh(S)[0])) <= sl + 1e-9


def test_release_states_its_relation_and_refuses_add_remove():
    rng = np.random.default_rng(0)
    X, y = rng.uniform(-0.5, 0.5, size=(20, 2)), rng.uniform(-1, 1, size=20)
    st = R.release_suff_stats(X, y, x_bound=1.0, y_bound=1.0, epsilon=1.0, delta=1e-5, rng=1)
    assert st.neighbouring == "replace-one"
    # replace-one sensitivity at a = b = 1: sqrt(2a² + 2ab + b²/2) = sqrt(4.5), above add/remove's sqrt(2)
    from pymc_dp.mechanisms import analytic_gaussian_sigma

    analytic = analytic_gaussian_sigma(
        1.0, 1e-5, math.sqrt(4.5)
    )  # raised ≤ 1e-6 for the accountant
    assert analytic <= st.sigma_s == pytest.approx(analytic, rel=1e-6)
    assert st.sigma_s > 1.4 * analytic_gaussian_sigma(1.0, 1e-5, math.sqrt(2.0))
    with pytest.raises(
        ValueError,
        match=re.escape(
            "neighbouring='add-remove' is refused: under add/remove the node sizes n_j are private"
        ),
    ):
        R.release_suff_stats(
            X, y, x_bound=1.0, y_bound=1.0, epsilon=1.0, delta=1e-5, neighbouring="add-remove"
        )
    with pytest.raises(
        ValueError,
        match=re.escape(
            "neighbouring must be one of ('replace-one', 'add-remove'), got neighbouring='bounded'"
        ),
    ):
        R.release_suff_stats(
            X, y, x_bound=1.0, y_bound=1.0, epsilon=1.0, delta=1e-5, neighbouring="bounded"
        )


@pytest.mark.parametrize("scheme", ["sz", "szu", "adassp"])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0, 10.0])
def test_privacy_spent_of_a_release_never_exceeds_the_requested_epsilon(scheme, epsilon):
    """Like every mechanism (docs/privacy.md, "Calibration agrees with the accountant"): the
    analytic σ alone was reported at 1.0000000227 for ε = 1 by the default accountant."""
    import pymc_dp as pdp

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.7, 0.7, (40, 2))
    y = rng.uniform(-1, 1, 40)
    stats = R.release_suff_stats(
        X, y, x_bound=1, y_bound=1, epsilon=epsilon, delta=1e-5, scheme=scheme, rng=1
    )
    assert float(pdp.privacy_spent(stats.dp_event(), delta=1e-5)) <= epsilon


def _small_release():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 2)) / 1.5
    y = np.clip(X @ [1.0, -1.0] + 0.3 * rng.normal(size=300), -3, 3)
    return R.release_suff_stats(X, y, x_bound=1.0, y_bound=3.0, epsilon=2.0, delta=1e-5, rng=1)


def test_a_hand_built_release_refuses_a_non_symmetric_s_hat():
    # the released upper triangle alone (zeros below) was averaged with its transpose: every
    # off-diagonal entry halved, silently
    rel = _small_release()
    kw = dict(
        z_hat=rel.z_hat,
        n=rel.n,
        sigma_s=rel.sigma_s,
        sigma_z=rel.sigma_z,
        x_bound=1.0,
        y_bound=3.0,
        epsilon=2.0,
        delta=1e-5,
    )
    with pytest.raises(ValueError, match=re.escape("S_hat must be symmetric")):
        R.SuffStatsRelease(S_hat=np.triu(rel.S_hat), **kw)
    upper = np.triu(rel.S_hat)
    mirrored = upper + np.swapaxes(np.triu(rel.S_hat, 1), -1, -2)
    np.testing.assert_array_equal(R.SuffStatsRelease(S_hat=mirrored, **kw).S_hat, rel.S_hat)
    with pytest.raises(ValueError, match=re.escape("n must hold J=1 positive integer node sizes")):
        R.SuffStatsRelease(S_hat=rel.S_hat, **{**kw, "n": ["300"]})


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_prior_mean_is_refused(bad):
    rel = _small_release()
    with pytest.raises(ValueError, match=re.escape("prior m must be finite")):
        R.fit(rel, "bayes_fixedS_fast", prior=R.RegressionPrior(m=np.array([bad, 0.0])), rng=1)


def test_fit_arguments_get_named_errors():
    rel = _small_release()
    fit = R.fit(rel, "bayes_fixedS_fast", rng=1)
    with pytest.raises(ValueError, match=re.escape("prob must be a number strictly between 0")):
        fit.interval(95)
    with pytest.raises(ValueError, match=re.escape("X_test must have 2 columns")):
        fit.predict(np.ones((4, 3)))
    assert fit.predict(np.ones((4, 2))).shape == (4,)
    for bad in ("0.5", np.array([0.5])):
        with pytest.raises(TypeError, match=re.escape("sigma2_y must be a number")):
            R.fit(rel, "bayes_fixedS_fast", sigma2_y=bad, rng=1)
