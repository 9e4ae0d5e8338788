"""Units for the `pdp.sample_many` tests: small models Dask workers can import (module-level)."""

from __future__ import annotations

import numpy as np
import pymc as pm

import pymc_dp as pdp

N = 30
STAT = pdp.Sum(lower=-3, upper=5)


def release_for(unit) -> np.ndarray:
    """The noisy sum of unit ``unit``'s 30 confidential normal records (Laplace, ε = 1)."""
    rng = np.random.default_rng(1000 + int(unit))
    x = rng.normal(1.0, 1.0, size=N)
    return np.asarray(pdp.release(x, STAT, pdp.Laplace(epsilon=1.0), rng=rng))


def build(unit) -> pm.Model:
    """Normal records, conjugate prior on their mean, the release in ``pm.Data("s", ...)``."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        x = pm.Normal("x", mu, 1.0, shape=N)
        s = pm.Data("s", release_for(unit))
        pdp.DPObserved("s_dp", x, statistic=STAT, mechanism=pdp.Laplace(epsilon=1.0), observed=s)
    return model


def data(unit) -> dict:
    return {"s": release_for(unit)}


def build_failing_on_3(unit) -> pm.Model:
    if unit == 3:
        raise ValueError("unit 3 has no data")
    return build(unit)


def build_slow(unit) -> pm.Model:
    """`build`, for the kill/resume tests: the unit takes a while (sleep before building)."""
    import time

    time.sleep(1.5)
    return build(unit)


def build_sized(unit) -> pm.Model:
    """`build` plus a container ``w`` of 1 + unit % 2 entries (units of two shapes)."""
    model = build(unit)
    with model:
        pm.Data("w", np.ones(1 + int(unit) % 2))
    return model


def data_sized(unit) -> dict:
    return {"s": release_for(unit), "w": np.ones(1 + int(unit) % 2)}


def bernoulli_release(unit) -> float:
    """The noisy count of unit ``unit``'s 10 confidential yes/no answers (Laplace, scale 1)."""
    rng = np.random.default_rng(2000 + int(unit))
    x = rng.binomial(1, rng.beta(2, 2), size=10)
    return float(pdp.release(x, pdp.Sum(lower=0, upper=1), pdp.Laplace(scale=1.0), rng=rng))


def build_bernoulli(unit) -> pm.Model:
    """Beta–Bernoulli records behind a noisy sum: pm.sample() assigns pdp.Collapsed."""
    with pm.Model() as model:
        s = pm.Data("s", bernoulli_release(unit))
        p = pm.Beta("p", 2, 2)
        x = pm.Bernoulli("x", p, shape=10)
        pdp.DPObserved(
            "s_dp",
            x,
            statistic=pdp.Sum(lower=0, upper=1),
            mechanism=pdp.Laplace(scale=1.0),
            observed=s,
        )
    return model


def data_bernoulli(unit) -> dict:
    return {"s": bernoulli_release(unit)}


def build_records_by_unit(unit) -> pm.Model:
    """`build` whose number of records depends on the unit outside `data`: 30 or 12 records."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        x = pm.Normal("x", mu, 1.0, shape=N if int(unit) % 2 == 0 else 12)
        s = pm.Data("s", release_for(unit))
        pdp.DPObserved("s_dp", x, statistic=STAT, mechanism=pdp.Laplace(epsilon=1.0), observed=s)
    return model


def build_with_nuts(unit) -> pm.Model:
    """`build_bernoulli` (Collapsed) beside a plain normal model (NUTS)."""
    model = build_bernoulli(unit)
    with model:
        mu = pm.Normal("mu", 0, 5)
        pm.Normal("y", mu, 2.0, observed=np.random.default_rng(int(unit)).normal(1, 2, 30))
    return model
