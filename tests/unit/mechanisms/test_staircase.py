"""Staircase: its pmf, its privacy map on neighbouring inputs, both exact samplers, accounting,
refusals, and DPObserved under pm.sample against the exact posterior (enumeration)."""

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_dp as pdp


def _weights(r, d, t, half):
    """Unnormalised pmf on -half..half built block by block (independent of the module's φ)."""
    w = {}
    for z in range(-(r - 1), r):
        w[z] = 1.0
    j, start = 1, r
    while start <= half:
        for m in range(start, start + d):
            w[m] = w[-m] = math.exp(-j / t)
        j, start = j + 1, start + d
    zs = np.arange(-half, half + 1)
    return zs, np.array([w.get(int(z), 0.0) for z in zs])


@pytest.mark.parametrize(("eps", "r", "d"), [(1.0, 1, 3), (0.5, 2, 3), (2.0, 3, 4), (1.0, 1, 1)])
def test_pmf_is_the_staircase(eps, r, d):
    mech = pdp.Staircase(epsilon=eps, r=r, sensitivity=d)
    t = mech.step_scale
    zs, w = _weights(r, d, t, half=int(60 * t * d) + 10)
    p = np.exp(mech.logpdf(zs + 7, 7))
    assert p.sum() == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(p, w / w.sum(), rtol=1e-12)
    assert mech.logpdf(0.5, 0) == -np.inf  # integers only
    if d == 1:  # a step of one value: the discrete Laplace pmf
        lap = pdp.DiscreteLaplace(scale=t, sensitivity=1)
        np.testing.assert_allclose(p, np.exp(lap.logpdf(zs + 7, 7)), rtol=1e-12)


@pytest.mark.parametrize(("eps", "r", "d"), [(1.0, 1, 3), (0.3, 2, 3), (2.0, 4, 4)])
def test_privacy_map_on_neighbouring_statistics(eps, r, d):
    """max_y |log P(y|s) - log P(y|s')| is 1/t ≤ ε for |s - s'| ≤ Δ (attained), and 2/t > ε for
    |s - s'| = Δ + 1: Δ is the right neighbouring distance."""
    mech = pdp.Staircase(epsilon=eps, r=r, sensitivity=d)
    t = mech.step_scale
    assert 1.0 / t <= eps and t == pytest.approx(1.0 / eps, rel=1e-15)
    y = np.arange(-40 * d, 40 * d + 1)
    worst = 0.0
    for shift in range(-d, d + 1):
        ratio = np.abs(mech.logpdf(y, 0) - mech.logpdf(y, shift))
        worst = max(worst, ratio.max())
    assert worst == pytest.approx(1.0 / t, rel=1e-12) and worst <= eps * (1 + 1e-12)
    beyond = np.abs(mech.logpdf(y, 0) - mech.logpdf(y, d + 1)).max()
    assert beyond == pytest.approx(2.0 / t, rel=1e-12) and beyond > eps


def _table_loss(mech, table, neighbour):
    """max over outputs of |log P(y | table) - log P(y | neighbour)| for independent staircase
    noise on each cell (the pmf is a product over cells, so the loss is a sum of cell losses)."""
    y = np.arange(-60, 61)
    return sum(
        np.abs(mech.logpdf(y, a) - mech.logpdf(y, b)).max() for a, b in zip(table, neighbour)
    )


@pytest.mark.parametrize("neighbouring", ["add/remove", "replace-one"])
def test_a_table_of_staircase_noises_is_epsilon_dp_only_when_a_neighbour_changes_one_cell(
    neighbouring,
):
    """Cells under add/remove: a person changes one cell by 1, and the worst loss over every
    neighbour of a table is ε: accepted by pdp.release, DPObserved and pdp.intervals alike (a
    2-D table too). Under replace-one a person moves between two cells; the losses of the two
    cells add up to 2ε > ε, so each of the three refuses it (pdp.release accepted a 1-D table
    before and privacy_spent said ε)."""
    eps, table = 1.0, np.array([20, 10, 20])
    statistic = pdp.Cells(neighbouring=neighbouring)
    mech = pdp.Staircase(epsilon=eps, sensitivity=int(statistic.sensitivity(1, n=1, dim=1)))
    if neighbouring == "add/remove":
        shifts = [np.eye(3, dtype=int)[k] * sign for k in range(3) for sign in (1, -1)]
    else:
        shifts = [
            np.eye(3, dtype=int)[i] - np.eye(3, dtype=int)[j]
            for i in range(3)
            for j in range(3)
            if i != j
        ]
    worst = max(_table_loss(mech, table, table + d) for d in shifts)
    if neighbouring == "add/remove":
        assert worst == pytest.approx(eps, rel=1e-12)
        rel = pdp.release(table, statistic, pdp.Staircase(epsilon=eps), rng=0)
        assert float(pdp.privacy_spent(rel, delta=1e-6)) == pytest.approx(eps)
        plain = pdp.intervals(
            np.asarray(rel), mechanism=pdp.Staircase(epsilon=eps), statistic=statistic
        )
        np.testing.assert_array_equal(plain, pdp.intervals(rel))
        with pm.Model():
            c = pm.Poisson("c", 5.0, shape=(2, 3))
            pdp.DPObserved(
                "s",
                c,
                statistic=statistic,
                mechanism=pdp.Staircase(epsilon=eps),
                observed=np.ones((2, 3), int),
            )
        return
    assert worst == pytest.approx(2 * eps, rel=1e-12)
    with pytest.raises(ValueError, match="a neighbour changes up to 2 values"):
        pdp.release(table, statistic, pdp.Staircase(epsilon=eps), rng=0)
    with pytest.raises(ValueError, match="a neighbour changes up to 2 values"):
        pdp.intervals(table, mechanism=pdp.Staircase(epsilon=eps), statistic=statistic)
    with pm.Model(), pytest.raises(ValueError, match="a neighbour changes up to 2 values"):
        c = pm.Poisson("c", 5.0, shape=3)
        pdp.DPObserved(
            "s", c, statistic=statistic, mechanism=pdp.Staircase(epsilon=eps), observed=table
        )


def _chi2_pvalue(draws, mech, centre=0):
    t, d = mech.step_scale, mech.width
    half = mech.flat + int(math.ceil(8 * t)) * d
    zs = np.arange(-half, half + 1)
    p = np.exp(mech.logpdf(zs + centre, centre))
    counts = np.array([(draws == z + centre).sum() for z in zs], dtype=float)
    expected = p * draws.size
    keep = expected >= 5
    obs = np.append(counts[keep], draws.size - counts[keep].sum())
    exp = np.append(expected[keep], draws.size - expected[keep].sum())
    return stats.chisquare(obs, exp).pvalue


def test_exact_sampler_draws_the_pmf():
    mech = pdp.Staircase(epsilon=0.8, r=2, sensitivity=3)
    draws = mech.sample(np.full(40_000, 5, dtype=np.int64), np.random.default_rng(11))
    assert draws.dtype == np.int64
    assert _chi2_pvalue(draws, mech, centre=5) > 1e-4
    # a sampler of the wrong width is detected: the test can fail
    wrong = pdp.Staircase(epsilon=0.8, r=1, sensitivity=3)
    assert _chi2_pvalue(draws, wrong, centre=5) < 1e-10


def test_opendp_sampler_draws_the_pmf():
    """rng=None: OpenDP's discrete Laplace and Bernoulli(1/2); not seeded (secure), so the test
    fails with probability 1e-4 by chance."""
    mech = pdp.Staircase(epsilon=1.0, r=1, sensitivity=3)
    draws = mech.sample(np.zeros(3000, dtype=np.int64))
    assert _chi2_pvalue(draws, mech) > 1e-4


def test_predictive_graph_draws_the_pmf():
    mech = pdp.Staircase(epsilon=0.7, r=2, sensitivity=4)
    draws = pm.draw(mech.random_graph(3, size=30_000), random_seed=5)
    assert _chi2_pvalue(np.asarray(draws), mech, centre=3) > 1e-4


def test_noise_facts():
    mech = pdp.Staircase(epsilon=0.9, r=2, sensitivity=3)
    zs = np.arange(-400, 401)
    p = np.exp(mech.logpdf(zs, 0))
    assert mech.noise_sd == pytest.approx(math.sqrt(np.sum(p * zs**2)), rel=1e-10)
    for log_ratio in (1.0, 5.0, math.log(1e12)):
        w = mech.tail_radius(log_ratio)
        assert p[np.abs(zs) > w].sum() <= math.exp(-log_ratio)
        assert p[np.abs(zs) >= w].max() <= math.exp(-log_ratio) * p.max() * (1 + 1e-12)
    assert mech.gaussian_sd is None and mech.noise_distribution() is None
    assert mech.kernel_code is None
    with pytest.raises(ValueError, match="Staircase has no compiled noise kernel"):
        mech.compiled_kernel()
    assert pdp.Staircase(epsilon=1.0, sensitivity=10).flat == round(10 / (1 + math.exp(0.5)))


def test_release_and_accounting():
    x = np.array([0, 3, 2, 1, 3, 2])
    r = pdp.release(x, pdp.Sum(lower=0, upper=3), pdp.Staircase(epsilon=0.5), rng=3)
    assert r.mechanism.width == 3 and np.asarray(r).dtype.kind == "i"
    assert float(pdp.privacy_spent(r, delta=1e-6)) == 0.5
    lap = pdp.release(x, pdp.Sum(lower=0, upper=3), pdp.Laplace(epsilon=0.25), rng=4)
    both = pdp.privacy_spent([r, lap], delta=1e-6)
    # basic composition: the staircase's ε plus the Laplace release's ε at the same δ (≤ 0.25)
    alone = float(pdp.privacy_spent(lap, delta=1e-6))
    assert 0.24 < alone <= 0.25 and float(both) == pytest.approx(0.5 + alone, rel=1e-12)
    assert both.rho is None


def test_refusals():
    x = np.array([0, 3, 2])
    with pytest.raises(ValueError, match="a neighbour changes up to 2 values"):
        pdp.release(x, pdp.Counts(4), pdp.Staircase(epsilon=1.0), rng=1)
    with pytest.raises(ValueError, match="positive integer sensitivity"):
        pdp.Staircase(epsilon=1.0, sensitivity=2.5)
    with pytest.raises(ValueError, match="r must be at most the sensitivity 3"):
        pdp.Staircase(epsilon=1.0, r=4, sensitivity=3)
    with pytest.raises(ValueError, match="adds integer noise to an integer statistic"):
        pdp.Staircase(epsilon=1.0, sensitivity=1).sample(0.5, np.random.default_rng(0))
    with pm.Model():
        p = pm.Beta("p", 2.0, 2.0)
        recs = pm.Binomial("x", n=3, p=p, shape=4)
        mech = pdp.Staircase(epsilon=1.0)
        pdp.DPObserved("s", recs, statistic=pdp.Sum(lower=0, upper=3), mechanism=mech, observed=6)
        with pytest.raises(ValueError, match="Staircase has no compiled noise kernel"):
            pdp.DataAugmentation([recs])


def test_dpobserved_posterior_matches_enumeration():
    """p ~ Beta(2, 2), six Binomial(3, p) records, their sum released with Staircase(ε=1, r=2,
    Δ=3). Exactly: S ~ BetaBinomial(18, 2, 2) a priori and
    E[p | s] = Σ_S w_S (2 + S)/22 with w_S ∝ P(s - S) C(18, S) B(2 + S, 20 - S)."""
    n, s_dp = 6, 12
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        x = pm.Binomial("x", n=3, p=p, shape=n)
        mech = pdp.Staircase(epsilon=1.0, r=2)
        pdp.DPObserved("s", x, statistic=pdp.Sum(lower=0, upper=3), mechanism=mech, observed=s_dp)
        pm.Deterministic("S", x.sum())
    bound = pdp.Staircase(epsilon=1.0, r=2, sensitivity=3)
    S = np.arange(3 * n + 1)
    log_w = (
        bound.logpdf(s_dp, S)
        + np.log(special.comb(3 * n, S))
        + special.betaln(2 + S, 2 + 3 * n - S)
    )
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    exact_p = float(np.sum(w * (2 + S) / (4 + 3 * n)))
    exact_s = float(np.sum(w * S))
    idata = pm.sample(
        draws=1000,
        tune=500,
        chains=2,
        cores=1,
        random_seed=21,
        progressbar=False,
        compute_convergence_checks=False,
        model=model,
    )
    for name, exact in (("p", exact_p), ("S", exact_s)):
        mean = float(idata.posterior[name].mean())
        mcse = float(az.mcse(idata, var_names=[name])[name])
        assert abs(mean - exact) < 4 * mcse, (name, mean, exact, mcse)
    # the prior mean of S is 9; the release at 12 moves it by more than twice the 4-MCSE
    # tolerance, so a sampler that ignored the release would fail the check above
    assert abs(exact_s - 9.0) > 8 * float(az.mcse(idata, var_names=["S"])["S"])


def test_intervals_and_marginalize_use_its_facts():
    """Code that asks the mechanism works for it unchanged: intervals (tail_radius, logpdf) and
    the collapsed likelihood (logpdf) against the enumerated posterior of the sum."""
    mech = pdp.Staircase(epsilon=1.0, r=2)
    x = np.array([2, 0, 3, 1, 3])
    rel = pdp.release(x, pdp.Sum(lower=0, upper=3), mech, rng=8)
    lo, hi = pdp.intervals(rel, prob=0.9, kind="posterior")
    lo_b, hi_b = pdp.intervals(rel, prob=0.9)  # default: also a Neyman interval (integer noise)
    assert lo_b <= lo and hi <= hi_b
    grid = np.arange(0, 16)
    post = np.exp(rel.mechanism.logpdf(float(rel), grid))
    cdf = np.cumsum(post / post.sum())
    assert lo == grid[np.argmax(cdf >= 0.05 * (1 - 1e-12))]
    assert hi == grid[np.argmax(cdf >= 0.95 * (1 - 1e-12))]
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        recs = pm.Binomial("x", n=3, p=p, shape=5)
        pdp.DPObserved("s", recs, statistic=pdp.Sum(lower=0, upper=3), mechanism=mech, observed=9)
    collapsed = pdp.marginalize(model)
    ps = np.array([0.2, 0.5, 0.7])
    logp_fn = collapsed.compile_logp(vars=[collapsed["s"]], sum=True)
    got = [logp_fn({"p_logodds__": np.log(q / (1 - q))}) for q in ps]
    S = np.arange(16)
    bound = pdp.Staircase(epsilon=1.0, r=2, sensitivity=3)
    want = [special.logsumexp(bound.logpdf(9, S) + stats.binom(15, q).logpmf(S)) for q in ps]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_a_huge_epsilon_calibrates_without_overflow():
    """ε ≥ 1420 raised a bare OverflowError (e^{ε/2} in the flat width)."""
    import pymc_dp as pdp

    x = np.ones(10, dtype=int)
    for eps in (1500.0, 1e300):
        r = pdp.release(x, pdp.Sum(0, 1), pdp.Staircase(epsilon=eps), rng=1)
        assert float(r) == 10.0 and np.isfinite(r.mechanism.log_normaliser)
