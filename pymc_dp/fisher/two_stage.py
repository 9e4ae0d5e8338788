r"""Statistic selection with an initial chunk of the data (seed 000 §6.5).

1. Release `Y_0 = S^{(0)}(X_{1:n_0}) + V_0` with an arbitrary first statistic.
2. Sample `\theta^{(1..M)} \sim p(\theta \mid y_0)` (PyMC, ``pdp.DataAugmentation`` for the
   latent records).
3. Choose `s^* = \arg\min_s \frac1M\sum_m \operatorname{tr} F_s(\theta^{(m)})^{-1}` with
   `select_statistic`, the candidates scored for ``n - n0`` records.
4. Release `Y_1 = S^*(X_{n_0+1:n}) + V_1`. The chunks are disjoint, so with each release
   ε-DP the pair is ε-DP (parallel composition).
5. Posterior `p(\theta \mid y_0, y_1)` from one PyMC model with two ``DPObserved`` nodes, one
   per chunk of latent records.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pymc_dp.fisher._validate import check_n, check_rng

__all__ = ["TwoStageResult", "two_release_model", "two_stage_release"]


@dataclasses.dataclass(frozen=True)
class TwoStageResult:
    """Outcome of `two_stage_release`.

    Attributes
    ----------
    selection : Selection
        The choice made from the first-stage posterior.
    chosen : Candidate
    releases : tuple
        ``(y0, y1)``, the two published values.
    model : pymc.Model
        The joint model with nodes ``"y_0"`` and ``"y_1"``.
    idata, first_idata :
        Posterior draws given both releases, and given the first only.
    """

    selection: object
    chosen: object
    releases: tuple
    model: object
    idata: object
    first_idata: object


def two_release_model(releases, *, population, prior):
    """A PyMC model with one latent record chunk and one ``DPObserved`` node per release.

    Parameters
    ----------
    releases : list of (statistic, mechanism, value, n_records)
    population : Population
        ``population.rv(name, theta, shape=...)`` creates each chunk's records.
    prior : callable
        Called inside the model; returns the θ random variable, e.g. ``lambda: pm.Uniform("theta",
        0, 5)``.
    """
    import pymc as pm

    from pymc_dp.distributions import DPObserved

    with pm.Model() as model:
        theta = prior()
        records = []
        for i, (stat, mech, value, m) in enumerate(releases):
            x = population.rv(f"x_{i}", theta, shape=(int(m),))
            DPObserved(f"y_{i}", x, statistic=stat, mechanism=mech, observed=value)
            records.append(x)
    return model, theta, records


def _sample(model, records, rng, sample_kwargs):
    import pymc as pm

    from pymc_dp.samplers import DataAugmentation

    kw = dict(draws=500, tune=500, chains=1, progressbar=False, compute_convergence_checks=False)
    kw.update(sample_kwargs or {})
    with model:
        steps = [DataAugmentation([x]) for x in records]  # one step per record chunk
        return pm.sample(step=steps, random_seed=int(rng.integers(2**31)), **kw)


def posterior_draws(idata, name):
    """Flattened posterior draws of ``name`` (ArviZ 0.x ``InferenceData`` or xarray ``DataTree``)."""
    post = idata["posterior"] if not hasattr(idata, "posterior") else idata.posterior
    vals = np.asarray(post[name].values)
    return vals.reshape((-1,) + vals.shape[2:])


def two_stage_release(
    data,
    candidates,
    *,
    n0,
    initial,
    population,
    prior,
    rng=None,
    sample_kwargs=None,
    select_kwargs=None,
) -> TwoStageResult:
    r"""Run the two-stage scheme of seed 000 §6.5 on confidential ``data`` (curator and analyst).

    Parameters
    ----------
    data : array_like
        The ``n`` confidential records (axis 0).
    candidates : sequence or dict of Candidate
        Statistics for the second release; scored with ``n - n0`` records.
    n0 : int
        Records spent on the first release, ``1 <= n0 < n``.
    initial : Candidate
        First statistic and mechanism (``initial.statistic``, ``initial.mechanism``).
    population : Population
        Records' distribution given θ (the model of both chunks).
    prior : callable
        Creates θ inside the model (its name is read from the returned variable).
    rng : numpy.random.Generator
        Noise of both releases and the samplers' seeds.
    sample_kwargs, select_kwargs : dict, optional
        Passed to ``pm.sample`` and `select_statistic`.
    """
    from pymc_dp.fisher.selection import _as_candidates, select_statistic
    from pymc_dp.release import release

    rng = check_rng(rng)
    data = np.asarray(data)
    n = check_n(int(data.shape[0]), name="len(data)")
    n0 = check_n(n0, name="n0")
    if n0 >= n:
        raise ValueError(
            f"n0 must be smaller than the number of records, got n0={n0} for {n} records. Spend a "
            "small first chunk (e.g. n0 = n // 10) and keep the rest for the chosen statistic."
        )
    items = _as_candidates(candidates)
    y0 = release(data[:n0], initial.statistic, initial.mechanism, rng=rng)
    model0, theta0, rec0 = two_release_model(
        [(initial.statistic, initial.mechanism, y0, n0)], population=population, prior=prior
    )
    idata0 = _sample(model0, rec0, rng, sample_kwargs)
    draws = posterior_draws(idata0, theta0.name)
    selection = select_statistic(
        items, theta_samples=draws, n=n - n0, rng=rng, **(select_kwargs or {})
    )
    chosen = next(c for c in items if c.name == selection.best)
    y1 = release(data[n0:], chosen.statistic, chosen.mechanism, rng=rng)
    model, _, rec = two_release_model(
        [
            (initial.statistic, initial.mechanism, y0, n0),
            (chosen.statistic, chosen.mechanism, y1, n - n0),
        ],
        population=population,
        prior=prior,
    )
    idata = _sample(model, rec, rng, sample_kwargs)
    return TwoStageResult(selection, chosen, (y0, y1), model, idata, idata0)
