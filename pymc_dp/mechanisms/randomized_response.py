"""k-ary randomized response (Warner 1965; Kairouz et al. 2016), a local mechanism."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np

from pymc_dp._checks import check_epsilon, check_noise_rng
from pymc_dp.mechanisms import _calibrate, _exact
from pymc_dp.mechanisms._noise import reject_bool
from pymc_dp.mechanisms.base import CATEGORICAL_KERNEL, Mechanism

__all__ = ["RandomizedResponse"]


@dataclasses.dataclass(frozen=True, eq=False)
class RandomizedResponse(Mechanism):
    r"""Each record's category is kept with probability ``e^ε / (e^ε + k - 1)`` and otherwise
    replaced by one of the other ``k - 1`` categories uniformly.

    ```text
    p(r \mid x) = \frac{e^{\varepsilon}}{e^{\varepsilon} + k - 1}\ \text{if } r = x,
    \qquad \frac{1}{e^{\varepsilon} + k - 1}\ \text{otherwise}.
    ```

    Use with ``pdp.Local()`` on integer records in ``0..n_categories-1``.

    Sampling is exact: propose an offset ``J`` uniform on ``0..k-1``; ``J = 0`` keeps the record,
    ``J ≠ 0`` moves it to ``(x + J) mod k`` if a Bernoulli(e^{-ε}) succeeds (Canonne et al. 2020,
    Algorithm 1), else propose again. Then ``P(keep) ∝ 1`` and ``P(each other) ∝ e^{-ε}``.
    """

    epsilon: float = 1.0
    n_categories: int = 2

    norm = None
    integer = True
    local_only = True
    kernel_code = CATEGORICAL_KERNEL

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(reject_bool(self.epsilon, "epsilon")))
        k = self.n_categories
        if isinstance(k, bool | np.bool_) or not (isinstance(k, (int, np.integer)) and k >= 2):
            raise ValueError(
                f"n_categories must be an integer >= 2, got n_categories={k!r}. "
                "Use 2 for yes/no questions."
            )
        object.__setattr__(self, "n_categories", int(k))

    @property
    def calibrated(self) -> bool:
        return True

    @property
    def sensitivity(self):
        return None

    @property
    def p_keep(self) -> float:
        e = math.exp(-self.epsilon)
        return 1.0 / (1.0 + (self.n_categories - 1) * e)

    def kernel_params(self):
        # log P(keep), log P(a given other category), stable for large epsilon
        k, eps = self.n_categories, self.epsilon
        log_den = eps + math.log1p((k - 1) * math.exp(-eps))
        return eps - log_den, -log_den

    @property
    def noise_sd(self) -> float:
        """``inf``: a category is kept or replaced, the noise has no scale."""
        return math.inf

    @property
    def epsilon_spent(self) -> float:
        """ε = log((1 - p + p/k) / (p/k)) of its ``dp_event`` (at most ``epsilon``)."""
        k = self.n_categories
        p = _calibrate.randomized_response_parameter(self.epsilon, k)
        return math.log((1.0 - p + p / k) / (p / k))

    def sample(self, statistic, rng=None):
        """Randomize each record's category.

        ``rng=None`` (default) draws through OpenDP's ``make_randomized_response`` (one call per
        record) from the operating system's secure generator: **only this path is fit for a real
        publication.** A ``Generator`` (or int seed) drives the exact vectorised sampler of the
        class docstring, for simulations and tests.
        """
        rng = check_noise_rng(rng, owner="RandomizedResponse.sample")
        k = self.n_categories
        x = np.asarray(statistic)
        if x.dtype.kind not in "iu" and np.any(x != np.floor(x)) or np.any((x < 0) | (x >= k)):
            raise ValueError(
                f"RandomizedResponse(n_categories={k}) needs integer categories in 0..{k - 1}, and "
                "some records are outside it. Recode the categories."
            )
        x = x.astype(np.int64)
        if rng is None:
            return self._sample_opendp(x)
        num, den = Fraction(self.epsilon).as_integer_ratio()
        out = np.empty(x.size, dtype=np.int64)
        flat, todo = x.ravel(), np.arange(x.size)
        while todo.size:
            offset = rng.integers(0, k, size=todo.size)
            accept = offset == 0
            moved = np.flatnonzero(~accept)
            accept[moved] = _bernoulli_exp_vec(rng, num, den, moved.size)
            done = todo[accept]
            out[done] = (flat[done] + offset[accept]) % k
            todo = todo[~accept]
        return out.reshape(x.shape)

    def _sample_opendp(self, x):
        import opendp.prelude as dp

        dp.enable_features("contrib")
        p = self.p_keep
        if not p < 1.0:
            raise ValueError(
                f"RandomizedResponse(epsilon={self.epsilon}) keeps with probability 1 in float64; "
                "OpenDP refuses it. Use a smaller epsilon."
            )
        meas = dp.m.make_randomized_response(
            categories=list(range(self.n_categories)), prob=p, T="i64"
        )
        return np.array([meas(int(v)) for v in x.ravel()], dtype=np.int64).reshape(x.shape)

    def random_graph(self, statistic, size=None):
        import pymc as pm
        import pytensor.tensor as pt

        k = self.n_categories
        x = pt.cast(statistic, "int64")
        keep = pm.Bernoulli.dist(p=self.p_keep, size=size)
        # uniform over the other k - 1 categories (floor of a uniform: native on every backend)
        u = pm.Uniform.dist(0.0, 1.0, size=size)
        shift = 1 + pt.minimum(pt.cast(pt.floor(u * (k - 1)), "int64"), k - 2)
        return pt.switch(keep, x, (x + shift) % k)

    def dp_event(self):
        from dp_accounting import dp_event

        k = self.n_categories
        p = _calibrate.randomized_response_parameter(self.epsilon, k)
        return dp_event.RandomizedResponseDpEvent(noise_parameter=p, num_buckets=k)

    def noise_key(self):
        return ("keep", self.epsilon, self.n_categories)


def _bernoulli_exp_vec(rng, num: int, den: int, size: int) -> np.ndarray:
    """``size`` iid exact Bernoulli(exp(-num/den)) (CKS Algorithm 1, vectorised over draws)."""
    if den >= 2**62:  # huge denominators: the scalar big-integer sampler
        return np.array([_exact.bernoulli_exp(rng, num, den) for _ in range(size)], dtype=bool)
    whole, frac = divmod(num, den)
    out = np.ones(size, dtype=bool)
    for _ in range(whole):  # ⌊γ⌋ Bernoulli(e^{-1}) must all succeed
        out &= _bernoulli_exp_unit_vec(rng, 1, 1, size)
    return out & _bernoulli_exp_unit_vec(rng, frac, den, size)


def _bernoulli_exp_unit_vec(rng, num, den, size):
    # K ← 1; while Bernoulli(γ/K): K ← K + 1; return K odd.  Bernoulli(num/(den K)) is
    # {uniform on 0..K-1 is 0} and {uniform on 0..den-1 < num}, exact in int64.
    k = np.ones(size, dtype=np.int64)
    active = np.ones(size, dtype=bool)
    while active.any():
        idx = np.flatnonzero(active)
        a = (rng.integers(0, k[idx]) == 0) & (rng.integers(0, den, size=idx.size) < num)
        k[idx[a]] += 1
        active[idx[~a]] = False
    return k % 2 == 1
