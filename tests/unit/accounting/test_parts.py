"""privacy_spent counts what a reviewer would: nested models, each release once, partitions in
parallel (max over cells, sequential within a cell), collapsed releases (issue 20 item 4)."""

import math
import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.accounting.parts import MAX_CHOICES, Part, cell_choices

DELTA = 1e-6
BANDS = ("20-29", "30-39", "40-49", "50-59")


def _rel(seed=0, *, epsilon=1.0, partition=None, n=10):
    rng = np.random.default_rng(seed)
    return pdp.release(
        rng.integers(0, 2, n),
        pdp.Sum(0, 1),
        pdp.Laplace(epsilon=epsilon),
        rng=rng,
        partition=partition,
    )


def test_nested_model_nodes_are_counted():
    """Old code: 1.0 (only the outer node); the two nodes of pm.Model("sub") were missing."""
    with pm.Model() as outer:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=10)
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(0, 1), mechanism=pdp.Laplace(epsilon=1.0), observed=3.0
        )
        with pm.Model("sub") as sub:
            y = pm.Bernoulli("y", p, shape=10)
            pdp.DPObserved(
                "s1", y, statistic=pdp.Sum(0, 1), mechanism=pdp.Laplace(epsilon=1.0), observed=4.0
            )
            pdp.DPObserved(
                "s2", y, statistic=pdp.Sum(0, 1), mechanism=pdp.Laplace(epsilon=1.0), observed=5.0
            )
    assert sorted(pdp.dp_nodes(outer)) == ["s", "sub::s1", "sub::s2"]
    assert sorted(pdp.dp_nodes(sub)) == ["sub::s1", "sub::s2"]
    assert float(pdp.privacy_spent(outer, delta=DELTA)) == pytest.approx(3.0, abs=1e-4)
    assert float(pdp.privacy_spent(sub, delta=DELTA)) == pytest.approx(2.0, abs=1e-4)


def test_same_release_twice_in_a_list_counts_once():
    """Old code: [r, r] gave 2.0."""
    r = _rel()
    assert float(pdp.privacy_spent([r, r], delta=DELTA)) == pytest.approx(1.0, abs=1e-4)
    # equal values, distinct releases: two releases
    r2 = _rel()
    assert np.array_equal(np.asarray(r), np.asarray(r2))
    assert float(pdp.privacy_spent([r, r2], delta=DELTA)) == pytest.approx(2.0, abs=1e-4)


def test_release_identity_survives_pickle_and_views():
    import pickle

    r = _rel()
    back = pickle.loads(pickle.dumps(r))
    assert back.release_id == r.release_id
    assert float(pdp.privacy_spent([r, back], delta=DELTA)) == pytest.approx(1.0, abs=1e-4)


def test_model_and_its_release_count_once():
    r = _rel()
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=10)
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(0, 1), mechanism=pdp.Laplace(epsilon=1.0), observed=r
        )
    assert float(pdp.privacy_spent([model, r], delta=DELTA)) == pytest.approx(1.0, abs=1e-4)


def test_four_bands_compose_in_parallel():
    """Old code: 4.0 for four ε = 1 releases on disjoint age bands."""
    rels = [_rel(i, partition=("age_band", b)) for i, b in enumerate(BANDS)]
    spent = pdp.privacy_spent(rels, delta=DELTA)
    assert float(spent) == pytest.approx(1.0, abs=1e-4)
    assert set(spent.cells) == {"age_band"}


def test_partition_max_over_cells_sequential_within_a_cell():
    rels = [
        _rel(0, epsilon=0.5, partition=("band", "a")),
        _rel(1, epsilon=0.7, partition=("band", "a")),
        _rel(2, epsilon=1.0, partition=("band", "b")),
        _rel(3, epsilon=0.3),
    ]
    spent = pdp.privacy_spent(rels, delta=DELTA)
    # cell a: 0.5 + 0.7 = 1.2 beats cell b: 1.0; the release without a partition adds 0.3
    assert float(spent) == pytest.approx(1.5, abs=1e-4)
    assert spent.cells == {"band": "a"}


def test_partition_agrees_with_composing_the_worst_cell_by_hand():
    """Mixed mechanisms: the result is the largest of the per-cell sequential compositions."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=30)
    a = pdp.release(
        x,
        pdp.Sum(-1, 1),
        pdp.Gaussian(epsilon=1.0, delta=1e-5),
        rng=rng,
        partition=("region", "north"),
    )
    b = pdp.release(
        x, pdp.Sum(-1, 1), pdp.Laplace(epsilon=0.8), rng=rng, partition=("region", "south")
    )
    c = pdp.release(x, pdp.Sum(-1, 1), pdp.Laplace(epsilon=0.4), rng=rng)
    spent = pdp.privacy_spent([a, b, c], delta=1e-4)
    by_hand = max(
        pdp.privacy_spent([a.dp_event(), c.dp_event()], delta=1e-4),
        pdp.privacy_spent([b.dp_event(), c.dp_event()], delta=1e-4),
    )
    assert float(spent) == pytest.approx(float(by_hand), rel=1e-9)


def test_two_keys_choose_one_cell_each():
    rels = [
        _rel(0, epsilon=1.0, partition=("age", "young")),
        _rel(1, epsilon=0.5, partition=("age", "old")),
        _rel(2, epsilon=0.2, partition=("sex", "f")),
        _rel(3, epsilon=0.6, partition=("sex", "m")),
    ]
    spent = pdp.privacy_spent(rels, delta=DELTA)
    assert float(spent) == pytest.approx(1.6, abs=1e-4)
    assert spent.cells == {"age": "young", "sex": "m"}


def test_partition_on_the_node():
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        for b in BANDS:
            x = pm.Bernoulli(f"x_{b}", p, shape=10)
            pdp.DPObserved(
                f"s_{b}",
                x,
                statistic=pdp.Sum(0, 1),
                mechanism=pdp.Laplace(epsilon=1.0),
                observed=3.0,
                partition=("age_band", b),
            )
    assert float(pdp.privacy_spent(model, delta=DELTA)) == pytest.approx(1.0, abs=1e-4)
    assert pdp.dp_nodes(model)["s_20-29"].partition == ("age_band", "20-29")


def test_conflicting_partitions_refused():
    r = _rel(partition=("age_band", "20-29"))
    with (
        pm.Model(),
        pytest.raises(
            ValueError,
            match=re.escape(
                "got partition=('age_band', '30-39'), but its Release was made with "
                "partition=('age_band', '20-29')"
            ),
        ),
    ):
        x = pm.Bernoulli("x", 0.5, shape=10)
        pdp.DPObserved(
            "s",
            x,
            statistic=pdp.Sum(0, 1),
            mechanism=pdp.Laplace(epsilon=1.0),
            observed=r,
            partition=("age_band", "30-39"),
        )


@pytest.mark.parametrize("bad", [("age_band",), ["age_band", "x"], (3, "x"), ("k", ["unhashable"])])
def test_bad_partition_refused(bad):
    with pytest.raises(
        ValueError, match=re.escape("partition must be a pair (key, cell) with a str key")
    ):
        _rel(partition=bad)


def test_too_many_cell_choices_refused():
    parts = [Part(event=f"e{k}{c}", partition=(f"k{k}", c)) for k in range(4) for c in range(9)]
    with pytest.raises(
        ValueError, match=re.escape(f"more than {MAX_CHOICES} to compose one by one")
    ):
        cell_choices(parts)


def test_equal_cells_are_composed_once():
    parts = [Part(event="same", partition=("k", c)) for c in range(1000)]
    assert len(cell_choices(parts)) == 1


def test_collapsed_releases_still_counted():
    """marginalize turns releases into potentials; their ε stays in the model's account."""
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Bernoulli("x", p, shape=5)
        pdp.DPObserved(
            "s", x, statistic=pdp.Sum(0, 1), mechanism=pdp.Laplace(epsilon=1.0), observed=2.0
        )
    collapsed = pdp.marginalize(model)
    assert not pdp.dp_nodes(collapsed)
    assert math.isclose(float(pdp.privacy_spent(collapsed, delta=DELTA)), 1.0, abs_tol=1e-4)


def test_partition_rho_is_the_worst_cell():
    rng = np.random.default_rng(2)
    x = rng.normal(size=20)
    a = pdp.release(x, pdp.Sum(-1, 1), pdp.Gaussian(sigma=4.0), rng=rng, partition=("k", 1))
    b = pdp.release(x, pdp.Sum(-1, 1), pdp.Gaussian(sigma=2.0), rng=rng, partition=("k", 2))
    spent = pdp.privacy_spent([a, b], delta=DELTA)
    assert spent.rho == pytest.approx(pdp.privacy_spent(b, delta=DELTA).rho)
    assert spent.cells == {"k": 2}


def test_release_partition_cell_and_numpy_partition():
    r = _rel(partition=("age_band", "20-29"))
    assert r.partition_cell == ("age_band", "20-29")
    assert _rel().partition_cell is None
    assert np.partition(np.asarray(r).reshape(-1), 0).shape == np.asarray(r).reshape(-1).shape
