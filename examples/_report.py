"""Shared plumbing of the example scripts: command-line flags, output folders, posterior summaries.

Every example accepts

``--smoke``    tiny settings that finish in well under a minute (used by ``tests/examples/test_examples.py``
               and by the documentation build, which renders the printed output and the figures);
``--refresh``  rewrite the committed results (``examples/*.md``, ``examples/figures/``); without it a
               script writes only under the untracked ``examples/output/`` (or ``--outdir``);
``--outdir``   where figures and result files go when not refreshing.

`summary` prints, for every scalar parameter, the posterior mean, sd, 94 % highest-density
interval and the bulk/tail effective sample sizes and R-hat. ESS and R-hat come from
``az.summary(..., kind="diagnostics")``, which behaves the same on ArviZ 0.2x (PyMC 5) and ArviZ 1.x
(PyMC 6); mean, sd and the HDI (the narrowest interval holding 94 % of the draws, the definition of
``az.hdi``) are computed here from the pooled draws, because ``az.hdi``'s keywords and output layout
differ between the two ArviZ lines.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
import warnings
from contextlib import contextmanager

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "output"
FIGURES = HERE / "figures"
# run against the checkout the examples live in, even when another copy of pymc_dp is installed
if (HERE.parent / "pymc_dp" / "__init__.py").exists() and str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

__all__ = ["parser", "outputs", "summary", "hdi", "quiet_blas_warning", "timer"]


def quiet_blas_warning() -> None:
    """Silence PyTensor's "could not link to a BLAS" warning.

    PyTensor prints it when it cannot find a BLAS library to link its C code against (common with
    pip-installed NumPy wheels, whose OpenBLAS is bundled privately). It then uses NumPy's own BLAS
    through Python for matrix products: results are identical, only some large dense products are
    slower. The models in these examples are dominated by elementwise work, so the warning says
    nothing useful here. Call this before importing PyMC.
    """
    warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)


def parser(doc: str, *, results: str | None = None) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` with the shared flags; ``doc`` is the module docstring.

    ``results`` names the committed results (e.g. ``"examples/FISHER_RESULTS.md and
    examples/figures/fisher_fig*.png"``) that ``--refresh`` rewrites.
    """
    p = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="tiny settings (well under a minute) to check the script runs",
    )
    if results:
        p.add_argument(
            "--refresh",
            action="store_true",
            help=f"rewrite the committed results ({results}) instead of writing under --outdir",
        )
    p.add_argument(
        "--outdir",
        default=os.environ.get("PYMC_DP_EXAMPLES_OUT", str(DEFAULT_OUT)),
        help="folder for figures and result files (default examples/output/, untracked)",
    )
    return p


def outputs(args) -> tuple[pathlib.Path, pathlib.Path]:
    """``(results_dir, figures_dir)``: the committed locations with ``--refresh``, else ``--outdir``."""
    if getattr(args, "refresh", False):
        FIGURES.mkdir(exist_ok=True)
        return HERE, FIGURES
    out = pathlib.Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    return out, out


def hdi(draws, prob: float = 0.94) -> tuple[float, float]:
    """Narrowest interval containing a fraction ``prob`` of the (pooled) draws."""
    x = np.sort(np.asarray(draws, dtype=float).ravel())
    k = int(np.floor(prob * len(x)))
    if k < 1 or len(x) < 2:
        return float(x[0]), float(x[-1])
    widths = x[k:] - x[: len(x) - k]
    i = int(np.argmin(widths))
    return float(x[i]), float(x[i + k])


def _posterior(idata):
    return idata["posterior"] if not hasattr(idata, "posterior") else idata.posterior


def summary(idata, var_names, *, title: str | None = None, prob: float = 0.94) -> str:
    """Mean, sd, ``prob`` HDI, ESS (bulk, tail) and R-hat of every scalar in ``var_names``; returns the text."""
    import arviz as az

    diag = az.summary(idata, var_names=list(var_names), kind="diagnostics")
    post = _posterior(idata)
    lo_name, hi_name = f"hdi_{(1 - prob) / 2:.0%}", f"hdi_{(1 + prob) / 2:.0%}"
    rows, labels = [], []
    for name in var_names:
        arr = np.asarray(post[name].values, dtype=float)  # (chain, draw, ...)
        flat = arr.reshape(arr.shape[0] * arr.shape[1], -1)
        shape = arr.shape[2:]
        for j in range(flat.shape[1]):
            idx = np.unravel_index(j, shape) if shape else ()
            labels.append(name + (f"[{', '.join(map(str, idx))}]" if shape else ""))
            rows.append((flat[:, j].mean(), flat[:, j].std(ddof=1), *hdi(flat[:, j], prob)))
    ess_b = [float(v) for v in np.asarray(diag["ess_bulk"])]
    ess_t = [float(v) for v in np.asarray(diag["ess_tail"])]
    rhat = [float(v) for v in np.asarray(diag["r_hat"])]
    w = max(10, *(len(s) for s in labels))
    head = f"{'':<{w}} {'mean':>9} {'sd':>9} {lo_name:>9} {hi_name:>9} {'ess_bulk':>8} {'ess_tail':>8} {'r_hat':>6}"
    lines = ([title] if title else []) + [head]
    for lab, (m, s, lo, hi), eb, et, r in zip(labels, rows, ess_b, ess_t, rhat, strict=True):
        lines.append(
            f"{lab:<{w}} {m:9.4g} {s:9.3g} {lo:9.4g} {hi:9.4g} {eb:8.0f} {et:8.0f} {r:6.3f}"
        )
    text = "\n".join(lines)
    print(text, flush=True)
    return text


@contextmanager
def timer():
    """``with timer() as t: ...`` then ``t()`` is the elapsed seconds."""
    t0 = time.perf_counter()
    box = [None]
    yield lambda: box[0] if box[0] is not None else time.perf_counter() - t0
    box[0] = time.perf_counter() - t0
