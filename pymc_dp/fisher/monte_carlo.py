r"""Monte Carlo estimators of the Fisher information (seed 001 Algorithms 1–3; seed 000 §4.2.2–4).

All three use Fisher's identity: the score of the release's marginal density is the posterior
expectation of the complete-data score,

```text
\gamma(\theta; y) = \partial_\theta \log p(y \mid \theta)
= \mathbb E\big[\partial_\theta \log p(z \mid \theta) \,\big|\, y, \theta\big],
```

estimated by self-normalised importance sampling with the prior of the latent ``z`` as proposal
(weights ``w_j ∝ p(y | z_j)``), and `\hat F = \frac1N\sum_i \hat\gamma_i \hat\gamma_i^T` over
``N`` releases `y_i \sim p(y\mid\theta)`:

* **Algorithm 1** (``normal_approx_mc``): additive statistic, any noise density; ``z = u`` the
  statistic with the CLT law `u \sim \mathcal N(\mu_s, \Sigma_s/n)`; optional random-walk MCMC
  inner loop started at the ``u`` that generated ``y`` (an exact draw of ``p(u | y, θ)``).
* **Algorithm 2** (``marginal_mc``): any statistic object with ``evaluate`` and any mechanism with
  a density; ``z = x_{1:n}`` whole databases from the population, score
  `\sum_t \partial_\theta\log p(x_t\mid\theta)`. Exact marginal, no CLT.
* **Algorithm 3** (``sequential_mc``): local release `Y_t = s(X_t) + V_t`; the per-record
  information (Algorithm 2 with one record) times ``n``.

The returned `FisherEstimate` carries the Monte Carlo standard error of every entry (the standard
deviation of the per-release terms over releases divided by `\sqrt N`) and the flags
``info["positive"]``, ``info["relative_se"]``, ``info["unstable"]``. The default estimator
``"corrected"`` removes the inner self-normalised bias to first order (``normal_approx_mc``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import logsumexp

from pymc_dp._checks import child_rng
from pymc_dp.fisher._validate import check_mc_size, check_n, check_rng, require_density

__all__ = [
    "ESTIMATORS",
    "UNSTABLE_RSE",
    "FisherEstimate",
    "marginal_mc",
    "normal_approx_mc",
    "sequential_mc",
    "stability",
]

_CHUNK = 2_000_000  # latent draws held in memory at once


@dataclasses.dataclass(frozen=True)
class FisherEstimate:
    """A Fisher information value with its Monte Carlo standard error.

    Attributes
    ----------
    value : float or numpy.ndarray
        F(θ) (``(d, d)`` for vector θ).
    stderr : float or numpy.ndarray
        Monte Carlo standard error of each entry (0 for closed forms).
    method : str
    info : dict
        ``n_outer``, ``n_inner``, ``mean_ess`` (mean inner effective sample size) or acceptance rate.
    """

    value: object
    stderr: object
    method: str
    info: dict = dataclasses.field(default_factory=dict)

    def __float__(self):
        return (
            float(np.asarray(self.value).reshape(-1)[0])
            if np.size(self.value) == 1
            else float("nan")
        )

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.value, dtype=dtype)


def _outer(ga, gb, scale):
    return 0.5 * (np.einsum("ni,nj->nij", ga, gb) + np.einsum("ni,nj->nij", gb, ga)) * scale


ESTIMATORS = ("corrected", "plain", "split")


def _terms(g, ga, gb, gc=None, var=None):
    """Per-release terms of each estimator, ``{name: (N, d, d)}``.

    ``"plain"`` γ̂γ̂ᵀ; ``"split"`` sym(γ̂_A γ̂_Bᵀ); ``"corrected"`` γ̂_c γ̂_cᵀ − V̂ with the
    delta-method bias-corrected score γ̂_c and variance V̂ of the self-normalised estimate (with an
    MCMC inner loop, where no weights exist, the split term, which is the same correction with the
    half-sample variance (γ̂_A − γ̂_B)(γ̂_A − γ̂_B)ᵀ/4).
    """
    split = _outer(ga, gb, 1.0)
    corrected = (
        split if gc is None else _outer(gc, gc, 1.0) - 0.5 * (var + np.swapaxes(var, -1, -2))
    )
    return {"plain": _outer(g, g, 1.0), "split": split, "corrected": corrected}


def _finish(terms, estimator, method, scalar, info):
    """F̂ = the mean of the chosen per-release term, its standard error, and the stability flags.

    Every estimator's value goes into ``info`` (``value_plain``, ``value_split``,
    ``value_corrected``). ``info["unstable"]`` is True when the estimate is not positive definite
    (a negative Fisher information for scalar θ) or when its relative standard error exceeds
    `UNSTABLE_RSE`; `select_statistic` never ranks such an estimate best.
    """
    outer = terms[estimator]
    value = outer.mean(axis=0)
    N = outer.shape[0]
    stderr = outer.std(axis=0, ddof=1) / np.sqrt(N) if N > 1 else np.full_like(value, np.inf)
    other = {f"value_{k}": v.mean(axis=0) for k, v in terms.items()}
    other["estimator"] = estimator
    if scalar:
        value, stderr = float(value[0, 0]), float(stderr[0, 0])
        other = {k: (float(v[0, 0]) if k != "estimator" else v) for k, v in other.items()}
    other.update(stability(value, stderr))
    return FisherEstimate(value, stderr, method, {**info, **other})


#: A Monte Carlo Fisher estimate is flagged ``unstable`` when its standard error exceeds this
#: fraction of its value (scalar θ) or of its smallest eigenvalue (vector θ).
UNSTABLE_RSE = 0.25


def stability(value, stderr) -> dict:
    """``{"positive", "relative_se", "unstable"}`` of an estimate (smallest eigenvalue for matrices)."""
    v = np.atleast_2d(np.asarray(value, dtype=float))
    se = np.atleast_2d(np.asarray(stderr, dtype=float))
    if not np.all(np.isfinite(v)):
        return {"positive": False, "relative_se": float("inf"), "unstable": True}
    lam = float(np.linalg.eigvalsh(0.5 * (v + v.T)).min())
    scale = float(np.sqrt(np.sum(se**2))) if v.size > 1 else float(se[0, 0])
    rse = scale / lam if lam > 0 else float("inf")
    return {
        "positive": lam > 0,
        "relative_se": rse,
        "unstable": not (lam > 0 and rse <= UNSTABLE_RSE),
    }


def _check_estimator(estimator, M):
    if estimator not in ESTIMATORS:
        raise ValueError(
            f"estimator must be one of {ESTIMATORS}, got estimator={estimator!r}. 'corrected' "
            "(default) removes the inner Monte Carlo bias; 'plain' is the seed's mean of γ̂γ̂ᵀ; "
            "'split' multiplies scores from two halves of the inner sample."
        )
    if estimator != "plain" and M < 2:
        raise ValueError(
            f"estimator={estimator!r} needs n_inner >= 2, got n_inner={M}. Use n_inner >= 2 (e.g. "
            "1000) or estimator='plain'."
        )


def _snis_all(logw, scores):
    """Scores of each release from its inner draws: γ̂ (all draws), γ̂_A, γ̂_B (two halves; γ̂ twice
    if M = 1), the ESS, and the delta-method terms of ``"corrected"``: γ̂ + Σ W_j²(s_j − γ̂) (the
    self-normalisation bias removed) and Σ W_j²(s_j − γ̂)(s_j − γ̂)ᵀ (the variance of γ̂ given y)."""
    g, ess, w = _snis(logw, scores)
    r = scores - g[..., None, :]
    w2 = w**2
    gc = g + np.einsum("...m,...md->...d", w2, r)
    var = np.einsum("...m,...mi,...mj->...ij", w2, r, r)
    h = logw.shape[-1] // 2
    if h == 0:
        return g, g, g, ess, gc, var
    ga, _, _ = _snis(logw[..., :h], scores[..., :h, :])
    gb, _, _ = _snis(logw[..., h:], scores[..., h:, :])
    return g, ga, gb, ess, gc, var


def _snis(logw, scores):
    """Self-normalised weighted mean of ``scores`` (…, M, d) with log weights (…, M); ESS; weights."""
    logw = np.where(np.isnan(logw), -np.inf, logw)
    lse = logsumexp(logw, axis=-1, keepdims=True)
    w = np.exp(logw - lse)
    if np.any(~np.isfinite(lse)):
        raise FloatingPointError(
            "Every importance weight is zero for some simulated release (the noise density is 0 at "
            "all latent draws). Increase n_inner, or use inner='mcmc'."
        )
    gamma = np.einsum("...m,...md->...d", w, scores)
    ess = 1.0 / np.sum(w**2, axis=-1)
    return gamma, ess, w


# -- Algorithm 1 -----------------------------------------------------------------------------
def _gaussian_scores(u, mu, P, dmu, dC):
    """Score of N(u; mu(θ), C(θ)) w.r.t. θ, u shape (..., ds); P = C^{-1}, dC (ds, ds, d)."""
    r = u - mu
    Pr = r @ P
    t1 = Pr @ dmu
    quad = np.einsum("...i,ijk,...j->...k", Pr, dC, Pr)
    tr = np.einsum("ij,jik->k", P, dC)
    return t1 + 0.5 * (quad - tr)


def normal_approx_mc(
    moments,
    theta,
    *,
    n,
    mechanism,
    statistic=None,
    n_outer=1000,
    n_inner=1000,
    rng=None,
    inner="is",
    release_logpdf=None,
    estimator="corrected",
):
    r"""Seed 001 Algorithm 1: F(θ) of an additive statistic with any noise, CLT for the statistic.

    Simulates `u_i \sim f(u\mid\theta) = \mathcal N(\mu_s, \Sigma_s/n)` and releases
    `y_i = k u_i + V` (``k = c n``, the statistic's scale; ``V`` from ``mechanism``), then
    estimates `\gamma(\theta; y_i) = \mathbb E[\partial_\theta \log f(u\mid\theta) \mid y_i]` with
    ``n_inner`` draws ``u_j ~ f`` weighted by `g(y_i\mid k u_j)` (``inner="is"``) or by
    ``n_inner`` random-walk Metropolis steps on `p(u \mid y_i, \theta)` started at
    `u_i` (``inner="mcmc"``).

    Parameters
    ----------
    moments : Moments or QuadratureMoments
    theta : float or array_like
    n : int
    mechanism : pymc_dp mechanism with ``logpdf`` and ``sample``
    statistic : pdp.Mean / pdp.Sum, optional
        Calibrates an ``epsilon``-given mechanism; ``None`` = mean with a calibrated mechanism.
    n_outer, n_inner : int
        N releases and M inner draws (or MCMC steps).
    rng : numpy.random.Generator
    inner : {"is", "mcmc"}
    release_logpdf : callable, optional
        ``(y, stat) -> log p(y | stat)`` replacing ``mechanism.logpdf``.
    estimator : {"corrected", "plain", "split"}
        ``"corrected"`` (default): the mean of `\hat\gamma_c\hat\gamma_c^T - \hat V` with the
        delta-method bias correction of the self-normalised score,
        `\hat\gamma_c = \hat\gamma + \sum_j W_j^2 (s_j - \hat\gamma)`, and its conditional
        variance `\hat V = \sum_j W_j^2 (s_j-\hat\gamma)(s_j-\hat\gamma)^T` (``W`` the
        normalised weights): bias O(1/ESS²). ``"plain"`` is the seed's
        `\frac1N\sum\hat\gamma_i\hat\gamma_i^T`, biased up by
        `\mathbb E\,\mathrm{Var}(\hat\gamma\mid y) \approx (I_{\text{complete}} - F)/\mathrm{ESS}`:
        +31 % at ESS ≈ 400 when the noise hides 99 % of the information (docs/fisher.md).
        ``"split"`` averages `\hat\gamma_{A}\hat\gamma_{B}^T` from the two halves of the
        inner sample (a downward O(1/M) bias). All values are returned in ``info``
        (``value_corrected``, ``value_plain``, ``value_split``) with the flags ``positive``,
        ``relative_se`` and ``unstable`` (see `stability`).
    """
    from pymc_dp.fisher.analytic import noise_scale

    n = check_n(n)
    N = check_mc_size(n_outer, name="n_outer")
    M = check_mc_size(n_inner, name="n_inner")
    rng = check_rng(rng)
    if inner not in ("is", "mcmc"):
        raise ValueError(f"inner must be 'is' or 'mcmc', got inner={inner!r}.")
    mu, cov, dmu, dcov = moments.evaluate(theta)
    ds = mu.shape[0]
    if mechanism is None:
        raise ValueError(
            "mechanism=None has no noise; use method='clt' (closed form) for the non-private case."
        )
    mech, k = noise_scale(mechanism, statistic, n=n, dim=ds)
    logpdf = release_logpdf or mech.logpdf
    if release_logpdf is None:
        require_density(mech, np.zeros(ds), np.zeros(ds))
    C, dC = cov / n, dcov / n
    L = np.linalg.cholesky(C + 1e-300 * np.eye(ds))
    P = np.linalg.inv(C)

    u0 = mu + rng.standard_normal((N, ds)) @ L.T
    y = np.asarray(mech.sample(k * u0, rng), dtype=float).reshape(N, ds)
    _check_estimator(estimator, M)
    d = moments.d
    g, ga, gb, gc = (np.empty((N, d)) for _ in range(4))
    var = np.empty((N, d, d))
    ess_all = np.empty(N)
    chunk = max(1, _CHUNK // (M * ds))
    if inner == "is":
        for lo in range(0, N, chunk):
            hi = min(N, lo + chunk)
            u = mu + rng.standard_normal((hi - lo, M, ds)) @ L.T
            logw = (
                np.asarray(logpdf(y[lo:hi, None, :], k * u), float).reshape(hi - lo, M, ds).sum(-1)
            )
            g[lo:hi], ga[lo:hi], gb[lo:hi], ess_all[lo:hi], gc[lo:hi], var[lo:hi] = _snis_all(
                logw, _gaussian_scores(u, mu, P, dmu, dC)
            )
        info = {"n_outer": N, "n_inner": M, "mean_ess": float(ess_all.mean()), "inner": inner}
        terms = _terms(g, ga, gb, gc, var)
    else:
        g, ga, gb, acc = _mcmc_inner(u0, y, k, mu, C, P, L, dmu, dC, M, logpdf, mech, rng)
        info = {"n_outer": N, "n_inner": M, "acceptance": acc, "inner": inner}
        terms = _terms(g, ga, gb)
    return _finish(terms, estimator, "normal_approx_mc", moments.n_params is None, info)


def _mcmc_inner(u0, y, k, mu, C, P, L, dmu, dC, M, logpdf, mech, rng):
    """Random-walk Metropolis on p(u | y, θ) ∝ f(u|θ) g(y|k u), all chains in parallel."""
    N, ds = u0.shape
    M = max(1, M)
    # proposal: the Gaussian posterior with the noise replaced by a Gaussian of equal variance
    noise = np.asarray(mech.sample(np.zeros(4000), rng), float)
    nv = max(noise.var(), 1e-300) / k**2
    post = np.linalg.inv(P + np.eye(ds) / nv)
    Lp = np.linalg.cholesky(post * 2.38**2 / ds)

    def logt(u):
        r = u - mu
        return -0.5 * np.einsum("ni,ij,nj->n", r, P, r) + np.asarray(
            logpdf(y, k * u), float
        ).reshape(N, ds).sum(-1)

    u = u0.copy()
    lt = logt(u)
    h = max(1, M // 2)
    first = _gaussian_scores(u, mu, P, dmu, dC)
    second = np.zeros_like(first)
    n_acc = 0
    for step in range(1, M):
        prop = u + rng.standard_normal((N, ds)) @ Lp.T
        lp = logt(prop)
        log_a = lp - lt
        acc = np.isfinite(log_a) & (np.log(rng.random(N)) < log_a)
        u[acc], lt[acc] = prop[acc], lp[acc]
        n_acc += int(acc.sum())
        if step < h:
            first += _gaussian_scores(u, mu, P, dmu, dC)
        else:
            second += _gaussian_scores(u, mu, P, dmu, dC)
    g = (first + second) / M
    gb = second / (M - h) if M > h else first / h
    return g, first / h, gb, n_acc / max(1, N * (M - 1))


# -- Algorithms 2 and 3 ----------------------------------------------------------------------
def _database_evaluator(statistic, mechanism, n):
    """``X (B, n) -> (S (B, ...), extras)`` for ``B`` databases of ``n`` scalar records.

    ``extras`` are the per-database noise parameters of a data-dependent mechanism (one exposing
    ``dist_params``, e.g. ``SmoothLaplace``: the scale ``S*_β(x)/α``), passed to its ``logpdf`` and
    ``sample`` after the statistic. Record-additive statistics are compiled once, as the statistic
    of one database (a 1-d record vector, what ``Counts`` needs) vectorized over the ``B`` databases; order
    statistics (``Median``/``Max``) are sorted in NumPy; any other object is evaluated database
    by database through ``statistic.evaluate`` (slow but generic).
    """
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph.replace import vectorize_graph

    from pymc_dp.statistics.additive import Statistic

    local = bool(getattr(statistic, "local", False))
    data_dependent = hasattr(mechanism, "dist_params")
    cache = {}

    def compiled(key, build):
        if key not in cache:
            cache[key] = build()
        return cache[key]

    if (
        isinstance(statistic, Statistic)
        and getattr(statistic, "record_additive", True)
        and not data_dependent
    ):

        def fn(X):
            def build():
                # the statistic of ONE database, as it is released (a 1-d record vector of
                # length n), vectorized over the batch axis of the simulated databases: a
                # statistic that needs 1-d records (``Counts``) sees the records it was written
                # for, never the (B, n) batch
                one = pt.tensor("database", shape=(n,), dtype=X.dtype)
                t = statistic.contributions(one)
                out = t if local else t.sum(axis=0) * statistic.factor(n)
                xs = pt.tensor("records", shape=(None, n), dtype=X.dtype)
                batched = vectorize_graph(out, {one: xs})
                return pytensor.function([xs], batched, mode="FAST_COMPILE")

            return np.asarray(compiled(X.dtype.str, build)(X)), ()

        return fn
    if isinstance(statistic, Statistic) and hasattr(statistic, "rank"):

        def fn(X):
            def build():
                proxy = pt.random.normal(0.0, 1.0, size=(n,))  # a 1-d record vector of length n
                xs = pt.tensor("records", shape=(None, n), dtype="float64")
                vals = vectorize_graph(statistic.contributions(proxy), {proxy: xs})
                return pytensor.function([xs], vals, mode="FAST_COMPILE")

            vals = np.sort(np.asarray(compiled("order", build)(np.asarray(X, float))), axis=1)
            S = vals[:, statistic.rank(n) - 1]
            if not data_dependent:
                return S, ()
            if not (hasattr(mechanism, "beta") and hasattr(mechanism, "alpha")):
                raise ValueError(
                    f"mechanism={mechanism!r} scales its noise with the records, but its scale is "
                    "not known here. Pass release_logpdf=... and release_sample=...."
                )
            sens = statistic.smooth_sensitivity_np(vals, mechanism.beta)
            return S, (sens / mechanism.alpha,)

        return fn
    if data_dependent:
        raise ValueError(
            f"mechanism={mechanism!r} has a data-dependent noise scale and statistic={statistic!r} "
            "is not an order statistic. Pass release_logpdf=... and release_sample=...."
        )
    if not hasattr(statistic, "evaluate"):
        raise TypeError(
            f"statistic must have an evaluate(records) method (a pymc_dp statistic), got "
            f"{statistic!r}."
        )

    def fn(X):
        out = np.stack([np.asarray(statistic.evaluate(row)) for row in X])
        return out, ()

    return fn


def _calibrate(statistic, mechanism, n, dim):
    """A pymc_dp mechanism calibrated to ``statistic`` (the one pairing rule,
    `pymc_dp.release.bind_mechanism`); any other noise model is used as given."""
    from pymc_dp.mechanisms.base import Mechanism
    from pymc_dp.release import bind_mechanism

    if isinstance(mechanism, Mechanism):
        return bind_mechanism(statistic, mechanism, n, dim)
    return mechanism


def marginal_mc(
    population,
    statistic,
    mechanism,
    theta,
    *,
    n,
    n_outer=500,
    n_inner=1000,
    rng=None,
    release_logpdf=None,
    release_sample=None,
    estimator="corrected",
):
    r"""Seed 001 Algorithm 2: F(θ) from the exact marginal of the release (no CLT).

    For each of ``n_outer`` releases, a database `x^{(0)}_{1:n} \sim p(\cdot\mid\theta)` gives
    `y = \text{mechanism}(S(x^{(0)}))`; ``n_inner`` fresh databases
    `x^{(j)}` are weighted by `w_j = p(y \mid x^{(j)})` and

    ```text
    \hat\gamma(\theta; y) = \sum_j \frac{w_j}{\sum_{j'} w_{j'}}
    \sum_{t=1}^n \partial_\theta \log p(x^{(j)}_t \mid \theta).
    ```

    Parameters
    ----------
    population : Population
    statistic : object with ``evaluate`` (records on axis 0)
        Any pymc_dp statistic (additive ones are compiled once); ``Median``/``Max`` work through
        their ``evaluate``.
    mechanism : object with ``logpdf(release, statistic)`` and ``sample(statistic, rng)``
        Calibrated here from the statistic (``bind``) when given ``epsilon``.
    theta, n, n_outer, n_inner, rng
        As in `normal_approx_mc`.
    release_logpdf, release_sample : callable, optional
        ``(y, X) -> log p(y | x_{1:n})`` (shape ``(B,)`` for ``y`` (B, ...) and records ``X``
        (B, n)) and ``(X, rng) -> y``: for data-dependent noise (smooth sensitivity) whose density
        depends on the records, not only on the statistic.
    estimator : {"plain", "split"}
        As in `normal_approx_mc`.

    Returns
    -------
    FisherEstimate
    """
    n = check_n(n)
    N = check_mc_size(n_outer, name="n_outer")
    M = check_mc_size(n_inner, name="n_inner")
    rng = check_rng(rng)
    th = population.check_theta(theta, rng=rng)
    # one database to learn the statistic's shape and check the release density: drawn from a
    # child of rng, whose own stream (the estimate's draws) is left untouched
    probe_x = population.draw(th, 1, n, child_rng(rng))
    stat_fn = _database_evaluator(statistic, mechanism, n)
    probe_S, probe_extra = stat_fn(probe_x)
    dim = 1 if getattr(statistic, "local", False) else int(np.prod(probe_S.shape[1:], dtype=int))
    mech = _calibrate(statistic, mechanism, n, dim)
    if release_logpdf is None:
        require_density(mech, probe_S, probe_S, *probe_extra)

        def release_logpdf(y, X, S, extras):
            lp = np.asarray(mech.logpdf(y, S, *extras), float)
            return lp.reshape(lp.shape[0], -1).sum(-1)
    else:
        user_lp = release_logpdf

        def release_logpdf(y, X, S, extras):
            return np.asarray(user_lp(y, X), float).reshape(X.shape[0])

    if release_sample is not None:

        def draw_release(X, S, extras):
            return np.asarray(release_sample(X, rng))
    elif probe_extra:

        def draw_release(X, S, extras):
            return np.stack(
                [
                    np.asarray(mech.sample(S[i], rng, *(e[i] for e in extras)))
                    for i in range(S.shape[0])
                ]
            )
    else:

        def draw_release(X, S, extras):
            return np.asarray(mech.sample(S, rng))

    _check_estimator(estimator, M)
    g, ga, gb, gc = (np.empty((N, population.d)) for _ in range(4))
    var = np.empty((N, population.d, population.d))
    ess_all = np.empty(N)
    chunk = max(1, _CHUNK // ((M + 1) * n))
    for lo in range(0, N, chunk):
        B = min(N, lo + chunk) - lo
        X = population.draw(th, B * (M + 1), n, rng).reshape(B, M + 1, n)
        S, extras = stat_fn(X.reshape(B * (M + 1), n))
        S = S.reshape((B, M + 1) + S.shape[1:])
        extras = [e.reshape(B, M + 1) for e in extras]
        y = draw_release(X[:, 0], S[:, 0], [e[:, 0] for e in extras])
        Xin = X[:, 1:].reshape(B * M, n)
        Sin = S[:, 1:].reshape((B * M,) + S.shape[2:])
        y_rep = np.repeat(y, M, axis=0)
        logw = release_logpdf(y_rep, Xin, Sin, [e[:, 1:].reshape(-1) for e in extras]).reshape(B, M)
        scores, _ = population.score(th, Xin)
        sl = slice(lo, lo + B)
        g[sl], ga[sl], gb[sl], ess_all[sl], gc[sl], var[sl] = _snis_all(
            logw, scores.reshape(B, M, -1)
        )
    info = {"n_outer": N, "n_inner": M, "mean_ess": float(ess_all.mean())}
    return _finish(
        _terms(g, ga, gb, gc, var), estimator, "marginal_mc", population.n_params is None, info
    )


def sequential_mc(
    population,
    statistic,
    mechanism,
    theta,
    *,
    n,
    n_outer=2000,
    n_inner=1000,
    rng=None,
    release_logpdf=None,
    release_sample=None,
    estimator="corrected",
):
    r"""Seed 001 Algorithm 3: F(θ) of the local release `Y_t = s(X_t) + V_t`, t = 1..n.

    The releases are iid given θ, so `F(\theta) = n\,\mathbb E[\gamma_1\gamma_1^T]` with the
    one-record score estimated as in `marginal_mc` (one record per database).

    Parameters
    ----------
    statistic : pdp.Local (or any statistic of one record with ``evaluate``)
        ``s`` and, through its bounds, the mechanism's sensitivity.
    mechanism : a local mechanism with a density (``pdp.RandomizedResponse``, ``pdp.Laplace``, …)
    """
    n = check_n(n)
    one = marginal_mc(
        population,
        statistic,
        mechanism,
        theta,
        n=1,
        n_outer=n_outer,
        n_inner=n_inner,
        rng=rng,
        release_logpdf=release_logpdf,
        release_sample=release_sample,
        estimator=estimator,
    )
    info = {
        **one.info,
        "n_records": n,
        **{f"value_{k}": _scaled(one.info[f"value_{k}"], n) for k in ESTIMATORS},
    }
    return FisherEstimate(_scaled(one.value, n), _scaled(one.stderr, n), "sequential_mc", info)


def _scaled(v, n):
    return float(v) * n if np.ndim(v) == 0 else np.asarray(v) * n
