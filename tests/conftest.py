"""Shared fixtures of the test suite (see tests/README.md for the layout and the helpers)."""

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
