"""Version shims for the PyMC 5 / PyMC 6 lines, in one place.

* ``ancestors``: moved from ``pytensor.graph.basic`` to ``pytensor.graph.traversal`` in PyTensor 2.31.
* `az_from_dict`: ``arviz.from_dict`` takes keyword groups in ArviZ 0.2x and one nested dict
  (returning an ``xarray.DataTree``) in ArviZ 1.x.
* `call_rv`: a ``RandomVariable`` Op called for its draw; PyTensor of the PyMC 6 line deprecates
  calling one without ``return_next_rng=True`` (the older line has no such argument).
"""

from __future__ import annotations

try:  # PyTensor >= 2.31
    from pytensor.graph.traversal import ancestors
except ImportError:  # pragma: no cover - older PyTensor (PyMC 5 line)
    from pytensor.graph.basic import ancestors

import inspect

__all__ = ["ancestors", "az_from_dict", "call_rv"]


def call_rv(op, *args, **kwargs):
    """``op(*args, **kwargs)``: the draw of a ``RandomVariable`` Op, on both PyTensor lines."""
    if "return_next_rng" in inspect.signature(type(op).__call__).parameters:
        return op(*args, return_next_rng=True, **kwargs)[1]
    return op(*args, **kwargs)


def az_from_dict(groups: dict, *, dims=None, attrs: dict | None = None):
    """``arviz.from_dict`` on both ArviZ lines; ``attrs`` go on the posterior group."""
    import arviz as az

    if int(az.__version__.split(".")[0]) >= 1:
        return az.from_dict(groups, dims=dims, attrs={"posterior": attrs} if attrs else None)
    idata = az.from_dict(**groups, dims=dims)
    idata.posterior.attrs.update(attrs or {})
    return idata
