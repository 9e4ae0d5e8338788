"""θ as a flat vector and back: the PyMC point ↔ array mapping the θ-moving kernels share."""

from __future__ import annotations

import numpy as np

__all__ = ["flatten_vars", "layout_point", "replace_flat"]


def flatten_vars(point, names) -> np.ndarray:
    """The values of ``names`` in ``point`` raveled and concatenated (float)."""
    return np.concatenate([np.ravel(np.asarray(point[n], dtype=float)) for n in names])


def replace_flat(point, names, flat) -> dict:
    """A copy of ``point`` with ``names`` set from the flat vector ``flat`` (shapes and dtypes of
    ``point`` kept)."""
    out = dict(point)
    i = 0
    for name in names:
        ref = np.asarray(point[name])
        out[name] = np.asarray(flat[i : i + ref.size]).reshape(ref.shape).astype(ref.dtype)
        i += ref.size
    return out


def layout_point(model) -> dict:
    """The model's initial point, read for the shapes and dtypes of its value variables only.

    No seed is passed: random initial values (``initval="prior"``) change the values, never a
    shape or a dtype, so nothing built from this point depends on its draws
    (``tests/unit/samplers/test_decision_rng.py`` builds the steps under two seeds).
    """
    return model.initial_point()
