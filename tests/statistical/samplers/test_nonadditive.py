"""``pm.sample()`` on a Median release (issue 17): NonAdditiveRoute is exact (slow tier)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.mc import assert_mc_close
from tests.support.sampling import sample
from tests.support.zoo import by_name


@pytest.mark.slow
@pytest.mark.parametrize("route", ["auto", "both"])
def test_median_laplace_default_route_exact(route):
    """Median(1, 4) of 9 N(mu, 1) records + Laplace: the order statistic's density in closed form
    against pm.sample() (auto: the trial's choice; both: NUTS then MHAAR)."""
    import pymc_dp as pdp

    model, exact, _ = by_name("normal_median_laplace").build()
    step = None
    if route != "auto":
        step = lambda: pdp.NonAdditiveRoute([model["mu"], model["x"]], route=route)  # noqa: E731
    idata = sample(model, step, draws=600, tune=500, seed=5)  # ESS ~240 (2 chains)
    mean, sd = exact["mu"]
    assert_mc_close(idata.posterior["mu"].values, mean, sd, label=f"median route={route}")
    if route == "auto":
        assert np.all(idata.sample_stats["dp_route"].values[:, -1] > 0)


@pytest.mark.slow
def test_median_of_discrete_records_default_route_is_mhaar_and_exact():
    """Median(0, 10) of 5 Poisson(λ) records + Laplace: pm.sample() left the records to PyMC's
    Metropolis (ESS/draw 0.02, with a warning); NonAdditiveRoute now takes them with MHAAR
    alone (NUTS cannot move discrete records). Exact: the median's law given λ (at least 3 of the
    5 records at or below m) on a λ grid."""
    import pymc as pm
    from scipy import stats

    import pymc_dp as pdp
    from tests.support.sampling import assigned

    n, release = 5, 2.0
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2, 1)
        x = pm.Poisson("x", lam, shape=n)
        pdp.DPObserved(
            "s", x, statistic=pdp.Median(0, 10), mechanism=pdp.Laplace(epsilon=1), observed=release
        )
    assert assigned(model) == {"NonAdditiveRoute": ["lam_log__", "x"]}
    mech = pdp.dp_nodes(model)["s"].mechanism
    grid = np.linspace(1e-4, 15.0, 6001)
    m = np.arange(11)
    cdf = stats.poisson.cdf(m[None, :], grid[:, None])
    cdf[:, -1] = 1.0  # medians above 10 are clamped to 10
    at_most = stats.binom.sf(2, n, cdf)  # P(median <= m): at least 3 of 5 at or below m
    pmf = np.diff(np.concatenate([np.zeros((grid.size, 1)), at_most], axis=1), axis=1)
    lik = pmf @ np.exp(mech.logpdf(release, m.astype(float)))
    w = stats.gamma.pdf(grid, 2) * lik
    w /= w.sum()
    mean = float(np.sum(w * grid))  # 1.954, as an independent computation of the same law gave
    sd = float(np.sqrt(np.sum(w * (grid - mean) ** 2)))
    idata = sample(model, None, draws=1000, tune=500, seed=3)
    assert_mc_close(idata.posterior["lam"].values, mean, sd, label="median of Poisson records")
    assert np.all(idata.sample_stats["dp_route"].values == 2)  # MHAAR every iteration


@pytest.mark.slow
def test_median_of_geometric_records_under_smooth_laplace_exact():
    """Median(1, 4) of 3 Geometric(p) records under SmoothLaplace (noise scaled by the records'
    smooth sensitivity), sampled by NonAdditiveRoute's MHAAR. Exact: the release depends on the
    records through their clamped values in {1, 2, 3, 4} only: its density at each of the 4³
    clamped triples (the model's own logp of the release), weighted by their law given p, on a
    p grid."""
    import itertools

    from scipy import stats

    from tests.support.models import geometric_median_model

    model = geometric_median_model()
    dens = model.compile_logp(vars=[model["s"]])
    start = model.initial_point()
    grid = np.linspace(1e-4, 1 - 1e-4, 4001)
    pk = np.stack([stats.geom.pmf(k, grid) for k in (1, 2, 3)] + [stats.geom.sf(3, grid)], axis=1)
    lik = np.zeros_like(grid)
    for triple in itertools.product(range(4), repeat=3):
        ll = dens({**start, "x": np.array(triple) + 1})
        lik += np.exp(ll) * pk[:, triple[0]] * pk[:, triple[1]] * pk[:, triple[2]]
    w = stats.beta.pdf(grid, 2, 2) * lik
    w /= w.sum()
    mean = float(np.sum(w * grid))
    sd = float(np.sqrt(np.sum(w * (grid - mean) ** 2)))
    idata = sample(model, None, draws=1000, tune=500, seed=4)
    assert_mc_close(idata.posterior["p"].values, mean, sd, label="median of Geometric records")
