"""Version shims for the PyMC 5 / PyMC 6 lines, in one place.

* ``ancestors``: moved from ``pytensor.graph.basic`` to ``pytensor.graph.traversal`` in PyTensor 2.31.
"""

from __future__ import annotations

try:  # PyTensor >= 2.31
    from pytensor.graph.traversal import ancestors
except ImportError:  # pragma: no cover - older PyTensor (PyMC 5 line)
    from pytensor.graph.basic import ancestors

__all__ = ["ancestors"]
