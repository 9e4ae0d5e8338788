r"""``marginalize(model)``: integrate discrete latent records out of a PyMC model exactly.

The returned model has no record variables: each group of ``DPObserved`` nodes reading one
record variable is replaced by a ``pm.Potential`` holding the exact collapsed log-likelihood
``log p(s_dp | θ)`` (`pymc_dp.marginal.loglik`), a differentiable graph of θ, so ``pm.sample()``
runs NUTS on θ alone. Draws of the records come back with `pymc_dp.recover_records`.

The rewrite goes through PyMC's functional-graph form of a model (``fgraph_from_model`` /
``model_from_fgraph``), as pymc-extras' ``MarginalModel`` does: the record variable and its
release nodes leave the graph and the potential, written on the graph's copies of θ, joins it.
"""

from __future__ import annotations

from pymc.model import fgraph as _fg
from pytensor.compile.sharedvalue import SharedVariable

from pymc_dp._checks import model_context
from pymc_dp.distributions.dp_observed import DPNode, dp_nodes
from pymc_dp.distributions.graph import other_readers, upstream
from pymc_dp.distributions.registry import get_extra, set_extra, set_nodes
from pymc_dp.marginal.plan import make_plan

__all__ = ["collapsed_plans", "follow_releases", "marginalize"]


def _potential(var, name):
    if isinstance(_fg.model_potential, _fg.ModelPotential):  # PyMC 5: name from the variable
        var.name = name
        return _fg.model_potential(var)
    return _fg.model_potential(var, name)  # PyMC 6: name is an argument


def _groups(model, records):
    nodes = dp_nodes(model)
    if not nodes:
        raise ValueError(
            "The model has no pdp.DPObserved release, so there is nothing to marginalize."
        )
    groups = {}
    for node in nodes.values():
        groups.setdefault(node.data[0], []).append(node)
    if records is not None:
        wanted = [r if isinstance(r, str) else r.name for r in records]
        by_name = {rv.name: rv for rv in groups}
        missing = [w for w in wanted if w not in by_name]
        if missing:
            raise ValueError(
                f"records={wanted}: {missing} feed no pdp.DPObserved release; choose among "
                f"{sorted(by_name)}."
            )
        groups = {by_name[w]: groups[by_name[w]] for w in wanted}
    return groups


def collapsed_plans(model=None, *, records=None, method="auto", cost=None):
    """The `CollapsedPlan` of each record variable (name → plan).

    Raises the reason when a record variable cannot be collapsed exactly and cheaply (``cost``:
    a `pymc_dp.marginal.CostModel`, default its documented defaults).
    """
    model = model_context(model, owner="pdp.marginal.collapsed_plans")
    plans = {}
    groups = _groups(model, records)
    for record, group in groups.items():
        if record not in model.free_RVs:
            raise ValueError(
                f"Record variable {record.name!r} is not a free variable of the model."
            )
        users = other_readers(model, [record], exclude=[nd.rv for nd in group], deterministics=True)
        if users:
            v = users[0][0]
            raise ValueError(
                f"Record variable {record.name!r} is also used by {v.name!r}, which is not a "
                "DPObserved release; integrating it out would drop that dependence. Use "
                "pdp.DataAugmentation."
            )
        try:
            plans[record.name] = make_plan(model, record, group, method=method, cost=cost)
        except (TypeError, ValueError) as err:
            others = [rv.name for rv in groups if rv is not record]
            if records is not None or not others:
                raise
            raise type(err)(
                f"{err} To integrate out only the other record variables, pass "
                f"records={others!r} and keep {record.name!r} for pdp.DataAugmentation."
            ) from err
    return plans


def marginalize(model=None, *, records=None, method="auto", cost=None):
    r"""Return a copy of ``model`` with discrete records integrated out of their releases.

    Parameters
    ----------
    model : pm.Model, optional
        A model with ``pdp.DPObserved`` releases of discrete iid records.
    records : list of str or TensorVariable, optional
        Which record variables to integrate out (default: every one read by a release).
    method : {"auto", "convolution"}
        ``"convolution"`` forces the general n-fold convolution for additive statistics of finite
        records even where a closed form (Binomial) exists.
    cost : pymc_dp.marginal.CostModel, optional
        Seconds per gradient term of each route and the time limit per gradient beyond which a
        plan is refused (configuration; default the documented `CostModel()`).

    Returns
    -------
    pm.Model
        The model without the record variables; each group of releases is a ``pm.Potential``
        named after the release (several local releases: their names joined by ``"+"``) with the
        exact `\log p(s_{dp} \mid θ)`. The plans are kept for `recover_records`.
        The collapsed releases' values are planned now (support, noise densities): a ``pm.Data``
        container that held one is not in the returned model: after ``pm.set_data`` on the
        original model, call `follow_releases` on the returned model (no recompilation when only
        the noise table of a plan changes) or marginalize again.

    Notes
    -----
    Cost per gradient: local releases O(u·w) (u distinct release rows, w support points);
    additive statistics O(L² log n) by convolution (L lattice values of the sum) or O(L) in
    closed form; counts O(N² K) (O(N·band·K) when the noise radius cuts the cells). Plans whose
    gradient would take longer than ``cost.max_seconds`` (default
    `pymc_dp.marginal.plan.MAX_SECONDS`, 30 ms, with the time per term measured once by
    ``benchmarks/bench_collapsed_cost.py``) are refused: data augmentation is faster there; see ``docs/collapsed.md``.
    """
    model = model_context(model, owner="pdp.marginalize")
    plans = collapsed_plans(model, records=records, method=method, cost=cost)
    all_nodes = dp_nodes(model)
    fgraph, memo = _fg.fgraph_from_model(model)
    drop, add = set(), []
    for name, plan in plans.items():
        record = model[name]
        frv = memo[record].owner.inputs[0]  # the record RV inside the fgraph
        params = _law_params(plan, frv)
        logp = plan.loglik(params)
        add.append(_potential(logp, "+".join(plan.nodes)))
        drop.add(memo[record])
        drop.update(memo[model[node]] for node in plan.nodes)
    read = upstream(drop)  # what the dropped records and releases read
    for out in reversed(list(fgraph.outputs)):
        if out in drop:
            fgraph.remove_output(fgraph.outputs.index(out))
    for var in add:
        for inp in upstream([var]):  # a plan's shared noise table (CollapsedPlan.eta_graph)
            if isinstance(inp, SharedVariable) and inp.owner is None and inp not in fgraph.inputs:
                fgraph.add_input(inp)
        fgraph.add_output(var)
    _drop_unread_data(fgraph, read)
    left = upstream(fgraph.outputs)
    for out in drop:
        if out in left:  # pragma: no cover - guarded by collapsed_plans
            raise ValueError(f"{out.name!r} is still used after marginalization.")
    new = _fg.model_from_fgraph(fgraph, mutate_fgraph=True)
    kept = {}
    collapsed = {node for plan in plans.values() for node in plan.nodes}
    for name, node in all_nodes.items():  # releases not collapsed stay visible to the samplers
        if name not in collapsed:
            kept[name] = DPNode(
                rv=new[name],
                data=tuple(new[d.name] for d in node.data),
                statistic=node.statistic,
                mechanism=node.mechanism,
                n=node.n,
                dim=node.dim,
                shape=node.shape,
            )
    set_nodes(new, kept)
    set_extra(new, "collapsed", {"plans": plans, "original": model, "method": method})
    return new


def follow_releases(model) -> bool:
    """Make a model returned by `marginalize` follow new release values of its original model.

    After ``pm.set_data`` on the original model, plan the collapsed likelihoods again for the new
    values; when each new plan differs from the old one only in its noise table
    (`CollapsedPlan.follows`: e.g. another noisy sum of finite records), the marginalized model's
    likelihood — and every function compiled from it, such as a NUTS step — is now exactly that of
    the new releases, with nothing compiled again. Returns ``False`` and changes nothing otherwise:
    call `marginalize` again.
    """
    info = get_extra(model, "collapsed")
    if info is None:
        raise ValueError(
            "model must be the model returned by pdp.marginalize(...); it has no collapsed records."
        )
    plans = info["plans"]
    new = collapsed_plans(info["original"], records=list(plans), method=info.get("method", "auto"))
    if not all(plans[r].follows(new[r]) for r in plans):
        return False
    for r in plans:
        plans[r].follow(new[r])
    return True


def _drop_unread_data(fgraph, read):
    """Remove the ``pm.Data`` containers nothing reads any more (a collapsed release's value lives
    in the potential as a constant): keeping them would let ``pm.set_data`` change nothing,
    silently. Without them it fails, and the docstring says to marginalize again."""
    outputs = list(fgraph.outputs)
    named = [o for o in outputs if isinstance(o.owner.op, _fg.ModelNamed)]
    used = upstream([o for o in outputs if o not in named])
    for out in reversed(outputs):
        if out in named and out.owner.inputs[0] in read and out.owner.inputs[0] not in used:
            fgraph.remove_output(fgraph.outputs.index(out))


def _law_params(plan, rv):
    """The record law's core parameters read from ``rv`` (a clone of the record variable)."""
    from pymc_dp.marginal.records import record_law

    if plan.case == "gaussian":
        from pymc_dp.marginal.gaussian import gaussian_params

        return gaussian_params(rv, plan.shape)
    return record_law(rv, n=plan.law.n, per_record=plan.law.per_record).params


def marginal_plans(model) -> dict:
    """The plans (record name → `CollapsedPlan`) of a model returned by
    `marginalize`: which releases each integrated-out record variable carried, and how."""
    info = get_extra(model, "collapsed")
    if info is None:
        raise ValueError(
            "model must be the model returned by pdp.marginalize(...); it has no collapsed records."
        )
    return dict(info["plans"])
