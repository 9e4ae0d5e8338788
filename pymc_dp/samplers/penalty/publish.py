r"""What a data holder may publish from a `PenaltyMH` run.

``pm.sample`` returns far more than the private draws: the confidential records themselves
(``observed_data``, ``constant_data``), per-record log-likelihoods, sampler stats computed from the
data without noise (``dp_clipped_fraction``, ``dp_accept_prob``), draws of variables other steps
updated, coordinate labels (which may be built from the data), attributes and timing.
`publishable` keeps only what the privacy accounting covers and attaches the (ε, δ) spent.

Kept (privacy-neutral — post-processing of the noisy log ratios and of data-free randomness):

* ``posterior`` and ``warmup_posterior``: the variables the PenaltyMH steps updated, plus any listed
  in ``keep`` (a ``Deterministic`` of θ alone — the caller vouches that it reads no data);
* ``sample_stats`` and ``warmup_sample_stats``: the stats in `PUBLIC_STATS`, the one allow-list
  (every other stat, including any future ``dp_`` stat, is dropped);
* the dimension names of kept variables; their coordinate labels are replaced by positions
  ``0, 1, …`` (labels may be built from the data), except those named in ``public_coords``.

Dropped: every other group (``observed_data``, ``constant_data``, ``log_likelihood``, predictive and
prior groups and their ``warmup_`` counterparts), every other variable and stat, every coordinate not
indexing a kept variable, every auxiliary coordinate, and every attribute of the input (the root,
the groups and the variables: ``sampling_time`` is a timing side channel, user attributes may hold
anything). The names of what was dropped are recorded in the ``dp_removed_*`` attributes.

Refused unless acknowledged:

* **non-private steps** — free variables that PenaltyMH did not update and whose conditional reads
  the data (they share a log-density term with an observed variable, a ``pm.Data`` container or a
  ``Potential`` that does; e.g. NUTS on a noise scale ``sigma``). The PenaltyMH draws are conditioned
  on them, so the run is not (ε, δ)-DP. ``allow_non_private=True`` publishes anyway and names them in
  ``dp_non_private_variables``;
* **a chain that did not mix** — split R-hat above ``MIXING["max_rhat"]`` or bulk ESS below
  ``MIXING["min_ess"]`` or ``MIXING["min_ess_per_draw"]`` per draw, computed by ArviZ from the
  private posterior draws themselves (publishable, so the check spends nothing).
  ``allow_unmixed=True`` publishes anyway; the diagnostics are attached either way.

Attached attributes (on the result — ``InferenceData.attrs`` or the DataTree root — and on the
posterior group): ``dp_epsilon``, ``dp_delta`` (`pymc_dp.accounting.privacy_spent` on the full
``idata``, tuning included), ``dp_accountant``, ``dp_neighbouring_relation``, ``dp_iterations``
(over all chains and PenaltyMH steps), ``dp_public_stats``, ``dp_max_rhat``, ``dp_min_ess``, ``dp_mixed``, the
``dp_removed_*`` lists and, when the steps ran more iterations in this process than the run shows
(several ``pm.sample`` calls with the same step), ``dp_epsilon_all_runs``.
"""

from __future__ import annotations

import dp_accounting
import numpy as np

from pymc_dp._checks import check_delta
from pymc_dp.accounting.spent import epsilon_of_event, privacy_spent
from pymc_dp.samplers.penalty.step import PenaltyMH

__all__ = ["MIXING", "PUBLIC_STATS", "mixing_diagnostics", "non_private_variables", "publishable"]

#: The sampler stats a data holder may publish: functions of the noisy released ratios λ*, of
#: data-free randomness and of public constants only. ``dp_accept_prob`` is *not* here: it is
#: computed from λ* and, for the subsampled and Barker tests, from noise-free batch statistics and
#: the noise level actually used, so it is kept with the curator like ``dp_clipped_fraction`` and
#: ``dp_noise_sd``. Anything not listed (including stats added later) is not publishable.
PUBLIC_STATS = (
    "dp_accepted",
    "dp_noise_multiplier",
    "dp_grad_noise_multiplier",
    "dp_n_records",
    "dp_batch_size",
    "dp_iterations",
    "dp_coordinate",
    "dp_scale",
    "dp_budget_exhausted",
    "tune",
)
#: Mixing rule of `publishable`: split R-hat at most ``max_rhat``, bulk ESS (over all chains) at
#: least ``min_ess`` and at least ``min_ess_per_draw`` per draw, for every component.
MIXING = {"max_rhat": 1.01, "min_ess": 100.0, "min_ess_per_draw": 0.001}
NEIGHBOURING = "substitution of one record (replace-one)"
_POSTERIOR = ("posterior", "warmup_posterior")
_STATS = ("sample_stats", "warmup_sample_stats")
_SAMPLE_DIMS = ("chain", "draw")


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


def _model_of(penalty, model):
    """The model sampled: ``model=``, else the PenaltyMH step's own model, else the one in context."""
    if model is not None:
        return model
    spec = getattr(getattr(penalty[0], "target", None), "_spec", None)
    if spec is not None:
        return spec[0]
    import pymc as pm

    try:
        return pm.modelcontext(None)
    except TypeError:
        raise ValueError(
            "publishable needs the model to check which variables other steps drew: pass model=, "
            "or call it inside the model's context."
        ) from None


def non_private_variables(model, private_names) -> list[str]:
    """Free variables outside ``private_names`` whose conditional reads the data.

    A free variable reads the data when a log-density term that depends on it (its own prior, an
    observed variable's likelihood, a ``Potential``) also depends on observed values or on a
    ``pm.Data`` container.
    """
    from pymc_dp.distributions.graph import upstream

    data = {model.rvs_to_values[rv] for rv in model.observed_RVs}
    data |= set(getattr(model, "data_vars", ()))
    others = {
        model.rvs_to_values[rv]: rv.name for rv in model.free_RVs if rv.name not in private_names
    }
    if not others:
        return []
    found = set()
    for term in model.logp(sum=False):
        anc = upstream(term)
        if anc & data:
            found.update(name for value, name in others.items() if value in anc)
    return sorted(found)


def mixing_diagnostics(posterior) -> dict:
    """Split R-hat and bulk ESS of the draws in ``posterior`` (an xarray Dataset with chain, draw).

    Returns ``{"max_rhat", "min_ess", "min_ess_per_draw", "mixed"}``, the extremes over every
    component of every variable and whether they pass `MIXING`. Uses only the draws, so on
    PenaltyMH draws it is post-processing and spends no privacy.
    """
    import arviz as az

    if not posterior.data_vars:
        raise ValueError(
            "posterior has no variables to diagnose; keep at least one PenaltyMH variable."
        )
    draws = posterior.sizes["chain"] * posterior.sizes["draw"]
    rhat = az.rhat(posterior)
    ess = az.ess(posterior, method="bulk")
    max_rhat = max(
        float(np.nanmax(np.asarray(rhat[v], dtype=float), initial=-np.inf)) for v in rhat.data_vars
    )
    min_ess = min(
        float(np.nanmin(np.asarray(ess[v], dtype=float), initial=np.inf)) for v in ess.data_vars
    )
    bad = not (np.isfinite(max_rhat) and np.isfinite(min_ess))
    mixed = (
        not bad
        and round(max_rhat, 2) <= MIXING["max_rhat"]  # as az.summary and the guard show it
        and min_ess >= MIXING["min_ess"]
        and min_ess / draws >= MIXING["min_ess_per_draw"]
    )
    return {
        "max_rhat": max_rhat,
        "min_ess": min_ess,
        "min_ess_per_draw": min_ess / draws,
        "mixed": mixed,
    }


def _scrub(ds, keep_vars, public_coords):
    """Only ``keep_vars``; positional labels except ``public_coords``; no attributes anywhere."""
    import xarray as xr

    out = xr.Dataset()
    for name in keep_vars:
        var = ds[name].variable.copy(deep=True)
        var.attrs = {}
        out[name] = (var.dims, var.values)
    coords = {}
    for dim, size in out.sizes.items():
        if dim in public_coords and dim in ds.coords:
            coords[dim] = np.asarray(ds.coords[dim].values).copy()
        else:
            coords[dim] = np.arange(size)
    return out.assign_coords(coords)


def _check_keep(model, penalty, keep):
    """Refuse ``keep`` variables computed from the confidential records (e.g. a Deterministic
    of θ and the data): their draws are not covered by ε."""
    bad = []
    for name in keep:
        try:
            var = model[name]
        except KeyError:
            continue
        if var in model.free_RVs:  # drawn by a step: non_private_variables decides
            continue
        if any(s.target.reads_records(var) for s in penalty):
            bad.append(name)
    if bad:
        raise ValueError(
            f"keep={list(keep)} names {bad}, computed from the confidential records (the observed "
            "data or a per-record data container), so their draws are not covered by dp_epsilon. "
            "Keep only quantities of the PenaltyMH variables and public constants, or compute "
            "them from the published draws afterwards."
        )


def _check_non_private(names, allow):
    if names and not allow:
        raise ValueError(
            f"variables {names} were drawn by steps other than PenaltyMH and their conditional reads "
            "the confidential data, so the PenaltyMH draws (conditioned on them) are not covered by "
            "dp_epsilon. Give these variables to PenaltyMH (vars=), fix them to public values, or "
            "pass allow_non_private=True to publish with them named in dp_non_private_variables."
        )


def _check_mixing(diag, allow):
    if not diag["mixed"] and not allow:
        raise ValueError(
            f"the private draws did not mix: split R-hat {diag['max_rhat']:.3g} (rule <= "
            f"{MIXING['max_rhat']}), bulk ESS {diag['min_ess']:.3g} (rule >= {MIXING['min_ess']:g} and "
            f">= {MIXING['min_ess_per_draw']:g} per draw). These are diagnostics of the published draws, "
            "not of the data. Run longer, plan tau and scale for this n and epsilon (more data or a "
            "larger epsilon), or pass allow_unmixed=True to publish with the diagnostics attached."
        )


def publishable(
    idata,
    steps,
    *,
    delta,
    accountant=None,
    keep=(),
    public_coords=(),
    model=None,
    allow_non_private=False,
    allow_unmixed=False,
):
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
    public_coords : sequence of str
        Dimensions of kept variables whose coordinate labels are public (not built from the data);
        the labels of every other dimension are replaced by positions ``0, 1, …``.
    model : pm.Model, optional
        The model sampled; default the PenaltyMH step's own model (else the model in context).
    allow_non_private : bool
        Publish even though free variables were drawn by steps that read the data (named in
        ``dp_non_private_variables``; ``dp_epsilon`` then does not cover the published draws).
    allow_unmixed : bool
        Publish a run that fails the mixing rule `MIXING`.

    Returns
    -------
    Same type as ``idata``: a new object (``idata`` is not modified) with the groups, variables
    and stats listed in the module docstring and the ``dp_*`` attributes.
    """
    delta = check_delta(delta)
    penalty = _penalty_steps(steps)
    groups = _groups(idata)
    if "sample_stats" not in groups or "dp_iterations" not in groups["sample_stats"]:
        raise ValueError(
            "idata has no sample_stats 'dp_iterations': pass the InferenceData returned by "
            "pm.sample with step=[pdp.PenaltyMH(...)], not a slice or a posterior alone."
        )
    private = {name for s in penalty for name in s.rv_names}
    missing = sorted(set(keep) - set(groups["posterior"].data_vars))
    if missing:
        raise ValueError(
            f"keep names variables absent from the posterior: {missing}. Check the names."
        )
    the_model = _model_of(penalty, model)
    _check_keep(the_model, penalty, keep)
    non_private = non_private_variables(the_model, private)
    _check_non_private(non_private, allow_non_private)
    wanted = [v for v in groups["posterior"].data_vars if v in private or v in set(keep)]
    diag = mixing_diagnostics(groups["posterior"][[v for v in wanted if v in private]])
    _check_mixing(diag, allow_unmixed)
    stats = groups["sample_stats"]
    accountant = accountant or _default_accountant(stats)
    epsilon = privacy_spent(idata, delta=delta, accountant=accountant)
    counts = np.asarray(stats["dp_iterations"])  # (chain, draw) or (chain, draw, step)
    counts = counts[..., None] if counts.ndim == 2 else counts
    iterations = int(counts.max(axis=1).sum())  # every chain's and every step's last count
    out, removed_groups, removed_stats, removed_vars = {}, [], set(), set()
    for name, ds in groups.items():
        allowed = wanted if name in _POSTERIOR else PUBLIC_STATS if name in _STATS else None
        if allowed is None:
            removed_groups.append(name)
            continue
        kept = [v for v in ds.data_vars if v in allowed]
        (removed_vars if name in _POSTERIOR else removed_stats).update(
            set(ds.data_vars) - set(kept)
        )
        out[name] = _scrub(ds, kept, public_coords)
    attrs = {
        "dp_epsilon": float(epsilon),
        "dp_delta": delta,
        "dp_accountant": accountant,
        "dp_neighbouring_relation": NEIGHBOURING,
        "dp_iterations": iterations,
        "dp_public_stats": ", ".join(PUBLIC_STATS),
        "dp_max_rhat": diag["max_rhat"],
        "dp_min_ess": diag["min_ess"],
        "dp_mixed": int(diag["mixed"]),
        "dp_removed_groups": ", ".join(removed_groups),
        "dp_removed_stats": ", ".join(sorted(removed_stats)),
        "dp_removed_variables": ", ".join(sorted(removed_vars)),
    }
    if non_private:
        attrs["dp_non_private_variables"] = ", ".join(non_private)
    if sum(s.total_iterations for s in penalty) > iterations:
        event = dp_accounting.ComposedDpEvent([s.dp_event() for s in penalty])
        attrs["dp_epsilon_all_runs"] = float(epsilon_of_event(event, delta, accountant=accountant))
    out["posterior"].attrs.update(attrs)
    return _rebuild(idata, out, attrs)
