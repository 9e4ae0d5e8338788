"""``ReleaseData``: a ``pm.Data`` container for releases that keeps the Release check.

``pm.Data("s", release)`` keeps the released numbers only (PyMC converts them to a plain array),
so ``DPObserved`` cannot check the container against the node, and ``pm.set_data`` could put in
any numbers. ``pdp.ReleaseData("s", release)`` is the same ``pm.Data`` container, carrying the
Release's metadata: ``DPObserved(observed=container)`` checks it like a Release, and
``pm.set_data({"s": new_release})`` checks the new Release against every node that observes the
container (record count, statistic, calibrated mechanism, shape) before the value changes. A plain
array set into it is refused: it carries no metadata to check.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pytensor.tensor.sharedvar import TensorSharedVariable

from pymc_dp.release import Release

__all__ = ["ReleaseData", "ReleaseSharedVariable", "watch"]


def _meta(release):
    return {"statistic": release.statistic, "mechanism": release.mechanism, "n": release.n,
            "release_id": release.release_id, "partition": release.partition_cell}


def _require_release(value, what, fix):
    if not isinstance(value, Release) or value._info is None:
        raise TypeError(f"{what} must be a Release returned by pdp.release, got "
                        f"{type(value).__name__}. {fix}")


class ReleaseSharedVariable(TensorSharedVariable):
    """The class of a `ReleaseData` container: ``set_value`` takes checked Releases only."""

    def set_value(self, new_value, borrow=False):
        nodes = [c.name for c in self.tag.pdp_checks]
        _require_release(
            new_value, f"the new value of the release container {self.name!r}",
            f"It feeds DPObserved {nodes} and was made by pdp.ReleaseData, so every value is "
            "checked against those nodes: pass the Release itself (not np.asarray(release) or a "
            "number). For simulated values that are not releases, build the container with "
            "pm.Data instead.")
        for check in self.tag.pdp_checks:
            check(new_value)
        super().set_value(np.array(new_value), borrow=borrow)
        self.tag.pdp_release = _meta(new_value)


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
    _require_release(release, "release", "Pass the Release returned by pdp.release; for other "
                     "numbers use pm.Data.")
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
