r"""Record proposals drawn without the PyTensor graph, for common record families.

Data augmentation (seed 003, Algorithm 1) proposes every record from its conditional prior
`f(x_i \mid \theta)`. The generic route (`pymc_dp.samplers.records.compile_record_draw`)
evaluates the model's random graph, which at `n = 10^5` costs about as much as the compiled
sweep itself (the graph's NumPy draw allocates and fills a fresh array, then PyMC copies it). For the
families below the draw is written once in numba, reads the distribution's parameters from one
compiled PyTensor function of the point (tiny when θ is a scalar) and fills a preallocated buffer
using the step's own ``np.random.Generator``: reproducible by seed, the same distribution as the
graph's (tested in ``tests/{statistical,unit}/samplers/test_fast_proposals.py`` by moments and Kolmogorov–Smirnov per family).

======================  ==============================  =========================================
PyTensor op             parameters                      draw
======================  ==============================  =========================================
``NormalRV``            loc μ, scale σ                  μ + σ·Z, Z standard normal
``BernoulliRV``         p                               1{U < p}
``PoissonRV``           λ                               numba's ``Generator.poisson`` (NumPy's
                                                        PTRS / multiplication algorithms)
``ExponentialRV``       scale β                         β·E, E standard exponential
``GammaRV``             shape k, scale β                β·G, G ``Generator.standard_gamma(k)``
``BinomialRV``          n, p                            ``Generator.binomial(n, p)``
``CategoricalRV``       p (K,) shared or per record     smallest k with U·P_K < P_k, P the
                                                        cumulative sums of p (guide table)
======================  ==============================  =========================================

Categorical records (`draw_categorical`): with p shared by all records the cumulative sums and
a guide table (Chen & Asau's indexed search: the first category of each of K equal slices of [0, 1))
are formed once per draw, O(K), and each record costs one uniform and O(1) expected comparisons; with
per-record p (shape ``(n, K)``) each record's row is summed, O(n·K). p is normalised by its sum
(PyMC's ``Categorical`` takes rescaled p), rows with a negative entry or a zero sum are refused.

A record block uses this route only when every record variable is one of these ops (exact type),
univariate (``ndim_supp == 0``), with no transform or PyMC's log transform (applied to the draw), and
with parameters that do not depend on another record variable (e.g. features given a drawn class
need the joint graph). Anything else keeps the graph.
"""

from __future__ import annotations

import numba
import numpy as np
import pytensor.tensor as pt
from pymc.logprob.transforms import LogTransform
from pymc.logprob.utils import replace_rvs_by_values
from pymc.pytensorf import compile as pm_compile
from pytensor.tensor.random import basic as rb

from pymc_dp.distributions.graph import depends_on

__all__ = [
    "FastRecordDraw",
    "fast_family",
    "FAMILIES",
    "draw_family",
    "draw_categorical",
    "categorical_table",
    "guided_draw",
    "CATEGORICAL",
]

NORMAL, BERNOULLI, POISSON, EXPONENTIAL, GAMMA, BINOMIAL, CATEGORICAL = range(7)

#: exact PyTensor op type -> (family code, number of parameters, integer-valued)
FAMILIES = {
    rb.NormalRV: (NORMAL, 2, False),
    rb.BernoulliRV: (BERNOULLI, 1, True),
    rb.PoissonRV: (POISSON, 1, True),
    rb.ExponentialRV: (EXPONENTIAL, 1, False),
    rb.GammaRV: (GAMMA, 2, False),
    rb.BinomialRV: (BINOMIAL, 2, True),
    rb.CategoricalRV: (CATEGORICAL, 1, True),
}


@numba.njit(cache=True, inline="always")
def _one(code, rng, a, b):
    if code == NORMAL:
        return a + b * rng.standard_normal()
    if code == BERNOULLI:
        return 1.0 if rng.random() < a else 0.0
    if code == POISSON:
        return float(rng.poisson(a))
    if code == EXPONENTIAL:
        return a * rng.standard_exponential()
    if code == GAMMA:
        return b * rng.standard_gamma(a)
    return float(rng.binomial(int(a), b))


@numba.njit(cache=True)
def _fill_shared(code, rng, a, b, out):
    """Shared parameters: one loop per family, so the generator call is the loop body."""
    n = out.shape[0]
    if code == NORMAL:
        for i in range(n):
            out[i] = a + b * rng.standard_normal()
    elif code == EXPONENTIAL:
        for i in range(n):
            out[i] = a * rng.standard_exponential()
    elif code == BERNOULLI:
        for i in range(n):
            out[i] = 1 if rng.random() < a else 0
    else:
        for i in range(n):
            out[i] = _one(code, rng, a, b)


@numba.njit(cache=True)
def draw_family(code, rng, p0, p1, log, out):
    """Fill ``out`` (flat, float64 or int64) with independent draws of family ``code``.

    ``p0``/``p1`` are flat float64 parameter arrays of length 1 (shared) or ``out.size`` (per
    element); ``log`` applies the log transform to each draw (continuous families only).
    """
    n = out.shape[0]
    s0, s1 = p0.shape[0] > 1, p1.shape[0] > 1
    if not (s0 or s1):
        _fill_shared(code, rng, p0[0], p1[0], out)
    else:
        for i in range(n):
            out[i] = _one(code, rng, p0[i if s0 else 0], p1[i if s1 else 0])
    if log:
        for i in range(n):
            out[i] = np.log(out[i])


@numba.njit(cache=True)
def _search(cum, u):
    """Smallest k with ``u < cum[k]`` (``cum`` non-decreasing, ``u < cum[-1]``); the last
    category of positive mass if rounding puts ``u`` at the end."""
    lo, hi = 0, cum.shape[0] - 1
    if not u < cum[hi]:
        while hi > 0 and cum[hi - 1] == cum[hi]:
            hi -= 1
        return hi
    while lo < hi:
        mid = (lo + hi) >> 1
        if u < cum[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(cache=True)
def _guide(cum, guide):
    """``guide[m]`` = smallest k with ``cum[k] > (m / M) · cum[-1]`` (M = ``guide.size``), capped."""
    k, last, total, m_size = 0, cum.shape[0] - 1, cum[-1], guide.shape[0]
    for m in range(m_size):
        t = (m / m_size) * total
        while k < last and not cum[k] > t:
            k += 1
        guide[m] = k


@numba.njit(cache=True, inline="always")
def guided_draw(cum, guide, u):
    """`_search` for ``u`` in [0, 1) started at its guide bucket: O(1) expected steps."""
    last = cum.shape[0] - 1
    v = u * cum[last]
    k = guide[min(int(u * guide.shape[0]), guide.shape[0] - 1)]
    while k < last and not v < cum[k]:
        k += 1
    while k > 0 and v < cum[k - 1]:  # the bucket's start overshot (rounding): step back
        k -= 1
    if not v < cum[k]:  # u·total rounded up to the total: the last category of positive mass
        while k > 0 and cum[k - 1] == cum[k]:
            k -= 1
    return k


@numba.njit(cache=True)
def categorical_table(p, cum, guide):
    """Cumulative sums ``cum`` of the row ``p`` and its guide table (`_guide`), in place.

    Returns False if ``p`` has a negative or non-finite entry or sums to 0.
    """
    total = 0.0
    for j in range(p.shape[0]):
        pj = p[j]
        if not (pj >= 0.0 and pj < np.inf):
            return False
        total += pj
        cum[j] = total
    if not total > 0.0:
        return False
    _guide(cum, guide)
    return True


@numba.njit(cache=True)
def draw_categorical(rng, p, out):
    """Fill ``out`` (flat, int64) with categories drawn with probabilities ∝ the rows of ``p``.

    Record i gets the smallest k with ``U_i · P_K < P_k`` (P the cumulative sums of its row, U_i
    uniform), the inverse-CDF draw of PyTensor's ``CategoricalRV``. ``p`` is float64 ``(1, K)``
    (shared by all records: the sums and a guide table of K buckets are built once, then each
    record costs a uniform and O(1) expected comparisons) or ``(out.size, K)`` (per record: binary
    search in its row). Returns False, drawing nothing more, if a row has a negative or
    non-finite entry or sums to 0.
    """
    n, k = out.shape[0], p.shape[1]
    cum = np.empty(k)
    guide = np.empty(k, dtype=np.int64)
    if p.shape[0] == 1:
        if not categorical_table(p[0], cum, guide):
            return False
        for i in range(n):
            out[i] = guided_draw(cum, guide, rng.random())
        return True
    for r in range(n):
        total = 0.0
        for j in range(k):
            pj = p[r, j]
            if not (pj >= 0.0 and pj < np.inf):
                return False
            total += pj
            cum[j] = total
        if not total > 0.0:
            return False
        out[r] = _search(cum, rng.random() * total)
    return True


def fast_family(rv, transform, record_rvs):
    """``(code, n_params, integer)`` if ``rv`` can be drawn by `draw_family`, else a reason (str)."""
    op = rv.owner.op
    fam = FAMILIES.get(type(op))
    if fam is None:
        return f"{type(op).__name__} has no fast draw"
    if getattr(op, "ndim_supp", 1) != 0:
        return f"{rv.name!r} is not univariate"
    if transform is not None and not isinstance(transform, LogTransform):
        return f"{rv.name!r} has the transform {type(transform).__name__}"
    if transform is not None and fam[2]:
        return f"{rv.name!r} is discrete and log-transformed"
    params = rv.owner.op.dist_params(rv.owner)
    others = set(record_rvs) - {rv}
    if others and depends_on(params, others):
        return f"the parameters of {rv.name!r} depend on other records"
    return fam


_CHECKS = {
    NORMAL: (lambda a, b: np.all(b >= 0), "scale >= 0"),
    BERNOULLI: (lambda a, b: np.all((a >= 0) & (a <= 1)), "0 <= p <= 1"),
    POISSON: (lambda a, b: np.all(a >= 0), "lam >= 0"),
    EXPONENTIAL: (lambda a, b: np.all(a >= 0), "scale >= 0"),
    GAMMA: (lambda a, b: np.all((a > 0) & (b > 0)), "shape > 0 and scale > 0"),
    BINOMIAL: (
        lambda a, b: np.all((a >= 0) & (a == np.floor(a)) & (b >= 0) & (b <= 1)),
        "n a non-negative integer and 0 <= p <= 1",
    ),
}


class FastRecordDraw:
    """Joint draw of a record block's variables from their conditional prior, without the graph.

    Use `build`, which returns ``(None, reason)`` when some record variable is not covered
    (module docstring), else ``(draw, "")``.

    Parameters
    ----------
    model : pm.Model
    record_rvs : list
        The block's record RVs.
    families : list of tuple
        ``(code, n_params, integer)`` per RV, from `fast_family`.
    """

    @classmethod
    def build(cls, model, record_rvs):
        fams = []
        for rv in record_rvs:
            fam = fast_family(rv, model.rvs_to_transforms.get(rv), record_rvs)
            if isinstance(fam, str):
                return None, fam
            fams.append(fam)
        return cls(model, record_rvs, fams), ""

    def __init__(self, model, record_rvs, families):
        self.families = families
        self.logs = [model.rvs_to_transforms.get(rv) is not None for rv in record_rvs]
        self.names = [rv.name for rv in record_rvs]
        graphs = []
        for rv in record_rvs:
            graphs += [pt.cast(p, "float64") for p in rv.owner.op.dist_params(rv.owner)]
        graphs = replace_rvs_by_values(
            graphs, rvs_to_values=model.rvs_to_values, rvs_to_transforms=model.rvs_to_transforms
        )
        self._params = pm_compile(model.value_vars, graphs, on_unused_input="ignore")
        self.input_names = [v.name for v in model.value_vars]
        self._buffers = {}

    def params(self, point):
        """Per RV, its parameters as float64 arrays (as the graph computes them at ``point``)."""
        flat = self._params(*[point[n] for n in self.input_names])
        out, i = [], 0
        for _code, k, _ in self.families:
            out.append([np.asarray(p, dtype=np.float64) for p in flat[i : i + k]])
            i += k
        return out

    def draw(self, point, shapes, rng, *, reuse=False):
        """One draw of every record variable in PyMC's value space.

        ``shapes``: the value shape of each variable; ``rng``: the ``np.random.Generator`` to draw
        with. ``reuse=True`` fills buffers kept by this object (valid until the next call) instead
        of fresh arrays.
        """
        outs = []
        for j, (params, (code, k, integer), shape) in enumerate(
            zip(self.params(point), self.families, shapes)
        ):
            shape = tuple(shape)
            if code == CATEGORICAL:
                outs.append(self._categorical(j, params[0], shape, rng, reuse))
                continue
            flat_params = []
            for p in params:
                if p.size > 1 and p.shape != shape:  # per-record parameters
                    p = np.broadcast_to(p, shape)
                flat_params.append(np.ascontiguousarray(p).reshape(-1))
            check, rule = _CHECKS[code]
            if not check(*flat_params, *([np.zeros(1)] * (2 - k))):
                raise ValueError(
                    f"The conditional prior of the records {self.names[j]!r} has invalid parameters "
                    f"at this point (needs {rule}); cannot propose records."
                )
            dtype = np.int64 if integer else np.float64
            if reuse:
                buf = self._buffers.get(j)
                if buf is None or buf.shape != shape or buf.dtype != dtype:
                    buf = self._buffers[j] = np.empty(shape, dtype=dtype)
            else:
                buf = np.empty(shape, dtype=dtype)
            p1 = flat_params[1] if k == 2 else flat_params[0]
            draw_family(code, rng, flat_params[0], p1, self.logs[j], buf.reshape(-1))
            outs.append(buf)
        return outs

    def _buffer(self, j, shape, dtype, reuse):
        if not reuse:
            return np.empty(shape, dtype=dtype)
        buf = self._buffers.get(j)
        if buf is None or buf.shape != shape or buf.dtype != dtype:
            buf = self._buffers[j] = np.empty(shape, dtype=dtype)
        return buf

    def _categorical(self, j, p, shape, rng, reuse):
        """Categorical records: p of shape (K,) shared, or broadcasting to ``shape + (K,)``."""
        if p.ndim == 1 or (p.ndim == 2 and p.shape[0] == 1):
            rows = np.ascontiguousarray(p.reshape(1, -1))
        else:
            rows = np.ascontiguousarray(
                np.broadcast_to(p, shape + p.shape[-1:]).reshape(-1, p.shape[-1])
            )
        buf = self._buffer(j, shape, np.int64, reuse)
        if not draw_categorical(rng, rows, buf.reshape(-1)):
            raise ValueError(
                f"The conditional prior of the records {self.names[j]!r} has invalid parameters "
                "at this point (needs p >= 0, finite, with a positive sum); cannot propose records."
            )
        return buf
