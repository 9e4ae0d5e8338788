r"""Exact samplers for the discrete Laplace and discrete Gaussian, driven by a NumPy generator.

Every draw is made by integer arithmetic on uniform random bits, never by transforming a
floating-point uniform (Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for Differential
Privacy", Algorithms 1–3):

* `bernoulli_exp` — Bernoulli(exp(−γ)) for a rational γ ≥ 0 (Algorithm 1);
* `discrete_laplace` — `P(Y=y) \propto e^{-|y|/\text{scale}}` on ℤ for a rational
  scale ``t/s`` (Algorithm 2);
* `discrete_gaussian` — `P(Y=y) \propto e^{-y^2/(2\sigma^2)}` on ℤ for a rational
  σ² (Algorithm 3: rejection from a discrete Laplace of scale ``⌊σ⌋ + 1``).

Uniform bits come from ``rng.bit_generator.random_raw()`` (64 raw bits per call), so a seeded
generator gives reproducible draws. Rationals are taken exactly from the float parameters
(``Fraction(x)`` is exact for a finite float). These samplers serve simulations and tests; a real
publication draws through OpenDP (``rng=None`` in the mechanisms), whose samplers implement the
same algorithms over a cryptographically secure source.

Continuous mechanisms release on the lattice `2^k \mathbb Z` (see `lattice_exponent`,
`lattice_index`): the statistic is rounded to the nearest lattice point and integer noise of
scale ``scale / 2^k`` is added (the construction OpenDP's ``make_laplace``/``make_gaussian`` use for
floats).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = [
    "LATTICE_BITS",
    "bernoulli_exp",
    "discrete_laplace",
    "discrete_gaussian",
    "discrete_laplace_array",
    "discrete_gaussian_array",
    "lattice_exponent",
    "lattice_index",
    "lattice_value",
]

#: the lattice step 2^k of a continuous mechanism lies in (scale·2^-(LATTICE_BITS+1), scale·2^-LATTICE_BITS]
LATTICE_BITS = 30
#: smallest k: every finite float64 is a multiple of 2^-1074
MIN_K = -1074


# -- uniform integers from raw bits ---------------------------------------------------------
def _randbits(rng: np.random.Generator, nbits: int) -> int:
    raw = rng.bit_generator.random_raw
    words, out = (nbits + 63) // 64, 0
    for _ in range(words):
        out = (out << 64) | int(raw())
    return out >> (64 * words - nbits)


def randbelow(rng: np.random.Generator, n: int) -> int:
    """Uniform integer on ``{0, …, n-1}`` by rejection on ``bit_length(n)`` raw bits (exact)."""
    if n == 1:
        return 0
    nbits = (n - 1).bit_length()
    while True:
        r = _randbits(rng, nbits)
        if r < n:
            return r


# -- CKS 2020 Algorithms 1–3 ----------------------------------------------------------------
def _bernoulli_exp_unit(rng, num: int, den: int) -> bool:
    """Bernoulli(exp(-num/den)) for 0 ≤ num ≤ den (CKS Algorithm 1, γ ∈ [0, 1]).

    Draw A_K ~ Bernoulli(γ/K) for K = 1, 2, … until the first A_K = 0; return K odd.
    ``Bernoulli(num / (den K))`` is ``randbelow(den K) < num``.
    """
    k = 1
    while randbelow(rng, den * k) < num:
        k += 1
    return k % 2 == 1


def bernoulli_exp(rng: np.random.Generator, num: int, den: int) -> bool:
    """Exact Bernoulli(exp(−num/den)) for integers ``num ≥ 0``, ``den ≥ 1`` (CKS Algorithm 1).

    For γ > 1: ⌊γ⌋ independent Bernoulli(e⁻¹) must all succeed, then Bernoulli(exp(−(γ − ⌊γ⌋))).
    """
    whole, frac = divmod(num, den)
    for _ in range(whole):
        if not _bernoulli_exp_unit(rng, 1, 1):
            return False
    return _bernoulli_exp_unit(rng, frac, den)


def discrete_laplace(rng: np.random.Generator, t: int, s: int = 1) -> int:
    r"""One draw of `P(Y = y) \propto e^{-|y|\, s / t}` on ℤ (scale ``t/s``; CKS Algorithm 2).

    ``U ~ Unif{0..t-1}`` accepted with probability ``exp(-U/t)``, ``V ~ Geometric(1 - e^{-1})``,
    ``Y = ⌊(U + tV)/s⌋`` (geometric with ratio ``e^{-s/t}``), a uniform sign, and ``-0`` rejected.
    """
    while True:
        u = randbelow(rng, t)
        if not _bernoulli_exp_unit(rng, u, t):
            continue
        v = 0
        while _bernoulli_exp_unit(rng, 1, 1):
            v += 1
        y = (u + t * v) // s
        negative = _randbits(rng, 1)
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(rng: np.random.Generator, p: int, q: int = 1) -> int:
    r"""One draw of `P(Y = y) \propto e^{-y^2/(2\sigma^2)}` on ℤ, ``σ² = p/q`` (CKS Algorithm 3).

    Propose ``Y`` from the discrete Laplace of scale ``t = ⌊σ⌋ + 1`` and accept with probability
    ``exp(-(|Y| - σ²/t)² / (2σ²))`` = ``exp(-(|Y| q t - p)² / (2 p q t²))``.
    """
    t = math.isqrt(p // q) + 1
    den = 2 * p * q * t * t
    while True:
        y = discrete_laplace(rng, t)
        if bernoulli_exp(rng, (abs(y) * q * t - p) ** 2, den):
            return y


def discrete_laplace_array(rng, scale: Fraction, shape) -> np.ndarray:
    """Array of iid discrete Laplace draws of rational ``scale`` (Python integers, object dtype).

    Vectorised over coordinates (`_discrete_laplace_vec`) when ``t < 2^53``, ``s < 2^63``; otherwise
    the big-integer scalar sampler per coordinate.
    """
    t, s = scale.numerator, scale.denominator
    size = int(np.prod(shape, dtype=int))
    if t < 2**53 and s < 2**63:
        return _discrete_laplace_vec(rng, t, s, size).astype(object).reshape(shape)
    out = np.empty(size, dtype=object)
    for i in range(out.size):
        out[i] = discrete_laplace(rng, t, s)
    return out.reshape(shape)


def _bernoulli_exp_unit_vec(rng, num, den: int) -> np.ndarray:
    """Bernoulli(exp(-num_i/den)) for an int64 array ``0 ≤ num ≤ den < 2^63`` (CKS Algorithm 1).

    ``Bernoulli(num/(den K))`` is ``{uniform on 0..K-1 is 0} and {uniform on 0..den-1 < num}``.
    """
    num = np.asarray(num, dtype=np.int64)
    k = np.ones(num.shape, dtype=np.int64)
    active = np.ones(num.shape, dtype=bool)
    while active.any():
        idx = np.flatnonzero(active)
        a = (rng.integers(0, k[idx]) == 0) & (rng.integers(0, den, size=idx.size) < num[idx])
        k[idx[a]] += 1
        active[idx[~a]] = False
    return k % 2 == 1


def _discrete_laplace_vec(rng, t: int, s: int, size: int) -> np.ndarray:
    """``size`` draws of CKS Algorithm 2 (scale ``t/s``) in int64, all coordinates at once."""
    out = np.zeros(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        u = rng.integers(0, t, size=todo.size)
        keep = _bernoulli_exp_unit_vec(rng, u, t)
        u, todo_k = u[keep], todo[keep]
        v = np.zeros(u.size, dtype=np.int64)
        going = np.ones(u.size, dtype=bool)
        while going.any():  # V ~ Geometric(1 - e^{-1}): count successes of Bernoulli(e^{-1})
            idx = np.flatnonzero(going)
            b = _bernoulli_exp_unit_vec(rng, np.ones(idx.size, dtype=np.int64), 1)
            v[idx[b]] += 1
            going[idx[~b]] = False
        if np.any(v >= 2**9):  # t·v would leave int64; probability e^{-512}
            raise OverflowError("discrete Laplace: geometric draw too large for int64")
        y = (u + t * v) // s
        negative = rng.integers(0, 2, size=u.size) == 1
        ok = ~(negative & (y == 0))
        out[todo_k[ok]] = np.where(negative[ok], -y[ok], y[ok])
        todo = np.setdiff1d(todo, todo_k[ok], assume_unique=True)
    return out


def discrete_gaussian_array(rng, sigma2: Fraction, shape) -> np.ndarray:
    """Array of iid discrete Gaussian draws of rational variance parameter ``sigma2`` (object dtype)."""
    p, q = sigma2.numerator, sigma2.denominator
    out = np.empty(int(np.prod(shape, dtype=int)), dtype=object)
    for i in range(out.size):
        out[i] = discrete_gaussian(rng, p, q)
    return out.reshape(shape)


# -- the lattice of continuous mechanisms -----------------------------------------------------
def lattice_exponent(scale: float) -> int:
    """``k`` with ``2^k ∈ (scale·2^-(LATTICE_BITS+1), scale·2^-LATTICE_BITS]`` (at least −1074).

    Depends only on the public noise scale, never on the data.
    """
    return max(math.frexp(scale)[1] - 1 - LATTICE_BITS, MIN_K)


def lattice_index(values, k: int) -> np.ndarray:
    """Index of the nearest multiple of ``2^k`` to each finite float (ties away from zero), exact."""
    flat = np.asarray(values, dtype=float).ravel()
    out = np.empty(flat.size, dtype=object)
    for i, v in enumerate(flat):
        x = Fraction(float(v)) / Fraction(2) ** k
        num, den = abs(x.numerator), x.denominator
        idx = (2 * num + den) // (2 * den)
        out[i] = idx if x >= 0 else -idx
    return out.reshape(np.shape(values))


def lattice_value(index, k: int) -> np.ndarray:
    """``index · 2^k`` as float64 (exact while ``|index| < 2^53``; else rounded, a post-processing;
    beyond the float64 range ±the largest float, never ``inf`` or an ``OverflowError``)."""
    flat = np.asarray(index, dtype=object).ravel()
    step = Fraction(2) ** k
    out = np.array([_to_float(Fraction(int(i)) * step) for i in flat], dtype=float)
    return out.reshape(np.shape(index))


def _to_float(x: Fraction) -> float:
    try:
        return float(x)
    except OverflowError:
        big = float(np.finfo(np.float64).max)
        return big if x > 0 else -big
