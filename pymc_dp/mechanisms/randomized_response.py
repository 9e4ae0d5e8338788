"""k-ary randomized response (Warner 1965; Kairouz et al. 2016), a local mechanism."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from pymc_dp._checks import check_epsilon
from pymc_dp.mechanisms.base import CATEGORICAL_KERNEL, Mechanism

__all__ = ["RandomizedResponse"]


@dataclasses.dataclass(frozen=True)
class RandomizedResponse(Mechanism):
    r"""Each record's category is kept with probability ``e^ε / (e^ε + k - 1)`` and otherwise
    replaced by one of the other ``k - 1`` categories uniformly.

    .. math:: p(r \mid x) = \frac{e^{\varepsilon}}{e^{\varepsilon} + k - 1}\ \text{if } r = x,
              \qquad \frac{1}{e^{\varepsilon} + k - 1}\ \text{otherwise}.

    Use with ``pdp.Local()`` on integer records in ``0..n_categories-1``.
    """

    epsilon: float = 1.0
    n_categories: int = 2

    norm = None
    integer = True
    local_only = True
    kernel_code = CATEGORICAL_KERNEL

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        k = self.n_categories
        if not (isinstance(k, (int, np.integer)) and k >= 2):
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

    def sample(self, statistic, rng: np.random.Generator):
        x = np.asarray(statistic).astype(np.int64)
        k = self.n_categories
        keep = rng.random(x.shape) < self.p_keep
        other = (x + 1 + rng.integers(0, k - 1, size=x.shape)) % k
        return np.where(keep, x, other)

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
        p = k / (math.exp(self.epsilon) + k - 1)
        return dp_event.RandomizedResponseDpEvent(noise_parameter=p, num_buckets=k)
