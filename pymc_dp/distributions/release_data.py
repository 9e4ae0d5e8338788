"""``ReleaseData``: a ``pm.Data`` container for releases that keeps the Release check.

``pm.Data("s", release)`` keeps the released numbers only (PyMC converts them to a plain array),
so ``DPObserved`` cannot check the container against the node, and ``pm.set_data`` could put in
any numbers. ``pdp.ReleaseData("s", release)`` is the same ``pm.Data`` container, carrying the
Release's metadata: ``DPObserved(observed=container)`` checks it like a Release, and
``pdp.set_release({"s": new_release}, model=model)`` checks the new Release against every node
that observes the container (record count, statistic, calibrated mechanism, shape) before the value
changes. ``pm.set_data`` into it takes a Release that reaches the container as a Release (checked
the same way) and refuses anything else (plain numbers carry no metadata to check; PyMC may convert
a Release to plain numbers on the way), pointing to `set_release`.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pytensor.tensor.sharedvar import TensorSharedVariable

from pymc_dp.release import Release
from pymc_dp._checks import model_context

__all__ = [
    "CheckedSharedVariable",
    "ReleaseData",
    "ReleaseSharedVariable",
    "set_release",
    "watch",
    "watch_plain",
]


def _meta(release):
    return {
        "statistic": release.statistic,
        "mechanism": release.mechanism,
        "n": release.n,
        "release_id": release.release_id,
        "partition": release.partition_cell,
    }


def _require_release(value, what, fix):
    if not isinstance(value, Release) or value._info is None:
        raise TypeError(
            f"{what} must be a Release returned by pdp.release, got {type(value).__name__}. {fix}"
        )


class ReleaseSharedVariable(TensorSharedVariable):
    """The class of a `ReleaseData` container: ``set_value`` takes checked Releases only."""

    def set_value(self, new_value, borrow=False):
        pending = getattr(self.tag, "pdp_pending", None)
        given = isinstance(new_value, Release) and new_value._info is not None
        release = new_value if given else pending
        if release is None:
            nodes = [c.name for c in self.tag.pdp_checks]
            raise TypeError(
                f"the new value of the release container {self.name!r} must be a Release, got "
                f"{type(new_value).__name__}. It feeds DPObserved {nodes} and was made by "
                "pdp.ReleaseData, so every new value is checked against those nodes; pm.set_data "
                "may hand over the numbers only. Use pdp.set_release({"
                + repr(self.name)
                + ": release}, model=model). For simulated values that are not releases, build "
                "the container with pm.Data instead."
            )
        if not given and not np.array_equal(np.asarray(new_value), np.asarray(release)):
            raise ValueError(f"the value set into {self.name!r} is not the release being set.")
        for check in self.tag.pdp_checks:
            check(release)
        super().set_value(np.array(new_value), borrow=borrow)
        self.tag.pdp_release = _meta(release)


class CheckedSharedVariable(TensorSharedVariable):
    """The class a plain ``pm.Data`` container takes once a ``DPObserved`` observes it: every new
    value (``pm.set_data``) passes the checks a release passed at construction — numbers, finite,
    the node's shape, integers under an integer mechanism — before it is stored. PyMC casts a
    container to the release's dtype inside the graph, so without them ``pm.set_data(4.5)`` under
    an integer mechanism was read as 4 and NaN as −2⁶³, silently."""

    def set_value(self, new_value, borrow=False):
        value = np.asarray(new_value)
        for check in self.tag.pdp_value_checks:
            check(value)
        super().set_value(new_value, borrow=borrow)


def watch_plain(container, check) -> None:
    """Run ``check(new_values)`` at every ``set_value`` of the plain ``pm.Data`` ``container``
    (one per node observing it): its class becomes `CheckedSharedVariable`."""
    if type(container) is TensorSharedVariable:
        container.__class__ = CheckedSharedVariable
        container.tag.pdp_value_checks = []
    if isinstance(container, CheckedSharedVariable):
        container.tag.pdp_value_checks = [*container.tag.pdp_value_checks, check]


def ReleaseData(name: str, release, *, dims=None, model=None) -> ReleaseSharedVariable:
    """A ``pm.Data`` container holding ``release`` that keeps its metadata.

    Parameters
    ----------
    name : str
    release : Release
        From `pdp.release`.
    dims, model : optional
        As for ``pm.Data``.

    Returns
    -------
    ReleaseSharedVariable
        A ``pm.Data`` variable: pass it as ``observed=`` of ``pdp.DPObserved``; ``pm.set_data``
        with a new Release re-checks it against the node.
    """
    _require_release(
        release,
        "release",
        "Pass the Release returned by pdp.release; for other numbers use pm.Data.",
    )
    data = pm.Data(name, np.array(release), dims=dims, model=model)
    if type(data) is not TensorSharedVariable:  # pragma: no cover - PyMC's container type
        raise TypeError(f"pm.Data returned a {type(data).__name__}; ReleaseData needs a tensor.")
    data.__class__ = ReleaseSharedVariable
    data.tag.pdp_release = _meta(release)
    data.tag.pdp_checks = []
    return data


def watch(container, check) -> None:
    """Run ``check(new_release)`` at every ``set_value`` of ``container`` (one per node)."""
    container.tag.pdp_checks = [*container.tag.pdp_checks, check]


def set_release(new_releases: dict, model=None) -> None:
    """``pm.set_data`` for `ReleaseData` containers: each new Release is checked against every
    ``DPObserved`` node that observes the container (record count, statistic, calibrated
    mechanism, shape) before the value changes.

    Parameters
    ----------
    new_releases : dict
        Container name → Release (from `pdp.release`).
    model : pm.Model, optional
    """
    model = model_context(model, owner="pdp.set_release")
    for name, release in new_releases.items():
        container = model[name]
        if not isinstance(container, ReleaseSharedVariable):
            raise TypeError(
                f"{name!r} is not a pdp.ReleaseData container (got {type(container).__name__}). "
                "Create it with pdp.ReleaseData(name, release), or use pm.set_data for pm.Data."
            )
        _require_release(
            release, f"the new value of {name!r}", "Pass the Release from pdp.release."
        )
        container.tag.pdp_pending = release
        try:
            pm.set_data({name: np.array(release)}, model=model)
        finally:
            container.tag.pdp_pending = None
