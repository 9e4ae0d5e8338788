"""Release noise free of floating-point artefacts (Mironov 2012), and drawn from the right law.

Reachability test (issue 9): release on two neighbouring datasets many times and decide *exactly*,
for every output, whether the sampler could have produced it from each neighbour. With the lattice
design an output ``y`` is reachable from a statistic ``s`` iff ``y / 2^k − round(s / 2^k)`` is an
integer (the discrete noise has full support on ℤ; the float conversion is exact below 2^53
lattice steps), checked here in exact rational arithmetic. An output reachable from only one
neighbour would reveal the dataset with certainty; there must be none.
"""

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import pymc_dp as pdp
from pymc_dp.mechanisms import _exact

N_RELEASES = 2000


def reachable(out: float, s: float, k: int) -> bool:
    """Exactly: is ``out`` on the lattice ``2^k ℤ`` (all of which the noise reaches from round(s))?"""
    x = Fraction(float(out)) / Fraction(2) ** k
    idx = _exact.lattice_index(np.array([s]), k)[0]
    return (x - idx).denominator == 1 and abs(x) < 2**53


def only_one_neighbour(outs0, outs1, s0, s1, k):
    """Counts of outputs reachable from their own dataset but not from the neighbour."""
    from0 = sum(reachable(y, s0, k) and not reachable(y, s1, k) for y in outs0)
    from1 = sum(reachable(y, s1, k) and not reachable(y, s0, k) for y in outs1)
    unreachable = sum(not reachable(y, s, k) for ys, s in ((outs0, s0), (outs1, s1)) for y in ys)
    return from0, from1, unreachable


def neighbours():
    """Sum(0, 1) with epsilon = 1 on [0, ..., 0] vs [1, 0, ..., 0]: sums 0 and 1."""
    stat = pdp.Sum(lower=0, upper=1)
    x0, x1 = np.zeros(10), np.r_[1.0, np.zeros(9)]
    return stat, [float(stat.evaluate(x0)), float(stat.evaluate(x1))]


@pytest.mark.parametrize(
    "mech",
    [pdp.Laplace(epsilon=1.0), pdp.Gaussian(epsilon=1.0, delta=1e-5)],
    ids=["laplace", "gaussian"],
)
def test_no_output_is_reachable_from_only_one_neighbour(mech):
    stat, (s0, s1) = neighbours()
    mech = mech.bind(stat, n=10, dim=1)
    rng = np.random.default_rng(2024)
    # one call per neighbour: N_RELEASES independent coordinates = N_RELEASES releases
    outs0 = mech.sample(np.full(N_RELEASES, s0), rng).tolist()
    outs1 = mech.sample(np.full(N_RELEASES, s1), rng).tolist()
    from0, from1, unreachable = only_one_neighbour(outs0, outs1, s0, s1, mech.lattice_k)
    print(
        f"[security] {type(mech).__name__}: only-from-0 {from0}, only-from-1 {from1}, "
        f"unreachable {unreachable} of {2 * N_RELEASES} (k = {mech.lattice_k})"
    )
    assert (from0, from1, unreachable) == (0, 0, 0)
    assert len(set(outs0)) > N_RELEASES * 0.99  # continuous-looking outputs, not a coarse grid


@pytest.mark.parametrize(
    "mech", [pdp.Laplace(scale=1.0), pdp.Gaussian(sigma=3.5)], ids=["laplace", "gaussian"]
)
def test_secure_opendp_path_is_on_the_same_lattice(mech):
    """rng=None draws through OpenDP with the same k: the same exact reachability holds."""
    s0, s1 = 0.0, 1.0
    outs0 = [float(mech.sample(s0)) for _ in range(200)]
    outs1 = [float(mech.sample(s1)) for _ in range(200)]
    assert only_one_neighbour(outs0, outs1, s0, s1, mech.lattice_k) == (0, 0, 0)


def test_off_lattice_statistics_are_rounded_so_neighbours_stay_indistinguishable():
    """Mean-like statistics 0.3 and 0.3 + 1/3 are off the lattice; rounding the input first keeps
    every output reachable from both."""
    mech = pdp.Laplace(scale=1.0)
    s0, s1 = 0.3, 0.3 + 1 / 3
    rng = np.random.default_rng(5)
    outs0 = [float(mech.sample(s0, rng)) for _ in range(500)]
    outs1 = [float(mech.sample(s1, rng)) for _ in range(500)]
    assert only_one_neighbour(outs0, outs1, s0, s1, mech.lattice_k) == (0, 0, 0)


def broken_sample(s, scale, rng):
    """A deliberately broken sampler: lattice noise added to the *unrounded* statistic."""
    k = _exact.lattice_exponent(scale)
    z = _exact.discrete_laplace_array(rng, Fraction(scale) / Fraction(2) ** k, ())
    return float(Fraction(s) + Fraction(int(z)) * Fraction(2) ** k)


def test_the_check_catches_a_sampler_that_leaks():
    s0, s1 = 0.3, 0.3 + 1 / 3
    k = _exact.lattice_exponent(1.0)
    rng = np.random.default_rng(5)
    outs0 = [broken_sample(s0, 1.0, rng) for _ in range(500)]
    outs1 = [broken_sample(s1, 1.0, rng) for _ in range(500)]

    def reach_broken(y, s):
        # the broken sampler reaches y from s iff fl(s + z 2^k) = y for some integer z; IEEE
        # addition rounds correctly, so only the z nearest (y - s)/2^k can qualify
        g = 2.0**k
        z0 = round((Fraction(y) - Fraction(s)) / Fraction(2) ** k)
        return any(s + (z0 + d) * g == y for d in range(-2, 3))

    assert all(reach_broken(y, s0) for y in outs0) and all(reach_broken(y, s1) for y in outs1)
    only0 = sum(not reach_broken(y, s1) for y in outs0)
    only1 = sum(not reach_broken(y, s0) for y in outs1)
    print(f"[security] broken sampler: only-from-0 {only0}, only-from-1 {only1} of 1000")
    assert only0 > 450 and only1 > 450


def test_the_old_float_path_leaves_the_lattice():
    """``s + rng.laplace(...)`` (the old release) produces outputs off any 2^k lattice fine enough
    for the analysis, so the lattice argument cannot apply to it."""
    rng = np.random.default_rng(0)
    k = _exact.lattice_exponent(1.0)
    outs = 1.0 + rng.laplace(0.0, 1.0, size=500)
    assert sum(not reachable(y, 1.0, k) for y in outs) > 450


def test_smooth_laplace_uses_a_data_independent_lattice():
    """SmoothLaplace's scale depends on the data, so its lattice is the fixed 2^-1074 grid (every
    float): outputs are reachable from any statistic whatever the scale."""
    mech = pdp.SmoothLaplace(epsilon=1.0, delta=1e-3)
    assert mech.lattice_k == -1074
    rng = np.random.default_rng(3)
    outs = [float(mech.sample(0.25, rng, scale=sc)) for sc in (0.9, 1.1, 3.7) for _ in range(100)]
    for y in outs:
        assert (Fraction(y) / Fraction(2) ** -1074).denominator == 1
    draws = mech.sample(np.zeros(3000), rng, scale=2.0)
    assert stats.kstest(draws, stats.laplace(scale=2.0).cdf).pvalue > 1e-3


# -- the sampled laws -------------------------------------------------------------------------
@pytest.mark.parametrize("scale, seed", [(0.7, 1), (3.0, 2)])
def test_discrete_laplace_sampler_matches_the_pmf(scale, seed):
    """Chi-square, fixed seed, false-alarm rate 1e-3 per case."""
    mech = pdp.DiscreteLaplace(scale=scale)
    draws = mech.sample(np.zeros(20_000, dtype=np.int64), np.random.default_rng(seed))
    edge = math.ceil(3 * scale)
    k = np.arange(-edge, edge + 1)
    pk = np.exp(mech.logpdf(k, 0))
    observed = [(draws == v).sum() for v in k] + [(np.abs(draws) > edge).sum()]
    assert stats.chisquare(observed, 20_000 * np.append(pk, 1 - pk.sum())).pvalue > 1e-3


@pytest.mark.parametrize(
    "mech, cdf",
    [
        (pdp.Laplace(scale=0.37), stats.laplace(scale=0.37).cdf),
        (pdp.Gaussian(sigma=2.2), stats.norm(scale=2.2).cdf),
    ],
    ids=["laplace", "gaussian"],
)
def test_lattice_noise_matches_the_continuous_cdf(mech, cdf):
    """KS against the continuous law the analyst uses; fixed seed, false-alarm rate 1e-3."""
    draws = mech.sample(np.full(10_000, 5.0), np.random.default_rng(9)) - 5.0
    assert stats.kstest(draws, cdf).pvalue > 1e-3


def test_ks_check_has_power():
    draws = pdp.Laplace(scale=0.4).sample(np.zeros(10_000), np.random.default_rng(9))
    assert stats.kstest(draws, stats.laplace(scale=0.37).cdf).pvalue < 1e-3


def test_secure_path_law_coarse_check():
    """OpenDP's draws cannot be seeded; a KS test with false-alarm rate 1e-6 guards its scale."""
    draws = pdp.Laplace(scale=2.0).sample(np.zeros(3000))
    assert stats.kstest(draws, stats.laplace(scale=2.0).cdf).pvalue > 1e-6


def test_randomized_response_exact_sampler_law():
    mech = pdp.RandomizedResponse(epsilon=0.8, n_categories=3)
    r = mech.sample(np.full(30_000, 2), np.random.default_rng(4))
    expected = 30_000 * np.exp(mech.logpdf(np.arange(3), 2))
    assert stats.chisquare(np.bincount(r, minlength=3), expected).pvalue > 1e-3
    secure = mech.sample(np.array([0, 1, 2, 2]))
    assert secure.dtype == np.int64 and set(secure) <= {0, 1, 2}


@pytest.mark.parametrize(
    "mech, value",
    [
        (pdp.Laplace(scale=1.0), 0.0),
        (pdp.Gaussian(sigma=1.0), 0.0),
        (pdp.DiscreteLaplace(scale=1.0), 0),
        (pdp.DiscreteGaussian(sigma=1.0), 0),
        (pdp.RandomizedResponse(epsilon=1.0), np.array([0, 1])),
    ],
)
def test_rng_of_a_wrong_type_is_refused(mech, value):
    with pytest.raises(
        TypeError,
        match=re.escape("rng must be None (secure noise from OpenDP, for a real publication)"),
    ) as info:
        mech.sample(value, 1.5)
    assert "got rng=1.5 of type float" in str(info.value)
    # an int seed is a simulation seed: reproducible
    np.testing.assert_array_equal(mech.sample(value, 7), mech.sample(value, 7))


@pytest.mark.parametrize("ratio, s", [(0.25, 0.37), (2.0**-6, 1 / 3), (0.5, 0.26)])
def test_lattice_density_error_bound_of_the_docs(ratio, s):
    """docs/mechanisms.md: |log(P(y)/g) − log Laplace(y; s, b)| ≤ u − log(1 − u²/3), u = g/(2b),
    checked exactly on a coarse lattice (where the bound is visible), and nearly attained."""
    from pymc_dp.mechanisms._noise import log_lattice_error

    b, g = 1.0, ratio
    k = int(math.log2(g))
    idx = int(_exact.lattice_index(np.array([s]), k)[0])
    y = (idx + np.arange(-200, 201)) * g
    u = g / (2 * b)
    log_pmf = math.log(math.tanh(u)) - np.abs(y - idx * g) / b  # P(Z = j) = tanh(g/2b) e^{-|j| g/b}
    err = np.abs(log_pmf - math.log(g) - stats.laplace.logpdf(y, loc=s, scale=b))
    bound = log_lattice_error(g, b)
    assert err.max() <= bound * (1 + 1e-12)
    assert err.max() >= 0.5 * bound


@pytest.mark.parametrize(
    "mech, value, kind",
    [
        (pdp.Laplace(scale=1.0), np.array([0.5, 2.0]), "f"),
        (pdp.Gaussian(sigma=1.0), np.array([0.5, 2.0]), "f"),
        (pdp.DiscreteLaplace(scale=1.0), np.array([1, 2]), "i"),
        (pdp.DiscreteGaussian(sigma=1.0), np.array([1, 2]), "i"),
        (pdp.RandomizedResponse(epsilon=1.0, n_categories=3), np.array([0, 2]), "i"),
    ],
)
def test_every_mechanism_has_a_secure_route(mech, value, kind):
    out = mech.sample(value)  # rng=None: OpenDP
    assert out.shape == value.shape and out.dtype.kind == kind
    smooth = pdp.SmoothLaplace(epsilon=1.0, delta=1e-3).sample(np.array([0.5]), scale=0.7)
    assert smooth.shape == (1,) and np.isfinite(smooth).all()


def test_scalar_big_integer_discrete_laplace_matches_the_pmf():
    """The per-draw big-integer sampler (used for the 2^-1074 lattice and tiny scales) has the same
    law as the vectorised one; chi-square, fixed seed, false-alarm rate 1e-3."""
    b = Fraction(1.7)
    rng = np.random.default_rng(12)
    draws = np.array(
        [_exact.discrete_laplace(rng, b.numerator, b.denominator) for _ in range(20_000)]
    )
    q = math.exp(-1 / 1.7)
    k = np.arange(-6, 7)
    pk = (1 - q) / (1 + q) * q ** np.abs(k)
    observed = [(draws == v).sum() for v in k] + [(np.abs(draws) > 6).sum()]
    assert stats.chisquare(observed, 20_000 * np.append(pk, 1 - pk.sum())).pvalue > 1e-3
    tiny = pdp.DiscreteLaplace(scale=2.0**-70)  # denominator 2^70: the scalar route
    np.testing.assert_array_equal(
        tiny.sample(np.arange(5), rng), np.arange(5)
    )  # P(noise != 0) ≈ 2 e^{-2^70}


def test_one_rng_rule_for_privacy_noise():
    """`pdp.release` and `Mechanism.sample` share `_checks.check_noise_rng`: the same refusals,
    each naming its caller."""
    x = np.array([0.2, 0.4])
    for call, owner in (
        (lambda rng: pdp.Laplace(scale=1.0).sample(0.0, rng), "Laplace.sample"),
        (lambda rng: pdp.release(x, pdp.Sum(0, 1), pdp.Laplace(epsilon=1.0), rng=rng), "release"),
    ):
        with pytest.raises(
            ValueError, match=re.escape(f"{owner}: rng must be a non-negative int seed, got rng=-1")
        ):
            call(-1)
        with pytest.raises(TypeError, match=re.escape(f"{owner}: rng must be None (secure noise")):
            call(np.random.RandomState(1))
        assert float(call(3)) == float(call(np.random.default_rng(3)))  # an int seeds a Generator
