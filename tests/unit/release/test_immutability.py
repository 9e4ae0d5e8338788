"""A Release is immutable, and its metadata cannot outlive its values (issue 20, item 6).

Every operation that can give other values returns a plain ndarray; writing into a Release
raises. On the old code ``np.sort(r)``, ``r.astype(int)``, ``r.take(...)``, ``np.roll(r, 1)``,
``r.byteswap()``, ``r.copy()`` returned a ``Release`` with the original metadata, and
``r[0] = 999`` / ``r += 100`` changed the values in place.
"""

import copy
import pickle
import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.release import Release

X = np.array([0, 2, 2, 1, 2, 0, 1])
COUNTS = pdp.Counts(3)
LAPLACE = pdp.Laplace(epsilon=1.0)
READ_ONLY = re.escape("A Release is read-only")


@pytest.fixture(scope="module")
def r():
    return pdp.release(X, COUNTS, LAPLACE, rng=1)


DERIVED = {
    "np.sort": lambda r: np.sort(r),
    "astype": lambda r: r.astype(int),
    "take": lambda r: r.take([2, 1, 0]),
    "np.take": lambda r: np.take(r, [0, 1, 2]),
    "np.roll": lambda r: np.roll(r, 1),
    "byteswap": lambda r: r.byteswap(),
    "ufunc": lambda r: np.exp(r),
    "arithmetic": lambda r: r + 0,
    "slice": lambda r: r[:],
    "index": lambda r: r[[0, 1, 2]],
    "ellipsis": lambda r: r[...],
    "copy": lambda r: r.copy(),
    "copy.copy": lambda r: copy.copy(r),
    "copy.deepcopy": lambda r: copy.deepcopy(r),
    "reshape": lambda r: r.reshape(3, 1),
    "view": lambda r: r.view(),
    "ravel": lambda r: r.ravel(),
    "transpose": lambda r: r.T,
    "squeeze": lambda r: r.squeeze(),
    "repeat": lambda r: r.repeat(1),
    "np.flip": lambda r: np.flip(r),
    "np.concatenate": lambda r: np.concatenate([r]),
    "np.where": lambda r: np.where(True, r, 0),
    "clip": lambda r: r.clip(-1e9, 1e9),
    "round": lambda r: r.round(),
    "cumsum": lambda r: r.cumsum(),
}


@pytest.mark.parametrize("op", list(DERIVED), ids=list(DERIVED))
def test_every_derived_array_is_a_plain_ndarray(r, op):
    out = DERIVED[op](r)
    assert type(out) is np.ndarray, f"{op} returned {type(out).__name__}"
    assert not isinstance(out, Release)


WRITES = {
    "setitem": lambda r: r.__setitem__(0, 999),
    "sort in place": lambda r: r.sort(),
    "fill": lambda r: r.fill(0.0),
    "put": lambda r: r.put(0, 1.0),
    "ufunc out=": lambda r: np.add(r, 1, out=r),
    "byteswap in place": lambda r: r.byteswap(inplace=True),
    "setflags": lambda r: r.setflags(write=True),
    "flags.writeable": lambda r: setattr(r.flags, "writeable", True),
}


@pytest.mark.parametrize("op", list(WRITES), ids=list(WRITES))
def test_writing_into_a_release_raises(r, op):
    before = np.array(r)
    with pytest.raises(ValueError, match=READ_ONLY):
        WRITES[op](r)
    np.testing.assert_array_equal(np.asarray(r), before)


def test_augmented_assignment_raises_and_leaves_the_values(r):
    before = np.array(r)
    s = r
    with pytest.raises(ValueError, match=READ_ONLY):
        s += 100
    with pytest.raises(ValueError, match=READ_ONLY):
        s *= 2
    assert s is r
    np.testing.assert_array_equal(np.asarray(r), before)


def test_views_onto_the_values_are_read_only(r):
    for view in (np.asarray(r), r.value, r[:2]):
        with pytest.raises(ValueError, match="read-only"):
            view[0] = 999.0
    with pytest.raises(ValueError, match="read-only"):
        np.copyto(r, 0.0)


def test_release_owns_a_copy_of_its_values():
    value = np.array([1.0, 2.0, 3.0])
    rel = Release(value, statistic=COUNTS, mechanism=LAPLACE, n=7, dim=3)
    value[0] = 999.0
    assert float(rel[0]) == 1.0


def test_a_genuine_release_is_still_accepted_and_checked(r):
    back = pickle.loads(pickle.dumps(r))
    assert isinstance(back, Release) and back.n == r.n and not back.flags.writeable
    for release in (r, back):  # one node per release: the copy in a model of its own
        with pm.Model() as model:
            x = pm.Categorical("x", p=np.ones(3) / 3, shape=len(X))
            pdp.DPObserved("s", x, statistic=COUNTS, mechanism=LAPLACE, observed=release)
            pm.Normal("plain", 0, 1, observed=release)
        assert np.isfinite(model.compile_logp()({"x": X}))
    sorted_r = np.sort(r)  # a derived array is no longer checked as the release
    with pytest.raises(TypeError, match="bare array"):
        pdp.privacy_spent(sorted_r, delta=1e-6)


def test_extra_metadata_fields_are_kept():
    rel = Release([1.0], statistic=COUNTS, mechanism=LAPLACE, n=7, dim=1, partition="band")
    assert rel._info["partition"] == "band"
    assert pickle.loads(pickle.dumps(rel))._info["partition"] == "band"
