"""Clear messages for keyword arguments a regression function does not take."""

from __future__ import annotations

import functools
import inspect

__all__ = ["explain_kwargs", "unknown_kwargs_message"]

_HINTS = {
    "budget": (
        "the privacy budget is given as epsilon=... and delta=... to release_suff_stats, the "
        "one step that spends it (parallel composition over nodes); fitting the released "
        "statistics is post-processing and spends nothing."
    ),
    "cores": (
        "the regression samplers run their chains one after another in this process (they are "
        "fast NumPy loops, not pm.sample). Drop cores= and set chains= if you want more chains."
    ),
    "random_seed": "pass rng=np.random.default_rng(seed) instead.",
    "seed": "pass rng=np.random.default_rng(seed) instead.",
}


def unknown_kwargs_message(name: str, params, unknown) -> str:
    """``"<name>() got unexpected keyword argument(s) ...; it takes ...; <hint>"``."""
    bad = sorted(unknown)
    shown = ", ".join(f"{k}=" for k in bad)
    takes = ", ".join(p for p in params if p not in ("self",))
    hints = " ".join(f"{k}=: {_HINTS[k]}" for k in bad if k in _HINTS)
    return (
        f"{name}() does not take {shown}; its keyword arguments are: {takes}. "
        + (hints or "Check the spelling against the docstring.")
    ).rstrip()


def explain_kwargs(fn):
    """Decorator: an unknown keyword argument raises a TypeError naming it, the accepted ones and
    the fix (instead of Python's bare "unexpected keyword argument")."""
    sig = inspect.signature(fn)
    params = [
        p.name
        for p in sig.parameters.values()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    takes_any = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        unknown = set(kwargs) - set(params)
        if unknown and not takes_any:
            raise TypeError(unknown_kwargs_message(fn.__name__, params, unknown))
        return fn(*args, **kwargs)

    return wrapper
