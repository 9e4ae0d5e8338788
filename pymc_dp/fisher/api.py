r"""``fisher_information``: one entry point choosing among seed 001 §3.1–3.4 (Table 1).

============================================  ==========================  ============================
release model                                 method                      needs
============================================  ==========================  ============================
additive statistic, Gaussian noise            ``"clt"`` (§3.1)            ``moments``
additive statistic, non-Gaussian noise        ``"normal_approx_mc"`` (A1) ``moments``
any statistic (median, max, smooth noise)     ``"marginal_mc"`` (A2)      ``population``, ``statistic``
sequential / local release                    ``"sequential_mc"`` (A3)    ``population``, ``Local``
============================================  ==========================  ============================
"""

from __future__ import annotations

import dataclasses

from pymc_dp.fisher._validate import check_n
from pymc_dp.fisher.analytic import clt_gaussian_fisher
from pymc_dp.fisher.monte_carlo import (
    FisherEstimate,
    marginal_mc,
    normal_approx_mc,
    sequential_mc,
    stability,
)

__all__ = ["METHODS", "Candidate", "default_n_outer", "fisher_information"]

METHODS = ("auto", "clt", "normal_approx_mc", "marginal_mc", "sequential_mc")
_DEFAULT_SIZES = {
    "normal_approx_mc": (2000, 1000),
    "marginal_mc": (500, 1000),
    "sequential_mc": (2000, 1000),
}


def default_n_outer(method: str, options: dict) -> int:
    """The number of simulated releases ``method`` runs with these options (1 for closed forms)."""
    if method not in _DEFAULT_SIZES:
        return 1
    return int(options.get("n_outer") or _DEFAULT_SIZES[method][0])


def _resolve_method(method, mechanism, moments, population, statistic):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got method={method!r}.")
    if method != "auto":
        return method
    local = getattr(statistic, "local", False) or getattr(mechanism, "local_only", False)
    if local:
        return "sequential_mc"
    if moments is not None:
        gaussian = mechanism is None or mechanism.gaussian
        return "clt" if gaussian else "normal_approx_mc"
    if population is not None and statistic is not None:
        return "marginal_mc"
    raise ValueError(
        "fisher_information needs moments=Moments(...) (additive statistic, CLT) or "
        "population=Population(...) with statistic=... (exact marginal), got neither. "
        "See pymc_dp.fisher docs, Table 1."
    )


def fisher_information(
    theta,
    *,
    n,
    mechanism=None,
    moments=None,
    population=None,
    statistic=None,
    method="auto",
    n_outer=None,
    n_inner=None,
    rng=None,
    inner="is",
    release_logpdf=None,
    release_sample=None,
    estimator="corrected",
) -> FisherEstimate:
    r"""Fisher information `F(\theta) = \mathbb E[\gamma\gamma^T]` of a privatized release.

    Parameters
    ----------
    theta : float or array_like
        One parameter value (length ``d`` for vector θ; the result is then a ``(d, d)`` matrix).
    n : int
        Number of confidential records (``n`` local releases for sequential release).
    mechanism : pymc_dp mechanism, optional
        The noise; ``None`` = no privacy (``method="clt"`` only).
    moments : Moments or QuadratureMoments, optional
        `\mu_s(\theta), \Sigma_s(\theta)` for the CLT methods (seed 001 §3.1–3.2).
    population : Population, optional
        The records' distribution for the exact methods (Algorithms 2 and 3).
    statistic : pymc_dp statistic, optional
        Calibrates the mechanism (bounds → sensitivity); for Algorithms 2/3 it is the released
        statistic (``pdp.Local`` for sequential release).
    method : {"auto", "clt", "normal_approx_mc", "marginal_mc", "sequential_mc"}
        ``"auto"`` follows Table 1 (module docstring).
    n_outer, n_inner : int, optional
        Monte Carlo sizes N (simulated releases) and M (inner draws).
    rng : numpy.random.Generator, optional
    inner : {"is", "mcmc"}
        Inner loop of Algorithm 1.
    release_logpdf, release_sample : callable, optional
        Custom release density / sampler (see `marginal_mc`).
    estimator : {"corrected", "plain", "split"}
        Monte Carlo estimator of E[γγᵀ]: bias-corrected (default), the seed's γ̂γ̂ᵀ (biased up by
        (complete − observed information)/ESS) or the product of two half-sample scores (biased
        down); all three are in ``result.info`` (see `pymc_dp.fisher.monte_carlo.normal_approx_mc`).

    Returns
    -------
    FisherEstimate
        ``.value`` (float, or matrix), ``.stderr`` (0 for ``"clt"``), ``.method``, ``.info``
        (Monte Carlo: ``unstable`` is True for a non-positive estimate or a relative standard
        error above ``UNSTABLE_RSE``); ``float(result)`` gives the scalar value.

    Examples
    --------
    >>> from pymc_dp.fisher import normal_variance_example
    >>> fi = pdp.fisher_information(2.0, n=100, moments=normal_variance_example(1),
    ...                             mechanism=pdp.Gaussian(sigma=1.0))
    """
    n = check_n(n)
    method = _resolve_method(method, mechanism, moments, population, statistic)
    if method == "clt":
        if moments is None:
            raise ValueError("method='clt' needs moments=Moments(mean, cov) of s(X).")
        value = clt_gaussian_fisher(moments, theta, n=n, mechanism=mechanism, statistic=statistic)
        stderr = 0.0 if moments.n_params is None else 0.0 * value
        return FisherEstimate(value, stderr, "clt", stability(value, stderr))
    N, M = _DEFAULT_SIZES[method]
    N = N if n_outer is None else n_outer
    M = M if n_inner is None else n_inner
    if method == "normal_approx_mc":
        if moments is None:
            raise ValueError("method='normal_approx_mc' needs moments=Moments(mean, cov) of s(X).")
        return normal_approx_mc(
            moments,
            theta,
            n=n,
            mechanism=mechanism,
            statistic=statistic,
            n_outer=N,
            n_inner=M,
            rng=rng,
            inner=inner,
            release_logpdf=release_logpdf,
            estimator=estimator,
        )
    if population is None or statistic is None:
        raise ValueError(
            f"method={method!r} needs population=Population(...) and statistic=..., got "
            f"population={population!r}, statistic={statistic!r}."
        )
    if mechanism is None:
        raise ValueError(f"method={method!r} needs a mechanism with a density, got mechanism=None.")
    kw = dict(
        n_outer=N,
        n_inner=M,
        rng=rng,
        release_logpdf=release_logpdf,
        release_sample=release_sample,
        estimator=estimator,
    )
    if method == "sequential_mc":
        return sequential_mc(population, statistic, mechanism, theta, n=n, **kw)
    return marginal_mc(population, statistic, mechanism, theta, n=n, **kw)


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A statistic to release, with what `fisher_information` needs to score it.

    Parameters
    ----------
    name : str
    statistic : pymc_dp statistic, optional
        What would be released (also calibrates ``mechanism``).
    mechanism : pymc_dp mechanism, optional
    moments, population : optional
        As in `fisher_information`.
    n : int, optional
        Number of records (may be given to ``select_statistic`` instead).
    options : dict
        Further keyword arguments of `fisher_information` (``method``, ``n_outer``, …).
    """

    name: str
    statistic: object = None
    mechanism: object = None
    moments: object = None
    population: object = None
    n: int | None = None
    options: dict = dataclasses.field(default_factory=dict)

    def fisher(self, theta, *, n=None, rng=None, **overrides) -> FisherEstimate:
        """F(θ) of this candidate (``n`` and ``overrides`` replace the candidate's own)."""
        n = self.n if n is None else n
        if n is None:
            raise ValueError(
                f"Candidate {self.name!r} has no record count: pass n=... to the Candidate or to "
                "select_statistic."
            )
        return fisher_information(
            theta,
            n=n,
            mechanism=self.mechanism,
            moments=self.moments,
            population=self.population,
            statistic=self.statistic,
            rng=rng,
            **{**self.options, **overrides},
        )

    @property
    def n_params(self):
        src = self.moments if self.moments is not None else self.population
        return None if src is None else src.n_params
