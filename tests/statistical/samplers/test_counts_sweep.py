"""DataAugmentation's count-vector route (``pymc_dp.samplers.counts_sweep``) against enumeration.

Records with a fixed conditional prior, released as noisy ``Counts``: the posterior of the count
vector is enumerated over all record tuples; the chain's posterior mean and sd of every count must
lie within 4 Monte Carlo standard errors (``assert_mc_close``). One model per path: proposals drawn
in the sweep (shared categorical, two releases), given proposals (per-record probabilities) and
integer records outside the histogram's categories are refused by DPObserved (domain check).
"""

import itertools

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from tests.support.mc import assert_mc_close

pytestmark = pytest.mark.slow


def exact_counts(pmfs, releases, k_cells):
    """Posterior mean and sd of the counts c_k, k < k_cells, by enumerating every record tuple.

    ``pmfs``: per record, its prior probabilities over categories 0..len-1; ``releases``: list of
    ``(mechanism, k, noisy counts)``.
    """
    m1, m2, z = np.zeros(k_cells), np.zeros(k_cells), 0.0
    for xs in itertools.product(*[range(len(p)) for p in pmfs]):
        w = np.prod([p[x] for p, x in zip(pmfs, xs)])
        if w == 0:
            continue
        c = np.bincount(xs, minlength=max(len(p) for p in pmfs))
        w *= np.exp(sum(mech.logpdf(r, c[:k]).sum() for mech, k, r in releases))
        m1 += w * c[:k_cells]
        m2 += w * c[:k_cells] ** 2
        z += w
    mean = m1 / z
    return mean, np.sqrt(m2 / z - mean**2)


def run(model, x, n_iter, seed):
    """``n_iter`` DataAugmentation steps on two chains; counts of categories 0..K-1 per draw."""
    with model:
        step = pdp.DataAugmentation([x])
    assert step.groups[0].counts is not None
    out = []
    for chain in range(2):
        step.set_rng(np.random.default_rng([seed, chain]))
        point = model.initial_point(random_seed=chain)
        draws = []
        for it in range(n_iter + 200):
            point, _ = step.step(point)
            if it >= 200:
                draws.append(np.asarray(point["x"]).copy())
        out.append(draws)
    return step, np.asarray(out)


def counts_of(draws, k_cells):
    return np.stack([(draws == k).sum(axis=-1) for k in range(k_cells)], axis=-1)


def test_shared_categorical_two_releases():
    p = np.array([0.5, 0.3, 0.2])
    n = 6
    rel = [
        (pdp.DiscreteGaussian(sigma=1.0), 3, np.array([1.0, 4.0, 2.0])),
        (pdp.Laplace(scale=1.5), 3, np.array([2.2, 2.9, 0.4])),  # Counts must cover every code
    ]
    with pm.Model() as model:
        x = pm.Categorical("x", p, shape=n)
        for i, (mech, k, r) in enumerate(rel):
            pdp.DPObserved(f"c{i}", x, statistic=pdp.Counts(k), mechanism=mech, observed=r)
    step, draws = run(model, x, 4000, seed=1)
    assert step.groups[0].counts.draws_in_sweep(model.initial_point())
    mean, sd = exact_counts([p] * n, rel, 3)
    assert_mc_close(counts_of(draws, 3), mean, sd, label="shared categorical, two releases")


def test_per_record_probabilities():
    rows = np.array(
        [[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4], [0.25, 0.5, 0.25], [0.6, 0.0, 0.4]]
    )
    rel = [(pdp.DiscreteGaussian(sigma=0.8), 3, np.array([0.0, 3.0, 2.0]))]
    with pm.Model() as model:
        x = pm.Categorical("x", rows, shape=5)
        pdp.DPObserved("c", x, statistic=pdp.Counts(3), mechanism=rel[0][0], observed=rel[0][2])
    step, draws = run(model, x, 4000, seed=2)
    assert not step.groups[0].counts.draws_in_sweep(model.initial_point())
    assert_mc_close(counts_of(draws, 3), *exact_counts(list(rows), rel, 3), label="per-record p")
