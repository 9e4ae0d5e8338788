"""What pymc-dp knows about a PyMC model, kept beside the model (never written onto it).

``DPObserved`` registers each release node here; the samplers, ``privacy_spent`` and
``marginalize`` read the nodes back with :func:`dp_nodes`. ``pm.sample()``'s step assignment asks
:func:`model_of` which model a record variable belongs to (PyMC hands a step's ``competence`` the
variable only). The maps hold the models weakly: a model that is gone takes its entry with it.
"""

from __future__ import annotations

import weakref

import pymc as pm

__all__ = ["dp_nodes", "register_node", "set_nodes", "model_of", "set_extra", "get_extra"]

_NODES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {name: DPNode}
_EXTRA: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {key: value}


def dp_nodes(model=None) -> dict:
    """The ``DPObserved`` nodes of ``model`` (name → :class:`~pymc_dp.distributions.DPNode`)."""
    model = pm.modelcontext(model)
    return dict(_NODES.get(model, {}))


def register_node(model, name: str, node) -> None:
    """Record the ``DPObserved`` node ``name`` of ``model``."""
    _NODES.setdefault(model, {})[name] = node


def set_nodes(model, nodes: dict) -> None:
    """Replace the nodes of ``model`` (e.g. a rewritten copy of another model)."""
    _NODES[model] = dict(nodes)


def model_of(var):
    """The model whose ``DPObserved`` nodes or variables include ``var`` (None if unknown).

    The model context wins when it holds ``var``; otherwise the registered models are searched.
    """
    try:
        model = pm.modelcontext(None)
    except TypeError:
        model = None
    if model is not None and var in model.basic_RVs:
        return model
    for candidate in list(_NODES.keys()):
        if var in candidate.basic_RVs:
            return candidate
    return None


def set_extra(model, key: str, value) -> None:
    """Attach package data to ``model`` (e.g. what ``marginalize`` needs to recover records)."""
    _EXTRA.setdefault(model, {})[key] = value


def get_extra(model, key: str, default=None):
    return _EXTRA.get(model, {}).get(key, default)
