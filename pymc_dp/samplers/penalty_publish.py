r"""What a data holder may publish from a :class:`~pymc_dp.samplers.penalty.PenaltyMH` run.

``pm.sample`` returns far more than the private draws: the confidential records themselves
(``observed_data``, ``constant_data``), per-record log-likelihoods, sampler stats computed from the
data without noise (``dp_clipped_fraction``), draws of variables other steps updated, timing.
:func:`publishable` keeps only what the privacy accounting covers and attaches the (ε, δ) spent.

Kept (privacy-neutral — post-processing of the noisy releases and of data-free randomness):

* ``posterior`` (and ``warmup_posterior``): the variables the given PenaltyMH steps updated, plus
  any listed in ``keep`` (e.g. a ``Deterministic`` of θ alone — the caller vouches that it reads no
  data);
* ``sample_stats`` (and ``warmup_sample_stats``): the stats in :data:`PUBLIC_STATS` —
  accept flags and probabilities (functions of the noisy ratio λ*), noise multipliers, record and
  batch counts (the accounting's neighbouring relation is substitution, so n is public), the
  iteration counters, the coordinate moved, the tuned scale (a function of the accept flags) and
  ``tune``.

Dropped: every other group (``observed_data``, ``constant_data``, ``log_likelihood``, predictive
groups — which can read confidential covariates — ``prior`` groups), every other stat (notably
``dp_clipped_fraction``, a noise-free function of the data, ``dp_noise_sd``, and stats of other
steps such as a log density ``lp``), every other posterior variable, and the ``sampling_time``
attribute (a timing side channel). The names of what was dropped are recorded in the attributes.

Attached attributes (on the result — ``InferenceData.attrs`` or the DataTree root — and on the
posterior group): ``dp_epsilon`` and ``dp_delta`` of this run composed by ``dp_accounting``
(:func:`pymc_dp.accounting.privacy_spent` on the full ``idata``, tuning included),
``dp_accountant``, ``dp_neighbouring_relation``, ``dp_iterations`` (over all chains), and, when
the steps ran more iterations in this process than the run shows (several ``pm.sample`` calls with
the same step), ``dp_epsilon_all_runs`` from their counters.
"""

from __future__ import annotations

import dp_accounting
import numpy as np

from pymc_dp._checks import check_delta
from pymc_dp.accounting.spent import epsilon_of_event, privacy_spent
from pymc_dp.samplers.penalty import PenaltyMH

__all__ = ["publishable", "PUBLIC_STATS"]

PUBLIC_STATS = (
    "dp_accepted",
    "dp_accept_prob",
    "dp_noise_multiplier",
    "dp_grad_noise_multiplier",
    "dp_n_records",
    "dp_batch_size",
    "dp_iterations",
    "dp_coordinate",
    "dp_scale",
    "tune",
)
NEIGHBOURING = "substitution of one record (replace-one)"
_POSTERIOR = ("posterior", "warmup_posterior")
_STATS = ("sample_stats", "warmup_sample_stats")


def _penalty_steps(steps):
    if isinstance(steps, PenaltyMH):
        steps = [steps]
    flat = []
    for s in steps:
        flat.extend(getattr(s, "methods", [s]))
    found = [s for s in flat if isinstance(s, PenaltyMH)]
    if not found:
        raise ValueError(
            f"steps must hold the PenaltyMH step(s) of the run, got {steps!r}. Pass the step objects "
            "given to pm.sample(step=...), so that only the variables they updated are published."
        )
    return found


def _groups(idata) -> dict:
    """``{name: xarray.Dataset}`` of an ArviZ 0.x InferenceData or an xarray DataTree."""
    if hasattr(idata, "children"):  # xarray.DataTree (ArviZ >= 1, PyMC >= 6)
        return {name: node.to_dataset() for name, node in idata.children.items()}
    if hasattr(idata, "groups"):
        return {name: getattr(idata, name) for name in idata.groups()}
    raise TypeError(
        f"idata must be the InferenceData or DataTree returned by pm.sample, got {type(idata).__name__}."
    )


def _rebuild(like, groups: dict, attrs: dict):
    if hasattr(like, "children"):
        import xarray as xr

        tree = xr.DataTree.from_dict({f"/{k}": v for k, v in groups.items()})
        tree.attrs = dict(attrs)
        return tree
    import arviz as az

    return az.InferenceData(attrs=dict(attrs), **groups)


def _default_accountant(stats) -> str:
    try:
        n = np.asarray(stats["dp_n_records"])
        b = np.asarray(stats["dp_batch_size"])
    except KeyError:
        return "pld"
    return "rdp" if np.any(b < n) else "pld"


def publishable(idata, steps, *, delta, accountant=None, keep=()):
    r"""The part of a PenaltyMH run a data holder may publish, with the (ε, δ) it spent.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        The *full* result of ``pm.sample`` (the iteration counters of its last draws give ε).
    steps : PenaltyMH, CompoundStep or list of steps
        The steps passed to ``pm.sample(step=...)``; posterior variables they did not update are
        dropped.
    delta : float
        δ in (0, 1) at which ε is reported.
    accountant : {"pld", "rdp"}, optional
        Default ``"rdp"`` if the run subsampled, else ``"pld"``.
    keep : sequence of str
        Further posterior variables to keep (e.g. a ``Deterministic`` of θ that reads no data).

    Returns
    -------
    Same type as ``idata``: a new object (``idata`` is not modified) with the groups, variables
    and stats listed in the module docstring and the attributes ``dp_epsilon``, ``dp_delta``,
    ``dp_accountant``, ``dp_neighbouring_relation``, ``dp_iterations``, ``dp_removed_groups``,
    ``dp_removed_stats``, ``dp_removed_variables``.
    """
    delta = check_delta(delta)
    penalty = _penalty_steps(steps)
    groups = _groups(idata)
    if "sample_stats" not in groups or "dp_iterations" not in groups["sample_stats"]:
        raise ValueError(
            "idata has no sample_stats 'dp_iterations': pass the InferenceData returned by "
            "pm.sample with step=[pdp.PenaltyMH(...)], not a slice or a posterior alone."
        )
    stats = groups["sample_stats"]
    accountant = accountant or _default_accountant(stats)
    epsilon = privacy_spent(idata, delta=delta, accountant=accountant)
    iterations = int(np.asarray(stats["dp_iterations"]).max(axis=-1).sum())
    wanted = {name for s in penalty for name in s.rv_names} | set(keep)
    out, removed_groups, removed_stats, removed_vars = {}, [], set(), set()
    for name, ds in groups.items():
        if name in _POSTERIOR:
            drop = [v for v in ds.data_vars if v not in wanted]
            removed_vars.update(drop)
        elif name in _STATS:
            drop = [v for v in ds.data_vars if v not in PUBLIC_STATS]
            removed_stats.update(drop)
        else:
            removed_groups.append(name)
            continue
        ds = ds.drop_vars(drop)
        ds.attrs = {k: v for k, v in ds.attrs.items() if k != "sampling_time"}
        out[name] = ds
    missing = sorted(set(keep) - set(groups["posterior"].data_vars))
    if missing:
        raise ValueError(f"keep names variables absent from the posterior: {missing}. Check the names.")
    attrs = {
        "dp_epsilon": float(epsilon),
        "dp_delta": delta,
        "dp_accountant": accountant,
        "dp_neighbouring_relation": NEIGHBOURING,
        "dp_iterations": iterations,
        "dp_removed_groups": ", ".join(removed_groups),
        "dp_removed_stats": ", ".join(sorted(removed_stats)),
        "dp_removed_variables": ", ".join(sorted(removed_vars)),
    }
    if sum(s.total_iterations for s in penalty) > iterations:
        event = dp_accounting.ComposedDpEvent([s.dp_event() for s in penalty])
        attrs["dp_epsilon_all_runs"] = float(epsilon_of_event(event, delta, accountant=accountant))
    out["posterior"].attrs.update(attrs)
    return _rebuild(idata, out, attrs)
