"""What a function computes, as a digest: `code_digest`.

`sample_many` records it in ``outdir/manifest.json`` for ``build``, ``data`` and ``step``, so a
resumed run whose ``build`` changed (its code, a module-level constant it reads, a value its
closure holds) is refused instead of skipping units sampled from the old model.

The digest is a function of the source's meaning only, the same in every process (whatever
``PYTHONHASHSEED``) and run:

* a Python function: its bytecode, constants and names (not its file name or line numbers: a
  comment added above it changes nothing), defaults, closure values, and the module-level values
  its code reads (``PRIOR_MEAN``, ``RELEASES``, a helper function — followed recursively);
* functions and classes of installed libraries (PyMC, NumPy, pymc-dp, ...) by name only: their
  code changes with their version, and their module state (caches, registries) is not the user's;
* modules by name; numbers, strings, NumPy arrays (dtype, shape and bytes), pandas tables (their
  values and labels), containers (sets and dicts in a sorted order); any other object by its type
  and its public attributes (those not starting with ``_``: caches and compiled functions stay
  out), e.g. ``pdp.Mean(lower=-3, upper=5)`` by its bounds.

What it cannot see (a file ``build`` reads, a value fetched through another module's attribute,
``mod.CONSTANT``) is the user's to keep fixed between a run and its resume.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import sys
import sysconfig
import types

import numpy as np

__all__ = ["code_digest"]

#: nesting depth and number of values followed; deeper or further values count by type only
_MAX_DEPTH = 12
_MAX_NODES = 20_000
_SCALARS = (type(None), bool, int, float, complex, str, bytes)


def code_digest(fn) -> str | None:
    """A hex digest of what ``fn`` computes (see the module docstring); ``None`` for ``None``."""
    if fn is None:
        return None
    return _Digest().of(fn, 0).hex()[:32]


@functools.cache
def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, paths["purelib"], paths["platlib"]}
    return tuple(os.path.realpath(r) + os.sep for r in roots if r)


def _is_library(module_name) -> bool:
    """Whether ``module_name`` is installed code (followed by name only), not the user's."""
    if not isinstance(module_name, str) or module_name == "__main__":
        return False  # a script, a notebook, code run by exec()
    if module_name.split(".")[0] in ("pymc_dp", "builtins"):
        return True
    module = sys.modules.get(module_name)
    if module is None:
        return False
    path = getattr(module, "__file__", None)
    if not path:  # built into the interpreter
        return True
    return os.path.realpath(path).startswith(_library_roots())


class _Digest:
    def __init__(self):
        self.nodes = 0
        self.path: set[int] = set()  # ids of the values being digested (cycles)

    def of(self, value, depth) -> bytes:
        h = hashlib.sha256()
        self.nodes += 1
        if isinstance(value, _SCALARS):
            h.update(f"{type(value).__name__}:{value!r}".encode())
            return h.digest()
        tag = f"{type(value).__module__}.{type(value).__qualname__}"
        h.update(tag.encode())
        if id(value) in self.path:
            h.update(b"<cycle>")
            return h.digest()
        if depth > _MAX_DEPTH or self.nodes > _MAX_NODES:
            h.update(b"<deep>")
            return h.digest()
        self.path.add(id(value))
        try:
            for part in self._parts(value, depth + 1):
                h.update(part if isinstance(part, bytes) else str(part).encode())
        finally:
            self.path.discard(id(value))
        return h.digest()

    def _parts(self, value, depth):
        if isinstance(value, np.ndarray | np.generic):
            arr = np.asarray(value)
            yield f"{arr.dtype.str}{arr.shape}"
            if arr.dtype.hasobject:
                yield from (self.of(v, depth) for v in arr.ravel().tolist())
            else:
                yield np.ascontiguousarray(arr).tobytes()
        elif _is_pandas(value):  # its state is private (_mgr): hash its values and labels
            import pandas as pd

            yield self.of(np.asarray(pd.util.hash_pandas_object(value, index=True)), depth)
            yield self.of(list(getattr(value, "columns", [])), depth)
        elif isinstance(value, types.ModuleType):
            yield value.__name__
        elif isinstance(value, list | tuple):
            yield from (self.of(v, depth) for v in value)
        elif isinstance(value, set | frozenset):
            yield from sorted(self.of(v, depth) for v in value)
        elif isinstance(value, dict):
            yield from sorted(self.of(k, depth) + self.of(v, depth) for k, v in value.items())
        elif isinstance(value, types.FunctionType):
            yield from self._function(value, depth)
        elif isinstance(value, types.CodeType):
            yield from self._code(value, depth)
        elif isinstance(value, types.MethodType):
            yield self.of(value.__func__, depth)
            yield self.of(value.__self__, depth)
        elif isinstance(value, functools.partial):
            yield from (self.of(v, depth) for v in (value.func, value.args, value.keywords))
        elif isinstance(value, staticmethod | classmethod):
            yield self.of(value.__func__, depth)
        elif isinstance(value, type):
            yield from self._class(value, depth)
        elif isinstance(value, types.BuiltinFunctionType):
            yield f"{getattr(value, '__module__', None)}.{value.__qualname__}"
        else:  # an instance: its class and its public state
            yield self.of(type(value), depth)
            state = getattr(value, "__dict__", None)
            if isinstance(state, dict):
                yield self.of({k: v for k, v in state.items() if not k.startswith("_")}, depth)
            else:  # no __dict__ (__slots__: an xarray array, a Fraction): its pickle, else repr
                try:
                    yield hashlib.sha256(pickle.dumps(value, protocol=5)).digest()
                except Exception:  # noqa: BLE001 - unpicklable: what it prints
                    yield repr(value)

    def _function(self, fn, depth):
        yield f"{fn.__module__}.{fn.__qualname__}"
        if _is_library(fn.__module__):
            return
        code = fn.__code__
        yield self.of(code, depth)
        yield self.of(fn.__defaults__, depth)
        yield self.of(fn.__kwdefaults__, depth)
        cells = []
        for cell in fn.__closure__ or ():
            try:
                cells.append(cell.cell_contents)
            except ValueError:  # an empty cell (a name assigned later)
                cells.append("<empty cell>")
        yield self.of(tuple(cells), depth)
        names = {}
        for name in sorted(_global_names(code)):
            if name in fn.__globals__:
                names[name] = fn.__globals__[name]
        yield self.of(names, depth)

    def _code(self, code, depth):
        yield code.co_code
        yield self.of(code.co_names, depth)
        yield self.of((code.co_argcount, code.co_kwonlyargcount, code.co_flags), depth)
        yield self.of((code.co_varnames, code.co_freevars, code.co_cellvars), depth)
        yield self.of(code.co_consts, depth)  # nested functions' code objects included

    def _class(self, cls, depth):
        yield f"{cls.__module__}.{cls.__qualname__}"
        if _is_library(cls.__module__):
            return
        own = {
            k: v
            for k, v in vars(cls).items()
            if not (k.startswith("__") and k.endswith("__")) or k in ("__init__", "__call__")
        }
        yield self.of(own, depth)
        yield self.of(cls.__bases__, depth)


def _is_pandas(value) -> bool:
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(value, pd.DataFrame | pd.Series | pd.Index)


def _global_names(code) -> set[str]:
    """The names ``code`` (and the functions defined in it) may read from its module."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names
