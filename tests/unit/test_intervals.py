"""pdp.intervals: exact lattice posteriors and Neyman intervals vs brute-force enumeration, shapes,
refusals."""

import re

import numpy as np
import pytest
from scipy import integrate

import pymc_dp as pdp


def _brute(s, log_noise, support, prob, log_prior=None):
    """Equal-tailed interval by enumerating the whole support (independent of the window)."""
    c = np.asarray(support, dtype=float)
    lp = log_noise(s - c) + (0.0 if log_prior is None else log_prior(c))
    p = np.exp(lp - lp.max())
    cdf = np.cumsum(p) / p.sum()
    lo = c[np.argmax(cdf >= (1 - prob) / 2 * (1 - 1e-12))]
    hi = c[np.argmax(cdf >= (1 + prob) / 2 * (1 - 1e-12))]
    return lo, hi


@pytest.mark.parametrize("prob", [0.5, 0.9, 0.95])
def test_discrete_gaussian_counts_match_enumeration(prob):
    sigma = 3.18
    s = np.array([-40, -7, -1, 0, 1, 2, 5, 12, 60, 400])
    got = pdp.intervals(
        s,
        prob,
        mechanism=pdp.DiscreteGaussian(sigma=sigma),
        statistic=pdp.Counts(n_categories=10),
        kind="posterior",
    )
    for si, (lo, hi) in zip(s, got, strict=True):
        assert (lo, hi) == _brute(si, lambda z: -z * z / (2 * sigma**2), np.arange(0, 2000), prob)


def test_laplace_counts_with_known_total_match_enumeration():
    # Counts over n = 6 records: each cell on 0..6; Laplace(epsilon=0.5) on L1 sensitivity 2 -> b = 4
    rel = pdp.release(
        np.array([0, 0, 1, 2, 2, 2]),
        statistic=pdp.Counts(n_categories=4),
        mechanism=pdp.Laplace(epsilon=0.5),
        rng=3,
    )
    got = pdp.intervals(rel, 0.9, kind="posterior")
    assert got.shape == (4, 2)
    for si, (lo, hi) in zip(np.asarray(rel), got, strict=True):
        assert (lo, hi) == _brute(si, lambda z: -np.abs(z) / 4.0, np.arange(0, 7), 0.9)


def test_discrete_laplace_sum_of_binary_records_with_prior():
    rel = pdp.release(
        np.array([1] * 30 + [0] * 20),
        statistic=pdp.Sum(lower=0, upper=1),
        mechanism=pdp.DiscreteLaplace(epsilon=1.0),
        rng=5,
    )
    prior = lambda c: -0.5 * ((c - 25.0) / 5.0) ** 2  # noqa: E731
    got = pdp.intervals(rel, prior=prior, kind="posterior")
    assert got.shape == (2,)
    assert tuple(got) == _brute(float(rel), lambda z: -np.abs(z), np.arange(0, 51), 0.95, prior)


@pytest.mark.parametrize("mech", [pdp.Laplace(scale=0.2), pdp.Gaussian(sigma=0.15)])
def test_continuous_mean_matches_quadrature(mech):
    for s in (-0.3, 0.1, 0.5, 0.97, 1.4):
        got = pdp.intervals(
            np.array([s]),
            0.9,
            mechanism=mech,
            statistic=pdp.Mean(lower=0.0, upper=1.0),
            n=50,
            kind="posterior",
        )[0]
        dens = lambda t: np.exp(mech.logpdf(s, t))  # noqa: E731
        total = integrate.quad(dens, 0, 1, epsabs=0, epsrel=1e-12)[0]
        for bound, q in zip(got, (0.05, 0.95), strict=True):
            assert integrate.quad(dens, 0, bound, epsabs=0, epsrel=1e-12)[
                0
            ] / total == pytest.approx(q, abs=1e-8)
        grid = pdp.intervals(
            np.array([s]),
            0.9,
            mechanism=mech,
            statistic=pdp.Mean(lower=0.0, upper=1.0),
            n=50,
            prior=lambda t: 0.0 * t,
            kind="posterior",
        )[0]
        np.testing.assert_allclose(grid, got, atol=2e-4)


def _brute_neyman(s, log_noise, support, prob, integer_noise=True):
    """Every support value t whose central prob noise interval holds s, by enumeration; the
    support's nearest end when there is none."""
    k = np.arange(-3000, 3001, dtype=float)
    pmf = np.exp(log_noise(k))
    pmf /= pmf.sum()
    tail = (1 - prob) / 2
    q = next(j for j in range(3000) if pmf[k > j].sum() <= tail)  # P(noise > q) <= tail
    t = np.asarray(support, dtype=float)
    inside = t[np.abs(s - t) <= q]
    if inside.size == 0:
        end = t[0] if s < t[0] else t[-1]
        return end, end
    return inside.min(), inside.max()


@pytest.mark.parametrize(
    ("mech", "log_noise"),
    [
        (pdp.DiscreteGaussian(sigma=3.18), lambda z: -z * z / (2 * 3.18**2)),
        (pdp.DiscreteLaplace(scale=4.0), lambda z: -np.abs(z) / 4.0),
    ],
)
def test_confidence_kind_is_neyman_central_interval(mech, log_noise):
    s = np.array([-60, -13, -6, -1, 0, 2, 5, 9, 40, 3000])
    stat = pdp.Counts(n_categories=10)
    got = pdp.intervals(s, 0.95, mechanism=mech, statistic=stat, kind="confidence")
    support = np.arange(0, 5000)
    for si, (lo, hi) in zip(s, got, strict=True):
        assert (lo, hi) == _brute_neyman(si, log_noise, support, 0.95)


def test_both_is_hull_of_posterior_and_confidence_and_covers_a_zero_count():
    mech, stat = pdp.Laplace(scale=4.0), pdp.Counts(n_categories=2)
    s = np.array([-30.0, -3.2, 0.4, 6.1, 8.0, 11.5, 25.0, 1e5 + 0.3])
    post = pdp.intervals(s, mechanism=mech, statistic=stat, kind="posterior")
    conf = pdp.intervals(s, mechanism=mech, statistic=stat, kind="confidence")
    both = pdp.intervals(s, mechanism=mech, statistic=stat)
    np.testing.assert_array_equal(both[:, 0], np.minimum(post[:, 0], conf[:, 0]))
    np.testing.assert_array_equal(both[:, 1], np.maximum(post[:, 1], conf[:, 1]))
    # Laplace b = 4: q = 4 log 20 = 11.98; a true 0 is in the confidence interval iff s <= q
    assert np.all((conf[:, 0] == 0) == (s <= 4 * np.log(20)))
    assert post[4, 0] > 0 and both[4, 0] == 0  # s = 8: the posterior alone excludes the true 0
    # far from 0 the two kinds agree to a lattice point
    assert abs(both[-1, 0] - post[-1, 0]) <= 1 and abs(both[-1, 1] - post[-1, 1]) <= 1


def test_confidence_kind_continuous_mean_and_refusal_of_kind():
    mech, stat = pdp.Gaussian(sigma=0.15), pdp.Mean(lower=0.0, upper=1.0)
    s = np.array([-0.6, -0.1, 0.5, 1.2, 1.9])
    got = pdp.intervals(s, 0.9, mechanism=mech, statistic=stat, n=50, kind="confidence")
    sd = mech.bind(stat, n=50, dim=1).noise_sd
    q = 1.6448536269514722 * sd
    want = np.stack([np.clip(s - q, 0, 1), np.clip(s + q, 0, 1)], axis=-1)
    np.testing.assert_allclose(got, want, atol=1e-7)
    with pytest.raises(ValueError, match=re.escape("kind must be one of 'both', 'posterior'")):
        pdp.intervals(s, mechanism=mech, statistic=stat, n=50, kind="hpd")


def test_shapes_and_frame():
    s = np.arange(24).reshape(2, 3, 4)
    mech, stat = pdp.DiscreteGaussian(sigma=1.0), pdp.Counts(n_categories=4)
    out = pdp.intervals(s, mechanism=mech, statistic=stat)
    assert out.shape == (2, 3, 4, 2)
    assert np.all(out[..., 0] <= s) and np.all(out[..., 1] >= s)
    frame = pdp.intervals(s, mechanism=mech, statistic=stat, as_frame=True)
    assert list(frame.columns) == ["released", "lower", "upper"] and len(frame) == 24
    np.testing.assert_array_equal(frame[["lower", "upper"]].to_numpy(), out.reshape(-1, 2))
    # each row says which entry it is; a negative release clipped at 0 gives 0, not -0.0
    assert frame.index.names == ["dim_0", "dim_1", "dim_2"]
    assert frame.loc[(1, 2, 3), "released"] == s[1, 2, 3]
    low = pdp.intervals(np.array([-9, 2]), mechanism=mech, statistic=stat)
    assert not np.any(np.signbit(low))


def test_large_counts_give_ordered_nonnegative_bounds():
    s = np.random.default_rng(0).integers(-10, 10**6, size=2 * 10**4)
    out = pdp.intervals(
        s, mechanism=pdp.DiscreteGaussian(sigma=3.18), statistic=pdp.Counts(n_categories=2)
    )
    assert out.shape == (s.size, 2) and np.all(out[:, 0] >= 0) and np.all(out[:, 0] <= out[:, 1])


def test_refusals():
    stat = pdp.Counts(n_categories=3)
    with pytest.raises(
        ValueError, match=re.escape("prob must be a number strictly between 0 and 1")
    ):
        pdp.intervals(np.zeros(3), 1.0, mechanism=pdp.DiscreteGaussian(sigma=1.0), statistic=stat)
    with pytest.raises(ValueError, match=re.escape("got prob=0")):
        pdp.intervals(np.zeros(3), 0, mechanism=pdp.DiscreteGaussian(sigma=1.0), statistic=stat)
    with pytest.raises(TypeError, match=re.escape("or a plain array passed with mechanism=")):
        pdp.intervals(np.zeros(3))
    with pytest.raises(TypeError, match=re.escape("statistic= is needed with a plain array")):
        pdp.intervals(np.zeros(3), mechanism=pdp.DiscreteGaussian(sigma=1.0))
    with pytest.raises(ValueError, match=re.escape("intervals needs an aggregate release")):
        pdp.intervals(
            np.zeros(3),
            mechanism=pdp.RandomizedResponse(epsilon=1.0, n_categories=2),
            statistic=pdp.Local(),
        )
    with pytest.raises(ValueError, match=re.escape("randomize one record at a time")):
        pdp.intervals(
            np.zeros(3), mechanism=pdp.Laplace(scale=1.0), statistic=pdp.Local(lower=0, upper=1)
        )
    with pytest.raises(ValueError, match=re.escape("got mechanism=SmoothLaplace")):
        pdp.intervals(
            np.zeros(1),
            mechanism=pdp.SmoothLaplace(epsilon=1.0, delta=1e-6),
            statistic=pdp.Median(lower=0, upper=1),
        )
    with pytest.raises(
        ValueError, match=re.escape("prior must be 'flat' (the default) or a callable")
    ):
        pdp.intervals(
            np.zeros(3), mechanism=pdp.DiscreteGaussian(sigma=1.0), statistic=stat, prior="jeffreys"
        )
    with pytest.raises(ValueError, match=re.escape("n is needed for statistic=")):
        pdp.intervals(
            np.zeros(1), mechanism=pdp.Laplace(scale=1.0), statistic=pdp.Sum(lower=0, upper=1)
        )
    with pytest.raises(ValueError, match=re.escape("prior moves the posterior outside the window")):
        pdp.intervals(
            np.zeros(1),
            mechanism=pdp.DiscreteGaussian(sigma=1.0),
            statistic=stat,
            prior=lambda c: 30.0 * c,
        )


def test_release_keywords_refused():
    rel = pdp.release(
        np.array([0, 1, 1]),
        statistic=pdp.Counts(n_categories=2),
        mechanism=pdp.DiscreteGaussian(sigma=1.0),
        rng=1,
    )
    with pytest.raises(ValueError, match=re.escape("already records them. Drop mechanism=.")):
        pdp.intervals(rel, mechanism=pdp.DiscreteGaussian(sigma=2.0))
    with pytest.raises(ValueError, match=re.escape("integer=False contradicts statistic=Counts")):
        pdp.intervals(rel, integer=False)
    # the public total n = 3 bounds every cell
    assert np.all(pdp.intervals(rel)[:, 1] <= 3)


def test_cells_release_matches_enumeration():
    """A `Cells` release (the table itself is the data) is an aggregate: each released cell is its
    true count plus noise, bounded below by 0 and unbounded above (add/remove: the total is private).
    It used to be refused as local DP (Cells marks its cells as the node's records)."""
    sigma = 3.18
    table = np.array([0, 1, 3, 12, 250])
    rel = pdp.release(table, pdp.Cells(), pdp.DiscreteGaussian(sigma=sigma), rng=3)
    got = pdp.intervals(rel, 0.9, kind="posterior")
    assert got.shape == (5, 2)
    for si, (lo, hi) in zip(np.asarray(rel), got, strict=True):
        assert (lo, hi) == _brute(si, lambda z: -z * z / (2 * sigma**2), np.arange(0, 2000), 0.9)


def test_cells_with_a_declared_total_are_bounded_by_it():
    """``Cells(total=N)``: every cell lies in 0..N, as for ``Counts`` over N records (the intervals
    of the same values agree). Before, the upper bounds of ``[3, −2, 10]`` with N = 7 were 14 and
    13."""
    mech = pdp.DiscreteGaussian(sigma=2.0)
    s = np.array([3, -2, 10])
    got = pdp.intervals(s, mechanism=mech, statistic=pdp.Cells(total=7))
    assert got[:, 1].max() <= 7
    want = pdp.intervals(s, mechanism=mech, statistic=pdp.Counts(n_categories=3), n=7)
    np.testing.assert_array_equal(got, want)


def test_each_area_is_bounded_by_its_own_total():
    """``Cells(total=(10, 1))`` of a (2, 2) table: the second row's cells lie in 0..1; they were
    given [0, 2] and [0, 3] (every row was bounded by the largest total). Each row's intervals
    are those of its values under its own total."""
    mech = pdp.DiscreteGaussian(sigma=1.0)
    s = np.array([[3, 7], [0, 1], [2, 9]])
    for kind in ("posterior", "both", "confidence"):
        got = pdp.intervals(s, mechanism=mech, statistic=pdp.Cells(total=(10, 1, 5)), kind=kind)
        for row, total in enumerate((10, 1, 5)):
            alone = pdp.intervals(
                s[row], mechanism=mech, statistic=pdp.Cells(total=total), kind=kind
            )
            np.testing.assert_array_equal(got[row], alone)
        assert got[1].max() <= 1 and got[2].max() <= 5


def test_margins_over_areas_are_bounded_by_the_totals_they_sum():
    """``Marginals(keep, total=per-area totals)``: every margin entry was capped at the largest
    area total, so the column totals of [[5, 3], [0, 9]] (12 > 9) and the grand total (17) were
    never covered (coverage 0 of 2,000). An entry is bounded by the totals of the areas it sums;
    margins of whole areas (and the grand total) are known exactly from the public totals."""
    mech = pdp.DiscreteGaussian(sigma=2.0)
    totals = (8, 9)
    s = np.array([6, 11])
    got = pdp.intervals(s, mechanism=mech, statistic=pdp.Marginals((1,), total=totals))
    want = pdp.intervals(s, mechanism=mech, statistic=pdp.Cells(total=sum(totals)))
    np.testing.assert_array_equal(got, want)  # each column total: 0..17, as one cell of N = 17
    grand = pdp.intervals(np.array(15), mechanism=mech, statistic=pdp.Marginals((), total=totals))
    np.testing.assert_array_equal(grand, [17, 17])
    rows = pdp.intervals(
        np.array([5, 12]), mechanism=mech, statistic=pdp.Marginals((0,), total=totals)
    )
    np.testing.assert_array_equal(rows, [[8, 8], [9, 9]])
    # one number is each row's total: a margin (which may sum rows) is neither capped nor exact
    # (Marginals((), total=4) of three rows of 4 gave [4, 4] for a grand total of 12)
    one = pdp.intervals(np.array(13), mechanism=mech, statistic=pdp.Marginals((), total=4))
    assert one[1] > 12 and one[0] < 12
    # a (2, 2, 3) table of two areas: the margin keeping axes (0, 2) sums over the middle axis,
    # within each area: its entries lie in 0..that area's total
    s3 = np.array([[1, 3, 0], [5, 2, 1]])
    got3 = pdp.intervals(s3, mechanism=mech, statistic=pdp.Marginals((0, 2), total=(5, 8)))
    for g, total in enumerate((5, 8)):
        alone = pdp.intervals(s3[g], mechanism=mech, statistic=pdp.Cells(total=total))
        np.testing.assert_array_equal(got3[g], alone)


def test_non_integer_values_under_an_integer_mechanism_are_refused():
    with pytest.raises(ValueError, match=r"DiscreteGaussian releases integers.*\(e\.g\. 3\.5\)"):
        pdp.intervals(
            [3.5, -2.0, 10.25], mechanism=pdp.DiscreteGaussian(sigma=2.0), statistic=pdp.Cells()
        )


def test_several_values_of_a_statistic_whose_noise_grows_with_them_need_dim():
    """A plain array of two Sum(0, 1) values was read as one release of 2-entry records: the
    noise calibrated to sensitivity 2, every interval twice as wide ([0, 18] for 7, against
    [2, 13] alone), the whole support at five values. The choice is now the user's (dim=)."""
    kw = dict(mechanism=pdp.Laplace(epsilon=0.5), statistic=pdp.Sum(0, 1), n=20, integer=True)
    alone = [pdp.intervals(np.array(v), **kw) for v in (7.0, 12.0)]
    with pytest.raises(ValueError, match=r"holds 2 values.*Pass dim=1 .* or dim=2"):
        pdp.intervals(np.array([7.0, 12.0]), **kw)
    np.testing.assert_array_equal(pdp.intervals(np.array([7.0, 12.0]), dim=1, **kw), alone)
    wide = pdp.intervals(np.array([7.0, 12.0]), dim=2, **kw)
    assert np.all(wide[:, 1] - wide[:, 0] > np.array(alone)[:, 1] - np.array(alone)[:, 0])
    # counts' sensitivity does not grow with the cells: no dim needed
    pdp.intervals(np.array([7, 12, 3]), mechanism=pdp.Laplace(epsilon=0.5), statistic=pdp.Counts(3))
    rel = pdp.release(np.ones(20), pdp.Sum(0, 1), pdp.Laplace(epsilon=0.5), rng=0)
    with pytest.raises(ValueError, match=r"n=, dim= are for plain arrays"):
        pdp.intervals(rel, n=-3, dim=1)


def test_a_prior_of_the_wrong_shape_is_refused_by_name():
    rel = pdp.release(np.array([0, 1, 1]), pdp.Counts(2), pdp.DiscreteGaussian(sigma=1.0), rng=1)
    with pytest.raises(ValueError, match=r"prior must return one log prior value per candidate"):
        pdp.intervals(rel, prior=lambda c: np.zeros(3))


def test_a_plain_mean_needs_n_when_its_noise_depends_on_it():
    # Gaussian(epsilon, delta) calibrated to a Mean over n records has σ ∝ 1/n: without n the
    # noise would be taken for one record (80 times too wide here), so n= is asked for
    mech, stat = pdp.Gaussian(epsilon=0.3, delta=1e-6), pdp.Mean(0, 1)
    with pytest.raises(ValueError, match=re.escape("n= is needed: the noise of Gaussian")):
        pdp.intervals([0.16], 0.9, mechanism=mech, statistic=stat, kind="posterior")
    rel = pdp.release(np.full(80, 0.2), stat, mech, rng=4)
    got = pdp.intervals([float(rel)], 0.9, mechanism=mech, statistic=stat, n=80, kind="posterior")
    np.testing.assert_allclose(got, pdp.intervals(rel, 0.9, kind="posterior")[None], rtol=1e-12)
    # a noise given directly does not depend on n: no n needed
    pdp.intervals([0.16], 0.9, mechanism=pdp.Gaussian(sigma=0.1), statistic=stat)


@pytest.mark.parametrize("s", [300.0, -300.0, 1000.0])
def test_a_release_far_outside_the_support_gives_the_near_end_gaussian(s):
    # Sum(0, 1) over 10 records, σ = 1: the truncated CDF underflows beyond about 38σ; the
    # reference by bisection on the truncated normal CDF in 50-digit arithmetic
    import mpmath as mp

    mp.mp.dps = 50

    def sf(z):
        return mp.erfc(z / mp.sqrt(2)) / 2

    def cdf(x):  # P(t <= x) for t ~ N(s, 1) truncated to [0, 10], from the tail it lies in
        if s > 0:
            return (sf(s - x) - sf(s)) / (sf(s - 10) - sf(s))
        return (sf(-s) - sf(x - s)) / (sf(-s) - sf(10 - s))

    exact = []
    for q in (0.05, 0.95):
        lo, hi = mp.mpf(0), mp.mpf(10)
        for _ in range(120):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if cdf(mid) > q else (mid, hi)
        exact.append(float(lo))
    got = pdp.intervals(
        np.array([s]),
        0.9,
        mechanism=pdp.Gaussian(sigma=1.0),
        statistic=pdp.Sum(0, 1),
        n=10,
        kind="posterior",
        dim=1,
    )[0]
    np.testing.assert_allclose(got, exact, rtol=1e-9)
    assert (got[1] > 9.99) if s > 0 else (got[0] < 0.01)


@pytest.mark.parametrize("s", [800.0, -800.0])
def test_a_release_far_outside_the_support_gives_the_near_end_laplace(s):
    # Laplace(b = 1) beyond about 745b: the posterior on [0, 10] is e^{±t} truncated, in closed form
    got = pdp.intervals(
        np.array([s]),
        0.9,
        mechanism=pdp.Laplace(scale=1.0),
        statistic=pdp.Sum(0, 1),
        n=10,
        kind="posterior",
        dim=1,
    )[0]
    q = np.array([0.05, 0.95])
    up = np.log1p(q * np.expm1(10.0))  # P(t <= x) = (e^x − 1)/(e^10 − 1)
    exact = up if s > 0 else 10.0 - up[::-1]
    np.testing.assert_allclose(got, exact, rtol=1e-9)
    # the default kind: the hull with the confidence part, here the support's near end
    both = pdp.intervals(
        np.array([s]), 0.9, mechanism=pdp.Laplace(scale=1.0), statistic=pdp.Sum(0, 1), n=10, dim=1
    )[0]
    np.testing.assert_allclose(both, [exact[0], 10.0] if s > 0 else [0.0, exact[1]], rtol=1e-9)


def test_integer_false_under_an_integer_mechanism_is_refused():
    with pytest.raises(ValueError, match=re.escape("integer=False contradicts mechanism=Discrete")):
        pdp.intervals(
            np.array([3.0]),
            mechanism=pdp.DiscreteGaussian(sigma=1.0),
            statistic=pdp.Sum(0, 1),
            n=10,
            integer=False,
        )
