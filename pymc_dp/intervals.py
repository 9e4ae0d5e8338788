r"""Intervals for the true value behind every entry of a release, in one call.

`intervals` answers "what interval goes with this noisy number?": for each released entry ``s``
it returns ``[lower, upper]`` for the true statistic ``t`` given ``s`` alone (entries are treated
one at a time). Three kinds (``kind=``):

``"posterior"``
    The equal-tailed ``prob`` posterior interval of ``t`` under the prior (below).
``"confidence"``
    Neyman's central confidence interval: every support value ``t`` whose central ``prob`` noise
    interval ``[t - q, t + q]`` holds ``s`` (``q`` the exact ``(1 + prob) / 2`` quantile of the
    noise, an integer for integer noise), cut to the support; when no support value qualifies
    (``s`` far below 0) it is the support's end. Its coverage is at least ``prob`` at every true
    value, by construction (each ``t`` is in the interval whenever its noise lands in its central
    interval, and the cut only adds the end points).
``"both"`` (default)
    The smallest interval holding both: a ``prob`` posterior interval (posterior mass at least
    ``prob``) *and* a ``prob`` confidence interval (coverage at least ``prob`` at every true value).
    Far from the support's ends the two coincide up to a lattice point. Near 0 the posterior
    interval alone under-covers a zero count under heavy-tailed noise: with a flat prior on
    ``{0, 1, …}`` the posterior of a cell whose noise drew +8 (Laplace, b = 4) has less than 2.5 %
    of its mass at 0, so the equal-tailed interval excludes the true 0 (coverage 0.91 at a true
    0); the confidence part puts 0 back whenever 0 is consistent with ``s`` at level ``prob``.

Integer statistics (``Counts``, ``Cells`` / ``Marginals``, ``Sum`` under an integer mechanism)
    The posterior $p(t \mid s) \propto \pi(t)\, p(s \mid t)$ is computed exactly on the integer
    lattice, over a window around ``s`` so wide that the noise puts less than $10^{-12}$ of its
    mass outside it, vectorised over entries. Support: ``{n L, …, n U}`` for a ``Sum`` with
    integer bounds ``[L, U]`` over ``n`` public records; ``{0, …, n}`` for each cell of a
    ``Counts`` table over ``n`` records or of a ``Cells(total=n)`` / ``Marginals(..., total=n)``
    release (``Cells`` with one total per row: each row's own; ``Marginals``: the largest). The
    cells of a table with total ``n`` are dependent; they are treated independently here (each on
    ``0..n``), which ignores only the total.
    Default prior (``prior="flat"``): flat on the support, improper on ``{0, 1, …}`` when ``n`` is
    unknown. The posterior is then proper (the noise is summable) and reduces to the noise law
    reflected and truncated at the support, so far from the bounds the interval is the noise's
    own interval around ``s`` and near 0 it is pushed off the impossible negative values.
Continuous ``Sum`` / ``Mean``
    Flat prior on ``[n L, n U]`` (``[L, U]`` for a mean; the real line without bounds): the
    posterior is the noise density reflected about ``s`` and truncated to that range, whose
    quantiles are computed in closed form.

The posterior interval is equal-tailed: ``lower`` is the smallest support point whose posterior
CDF reaches ``(1 - prob) / 2`` and ``upper`` the smallest reaching ``(1 + prob) / 2``, so on the
lattice its posterior mass is at least ``prob``.

``prior=`` may be a callable: the log prior evaluated elementwise on an array of candidate true
values (integers on the lattice; a float grid of 4,001 points on the window for a continuous
statistic, integrated by the trapezoid rule).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["intervals"]

#: noise mass allowed outside the window
_TAIL = 1e-12
#: what the interval is (module docstring)
_KINDS = ("both", "posterior", "confidence")
#: rows per vectorised block (bounds memory at about rows × window × 8 bytes × 3)
_BLOCK = 1 << 14


def _check_prob(prob):
    if (
        isinstance(prob, bool)
        or not isinstance(prob, (int, float, np.floating, np.integer))
        or not (0.0 < float(prob) < 1.0)
    ):
        raise ValueError(
            f"prob must be a number strictly between 0 and 1 (the interval's posterior mass), got "
            f"prob={prob!r}. Pass e.g. prob=0.95."
        )
    return float(prob)


def _is_count_like(statistic) -> bool:
    """True for statistics releasing counts (``Counts``, and ``Cells`` once it exists)."""
    from pymc_dp.statistics import Counts

    return isinstance(statistic, Counts) or type(statistic).__name__ in ("Cells", "Marginals")


def _resolve(release, mechanism, statistic, n, dim=None):
    """(values, statistic, calibrated mechanism, n) from a Release or a plain array + keywords."""
    from pymc_dp.release import Release, bind_mechanism

    if isinstance(release, Release):
        given = [
            k
            for k, v in (("mechanism", mechanism), ("statistic", statistic), ("n", n), ("dim", dim))
            if v is not None
        ]
        if given:
            raise ValueError(
                f"{'=, '.join(given)}= are for plain arrays, but release is a pdp.Release, which "
                f"already records them. Drop {'=, '.join(given)}=."
            )
        return np.asarray(release.value), release.statistic, release.mechanism, release.n
    if mechanism is None:
        raise TypeError(
            f"release must be a pdp.Release (from pdp.release), or a plain array passed with "
            f"mechanism= (and statistic=), got a {type(release).__name__} without mechanism=. "
            "Pass e.g. pdp.intervals(noisy, mechanism=pdp.DiscreteGaussian(sigma=3.18), "
            "statistic=pdp.Counts(n_categories=K))."
        )
    values = np.asarray(release)
    if values.dtype.kind not in "biuf":
        raise TypeError(
            f"release must hold numbers, got dtype {values.dtype}. Pass a numeric array."
        )
    if statistic is None:
        raise TypeError(
            "statistic= is needed with a plain array: it says what the true value is (e.g. "
            "pdp.Counts(n_categories=K) for a count table, pdp.Sum(lower=0, upper=1) for a count of "
            "0/1 records). Pass statistic=..."
        )
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
        raise ValueError(f"n must be a positive int (the public number of records), got n={n!r}.")
    n_bind = 1 if n is None else int(n)
    if n is None:  # the noise must not depend on the n this call cannot know
        one, two = (bind_mechanism(statistic, mechanism, n=m, dim=1) for m in (1, 2))
        if one.noise_key() != two.noise_key():
            raise ValueError(
                f"n= is needed: the noise of {mechanism!r} calibrated to {statistic!r} depends on "
                "the number of records (its sensitivity does), and a plain array does not say it. "
                "Pass n= (the public number of records), or the pdp.Release from pdp.release."
            )
    if dim is None:
        dim = values.shape[-1] if values.ndim else 1
        if dim > 1:  # reading the array as one vector release must not change the noise
            one = bind_mechanism(statistic, mechanism, n=n_bind, dim=1)
            try:
                all_ = bind_mechanism(statistic, mechanism, n=n_bind, dim=dim)
            except ValueError:  # e.g. a sensitivity= below that of `dim` entries
                all_ = None
            if all_ is not None and one.noise_key() == all_.noise_key():
                return values, statistic, all_, n
            norm = mechanism.norm or 1
            raise ValueError(
                f"release holds {dim} values on its last axis, and the noise of {mechanism!r} "
                f"calibrated to {statistic!r} depends on how many entries one record "
                f"contributes ({dim} entries: {statistic.sensitivity(norm, n=n_bind, dim=dim)!r} "
                f"of sensitivity, one: {statistic.sensitivity(norm, n=n_bind, dim=1)!r}). Pass "
                "dim=1 if each value is its own release of a scalar statistic (each calibrated "
                f"alone), or dim={dim} for one release of a vector statistic of records with that "
                "many entries."
            )
    elif isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(
            f"dim must be a positive int (entries per record contribution), got dim={dim!r}."
        )
    mech = bind_mechanism(statistic, mechanism, n=n_bind, dim=int(dim))
    return values, statistic, mech, n


def _check_supported(statistic, mechanism):
    from pymc_dp.statistics import Mean, Sum

    name = type(mechanism).__name__
    per_record = getattr(statistic, "local", False) and not getattr(
        statistic, "latent_table", False
    )
    if getattr(mechanism, "local_only", False) or per_record:
        raise ValueError(
            f"intervals needs an aggregate release, but mechanism={name} / statistic={statistic!r} "
            "randomize one record at a time (local DP): each entry says little about its true value "
            "alone. Model the records with pdp.DPObserved and sample the posterior instead."
        )
    additive = mechanism.tail_radius(1.0) is not None and (
        mechanism.integer or mechanism.noise_distribution() is not None
    )
    if not additive:
        raise ValueError(
            f"intervals supports additive noise whose tails the mechanism states (e.g. Laplace, "
            f"Gaussian, DiscreteLaplace, DiscreteGaussian), got mechanism={name}: its noise depends "
            "on the confidential data (SmoothLaplace) or is not additive. Model the records with "
            "pdp.DPObserved and sample the posterior instead."
        )
    if not (_is_count_like(statistic) or isinstance(statistic, (Sum, Mean))):
        raise ValueError(
            f"intervals supports Counts, Sum and Mean releases, got statistic={statistic!r}. "
            "Model the records with pdp.DPObserved and sample the posterior instead."
        )


def _support(statistic, n, integer):
    """(lo, hi) of the true statistic; infinite ends allowed."""
    from pymc_dp.statistics import Mean

    if _is_count_like(statistic):
        hi = math.inf if (n is None or type(statistic).__name__ != "Counts") else float(n)
        total = getattr(statistic, "total", None)
        if total is not None and np.ndim(total) == 0 and type(statistic).__name__ != "Marginals":
            hi = min(hi, float(total))  # every cell lies within its row's public total
        return 0.0, hi  # (margins, and one public total per row: `_row_caps`)
    lower, upper = getattr(statistic, "lower", None), getattr(statistic, "upper", None)
    if lower is None:
        return -math.inf, math.inf
    if isinstance(statistic, Mean):
        return float(lower), float(upper)
    if n is None:
        raise ValueError(
            f"n is needed for statistic={statistic!r}: the true sum lies in [n*lower, n*upper]. Pass "
            "n= (the public number of records)."
        )
    lo, hi = n * float(lower), n * float(upper)
    if integer:
        lo, hi = float(math.ceil(lo)), float(math.floor(hi))
    return lo, hi


def _row_caps(statistic, shape, hi):
    """``(caps, exact)`` per entry (flat): the largest true value of each entry, and whether the
    entry is known exactly.

    Without public totals every cap is ``hi``. With a public total per row of the table (its
    first ``t`` axes, ``Cells(total=...)`` / ``Marginals(..., total=...)``), an entry can hold
    at most the people of the rows it sums: the totals summed over the row axes the release does
    not keep (a per-area table: its row's total; a column margin over areas: the sum of all
    totals). An entry that keeps only row axes sums whole rows: it equals that sum exactly.
    A scalar total is each row's (`Cells.check_records`): it caps every cell of ``Cells``; of a
    margin, which may sum rows the release does not count, nothing.
    """
    size = int(np.prod(shape, dtype=int))
    caps, exact = np.full(size, hi), np.zeros(size, dtype=bool)
    kind = type(statistic).__name__
    total = getattr(statistic, "total", None)
    if kind not in ("Cells", "Marginals") or total is None:
        return caps, exact
    total = np.asarray(total, dtype=float)
    t = total.ndim
    if kind == "Marginals" and t == 0:
        # one number is each row's total, and how many rows the table has (a margin may sum
        # several) is not in the release: no cap beyond `hi`, nothing known exactly
        return caps, exact
    keep = tuple(range(len(shape))) if kind == "Cells" else tuple(statistic.keep)
    if kind == "Cells" and t > 0 and tuple(total.shape) != tuple(shape[:t]):
        return caps, exact  # a total of another form (refused when the release was made)
    kept_rows = [a for a in keep if a < t]
    summed = tuple(a for a in range(t) if a not in keep)
    per = total.sum(axis=summed) if summed else total
    if tuple(per.shape) != tuple(shape[: len(kept_rows)]):
        return caps, exact  # the release does not line up with the totals: no caps
    per = per.reshape(per.shape + (1,) * (len(shape) - per.ndim))
    caps = np.minimum(caps, np.broadcast_to(per, shape).ravel())
    if kind == "Marginals" and len(kept_rows) == len(keep):  # whole rows: known
        exact[:] = True
    return caps, exact


def _bounds(s, mechanism, lo, hi, prior, prob, integer, kind):
    """The (lower, upper) rows of the entries ``s`` (1-d), true values in [lo, hi]."""
    qs = ((1.0 - prob) / 2.0, (1.0 + prob) / 2.0)
    if kind == "confidence":
        _log_prior(prior, np.zeros(1))  # still refuse a malformed prior
        return _confidence(s, mechanism, lo, hi, prob, integer)
    if integer:
        out = _integer_intervals(s, mechanism, lo, hi, prior, qs)
    elif _log_prior(prior, np.zeros(1)) is None:
        out = _continuous_flat(s, mechanism, lo, hi, qs)
    else:
        out = _continuous_grid(s, mechanism, lo, hi, prior, qs)
    if kind == "both":
        conf = _confidence(s, mechanism, lo, hi, prob, integer)
        out = np.stack([np.minimum(out[:, 0], conf[:, 0]), np.maximum(out[:, 1], conf[:, 1])], -1)
    return out


def _log_prior(prior, grid):
    if prior is None or (isinstance(prior, str) and prior == "flat"):
        return None
    if callable(prior):
        out = np.asarray(prior(grid), dtype=float)
        if out.shape not in ((), grid.shape):
            raise ValueError(
                f"prior must return one log prior value per candidate true value (an array of "
                f"the shape it is given, {grid.shape}), got shape {out.shape}. Make it act "
                "elementwise, e.g. prior=lambda c: -c / 100.0."
            )
        lp = np.broadcast_to(out, grid.shape)
        if np.any(np.isnan(lp)) or np.any(lp == np.inf):
            raise ValueError(
                "prior returned NaN or +inf: prior must be a log prior, finite or -inf at every "
                "candidate true value. Fix the callable."
            )
        return lp
    raise ValueError(
        f"prior must be 'flat' (the default) or a callable log prior on true values, got "
        f"prior={prior!r}. Pass e.g. prior=lambda c: -c / 100.0."
    )


def _half_width(mechanism) -> float:
    """Window half-width leaving less than _TAIL of the noise mass outside."""
    return mechanism.tail_radius(math.log(1.0 / _TAIL))


def _integer_intervals(s, mechanism, lo, hi, prior, qs):
    """Equal-tailed intervals on the integer lattice: one row per entry of ``s`` (1-d float)."""
    w = int(math.ceil(_half_width(mechanism))) + 2
    offsets = np.arange(2 * w + 1, dtype=float)
    out = np.empty((s.size, 2))
    for b0 in range(0, s.size, _BLOCK):
        sb = s[b0 : b0 + _BLOCK]
        centre = np.clip(np.round(sb), lo, hi)
        start = np.maximum(centre - w, lo)
        if math.isfinite(hi):
            start = np.minimum(start, max(lo, hi - 2 * w))
        grid = start[:, None] + offsets[None, :]
        logp = mechanism.logpdf(sb[:, None], grid)
        lp = _log_prior(prior, grid)
        if lp is not None:
            logp = logp + lp
        if math.isfinite(hi):
            logp = np.where(grid <= hi, logp, -np.inf)
        top = logp.max(axis=1, keepdims=True)
        if not np.all(np.isfinite(top)):
            raise ValueError(
                "The posterior is zero on every candidate true value near some entry: prior is -inf "
                "there. Use a prior positive on the support of the statistic."
            )
        p = np.exp(logp - top)
        cdf = np.cumsum(p, axis=1)
        total = cdf[:, -1:]
        if lp is not None:
            edge = np.maximum(np.where(start > lo, p[:, 0], 0.0), p[:, -1] * (grid[:, -1] < hi))
            if np.any(edge > _TAIL * total[:, 0]):
                raise ValueError(
                    "prior moves the posterior outside the window the noise allows around the "
                    "released value (more than 1e-12 of the mass at its edge). Use a prior that the "
                    "likelihood dominates, or compute this posterior with pdp.DPObserved."
                )
        cdf /= total
        for j, q in enumerate(qs):
            idx = np.argmax(cdf >= q * (1.0 - 1e-12), axis=1)
            out[b0 : b0 + _BLOCK, j] = grid[np.arange(sb.size), idx]
    return out


def _continuous_flat(s, mechanism, lo, hi, qs):
    """Quantiles of the noise law reflected about ``s`` and truncated to ``[lo, hi]``."""

    dist = mechanism.noise_distribution(loc=s)
    # work on the side of the tail with more precision: survival for values right of s
    flo, fhi = dist.cdf(lo), dist.cdf(hi)
    slo, shi = dist.sf(lo), dist.sf(hi)
    out = np.empty((s.size, 2))
    for j, q in enumerate(qs):
        left = dist.ppf(flo + q * (fhi - flo))
        right = dist.isf(shi + (1.0 - q) * (slo - shi))
        use_right = (flo + q * (fhi - flo)) > 0.5
        out[:, j] = np.clip(np.where(use_right, right, left), lo, hi)
    # a release so far outside the support that the mass on it underflows: in log space
    for i in np.flatnonzero(np.maximum(fhi - flo, slo - shi) < _TINY):
        law = mechanism.noise_distribution(loc=float(s[i]))
        out[i] = [_tail_quantile(law, lo, hi, q) for q in qs]
    return out


#: probability mass below which `_continuous_flat` works in log space
_TINY = 1e-250


def _log_cdf(law, x, upper=False):
    """log P(X <= x) (``upper``: log P(X > x)) of a frozen scipy law, exact far in the tails (the
    Laplace law's closed form: scipy's own underflows there)."""
    loc, scale = law.kwds.get("loc", 0.0), law.kwds.get("scale", 1.0)
    z = (x - loc) / scale
    if upper:
        z = -z
    if law.dist.name == "laplace":
        return math.log(0.5) + z if z <= 0 else math.log1p(-0.5 * math.exp(-z))
    return float(law.dist.logcdf(z))  # the laws are symmetric about loc


def _tail_quantile(law, lo, hi, q) -> float:
    """The ``q`` quantile of ``law`` truncated to ``[lo, hi]`` (finite ends), solved in log space:
    the mass left of x is F(x) − F(lo) = q·(F(hi) − F(lo)) (survival functions when the support
    lies right of the law's centre)."""
    from scipy.optimize import brentq

    upper = lo > law.kwds.get("loc", 0.0)  # the support right of the centre: work with log P(X > x)
    a, b = _log_cdf(law, lo, upper), _log_cdf(law, hi, upper)
    if upper:  # P(X > x) = (1 − q)·P(X > lo) + q·P(X > hi)
        target = np.logaddexp(math.log1p(-q) + a, math.log(q) + b) if q < 1 else b
    else:  # P(X ≤ x) = (1 − q)·P(X ≤ lo) + q·P(X ≤ hi)
        target = np.logaddexp(math.log1p(-q) + a, math.log(q) + b) if q > 0 else a
    if not math.isfinite(a - b):  # the whole mass at one end (a point support)
        return lo if upper else hi

    def gap(x):
        return _log_cdf(law, x, upper) - target

    if gap(lo) * gap(hi) > 0:
        return lo if abs(gap(lo)) < abs(gap(hi)) else hi
    return float(brentq(gap, lo, hi, xtol=1e-13 * max(1.0, abs(lo), abs(hi)), rtol=1e-14))


def _continuous_grid(s, mechanism, lo, hi, prior, qs):
    w = _half_width(mechanism)
    out = np.empty((s.size, 2))
    u = np.linspace(0.0, 1.0, 4001)
    for i, si in enumerate(s):
        a, b = max(lo, si - w), min(hi, si + w)
        if not a < b:
            a, b = (lo, min(hi, lo + 2 * w)) if si < lo else (max(lo, hi - 2 * w), hi)
        grid = a + (b - a) * u
        logp = mechanism.logpdf(si, grid) + _log_prior(prior, grid)
        p = np.exp(logp - logp.max())
        cdf = np.concatenate([[0.0], np.cumsum(0.5 * (p[1:] + p[:-1]) * np.diff(grid))])
        cdf /= cdf[-1]
        out[i] = np.interp(qs, cdf, grid)
    return out


def _noise_quantile(mechanism, prob) -> float:
    """Smallest ``q`` with P(noise > q) <= (1 - prob) / 2 (the noise is symmetric about 0); an
    integer for integer noise, so that ``[t - q, t + q]`` holds at least ``prob`` of it."""
    tail = (1.0 - prob) / 2.0
    if not getattr(mechanism, "integer", False):
        law = mechanism.noise_distribution(0.0)  # the mechanism states its law
        if law is None:
            raise ValueError(
                f"intervals(kind='both' or 'confidence') needs the noise law of mechanism="
                f"{type(mechanism).__name__}, which states none. Use kind='posterior'."
            )
        return float(law.isf(tail))
    w = int(math.ceil(_half_width(mechanism))) + 2
    k = np.arange(-w, w + 1, dtype=float)
    pmf = np.exp(mechanism.logpdf(k, 0.0) - mechanism.logpdf(0.0, 0.0))
    pmf /= pmf.sum()
    upper_tail = np.cumsum(pmf[::-1])[::-1]  # P(noise >= k)
    above = np.concatenate([upper_tail[1:], [0.0]])  # P(noise > k)
    return float(k[np.argmax((k >= 0) & (above <= tail))])


def _confidence(s, mechanism, lo, hi, prob, integer):
    """Neyman's central interval: every true value ``t`` whose central ``prob`` noise interval
    ``[t - q, t + q]`` holds ``s``, cut to the support (a support end when none is inside)."""
    q = _noise_quantile(mechanism, prob)
    eps = 1e-9 * np.maximum(1.0, np.abs(s))  # round towards the wider interval
    lower, upper = s - q - eps, s + q + eps
    if integer:
        lower, upper = np.ceil(lower), np.floor(upper)
    return np.stack([np.clip(lower, lo, hi), np.clip(upper, lo, hi)], axis=-1)


def intervals(
    release,
    prob: float = 0.95,
    *,
    prior="flat",
    mechanism=None,
    statistic=None,
    n: int | None = None,
    integer: bool | None = None,
    kind: str = "both",
    as_frame: bool = False,
    dim: int | None = None,
):
    """Interval of the true value behind every released entry (module docstring).

    Parameters
    ----------
    release : pdp.Release or array_like
        The output of `release`; a plain array needs ``mechanism=`` and ``statistic=``.
    prob : float
        Level of each interval, in $(0, 1)$: its posterior mass and/or its coverage (``kind``).
    prior : "flat" or callable
        Prior of the true value: ``"flat"`` on its support (default), or a log prior evaluated
        elementwise on an array of candidate true values.
    mechanism, statistic : pymc_dp mechanism and statistic, optional
        For a plain array only: how it was released (the mechanism is calibrated to the statistic).
    n : int, optional
        For a plain array only: the public number of records (bounds the support).
    integer : bool, optional
        Whether the true value is an integer. Default: yes for count statistics and under integer
        mechanisms; pass ``integer=True`` for e.g. a ``Sum`` of 0/1 records under ``Laplace``.
    kind : {"both", "posterior", "confidence"}
        ``"both"`` (default): the smallest interval that is both a ``prob`` posterior interval and a
        ``prob`` confidence interval (coverage at least ``prob`` at every true value);
        ``"posterior"``: the equal-tailed posterior interval alone; ``"confidence"``: Neyman's
        central confidence interval alone (``prior`` is not used).
    dim : int, optional
        For a plain array only: entries of one record's contribution the mechanism was
        calibrated for. Needed when the array holds several values and the statistic's
        sensitivity grows with them (``Sum``, ``Mean``): ``dim=1`` when each value is its own
        release of a scalar statistic, the array's length for one release of a vector statistic.
        Default: the array's last axis (refused when that choice changes the noise).
    as_frame : bool
        Return a ``pandas.DataFrame`` with columns ``released``, ``lower``, ``upper`` (one row per
        entry, flattened in C order; a table of two or more axes is indexed by each entry's
        position, index levels ``dim_0``, ``dim_1``, ...) instead of an array.

    Returns
    -------
    numpy.ndarray or pandas.DataFrame
        Shape ``release.shape + (2,)``: ``[..., 0]`` lower, ``[..., 1]`` upper bounds.

    Examples
    --------
    >>> import numpy as np, pymc_dp as pdp
    >>> rel = pdp.release(np.array([0, 1, 1, 2]), statistic=pdp.Counts(n_categories=3),
    ...                   mechanism=pdp.DiscreteGaussian(sigma=3.18), rng=1)
    >>> pdp.intervals(rel).shape
    (3, 2)
    """
    prob = _check_prob(prob)
    if kind not in _KINDS:
        raise ValueError(
            f"kind must be one of {', '.join(repr(k) for k in _KINDS)} (module docstring), got "
            f"kind={kind!r}. Pass kind='both' (the default) unless you need one of the two alone."
        )
    values, statistic, mechanism, n = _resolve(release, mechanism, statistic, n, dim)
    _check_supported(statistic, mechanism)
    if integer is None:
        integer = bool(getattr(mechanism, "integer", False)) or _is_count_like(statistic)
    elif not isinstance(integer, bool):
        raise TypeError(f"integer must be True, False or None, got integer={integer!r}.")
    if not integer and _is_count_like(statistic):
        raise ValueError(
            f"integer=False contradicts statistic={statistic!r}, whose true values are counts. Drop integer=."
        )
    if not integer and getattr(mechanism, "integer", False):
        raise ValueError(
            f"integer=False contradicts mechanism={type(mechanism).__name__}, which releases an "
            "integer statistic plus integer noise: the true value is an integer. Drop integer=."
        )
    lo, hi = _support(statistic, n, integer)
    s = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(s)):
        raise ValueError(
            "release has non-finite entries (NaN or inf): a release is always finite. Pass the released values."
        )
    if getattr(mechanism, "integer", False) and not np.all(s == np.rint(s)):
        bad = s[s != np.rint(s)][0]
        raise ValueError(
            f"{type(mechanism).__name__} releases integers, but release has non-integer entries "
            f"(e.g. {float(bad)!r}): pass the released values as they were published, or the mechanism "
            "they were released with."
        )
    caps, exact = _row_caps(statistic, np.shape(values), hi)
    out = np.empty((s.size, 2))
    out[exact] = caps[exact, None]  # margins of whole rows with public totals: no uncertainty
    for cap in np.unique(caps[~exact]):  # entries bounded alike (one group unless row totals)
        at = (caps == cap) & ~exact
        out[at] = _bounds(s[at], mechanism, lo, float(cap), prior, prob, integer, kind)
    out = out + 0.0  # no -0.0 bounds (a lower bound clipped at 0 from below)
    if as_frame:
        import pandas as pd

        shape = np.shape(values)
        index = None
        if len(shape) > 1:  # one row per entry, indexed by its position in the table
            where = np.indices(shape).reshape(len(shape), -1)
            index = pd.MultiIndex.from_arrays(where, names=[f"dim_{i}" for i in range(len(shape))])
        return pd.DataFrame({"released": s, "lower": out[:, 0], "upper": out[:, 1]}, index=index)
    return out.reshape(np.shape(values) + (2,))
