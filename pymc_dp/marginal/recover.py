r"""Exact posterior draws of the integrated-out records: ``x ~ p(x | θ, s_dp)`` per posterior draw.

Backward sampling through the same sums the collapsed likelihood computes
(`pymc_dp.marginal.loglik`):

* local releases: each record independently, ``P(x_i = x) ∝ f(x | θ) Π_m η_m(s_{m,i} | t_m(x))``
  (O(n·w) per draw);
* additive statistics: the lattice sum ``K ∝ P(K | θ) η(s | c(n·lo + step·K))``, then the records
  one at a time given what is left, ``P(k_i = k | K_i) ∝ q(k) q^{*(i-1)}(K_i − k)``, through the prefix
  convolution powers ``q^{*i}`` (compiled, O(n·L·w_t) per draw); a cell holding several records
  values (clamping) is split ∝ ``f``, a lumped tail cell by the law's inverse survival function.
  Unclamped Poisson sums: ``S ∝ Poisson(S; nλ) η``, then ``x | S ~ Multinomial(S, 1/n)``;
  Geometric: ``x − 1 | S`` uniform over compositions; NegativeBinomial(r, p):
  ``S ∝ NegativeBinomial(S; n·r, p) η``, then ``x | S ~ DirichletMultinomial(S, (r, …, r))``;
* counts: the numbers of records left ``r_k`` backwards through the forward recursion
  (O(N² K) per draw), then a uniformly random assignment of the categories to the records.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
import pytensor
import xarray as xr
from scipy import special

from pymc_dp.distributions.registry import get_extra
from pymc_dp.marginal.gaussian import gaussian_draw, gaussian_logq
from pymc_dp.marginal.records import draw_tail, nb_shape

__all__ = ["RecordConditional", "draw_records", "record_draw_fn", "record_logq", "recover_records"]


def _softmax_draw(logits, rng):
    """One categorical draw per row of ``logits`` (inverse CDF, vectorized)."""
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    cdf = np.cumsum(z, axis=1)
    u = rng.random(len(z)) * cdf[:, -1]
    return np.minimum((cdf < u[:, None]).sum(axis=1), z.shape[1] - 1)


@numba.njit(cache=True)
def _prefix_powers(q, n, length):
    """Rows i = 0..n: q^{*i} (first ``length`` entries), each scaled to max 1 (log scale dropped)."""
    w = q.shape[0]
    out = np.zeros((n + 1, length))
    out[0, 0] = 1.0
    for i in range(1, n + 1):
        top = 0.0
        for s in range(length):
            acc = 0.0
            for k in range(min(w, s + 1)):
                acc += q[k] * out[i - 1, s - k]
            out[i, s] = acc
            top = max(top, acc)
        for s in range(length):
            out[i, s] /= top
    return out


@numba.njit(cache=True)
def _backward(q, powers, total, u):
    """Cells k_n, …, k_1 given the lattice sum ``total`` (u: n uniforms)."""
    n = powers.shape[0] - 1
    w = q.shape[0]
    cells = np.empty(n, dtype=np.int64)
    left = total
    probs = np.empty(w)
    for i in range(n, 0, -1):
        acc = 0.0
        for k in range(w):
            p = q[k] * powers[i - 1, left - k] if 0 <= left - k < powers.shape[1] else 0.0
            acc += p
            probs[k] = acc
        target = u[i - 1] * acc
        k = 0
        while k < w - 1 and probs[k] < target:
            k += 1
        cells[i - 1] = k
        left -= k
    return cells


def _draw_categorical(logw, rng):
    return int(_softmax_draw(logw[None, :], rng)[0])


def _local(plan, logf, params, rng):
    logits = (logf if logf.ndim == 2 else logf[None, :]) + plan.eta[plan.rows]
    idx = _softmax_draw(logits, rng)
    return _values(plan, idx, logf, params, rng)


def _values(plan, idx, logf, params, rng):
    x = plan.support[idx].astype(np.int64)
    if plan.tail:
        hit = idx == len(plan.support) - 1
        if hit.any():
            if plan.law.per_record:  # each lumped record with its own parameters
                params = [np.broadcast_to(p, (plan.law.n,))[hit] for p in params]
            x[hit] = draw_tail(plan.law.kind, params, int(plan.support[-1]), int(hit.sum()), rng)
    return x


def _closed_sum_logp(plan, params):
    """``log P(S = offset + j | θ)`` of the records' sum (closed forms), j = 0..length-1."""
    n = plan.law.n
    k = plan.offset + np.arange(plan.length)  # values of the sum
    if plan.closed == "poisson":
        return special.xlogy(k, n * params[0]) - n * params[0] - special.gammaln(k + 1)
    r, p = nb_shape(plan.law, params)
    r, p, k = float(r), float(p), k - n * plan.law.low
    nr = n * r
    return (
        special.gammaln(nr + k)
        - special.gammaln(nr)
        - special.gammaln(k + 1)
        + nr * np.log(p)
        + special.xlog1py(k, -p)
    )


def _additive(plan, logf, params, rng):
    n = plan.law.n
    if plan.closed in ("poisson", "negative_binomial"):
        logp = _closed_sum_logp(plan, params)
        total = plan.offset + _draw_categorical(logp + plan.eta, rng)
        if plan.closed == "poisson":
            return rng.multinomial(total, np.full(n, 1.0 / n)).astype(np.int64)
        if plan.law.kind == "negative_binomial":  # x | S ~ DirichletMultinomial(S, r·1)
            # record by record: x_i | rest ~ BetaBinomial(left, r, (n − i − 1)·r), each a beta then
            # a binomial (normalised gammas of a small r can all be 0: no NaN weights here)
            r, left = float(params[0]), int(total)
            x = np.zeros(n, dtype=np.int64)
            for i in range(n - 1):
                if left == 0:
                    break
                x[i] = rng.binomial(left, rng.beta(r, (n - i - 1) * r))
                left -= int(x[i])
            x[n - 1] += left
            return x
        extra = total - n  # Σ (x_i − 1): uniform over compositions into n parts
        bars = np.sort(rng.choice(extra + n - 1, size=n - 1, replace=False))
        edges = np.concatenate([[-1], bars, [extra + n - 1]])
        return (np.diff(edges) - 1 + plan.law.low).astype(np.int64)
    member = plan.cells[None, :] == np.arange(plan.n_cells)[:, None]
    q = (member * np.exp(logf - logf.max())[None, :]).sum(axis=1)  # ∝ per-cell mass
    q = q / q.max()
    powers = _prefix_powers(q, n, plan.length)
    with np.errstate(divide="ignore"):
        total = _draw_categorical(np.log(powers[n]) + plan.eta, rng)
    cells = _backward(q, powers, total, rng.random(n))
    logits = np.where(plan.cells[None, :] == cells[:, None], logf[None, :], -np.inf)
    return _values(plan, _softmax_draw(logits, rng), logf, params, rng)


def _counts(plan, logf, params, rng):
    n, k_cat = plan.law.n, len(plan.support)
    r = np.arange(n + 1)
    rr, rp = r[:, None], r[None, :]
    ok = rr >= rp
    c = np.where(ok, rr - rp, 0)
    log_choose = np.where(
        ok, special.gammaln(rr + 1) - special.gammaln(c + 1) - special.gammaln(rp + 1), -np.inf
    )
    tails = [special.logsumexp(logf[k:]) for k in range(k_cat)]
    alphas, mats = [np.where(r == n, 0.0, -np.inf)], []
    for k in range(k_cat - 1):
        m = (
            log_choose
            + np.where(ok, plan.eta[k][c], -np.inf)
            + c * (logf[k] - tails[k])
            + special.xlogy(rp, np.exp(tails[k + 1] - tails[k]))
        )
        mats.append(m)
        alphas.append(special.logsumexp(alphas[-1][:, None] + m, axis=0))
    left = _draw_categorical(alphas[-1] + plan.eta[k_cat - 1], rng)
    counts = np.zeros(k_cat, dtype=np.int64)
    counts[k_cat - 1] = left
    for k in range(k_cat - 2, -1, -1):
        before = _draw_categorical(alphas[k] + mats[k][:, left], rng)
        counts[k] = before - left
        left = before
    return rng.permutation(np.repeat(plan.support, counts)).astype(np.int64)


def _gaussian(plan, logf, params, rng):
    return gaussian_draw(plan, params, rng)


_DRAW = {"local": _local, "additive": _additive, "counts": _counts, "gaussian": _gaussian}


def _graphs(plan):
    """``[log f(x | θ)] + law params`` graphs of ``plan`` (no ``log f`` for the closed infinite sums)."""
    from pytensor.graph.basic import Variable

    if plan.case == "gaussian":  # the records' (mu, sigma), broadcast per record
        return list(plan.law.params), False
    logf = plan.logf() if plan.closed not in ("poisson", "negative_binomial") else None
    outs = [o for o in (logf, *plan.law.params) if isinstance(o, Variable)]
    return outs, logf is not None


def _compile(plan, original):
    from pymc_dp.distributions.graph import reads

    outs, has_logf = _graphs(plan)
    inputs = reads(outs, original.free_RVs)
    fn = pytensor.function(inputs, outs, on_unused_input="ignore")
    return fn, [rv.name for rv in inputs], has_logf


def record_draw_fn(plan, model):
    """Compile ``point -> outputs`` for `draw_records` from ``model``'s value variables
    (PyMC's transformed space, as in a sampler's point). Returns ``(fn, input names, has_logf)``."""
    from pymc.logprob.utils import replace_rvs_by_values
    from pymc.pytensorf import compile as pm_compile

    outs, has_logf = _graphs(plan)
    outs = replace_rvs_by_values(
        outs, rvs_to_values=model.rvs_to_values, rvs_to_transforms=model.rvs_to_transforms
    )
    fn = pm_compile(list(model.value_vars), outs, on_unused_input="ignore")
    return fn, [v.name for v in model.value_vars], has_logf


def draw_records(plan, outputs, has_logf, rng):
    """One exact draw ``x ~ p(x | θ, s_dp)`` of the records of ``plan``, given ``outputs`` of the
    compiled ``[log f] + params`` at θ (from `record_draw_fn` or the posterior)."""
    logf = np.asarray(outputs[0], dtype=np.float64) if has_logf else None
    params = [np.asarray(p, dtype=np.float64) for p in (outputs[1:] if has_logf else outputs)]
    return _DRAW[plan.case](plan, logf, params, rng)


def _tail_logpmf(kind, params, x):
    from scipy import stats

    if kind == "poisson":
        return stats.poisson(params[0]).logpmf(x)
    if kind == "negative_binomial":
        return stats.nbinom(params[0], params[1]).logpmf(x)
    return stats.geom(params[0]).logpmf(x)


def record_logq(plan, outputs, has_logf, x) -> float:
    """``log q(x)`` up to a constant in ``x``, where q is the law `draw_records` draws from.

    Same inputs as `draw_records` plus the records ``x`` (one int array). Written per case
    from the ingredients the draw uses (``log f`` over the support, the noise table ``eta``, the
    lattice cells, the closed laws of the sum, the law of a lumped tail value), so tests can check
    that q(x) ∝ p(x, s_dp | θ) of the model (``tests/unit/samplers/test_conditionals_vs_logp.py``).
    ``-inf`` outside the support the draw covers.
    """
    logf = np.asarray(outputs[0], dtype=np.float64) if has_logf else None
    params = [np.asarray(p, dtype=np.float64) for p in (outputs[1:] if has_logf else outputs)]
    if plan.case == "gaussian":
        return gaussian_logq(plan, params, x)
    x = np.asarray(x, dtype=np.int64).reshape(-1)
    n, law = plan.law.n, plan.law
    if x.shape != (n,) or np.any(x < law.low):
        return -np.inf
    if plan.case == "additive" and plan.closed in ("poisson", "negative_binomial"):
        j = int(x.sum()) - plan.offset
        if not 0 <= j < plan.length:
            return -np.inf
        lp = float(_closed_sum_logp(plan, params)[j] + plan.eta[j])
        total = int(x.sum())
        if plan.closed == "poisson":  # x | S ~ Multinomial(S, 1/n)
            return lp + float(
                special.gammaln(total + 1) - special.gammaln(x + 1).sum() - total * np.log(n)
            )
        if law.kind == "negative_binomial":  # x | S ~ DirichletMultinomial(S, r·1)
            r = float(params[0])
            return lp + float(
                special.gammaln(n * r)
                + special.gammaln(total + 1)
                - special.gammaln(total + n * r)
                + np.sum(special.gammaln(x + r) - special.gammaln(r) - special.gammaln(x + 1))
            )
        extra = total - n * law.low  # uniform over the compositions of extra into n parts
        return lp - float(
            special.gammaln(extra + n) - special.gammaln(extra + 1) - special.gammaln(n)
        )
    idx = x - int(plan.support[0])
    last = len(plan.support) - 1
    if not plan.tail and np.any(idx > last):
        return -np.inf
    hit = idx >= last if plan.tail else np.zeros(n, dtype=bool)
    idx = np.minimum(idx, last)
    lf = logf[np.arange(n), idx] if logf.ndim == 2 else logf[idx]
    if hit.any():  # the lumped cell's P(X ≥ K), then X | X ≥ K: together f(x)
        lf = np.where(hit, _tail_logpmf(law.kind, params, x), lf)
    if plan.case == "local":
        return float(lf.sum() + plan.eta[plan.rows, idx].sum())
    if plan.case == "counts":
        counts = np.bincount(idx, minlength=len(plan.support))
        return float(lf.sum() + sum(plan.eta[k][c] for k, c in enumerate(counts)))
    total = int(plan.cells[idx].sum())
    return float(lf.sum() + plan.eta[total])


class RecordConditional(NamedTuple):
    """The law ``p(x | θ, s_dp)`` of one record variable at one θ: what `draw_records` draws.

    ``outputs`` are the compiled ``[log f] + params`` at θ (`record_draw_fn` for a sampler's
    point, the natural-space function of `recover_records` for a posterior draw).
    """

    plan: object
    outputs: tuple
    has_logf: bool

    def draw(self, rng) -> np.ndarray:
        """One exact draw of the records (int64 array)."""
        return draw_records(self.plan, self.outputs, self.has_logf, rng)

    def logq(self, x) -> float:
        """``log q(x)`` up to a constant in ``x`` (`record_logq`)."""
        return record_logq(self.plan, self.outputs, self.has_logf, x)


def recover_records(idata, model, *, random_seed=None, records=None):
    """Draw the integrated-out records for every posterior draw and add them to ``idata``.

    Parameters
    ----------
    idata : InferenceData or DataTree
        From ``pm.sample`` on the model returned by `pymc_dp.marginalize`.
    model : pm.Model
        That marginalized model.
    random_seed : int or np.random.Generator, optional
    records : list of str, optional
        Which record variables to draw (default all that were integrated out).

    Returns
    -------
    idata
        The same object, with ``posterior[<record name>]`` of shape (chain, draw, n).
    """
    info = get_extra(model, "collapsed")
    if info is None:
        raise ValueError(
            "model must be the model returned by pdp.marginalize(...); it keeps what is needed "
            "to draw the records back."
        )
    rng = (
        random_seed
        if isinstance(random_seed, np.random.Generator)
        else np.random.default_rng(random_seed)
    )
    plans = info["plans"]
    names = list(plans) if records is None else list(records)
    posterior = idata["posterior"] if not hasattr(idata, "posterior") else idata.posterior
    for name in names:
        if name not in plans:
            raise ValueError(
                f"records={names}: {name!r} was not integrated out; choose among {list(plans)}."
            )
        plan = plans[name]
        fn, inputs, has_logf = _compile(plan, info["original"])
        values = {v: np.asarray(posterior[v].values) for v in inputs}
        n_chain, n_draw = np.asarray(posterior[next(iter(posterior.data_vars))].values).shape[:2]
        shape = getattr(plan, "shape", (plan.law.n,))
        dtype = np.float64 if plan.case == "gaussian" else np.int64
        out = np.empty((n_chain, n_draw, *shape), dtype=dtype)
        for c in range(n_chain):
            for d in range(n_draw):
                out[c, d] = RecordConditional(
                    plan, fn(*[values[v][c, d] for v in inputs]), has_logf
                ).draw(rng)
        da = xr.DataArray(
            out,
            dims=("chain", "draw", *[f"{name}_dim_{i}" for i in range(len(shape))]),
            coords={"chain": posterior["chain"].values, "draw": posterior["draw"].values},
        )
        posterior[name] = da
    return idata
