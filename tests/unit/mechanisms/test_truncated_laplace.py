"""TruncatedDiscreteLaplace: its pmf, its (ε, δ) on neighbouring inputs by enumeration (the
radius is the smallest that meets δ), both exact samplers, accounting, refusals, and DPObserved
under pm.sample and the collapsed likelihood against the exact posterior (enumeration)."""

import math
from fractions import Fraction

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pymc_dp as pdp

CASES = [(1.0, 1e-3, 1), (0.5, 1e-2, 3), (2.0, 1e-6, 2), (0.1, 0.2, 1)]


def _pmf(t, radius, half):
    """pmf on -half..half built from its definition, independently of the module."""
    zs = np.arange(-half, half + 1)
    w = np.where(np.abs(zs) <= radius, np.exp(-np.abs(zs) / t), 0.0)
    return zs, w / w.sum()


def _hockey_stick(p, q, eps):
    """sup_S P(S) - e^ε Q(S) = Σ_y max(0, p(y) - e^ε q(y))."""
    return float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))


@pytest.mark.parametrize(("eps", "delta", "d"), CASES)
def test_pmf_is_the_truncated_discrete_laplace(eps, delta, d):
    mech = pdp.TruncatedDiscreteLaplace(epsilon=eps, delta=delta, sensitivity=d)
    t, a = mech.noise_scale, mech.radius
    assert Fraction(t) * Fraction(eps) >= d and t == pytest.approx(d / eps, rel=1e-15)
    zs, want = _pmf(t, a, a + 5)
    got = np.exp(mech.logpdf(zs + 7, 7))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    assert got.sum() == pytest.approx(1.0, rel=1e-12)
    assert mech.logpdf(7 + a + 1, 7) == -np.inf and np.isfinite(mech.logpdf(7 + a, 7))
    assert mech.logpdf(0.5, 0) == -np.inf  # integers only
    import pytensor.tensor as pt

    value = pt.dvector("v")
    logp = mech.logp(value, 7).eval({value: (zs + 7).astype(float)})
    np.testing.assert_allclose(logp, mech.logpdf(zs + 7, 7), rtol=1e-13)


@pytest.mark.parametrize(("eps", "delta", "d"), CASES)
def test_privacy_by_enumeration_on_neighbouring_statistics(eps, delta, d):
    """The hockey-stick divergence at e^ε between s and every s' with |s - s'| ≤ Δ is at most
    δ(A) ≤ delta, δ(A) is attained (so the stated δ is exact), and the radius A - 1 would miss
    delta (A is the smallest). Where both pmfs are positive the log ratio is at most Δ/t ≤ ε."""
    mech = pdp.TruncatedDiscreteLaplace(epsilon=eps, delta=delta, sensitivity=d)
    t, a = mech.noise_scale, mech.radius
    half = a + d + 2
    zs, p = _pmf(t, a, half)
    worst = 0.0
    for k in range(1, d + 1):
        q = np.roll(p, k)  # the pmf of the release given s + k on the same grid
        worst = max(worst, _hockey_stick(p, q, eps), _hockey_stick(q, p, eps))
        both = (p > 0) & (q > 0)
        assert np.max(np.abs(np.log(p[both]) - np.log(q[both]))) <= d / t * (1 + 1e-12)
    eps_used, delta_used = mech.epsilon_delta
    assert eps_used == eps and delta_used == pytest.approx(worst, rel=1e-9) and worst <= delta
    if a > d:  # the radius is the smallest meeting delta
        _, p1 = _pmf(t, a - 1, half)
        assert _hockey_stick(p1, np.roll(p1, d), eps) > delta
    # a vector under an L1 sensitivity: two coordinates moved by (k, d - k) stay within δ(A)
    for k in range(d + 1):
        joint = np.outer(p, p)
        moved = np.outer(np.roll(p, k), np.roll(p, d - k))
        assert _hockey_stick(joint, moved, eps) <= delta_used * (1 + 1e-9)


def _chi2_pvalue(draws, mech, centre=0):
    zs = np.arange(-mech.radius, mech.radius + 1)
    p = np.exp(mech.logpdf(zs + centre, centre))
    assert np.all((draws >= centre - mech.radius) & (draws <= centre + mech.radius))
    counts = np.array([(draws == z + centre).sum() for z in zs], dtype=float)
    expected = p * draws.size
    keep = expected >= 5
    obs, exp = counts[keep], expected[keep]
    if draws.size - exp.sum() > 1e-6 * draws.size:  # the pooled small cells, if any
        obs = np.append(obs, draws.size - obs.sum())
        exp = np.append(exp, draws.size - exp.sum())
    return stats.chisquare(obs, exp).pvalue


def test_exact_sampler_draws_the_pmf():
    """δ = 0.2: about a fifth of the discrete Laplace draws fall beyond the radius and are drawn
    again, so a sampler that clipped them to ±A (or kept them) would fail."""
    mech = pdp.TruncatedDiscreteLaplace(epsilon=0.5, delta=0.2, sensitivity=1)
    draws = mech.sample(np.full(40_000, 5, dtype=np.int64), np.random.default_rng(11))
    assert draws.dtype == np.int64
    assert _chi2_pvalue(draws, mech, centre=5) > 1e-4
    clipped = 5 + np.clip(
        pdp.DiscreteLaplace(scale=mech.noise_scale, sensitivity=1).sample(
            np.zeros(40_000, dtype=np.int64), np.random.default_rng(11)
        ),
        -mech.radius,
        mech.radius,
    )
    assert _chi2_pvalue(clipped, mech, centre=5) < 1e-10


def test_opendp_sampler_draws_the_pmf():
    """rng=None: OpenDP's discrete Laplace; not seeded (secure), so the test fails with
    probability 1e-4 by chance."""
    mech = pdp.TruncatedDiscreteLaplace(epsilon=0.5, delta=0.2, sensitivity=1)
    draws = mech.sample(np.zeros((50, 60), dtype=np.int64))
    assert draws.shape == (50, 60) and draws.dtype == np.int64
    assert _chi2_pvalue(draws.ravel(), mech) > 1e-4


def test_predictive_graph_draws_the_pmf():
    mech = pdp.TruncatedDiscreteLaplace(epsilon=0.7, delta=0.05, sensitivity=2)
    draws = pm.draw(mech.random_graph(3, size=30_000), random_seed=5)
    assert _chi2_pvalue(np.asarray(draws), mech, centre=3) > 1e-4


@pytest.mark.parametrize(("eps", "delta", "d"), [*CASES, (0.01, 1e-6, 1)])
def test_noise_facts(eps, delta, d):
    mech = pdp.TruncatedDiscreteLaplace(epsilon=eps, delta=delta, sensitivity=d)
    zs, p = _pmf(mech.noise_scale, mech.radius, mech.radius)
    assert mech.noise_sd == pytest.approx(math.sqrt(np.sum(p * zs**2)), rel=1e-9)
    for log_ratio in (1.0, 5.0, math.log(1e12)):
        w = mech.tail_radius(log_ratio)
        assert w <= mech.radius
        assert p[np.abs(zs) > w].sum() <= math.exp(-log_ratio)
        assert p[np.abs(zs) >= w].max() <= math.exp(-log_ratio) * p.max() * (1 + 1e-12) or (
            w == mech.radius
        )
    assert mech.noise_radius() == mech.radius
    assert mech.gaussian_sd is None and mech.noise_distribution() is None
    assert mech.epsilon_spent is None and mech.rho_spent is None
    with pytest.raises(ValueError, match="TruncatedDiscreteLaplace has no compiled noise kernel"):
        mech.compiled_kernel()


def test_release_intervals_and_accounting():
    x = np.array([0, 3, 2, 1, 3, 2])
    mech = pdp.TruncatedDiscreteLaplace(epsilon=0.5, delta=1e-6)
    r = pdp.release(x, pdp.Sum(lower=0, upper=3), mech, rng=3)
    bound = r.mechanism
    assert bound.width == 3 and np.asarray(r).dtype.kind == "i"
    assert abs(int(r) - 11) <= bound.radius
    eps, dlt = bound.epsilon_delta
    assert eps == 0.5 and 0 < dlt <= 1e-6
    assert float(pdp.privacy_spent(r, delta=1e-5)) == 0.5
    lap = pdp.release(x, pdp.Sum(lower=0, upper=3), pdp.Laplace(epsilon=0.25), rng=4)
    both = pdp.privacy_spent([r, lap], delta=1e-5)
    # basic composition: ε adds up and the truncation's δ(A) is taken out of the δ given
    alone = float(pdp.privacy_spent(lap, delta=1e-5 - dlt))
    assert float(both) == pytest.approx(0.5 + alone, rel=1e-12)
    with pytest.raises(
        ValueError,
        match=r"without a dp_accounting event \(a Release of Sum\(.*\) by TruncatedDiscreteLaplace\)",
    ):
        pdp.privacy_spent(r, delta=dlt / 2)
    with pytest.raises(ValueError, match="delta=0 asks for pure epsilon-DP"):
        pdp.privacy_spent(r, delta=0)
    # intervals ask the mechanism: the posterior of the sum never leaves release ± A
    lo, hi = pdp.intervals(r, prob=0.999, kind="posterior")
    assert int(r) - bound.radius <= lo <= hi <= int(r) + bound.radius


def test_refusals():
    with pytest.raises(ValueError, match="positive integer sensitivity"):
        pdp.TruncatedDiscreteLaplace(epsilon=1.0, delta=1e-6, sensitivity=2.5)
    with pytest.raises(ValueError, match="delta must lie in the open interval"):
        pdp.TruncatedDiscreteLaplace(epsilon=1.0, delta=0.0)
    with pytest.raises(ValueError, match="epsilon must be finite and > 0"):
        pdp.TruncatedDiscreteLaplace(epsilon=-1.0, delta=1e-6)
    with pytest.raises(ValueError, match="beyond the int64 releases"):
        pdp.TruncatedDiscreteLaplace(epsilon=1e-15, delta=1e-300, sensitivity=1000)
    with pytest.raises(ValueError, match="adds integer noise to an integer statistic"):
        pdp.TruncatedDiscreteLaplace(epsilon=1.0, delta=1e-6, sensitivity=1).sample(
            0.5, np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="needs a positive integer sensitivity"):
        pdp.release(
            np.array([0.5, 0.2]),
            pdp.Mean(lower=0, upper=1),
            pdp.TruncatedDiscreteLaplace(epsilon=1.0, delta=1e-6),
            rng=1,
        )
    with pm.Model():
        p = pm.Beta("p", 2.0, 2.0)
        recs = pm.Binomial("x", n=3, p=p, shape=4)
        mech = pdp.TruncatedDiscreteLaplace(epsilon=1.0, delta=1e-6)
        pdp.DPObserved("s", recs, statistic=pdp.Sum(lower=0, upper=3), mechanism=mech, observed=6)
        with pytest.raises(ValueError, match="has no compiled noise kernel"):
            pdp.DataAugmentation([recs])


def _exact(mech, s_dp, n):
    """p ~ Beta(2, 2), n Binomial(3, p) records: S ~ BetaBinomial(3n, 2, 2) a priori and
    E[p | s] = Σ_S w_S (2 + S)/(4 + 3n), w_S ∝ P(s - S) C(3n, S) B(2 + S, 2 + 3n - S)."""
    S = np.arange(3 * n + 1)
    log_w = (
        mech.logpdf(s_dp, S) + np.log(special.comb(3 * n, S)) + special.betaln(2 + S, 2 + 3 * n - S)
    )
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    return float(np.sum(w * (2 + S) / (4 + 3 * n))), float(np.sum(w * S)), S, w


def test_dpobserved_posterior_matches_enumeration():
    """Six Binomial(3, p) records, their sum released at 25 (the sum is at most 18) with
    TruncatedDiscreteLaplace(ε = 1, δ = 0.05): Δ = 3, t = 3, A = 9, so only S ≥ 16 is possible.
    The records start at 3 (``initvals``): PyMC's default start (S = 12) is outside release ± A.
    The untruncated discrete Laplace of the same scale gives E[S | s] = 14.2, the truncated one
    16.9: a sampler that ignored the radius fails."""
    n, s_dp = 6, 25
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        x = pm.Binomial("x", n=3, p=p, shape=n)
        mech = pdp.TruncatedDiscreteLaplace(epsilon=1.0, delta=0.05)
        pdp.DPObserved("s", x, statistic=pdp.Sum(lower=0, upper=3), mechanism=mech, observed=s_dp)
        pm.Deterministic("S", x.sum())
    bound = pdp.TruncatedDiscreteLaplace(epsilon=1.0, delta=0.05, sensitivity=3)
    assert bound.radius == 9
    exact_p, exact_s, _, _ = _exact(bound, s_dp, n)
    untruncated = _exact(pdp.DiscreteLaplace(scale=bound.noise_scale, sensitivity=3), s_dp, n)
    idata = pm.sample(
        draws=1000,
        tune=500,
        chains=2,
        cores=1,
        random_seed=21,
        initvals={"x": np.full(n, 3)},
        progressbar=False,
        compute_convergence_checks=False,
        model=model,
    )
    assert float(idata.posterior["S"].min()) >= s_dp - bound.radius
    for name, exact, wrong in (("p", exact_p, untruncated[0]), ("S", exact_s, untruncated[1])):
        mean = float(idata.posterior[name].mean())
        mcse = float(az.mcse(idata, var_names=[name])[name])
        assert abs(mean - exact) < 4 * mcse, (name, mean, exact, mcse)
        assert abs(wrong - exact) > 8 * mcse  # the check above can tell the two apart


def test_collapsed_likelihood_uses_its_pmf():
    """pdp.marginalize sums the records out through logpdf and tail_radius: the release's logp
    equals the enumerated Σ_S P(s - S) P(S | p)."""
    mech = pdp.TruncatedDiscreteLaplace(epsilon=1.0, delta=0.05)
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        recs = pm.Binomial("x", n=3, p=p, shape=5)
        pdp.DPObserved("s", recs, statistic=pdp.Sum(lower=0, upper=3), mechanism=mech, observed=14)
    collapsed = pdp.marginalize(model)
    logp_fn = collapsed.compile_logp(vars=[collapsed["s"]], sum=True)
    ps = np.array([0.2, 0.5, 0.7])
    got = [logp_fn({"p_logodds__": np.log(q / (1 - q))}) for q in ps]
    S = np.arange(16)
    bound = pdp.TruncatedDiscreteLaplace(epsilon=1.0, delta=0.05, sensitivity=3)
    want = [special.logsumexp(bound.logpdf(14, S) + stats.binom(15, q).logpmf(S)) for q in ps]
    np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("n", [4, 300])
def test_records_left_to_pymc_are_announced_unless_collapsed_takes_them(n):
    """A mechanism without a compiled kernel: pm.sample() gave 300 Poisson records to PyMC's
    Metropolis without a word (then failed: "Bad initial energy"); 4 records go to Collapsed."""
    import warnings

    from tests.support.sampling import assigned

    with pm.Model() as m:
        x = pm.Poisson("x", pm.Gamma("lam", 2, 0.5), shape=n)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(0, 10),
            mechanism=pdp.TruncatedDiscreteLaplace(1.0, 1e-6),
            observed=min(n * 8, 250),
        )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        steps = assigned(m)
    said = [str(w.message) for w in seen if "no compiled noise kernel" in str(w.message)]
    if n == 4:
        assert "Collapsed" in steps and not said, (steps, said)
    else:
        assert "Collapsed" not in steps and said, steps
        assert "'x'" in said[0] and "initvals" in said[0]
