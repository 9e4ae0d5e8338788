"""A precompiled prefix header for PyTensor's C modules during the test run (compile time only).

Every C module PyTensor compiles starts with the same includes (``Python.h``, PyTensor's helper, the
NumPy headers, ``<vector>``, ``<algorithm>``); parsing them is most of the ~0.5 CPU s that g++
spends per module, and a cold test run compiles ~900 modules. This module precompiles those
headers once (``Python.h.gch``, built with exactly the flags PyTensor passes to g++; built again
when any header it was made from is newer, e.g. NumPy upgraded in place) and puts its
folder first on g++'s include path (``gcc__cxxflags``), so g++ loads the parsed headers instead of
reading them again; and it adds ``-g0`` (no debug information). The generated machine code is
the same byte for byte (the headers only declare; the modules' own code and optimization flags
are unchanged), so no numbers change, only compile time.

g++ checks a precompiled header against the flags of each compile and silently ignores it when
they do not match; it then reads the wrapper ``Python.h``, which includes the real headers, so a
mismatch costs time, never correctness. Nothing is done when PyTensor has no C++ compiler or with
``PYMC_DP_TEST_PCH=0``; when the header cannot be built, only ``-g0`` is used.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

#: the includes PyTensor's CLinker writes at the top of every module, in its order
_PREFIX = """\
#ifndef PYMC_DP_TEST_PCH_PREFIX
#define PYMC_DP_TEST_PCH_PREFIX
#include_next <Python.h>
#include "pytensor_mod_helper.h"
#include <math.h>
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <numpy/npy_math.h>
#include <vector>
#include <algorithm>
#endif
"""


def _clinker_args() -> tuple[list[str], list[str]]:
    """The compile flags and include folders PyTensor's CLinker passes to g++ for an Elemwise."""
    import pytensor.tensor as pt
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.c.basic import CLinker
    from pytensor.link.c.cmodule import std_include_dirs

    x = pt.dvector("x")
    linker = CLinker().accept(FunctionGraph([x], [pt.exp(x) + x]))
    return list(linker.compile_args()), list(linker.header_dirs()) + std_include_dirs()


def _fresh(gch: Path) -> bool:
    """Whether ``gch`` exists and is newer than every header it was built from (g++ does not check
    that: a NumPy or Python upgraded in place must not leave the old declarations in use)."""
    deps = gch.with_suffix(".d")
    try:
        built = gch.stat().st_mtime
        text = deps.read_text().replace("\\\n", " ")
        return all(Path(f).stat().st_mtime <= built for f in text.split(":", 1)[1].split())
    except (OSError, IndexError):
        return False


def use_precompiled_headers() -> Path | None:
    """Build (once per flag set) and use the prefix header; the folder used, or None if not."""
    import pymc  # noqa: F401  # PyMC adds its own g++ flags at import; the header is built with them
    import pytensor
    from pytensor import config

    if os.environ.get("PYMC_DP_TEST_PCH", "1") == "0" or not config.cxx:
        return None
    # no debug information in the modules either (PyTensor passes -g; a later -g0 wins): ~10 % less
    # g++ time, the code sections unchanged
    config.gcc__cxxflags = f"{config.gcc__cxxflags} -g0"
    try:
        args, include_dirs = _clinker_args()
        tag = hashlib.sha256(
            "\0".join([config.cxx, pytensor.__version__, _PREFIX, *args, *include_dirs]).encode()
        ).hexdigest()[:16]
        folder = Path(config.compiledir) / "pymc_dp_test_pch" / tag
        if " " in str(folder):  # gcc__cxxflags is split on spaces
            return None
        gch = folder / "Python.h.gch"
        if not _fresh(gch):
            folder.mkdir(parents=True, exist_ok=True)
            wrapper = folder / "Python.h"
            if not wrapper.exists() or wrapper.read_text() != _PREFIX:
                wrapper.write_text(_PREFIX)
            with tempfile.TemporaryDirectory(dir=folder) as tmp:  # xdist workers build at once
                out, deps = Path(tmp) / "Python.h.gch", Path(tmp) / "Python.h.d"
                cmd = [config.cxx, "-x", "c++-header", "-g", *args]
                cmd += [f"-I{d}" for d in include_dirs]
                cmd += ["-fvisibility=hidden", "-w", "-MD", "-MF", str(deps)]
                cmd += ["-o", str(out), str(wrapper)]
                subprocess.run(cmd, check=True, capture_output=True)
                os.replace(deps, folder / "Python.h.d")
                os.replace(out, gch)
    except (OSError, subprocess.CalledProcessError, ImportError):
        return None
    config.gcc__cxxflags = f"{config.gcc__cxxflags} -I{folder}"
    return folder
