"""Memory linear in n for Median/Max smooth sensitivity and in n + K for Counts (issue 20, item 9).

The old smooth sensitivity indexed ``(n+1)(n+2)`` tables (6.7 GiB at n = 30,000); the new one
is an O(n)-memory divide and conquer over the sorted values. It must give the same floats:
checked here against the old table implementation (kept below as the reference) on small n.
"""

import tracemalloc

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

import pymc_dp as pdp
from pymc_dp.statistics.order import order_smooth_sensitivity


def _old_index_tables(n, m):
    k = np.arange(n + 1)[:, None]
    t = np.arange(n + 2)[None, :]
    pad = n + 2
    hi = m + t - 1 + pad
    lo = np.where(t > k + 1, m + t - 1 + pad, m + t - k - 2 + pad)
    return hi, lo


def _old_smooth_sensitivity(values, m, width, beta):
    """The former implementation: every (k, t) pair of the module docstring's formula."""
    n = values.shape[-1]
    hi, lo = _old_index_tables(n, m)
    padded = np.concatenate([np.zeros(n + 2), np.sort(values), np.full(n + 2, float(width))])
    b = (padded[hi] - padded[lo]).max(axis=1)
    return (b * np.exp(-beta * np.arange(n + 1))).max()


def _cases(rng, count):
    for trial in range(count):
        n = int(rng.integers(1, 35))
        kind = trial % 4
        if kind == 0:
            v = rng.uniform(0, 3, n)
        elif kind == 1:
            v = rng.integers(0, 4, n).astype(float)  # ties
        elif kind == 2:
            v = np.full(n, rng.choice([0.0, 1.5, 3.0]))  # all equal, at the bounds too
        else:
            v = np.clip(rng.normal(1.5, 0.4, n), 0, 3)
        yield v, float(rng.choice([0.01, 0.1, 0.7, 3.0]))


def test_same_values_as_the_table_implementation():
    rng = np.random.default_rng(20)
    for v, beta in _cases(rng, 600):
        n = v.size
        for m in sorted({1, (n + 1) // 2, n, max(1, n // 3)}):
            assert order_smooth_sensitivity(v, m, 3.0, beta) == _old_smooth_sensitivity(
                v, m, 3.0, beta
            )
    batch = rng.uniform(0, 3, (6, 17))
    np.testing.assert_array_equal(
        order_smooth_sensitivity(batch, 9, 3.0, 0.2),
        [_old_smooth_sensitivity(r, 9, 3.0, 0.2) for r in batch],
    )


def test_graph_op_value_and_gradient():
    """The PyTensor Op gives the NumPy value, and a gradient equal to finite differences."""
    x = pt.dvector("x")
    stat = pdp.Median(lower=0, upper=3)
    s = order_smooth_sensitivity(x, 5, 3.0, 0.3, xp=pt)
    f = pytensor.function([x], [s, pytensor.grad(s, x)])
    v = np.random.default_rng(1).uniform(0, 3, 9)
    value, grad = f(v)
    assert float(value) == _old_smooth_sensitivity(v, 5, 3.0, 0.3)
    h = 1e-6
    numeric = [(f(v + h * e)[0] - f(v - h * e)[0]) / (2 * h) for e in np.eye(9)]
    np.testing.assert_allclose(grad, numeric, atol=1e-6)
    assert stat.smooth_sensitivity(pt.as_tensor(v), beta=0.3).eval() == pytest.approx(
        stat.smooth_sensitivity_np(v, 0.3), rel=0, abs=0
    )


@pytest.mark.parametrize("which", [pdp.Median, pdp.Max])
def test_a_million_records_in_linear_memory(which):
    """n = 10^6: the old tables would need ~8 TB; peak traced memory stays within 100 bytes/record."""
    n = 10**6
    v = np.random.default_rng(3).uniform(0, 3, n)
    stat, mech = which(lower=0, upper=3), pdp.SmoothLaplace(epsilon=1.0, delta=1e-6)
    stat.smooth_sensitivity_np(v[:10], mech.beta)  # compile outside the trace
    tracemalloc.start()
    sens = stat.smooth_sensitivity_np(v, mech.beta)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 100 * n
    assert 0 < sens < 3.0


def test_counts_is_bincount_and_linear_in_n_plus_k():
    rng = np.random.default_rng(4)
    k, n = 10**4, 10**5
    x = rng.integers(0, k, n)
    stat = pdp.Counts(k)
    stat.evaluate(x[:10])
    tracemalloc.start()
    counts = stat.evaluate(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    np.testing.assert_array_equal(counts, np.bincount(x, minlength=k))
    assert peak < 40 * (n + k)  # a dense one-hot would be 8 n k = 8 GB
    # the graph (used by DPObserved) is bincount-style too, and drops out-of-range codes as before
    xt = pt.lvector("x")
    small = pdp.Counts(4)
    f = pytensor.function([xt], small(xt))
    codes = np.array([0, 3, 3, 1, 5, -1, 2, 2, 2])
    np.testing.assert_array_equal(f(codes), [1, 1, 3, 2])
    np.testing.assert_array_equal(small.evaluate(codes), [1, 1, 3, 2])
    graph_nodes = pytensor.graph.basic.ancestors([small(xt)])
    assert not any(getattr(v.type, "ndim", 0) == 2 for v in graph_nodes)  # no (n, K) one-hot
