"""A user ``fn`` must compute each record's contribution from that record alone."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest

import pymc_dp as pdp

COUPLED = {
    "divides by the max": lambda x: x / x.max(),
    "subtracts the mean": lambda x: (x > x.mean()) * 1.0,
    "reads the next record": lambda x: pt.roll(x, 1, axis=0),
}


@pytest.mark.parametrize("how", sorted(COUPLED))
@pytest.mark.parametrize("kind", ["Sum", "Mean", "Local", "RecordSum"])
def test_release_refuses_an_fn_that_reads_other_records(kind, how):
    """Sum(0, 1, fn=lambda x: x / x.max()) was released with sensitivity 1 while one replaced
    record moved the statistic by 98 (ε 98 for a claimed 1)."""
    fn = COUPLED[how]
    stat = (
        pdp.RecordSum(fn, sensitivity=1.0)
        if kind == "RecordSum"
        else getattr(pdp, kind)(0, 1, fn=fn)
    )
    data = np.random.default_rng(1).uniform(0, 1, 100)
    data[-1] = 100.0
    with pytest.raises(ValueError, match="from that record alone"):
        pdp.release(data, stat, pdp.Laplace(epsilon=1.0), rng=1)


def test_record_wise_functions_are_released():
    """Element-wise functions, per-record constants of length n (group indicators, covariates)
    and the public n itself are record-wise under replace-one neighbours."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50), rng.integers(0, 3, size=50)
    onehot = np.eye(3)[y]
    for stat, data in [
        (pdp.RecordSum(lambda a: pt.as_tensor(onehot) * pt.clip(a, -3, 5)[:, None], 8.0), (x,)),
        (pdp.Sum(0, 1, fn=lambda a: pt.abs(a) / a.shape[0]), (x,)),
        (pdp.Sum(0, 4, fn=lambda a: a**2), (x,)),
        (pdp.Mean(-1, 1, fn=lambda a: pt.tanh(a)), (x,)),
        (pdp.Local(0, 10, fn=lambda a, b: a * a + b), (x, y)),
        (pdp.RecordSum(lambda a: pt.stack([a, a**2], axis=1).clip(-1, 1), sensitivity=4.0), (x,)),
    ]:
        pdp.release(data if len(data) > 1 else data[0], stat, pdp.Laplace(epsilon=1.0), rng=1)


def test_a_maximum_held_by_several_records_is_still_caught():
    """x / x.max() passed on [5, 5, 1, 1]: replacing one record never moved a tied maximum."""
    for data in (np.array([5.0, 5.0, 1.0, 1.0]), np.array([0.0, 3.0, 3.0, 0.0, 1.0, 1.0])):
        with pytest.raises(ValueError, match="from that record alone"):
            pdp.release(data, pdp.Sum(0, 1, fn=lambda x: x / x.max()), pdp.Laplace(1.0), rng=1)
