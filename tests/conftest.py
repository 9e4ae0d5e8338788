"""Shared fixtures of the test suite (see tests/README.md for the layout and the helpers)."""

from pathlib import Path

import numpy as np
import pytest

from tests.support.models import NormalMeans, NormalMeansGrad
from tests.support.pch import use_precompiled_headers

# before anything compiles: PyTensor's C modules reuse one precompiled header (same machine code,
# ~1/3 less g++ time per module; tests/support/pch.py)
use_precompiled_headers()


@pytest.fixture
def rng():
    """A fresh seeded generator per test (seed 0); tests that need another seed make their own."""
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def normal_target():
    """x_i ~ N((0.5, -1), I₂) clipped to [-3, 3], n = 200: the penalty kernels' conjugate target."""
    rng = np.random.default_rng(20261122)
    return NormalMeans(np.clip(rng.normal([0.5, -1.0], 1.0, size=(200, 2)), -3.0, 3.0))


@pytest.fixture(scope="session")
def normal_grad_target():
    """The same model with per-record gradients (DP MALA, subsampled and tempered kernels), seed 7."""
    rng = np.random.default_rng(7)
    return NormalMeansGrad(np.clip(rng.normal([0.5, -1.0], 1.0, size=(200, 2)), -3, 3))


_TIMED_SLOW = frozenset(
    line.strip()
    for line in (Path(__file__).parent / "timed_slow.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
)


def pytest_itemcollected(item):
    """Tests listed in ``tests/timed_slow.txt`` (default-tier tests of 0.5 s or more per case)
    are slow: split between the two CI legs by ``--slow-part``, skipped by ``make test-fast``."""
    if item.nodeid.split("[")[0] in _TIMED_SLOW:
        item.add_marker(pytest.mark.slow)


def pytest_addoption(parser):
    parser.addoption(
        "--slow-part",
        default="all",
        metavar="K/N",
        help=(
            "run only part K of N of the slow statistical tier (every N-th slow test in collection "
            "order, starting at the K-th; K1,K2/N: several parts); the default tier runs whole. CI "
            "splits the slow tier between the two PyMC lines with 1/2 and 2/2; "
            "'all' (default) "
            "runs the whole tier."
        ),
    )


def _slow_part(value):
    """``K/N`` or ``K1,K2,.../N`` -> (set of parts, N); ``all`` -> None."""
    if value == "all":
        return None
    try:
        ks, n = value.split("/")
        parts, n = {int(k) for k in ks.split(",")}, int(n)
    except ValueError:
        parts, n = set(), 0
    if not parts or not all(1 <= k <= n for k in parts):
        raise pytest.UsageError(
            "--slow-part must be 'all', K/N or K1,K2,.../N with 1 <= K <= N (e.g. 1/2 or 1,2/3), "
            f"got {value!r}"
        )
    return parts, n


def pytest_collection_modifyitems(config, items):
    part = _slow_part(config.getoption("--slow-part"))
    if part is None:
        return
    parts, n = part
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    # interleaved over the collection order: neighbouring cases of one test (similar cost) go to
    # different parts, so the parts take about the same time (measured: 500 s / 535 s of 1,035 s)
    drop = {id(item) for i, item in enumerate(slow) if i % n + 1 not in parts}
    if drop:
        config.hook.pytest_deselected(items=[item for item in items if id(item) in drop])
        items[:] = [item for item in items if id(item) not in drop]
