"""Median / Max statistics and SmoothLaplace: smooth sensitivity vs brute force, densities, errors."""

import itertools
import math
import re

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.statistics.order import order_smooth_sensitivity


def _brute_smooth_sensitivity(f, domain, n, beta):
    """S*_β(x) = max_k e^{-kβ} max_{d(x,y) <= k} LS(y) for every x in domain^n (Nissim et al. 2007)."""
    tuples = list(itertools.product(domain, repeat=n))
    index = {t: i for i, t in enumerate(tuples)}
    vals = np.array([f(np.array(t)) for t in tuples])
    neighbours = []
    for t in tuples:
        nb = []
        for i in range(n):
            for v in domain:
                if v != t[i]:
                    nb.append(index[t[:i] + (v,) + t[i + 1 :]])
        neighbours.append(np.array(nb))
    ls = np.array([np.abs(vals[nb] - vals[j]).max() for j, nb in enumerate(neighbours)])
    a_k = ls.copy()  # A^(k)(x) = max_{d(x,y)<=k} LS(y), built by one-step expansions
    smooth = a_k.copy()
    for k in range(1, n + 1):
        a_k = np.array([max(a_k[j], a_k[nb].max()) for j, nb in enumerate(neighbours)])
        smooth = np.maximum(smooth, math.exp(-k * beta) * a_k)
    return tuples, smooth


@pytest.mark.parametrize("n", [3, 4])
@pytest.mark.parametrize("beta", [0.1, 0.7])
@pytest.mark.parametrize("which", ["median", "max"])
def test_smooth_sensitivity_formula_matches_brute_force(n, beta, which):
    domain = [0, 1, 2, 3]
    stat = pdp.Median(0, 3) if which == "median" else pdp.Max(0, 3)
    m = stat.rank(n)
    tuples, brute = _brute_smooth_sensitivity(lambda x: np.sort(x)[m - 1], domain, n, beta)
    formula = np.array([order_smooth_sensitivity(np.array(t, float), m, 3.0, beta) for t in tuples])
    np.testing.assert_allclose(formula, brute, rtol=1e-12)


def test_smooth_sensitivity_graph_matches_numpy_and_shift():
    x = np.array([-1.0, 4.5, 2.0, 0.3, 9.0, 1.1, 2.2])
    for stat in (pdp.Median(-2, 5), pdp.Max(-2, 5)):
        graph = stat.smooth_sensitivity(pt.as_tensor(x), beta=0.3).eval()
        shifted = np.clip(x, -2, 5) + 2
        direct = order_smooth_sensitivity(shifted, stat.rank(7), 7.0, 0.3)
        assert graph == pytest.approx(direct, rel=1e-12)
        assert stat.smooth_sensitivity_np(x, 0.3) == pytest.approx(direct, rel=1e-12)
    assert float(pdp.Median(-2, 5)(pt.as_tensor(x)).eval()) == 2.0
    assert float(pdp.Max(-2, 5)(pt.as_tensor(x)).eval()) == 5.0


def test_smooth_laplace_parameters_and_density():
    mech = pdp.SmoothLaplace(epsilon=5.0, delta=1e-4)
    assert mech.alpha == 2.5
    assert mech.beta == pytest.approx(5.0 / (2 * math.log(2e4)))
    r, s, b = np.array([0.3, -2.0]), np.array([1.0, 0.0]), np.array([0.4, 2.0])
    np.testing.assert_allclose(mech.logpdf(r, s, b), stats.laplace.logpdf(r, s, b), rtol=1e-12)
    graph = mech.logp(pt.as_tensor(r), pt.as_tensor(s), pt.as_tensor(b)).eval()
    np.testing.assert_allclose(graph, stats.laplace.logpdf(r, s, b), rtol=1e-12)


def test_release_uses_the_records_smooth_sensitivity():
    x = np.array([0.2, 1.5, 2.5, 0.9, 3.9])
    stat, mech = pdp.Median(0, 4), pdp.SmoothLaplace(epsilon=2.0, delta=0.01)
    got = pdp.release(x, statistic=stat, mechanism=mech, rng=np.random.default_rng(3))
    scale = stat.smooth_sensitivity_np(x, mech.beta) / mech.alpha
    want = mech.sample(
        1.5, np.random.default_rng(3), scale=scale
    )  # exact lattice sampler, same seed
    assert float(got) == pytest.approx(want, rel=1e-12)


def test_dpobserved_density_with_smooth_laplace():
    n = 5
    stat, mech = pdp.Max(0, 4), pdp.SmoothLaplace(epsilon=2.0, delta=0.01)
    with pm.Model() as model:
        x = pm.Normal("x", 1.0, 1.0, shape=n)
        pdp.DPObserved("s", x, statistic=stat, mechanism=mech, observed=2.0)
    xv = np.array([0.2, 1.5, 2.5, 0.9, 5.0])
    fn = model.compile_fn(model.logp(vars=[model["s"]]), inputs=[model.rvs_to_values[x]])
    scale = stat.smooth_sensitivity_np(xv, mech.beta) / mech.alpha
    assert float(fn({"x": xv})) == pytest.approx(stats.laplace.logpdf(2.0, 4.0, scale), rel=1e-10)
    draws = pm.draw(model["s"], draws=2, random_seed=1)
    assert draws.shape == (2,)


def test_data_augmentation_refuses_median():
    with pm.Model():
        x = pm.Normal("x", 1.0, 1.0, shape=4)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Median(0, 4),
            mechanism=pdp.SmoothLaplace(epsilon=2.0, delta=0.01),
            observed=2.0,
        )
        with pytest.raises(ValueError, match=re.escape("needs record-additive statistics")):
            pdp.DataAugmentation([x])


def test_bad_inputs():
    with pytest.raises(
        ValueError, match=re.escape("Median needs declared bounds lower and upper, got lower=None")
    ):
        pdp.Median(None, None)
    with pytest.raises(
        ValueError, match=re.escape("delta must lie in the open interval (0, 1), got delta=2")
    ):
        pdp.SmoothLaplace(epsilon=1.0, delta=2)
    with pytest.raises(
        ValueError, match=re.escape("does not provide one. Use pdp.Median(lower, upper)")
    ):
        with pm.Model():
            x = pm.Normal("x", shape=3)
            pdp.DPObserved(
                "s",
                x,
                statistic=pdp.Sum(0, 1),
                mechanism=pdp.SmoothLaplace(epsilon=1.0, delta=0.1),
                observed=1.0,
            )
