r"""Exact collapsed log-likelihoods ``log p(s_dp | θ)`` as differentiable PyTensor graphs.

Three cases, each a function of the per-record log pmf ``log f(x | θ)`` over a finite support
(see `pymc_dp.marginal.records`) and constant noise log densities ``log η`` precomputed from
the release:

* **local** (one release per record, e.g. randomized response):

  ```text
  \log p(s \mid θ) = \sum_i \log \sum_x f(x \mid θ) \prod_m η_m(s_{m,i} \mid t_m(x)),
  ```

  cost O(u · w) per gradient for ``u`` distinct release rows and ``w`` support points;
* **additive** (``S = c Σ t(x_i)``, contributions on an integer lattice ``lo + step·k``): the pmf of
  ``K = Σ k_i`` is the n-fold convolution power of the per-record lattice pmf ``q``, computed in log
  space by repeated squaring (O(L² log n) per gradient, ``L = n (w_t − 1) + 1`` lattice points), or
  a closed form (Binomial, Poisson, negative binomial) when the contributions are the records
  themselves (O(L)); then `\log \sum_K P(K \mid θ)\, η(s \mid c(n·lo + step·K))`;
* **counts** of categorical records with independent noise on each cell: the multinomial written as
  sequential binomials, `c_k \mid c_{<k} \sim \mathrm{Bin}(N - \sum_{j<k} c_j, π_k / \sum_{j≥k}
  π_j)`, summed by a forward recursion over the number of records left (O(N² K) per gradient).

All sums are ``logsumexp`` in log space; impossible entries carry the finite constant `NEG`
(not ``-inf``) so gradients stay finite.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

__all__ = ["NEG", "additive_loglik", "counts_loglik", "local_loglik", "log_conv", "log_conv_power"]

#: log of an impossible event inside graphs (exp underflows to exactly 0, gradients stay finite)
NEG = -1.0e10


def _lse(x, axis):
    return pt.logsumexp(x, axis=axis)


def _gather(vec, idx):
    """``vec[idx]`` for a constant integer matrix, through a flat (1-d) index: its gradient is a
    compiled increment instead of NumPy's slow ``add.at``."""
    return vec[idx.ravel()].reshape(idx.shape)


def _table(eta):
    """``eta`` as a graph: a shared variable (a plan that follows new releases) stays one."""
    from pytensor.graph.basic import Variable

    if isinstance(eta, Variable):
        return eta
    return pt.as_tensor_variable(np.asarray(eta, dtype="float64"))


def local_loglik(logf, eta, weights):
    """``Σ_u weights[u] · logsumexp_x(logf[x] + eta[u, x])`` (local releases).

    Parameters
    ----------
    logf : TensorVariable, shape (w,), or (n, w) for records with their own parameters (then
        ``eta`` has one row per record, in order, and ``weights`` are ones)
    eta : ndarray or shared variable, shape (u, w)
        ``Σ_m log η_m(s_{m,u} | t_m(x))`` for each distinct release row ``u``.
    weights : ndarray, shape (u,)
        How many records gave release row ``u``.
    """
    eta = _table(eta)
    w = pt.as_tensor_variable(np.asarray(weights, dtype="float64"))
    # logf (n, w): records with their own parameters, one release row each (in record order)
    logf = logf if logf.ndim == 2 else logf[None, :]
    return pt.sum(w * _lse(logf + eta, axis=1))


def log_conv(a, b, la: int, lb: int, length: int):
    """Log-space linear convolution of ``a`` (length ``la``) and ``b`` (``lb``), first ``length``."""
    s = np.arange(length)[:, None]
    j = np.arange(la)[None, :]
    k = s - j
    idx = np.where((k >= 0) & (k < lb), k, lb).astype("int64")
    b_pad = pt.concatenate([b, pt.as_tensor_variable(np.array([NEG]))])
    return _lse(a[None, :] + _gather(b_pad, idx), axis=1)


def log_conv_power(logq, w: int, n: int, length: int):
    """``log`` of the first ``length`` entries of the n-fold convolution power of ``exp(logq)``.

    Repeated squaring: about ``2 log2 n`` log-space convolutions, each at most ``length²`` terms.
    """
    result, rlen = None, 0
    base, blen = logq, w
    m = n
    while True:
        if m & 1:
            if result is None:
                result, rlen = base, blen
            else:
                new = min(rlen + blen - 1, length)
                result, rlen = log_conv(result, base, rlen, blen, new), new
        m >>= 1
        if not m:
            break
        new = min(2 * blen - 1, length)
        base, blen = log_conv(base, base, blen, blen, new), new
    if rlen < length:  # pragma: no cover - only when length exceeds the full support
        result = pt.concatenate([result, pt.full((length - rlen,), NEG)])
    return result


def additive_loglik(log_p_sum, eta):
    """``logsumexp_K(log P(K | θ) + eta[K])`` for the distribution of the lattice sum ``K``."""
    return _lse(log_p_sum + _table(eta), axis=0)


def counts_loglik(logf, eta, n: int, bands=None):
    """Collapsed likelihood of noisy counts of ``n`` iid categorical records.

    Parameters
    ----------
    logf : TensorVariable, shape (K,)
        ``log π_k``.
    eta : ndarray, shape (K, n + 1)
        ``eta[k, c] = log η_k(s_k | c)``.
    bands : list of ndarray, optional
        For each of the first K − 1 categories, the counts ``c`` kept (those within the noise
        radius of the release); default all ``0..n``. Cost O(n · Σ_k |band_k|).
    """
    from scipy.special import gammaln

    k_cat = eta.shape[0]
    eta = np.asarray(eta, dtype="float64")
    tails = [_lse(logf[k:], axis=0) for k in range(k_cat)]  # log Σ_{j ≥ k} π_j
    rp = np.arange(n + 1)[:, None]  # records left after category k
    alpha = pt.as_tensor_variable(np.where(np.arange(n + 1) == n, 0.0, NEG))
    for k in range(k_cat - 1):
        c = np.arange(n + 1) if bands is None else np.asarray(bands[k], dtype=np.int64)
        r = rp + c[None, :]  # records left before category k
        ok = r <= n
        rs, cs = np.where(ok, r, 0), np.broadcast_to(c[None, :], r.shape)
        const = np.where(ok, gammaln(rs + 1) - gammaln(cs + 1) - gammaln(rp + 1) + eta[k][cs], NEG)
        log_rho = logf[k] - tails[k]
        log_rest = tails[k + 1] - tails[k]
        idx = np.where(ok, rs, n + 1)
        a_pad = pt.concatenate([alpha, pt.as_tensor_variable(np.array([NEG]))])
        # c·log ρ varies along the band only, r'·log(1-ρ) not at all: kept out of the matrix
        alpha = rp[:, 0] * log_rest + _lse(
            _gather(a_pad, idx) + const + (c * log_rho)[None, :], axis=1
        )
    return _lse(alpha + eta[k_cat - 1], axis=0)
