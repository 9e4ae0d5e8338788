"""θ, the latent records it drives and their releases: what every record-level θ-step starts from.

A step that moves parameters θ of a model whose confidential records are latent (``PMMH``,
``MHAAR``, ``Interweave``) first answers the same questions, here once:

* which ``DPObserved`` nodes the model has (`required_nodes`, a refusal if none);
* which of ``vars`` are θ, in PyMC's value space, continuous (`theta_values`);
* which latent records θ drives: by default those of the releases that depend on θ
  (`pymc_dp.distributions.graph.latent_records`), otherwise the records the user names, which
  must be released by some node and must not be θ;
* which releases read those records (`ReleaseTarget.release_nodes`).

`ReleaseTarget` holds the answers and the point helpers (θ as one flat vector in value space).
`pymc_dp.samplers.latent.LatentTarget` (the releases' and records' densities and particle draws,
through `pymc_dp.samplers.records.RecordBlock`) and
`pymc_dp.samplers.interweave.InterweaveTarget` (the records through θ-free noise) add
what their kernels evaluate. The graph questions themselves are answered by
`pymc_dp.distributions.graph`.
"""

from __future__ import annotations

import numpy as np
from pymc.util import get_value_vars_from_user_vars

from pymc_dp.distributions.dp_observed import dp_nodes
from pymc_dp.distributions.graph import latent_records, names, released_records, releasing
from pymc_dp.samplers.points import flatten_vars, replace_flat

__all__ = ["ReleaseTarget", "required_nodes", "theta_values"]


def required_nodes(model, owner) -> dict:
    """The ``DPObserved`` nodes of ``model``; a step that needs some refuses a model without."""
    nodes = dp_nodes(model)
    if not nodes:
        raise ValueError(
            f"{owner} found no pdp.DPObserved node in the model. Add the release with "
            "pdp.DPObserved(name, records, statistic=..., mechanism=..., observed=...)."
        )
    return nodes


def theta_values(model, vars, *, owner: str, move: str) -> list:
    """The value variables of θ (``vars``: RVs or value variables), refused if missing or
    discrete; ``move`` says how ``owner`` moves θ (for the message, e.g. "moves θ by slice
    sampling in value space")."""
    if vars is None or (isinstance(vars, list | tuple) and not vars):
        raise ValueError(
            f"{owner} needs vars=[theta, ...], the parameters it samples; got vars={vars!r}."
        )
    values = list(get_value_vars_from_user_vars(vars, model))
    for v in values:
        if v.dtype.startswith(("int", "uint", "bool")):
            raise ValueError(
                f"{owner} {move}, but {v.name!r} is discrete (dtype {v.dtype}). Pass only "
                "continuous variables in vars."
            )
    return values


class ReleaseTarget:
    """θ, the latent records it drives and the ``DPObserved`` releases of those records.

    Parameters
    ----------
    model : pm.Model
    vars : list
        θ: continuous free variables (RVs or value variables).
    records : list, optional
        The latent records (RVs or value variables); default: the free records of the releases
        that depend on θ (`pymc_dp.distributions.graph.latent_records`).
    owner : str
        Name of the calling sampler, for messages.
    move : str
        How the sampler moves θ (e.g. "proposes θ by a Gaussian random walk"), for messages.
    argument : str
        The sampler's name for ``records`` ("latent", "records"), for messages.
    whole_releases : bool
        Default records: every free record of a release that depends on θ (True), or only the
        records that depend on θ themselves (False).

    Attributes
    ----------
    nodes : dict
        Every ``DPObserved`` node of the model (name → node).
    theta_values, theta_rvs, theta_names : list
        θ's value variables, random variables and value-variable names.
    record_rvs : list
        The latent records.
    input_names : list
        The names of the model's value variables, the inputs of every compiled graph (`args`).
    """

    def __init__(
        self,
        model,
        vars,
        records=None,
        *,
        owner: str,
        move: str,
        argument: str = "records",
        whole_releases: bool = False,
    ):
        self.model = model
        self.owner = owner
        self.theta_values = theta_values(model, vars, owner=owner, move=move)
        self.theta_names = [v.name for v in self.theta_values]
        self.theta_rvs = [model.values_to_rvs[v] for v in self.theta_values]
        self.nodes = nodes = required_nodes(model, owner)
        if records is None:
            recs = latent_records(model, nodes, self.theta_rvs, whole_releases=whole_releases)
        else:
            recs = [model.values_to_rvs[v] for v in get_value_vars_from_user_vars(records, model)]
            fed = set(released_records(nodes))
            unfed = [r for r in recs if r not in fed]
            if unfed:
                raise ValueError(
                    f"{argument} must be variables a pdp.DPObserved node depends on, got "
                    f"{argument}=[{names(unfed)}], which no DPObserved node releases (nodes: "
                    f"{', '.join(map(repr, nodes))}). Pass the records given to DPObserved, or "
                    f"leave {argument}=None to find them."
                )
        theta_set = set(self.theta_rvs)
        overlap = [r for r in recs if r in theta_set]
        if overlap:
            raise ValueError(
                f"{owner}: {names(overlap)} is both in vars and in {argument}. Pass the parameters "
                f"in vars and the confidential records in {argument} (or leave it None)."
            )
        if not recs:
            raise ValueError(
                f"{owner} needs the latent records of a DPObserved node that depend on "
                f"vars={names(self.theta_rvs)}, but none does (nodes: "
                f"{', '.join(map(repr, nodes))}). Pass the parameters of the confidential "
                f"records' distribution in vars, or the records in {argument}=[...]."
            )
        self.record_rvs = recs
        #: the names of every value variable of the model: the inputs of the compiled graphs
        self.input_names = [v.name for v in model.value_vars]

    @property
    def release_nodes(self) -> list:
        """The ``DPObserved`` nodes that release the latent records (node order)."""
        return releasing(self.nodes, self.record_rvs)

    # -- point helpers -------------------------------------------------------------------------
    def args(self, point) -> list:
        """The values of ``point`` in the order of `input_names` (a compiled graph's arguments)."""
        return [point[name] for name in self.input_names]

    def theta_flat(self, point) -> np.ndarray:
        """θ of ``point`` as one flat vector (value space)."""
        return flatten_vars(point, self.theta_names)

    def with_theta(self, point, flat) -> dict:
        """``point`` with θ set from the flat vector ``flat``."""
        return replace_flat(point, self.theta_names, flat)
