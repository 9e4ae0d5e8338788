"""The latent records behind ``DPObserved`` nodes: discovery, checks and compiled graphs.

A *record block* is one or several free random variables sharing the record axis 0 (e.g. the class
and the features of naive Bayes records) that feed ``DPObserved`` nodes. This module finds the nodes,
refuses models the record-wise samplers cannot treat exactly, and compiles

* ``propose(point)``: one joint draw of every record from its conditional prior given the
  non-record variables, returned in the value (transformed) space of the point (through the model's
  random graph, or with ``fast_draws=True`` for common families through
  `pymc_dp.samplers.fast_draws.FastRecordDraw`, same distribution, no graph);
* ``contributions(point)``: the per-record statistic contributions of every node, ``(n, dim)``.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.logprob.utils import replace_rvs_by_values
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import reseed_rngs
from pymc.util import get_value_vars_from_user_vars
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.replace import graph_replace
from pytensor.tensor.random.type import RandomGeneratorType

from pymc_dp._checks import child_rng
from pymc_dp.distributions.graph import (
    depends_on,
    free_records,
    names,
    other_readers,
    upstream,
    value_reader,
)
from pymc_dp.samplers.fast_draws import FastRecordDraw
from pymc_dp.samplers.target import required_nodes

__all__ = ["RecordBlock", "compile_record_draw", "record_groups"]


def _nodes_and_records(model, vars, owner):
    """The model's ``DPObserved`` nodes and the record RVs to sample: ``vars`` (RVs or value
    variables), or with ``vars=None`` every free RV that is the data of some node."""
    nodes = required_nodes(model, owner)
    if vars is not None:
        return nodes, [model.values_to_rvs[v] for v in get_value_vars_from_user_vars(vars, model)]
    rvs = free_records(model, nodes)
    if not rvs:
        raise ValueError(
            f"{owner} updates latent records, but every DPObserved node of the model "
            f"({', '.join(map(repr, nodes))}) releases observed data or deterministic "
            "values: there are no free record variables to sample. Sample the parameters "
            "with PyMC's samplers (pm.sample() without step=)."
        )
    return nodes, rvs


def record_groups(model, vars=None, *, owner="DataAugmentation"):
    """Split record variables into groups: records released together (by one node) share a group.

    ``vars=None`` takes every free RV that is the data of a ``DPObserved`` node. Returns a list of
    lists of RVs (a group's variables share the record axis; groups may differ in size).
    """
    nodes, rvs = _nodes_and_records(model, vars, owner)
    group_of = {r: i for i, r in enumerate(rvs)}
    for node in nodes.values():  # union the groups of records released by one node
        inside = [d for d in node.data if d in group_of]
        if len(inside) > 1:
            keep = group_of[inside[0]]
            merged = {group_of[d] for d in inside}
            for r, g in group_of.items():
                if g in merged:
                    group_of[r] = keep
    out = {}
    for r in rvs:
        out.setdefault(group_of[r], []).append(r)
    return list(out.values())


def compile_record_draw(model, record_rvs, graphs):
    """Compile draws of ``graphs`` (record RVs, possibly resized) given the other variables.

    Every non-record RV in ``graphs`` is replaced by its value variable, each draw is mapped to
    PyMC's value space (the record's forward transform), and the graph's random generators are
    swapped for fresh shared ones so that the draws are reseeded per chain. Returns
    ``(function of model.value_vars, [shared generators])``: the generators start from fresh
    entropy and are meant to be reseeded (`pymc.pytensorf.reseed_rngs` with the step's
    generator, as `RecordBlock.reseed` does) before any draw that must be reproducible.
    """
    records = set(record_rvs)
    rvs_to_values = {rv: val for rv, val in model.rvs_to_values.items() if rv not in records}
    rvs_to_transforms = {
        rv: tr for rv, tr in model.rvs_to_transforms.items() if rv not in records and tr is not None
    }
    drawn = replace_rvs_by_values(
        graphs, rvs_to_values=rvs_to_values, rvs_to_transforms=rvs_to_transforms
    )
    outs = []
    for rv, g in zip(record_rvs, drawn):
        tr = model.rvs_to_transforms.get(rv)
        outs.append(tr.forward(g, *g.owner.inputs) if tr is not None else g)
    old_rngs = [
        v
        for v in upstream(outs)
        if isinstance(v, SharedVariable) and isinstance(v.type, RandomGeneratorType)
    ]
    rngs = [pytensor.shared(np.random.default_rng()) for _ in old_rngs]
    outs = graph_replace(outs, dict(zip(old_rngs, rngs)), strict=False)
    fn = pm_compile(model.value_vars, outs, on_unused_input="ignore")
    return fn, rngs


class RecordBlock:
    """Records (axis 0 of ``record_rvs``) and the ``DPObserved`` nodes they feed.

    Parameters
    ----------
    model : pm.Model
    vars : list or None
        Record variables (RVs or value variables); ``None`` takes every free RV that is the data
        of some ``DPObserved`` node.
    require_additive : bool
        Refuse statistics that are not record-additive (``DataAugmentation``).
    owner : str
        Name of the sampler, for error messages.
    fast_draws : bool
        Draw proposals of common record families (normal, Bernoulli, Poisson, exponential, gamma,
        binomial) with numba from the generator given to `reseed` instead of through the
        PyTensor graph (`pymc_dp.samplers.fast_draws`); other blocks keep the graph.
        ``self.fast_reason`` says why a block does not qualify.
    rng : numpy.random.Generator or int, optional
        The step's generator: the factorisation check's probe point and proposal are drawn from a
        child of it (`pymc_dp._checks.child_rng`; ``None``: fresh entropy). The proposals
        themselves draw from the generator given to `reseed`.
    """

    def __init__(
        self,
        model,
        vars=None,
        *,
        require_additive=True,
        owner="DataAugmentation",
        fast_draws=False,
        rng=None,
    ):
        self.model = model
        self._probe_rng = rng
        self.fast_draws = bool(fast_draws)
        nodes, record_rvs = _nodes_and_records(model, vars, owner)
        self.record_rvs = record_rvs
        self.value_vars = [model.rvs_to_values[r] for r in record_rvs]

        fed = {r: [] for r in record_rvs}
        self.nodes = []
        for name, node in nodes.items():
            inside = [d for d in node.data if d in fed]
            if not inside:
                continue
            outside = [d for d in node.data if d not in fed]
            if outside:
                raise ValueError(
                    f"DPObserved {name!r} is a statistic of {names(node.data)} jointly, but {owner} "
                    f"was given only {names(inside)}. Pass all of them: "
                    f"pdp.{owner}([{', '.join(d.name for d in node.data)}])."
                )
            if getattr(node.statistic, "latent_table", False):
                raise ValueError(
                    f"{owner} updates records one at a time, but DPObserved {name!r} releases "
                    f"{node.statistic!r} of {names(inside)}, a latent count table: its cells are "
                    "not records (a margin sums cells across rows). Let pm.sample() pick the "
                    "table's steps (TableCells, GammaCells, DirichletCells, DirichletHyper), or "
                    f"pass step=[pdp.TableCells([{', '.join(d.name for d in inside)}])]."
                )
            if require_additive and not (node.statistic.record_additive or node.statistic.local):
                raise ValueError(
                    f"{owner} needs record-additive statistics (seed 003, Assumption 2), but "
                    f"DPObserved {name!r} releases {node.statistic!r}, whose value depends on all "
                    "records at once. Use pdp.MHAAR (z-space) for this release."
                )
            for d in inside:
                fed[d].append(name)
            self.nodes.append(node)
        unfed = [r for r, names in fed.items() if not names]
        for r in unfed:  # a release of a variable computed from the records (a Deterministic)
            via = [(k, d) for k, nd in nodes.items() for d in nd.data if depends_on(d, [r])]
            if via:
                k, d = via[0]
                raise ValueError(
                    f"{owner} updates record variables, but {r.name!r} feeds DPObserved {k!r} "
                    f"only through {d.name or str(d)!r}, a variable computed from it. Pass {r.name!r} "
                    "as the node's data and the computation as the statistic's fn=, e.g. "
                    "pdp.Sum(lower, upper, fn=lambda x: 2 * x)."
                )
        if unfed:
            raise ValueError(
                f"{owner} updates records that feed a pdp.DPObserved node, but {names(unfed)} "
                f"feed(s) none (nodes: {', '.join(map(repr, nodes))}). Leave them to PyMC's samplers "
                "or pass the records a DPObserved node releases."
            )
        ns = {node.n for node in self.nodes}
        if len(ns) != 1:
            raise ValueError(
                f"All records of one {owner} step must share the record count, got {sorted(ns)}. "
                f"Use one {owner} step per record block."
            )
        self.n = ns.pop()
        for r in record_rvs:
            shape = r.type.shape
            if r.ndim == 0 or (shape[0] is not None and shape[0] != self.n):
                raise ValueError(
                    f"Record variable {r.name!r} must have the {self.n} records on axis 0, got "
                    f"shape {shape}."
                )
        self._check_no_other_dependents(owner)
        self._compile()
        self._check_factorization(owner)

    # ------------------------------------------------------------------------------------------
    def _check_no_other_dependents(self, owner):
        exclude = [node.rv for node in self.nodes]
        readers = other_readers(self.model, self.record_rvs, exclude=exclude)
        if readers:
            var, hit = readers[0]
            raise ValueError(
                f"{owner} proposes records from their conditional prior, which is exact only "
                f"if nothing but DPObserved nodes depends on them; {var.name!r} depends on "
                f"{names(hit)}. Make {var.name!r} a DPObserved release, or sample the records "
                "with PyMC's own samplers."
            )

    def _compile(self):
        model = self.model
        self._propose, self._rngs = compile_record_draw(model, self.record_rvs, self.record_rvs)
        # the fast route draws from the generator given to `reseed` (None until then)
        self._fast, self.fast_reason, self._fast_rng = None, "fast_draws=False", None
        if self.fast_draws:
            self._fast, self.fast_reason = FastRecordDraw.build(model, self.record_rvs)
        self.input_names = [v.name for v in model.value_vars]

        add, loc = [], []
        for node in self.nodes:
            t = node.statistic.contributions(*node.data)
            t = pt.cast(pt.reshape(t, (self.n, node.dim)), "float64")
            (loc if node.statistic.local else add).append(t)
        graphs = [
            pt.concatenate(add, axis=1) if add else pt.zeros((self.n, 0)),
            pt.concatenate(loc, axis=1) if loc else pt.zeros((self.n, 0)),
        ]
        graphs = replace_rvs_by_values(
            graphs, rvs_to_values=model.rvs_to_values, rvs_to_transforms=model.rvs_to_transforms
        )
        self._contrib = pm_compile(model.value_vars, graphs, on_unused_input="ignore")
        self._releases = value_reader(model, [node.rv for node in self.nodes])
        self.additive_nodes = [n for n in self.nodes if not n.statistic.local]
        self.local_nodes = [n for n in self.nodes if n.statistic.local]

    def _check_factorization(self, owner):
        """Refuse record blocks whose log density does not factor over axis 0 (numeric check)."""
        model = self.model
        terms = model.logp(vars=self.record_rvs, sum=False)
        per_record = []
        for rv, term in zip(self.record_rvs, terms):
            if term.ndim == 0 or (term.type.shape[0] is not None and term.type.shape[0] != self.n):
                raise ValueError(
                    f"The log density of {rv.name!r} does not factor over records (its logp has "
                    f"shape {term.type.shape}, not ({self.n}, ...)). {owner} needs records that are "
                    "conditionally independent given the non-record variables; use an iid "
                    "(batched) distribution with the records on axis 0."
                )
            per_record.append(term.reshape((self.n, -1)).sum(axis=1))
        # evaluated three times, once per build: not worth a C build (FAST_COMPILE: same values)
        fn = pm_compile(
            model.value_vars,
            pt.stack(per_record).sum(axis=0),
            on_unused_input="ignore",
            mode="FAST_COMPILE",
        )
        # the probe point and proposal come from the step's generator (a child: its stream is
        # untouched); every step reseeds the block before its first draw
        probe = child_rng(self._probe_rng)
        point = model.initial_point(random_seed=int(probe.integers(2**32)))
        args = [point[name] for name in self.input_names]
        self.reseed(probe)
        prop = self.propose(point)
        base = fn(*args)
        for i in {0, self.n - 1}:
            moved = dict(point)
            for name, val in zip(self.value_names, prop):
                new = np.array(point[name], copy=True)
                new[i] = val[i]
                moved[name] = new
            after = fn(*[moved[name] for name in self.input_names])
            others = np.ones(self.n, dtype=bool)
            others[i] = False
            changed = ~np.isclose(after[others], base[others], rtol=1e-9, atol=1e-12)
            if np.any(changed):
                j = int(np.flatnonzero(others)[np.argmax(changed)])
                raise ValueError(
                    f"Records of {names(self.record_rvs)} are not conditionally independent given "
                    f"the non-record variables: changing record {i} changed the log density of "
                    f"record {j}. {owner} needs iid records on axis 0 (e.g. no random walks or "
                    "record-to-record dependence)."
                )

    # ------------------------------------------------------------------------------------------
    @property
    def value_names(self):
        return [v.name for v in self.value_vars]

    @property
    def fast(self) -> bool:
        """Whether proposals are drawn by `FastRecordDraw`."""
        return self._fast is not None

    def reseed(self, rng: np.random.Generator) -> None:
        """Reseed the proposal graph's generators from ``rng`` (reproducible runs); the fast route
        draws from ``rng`` itself."""
        if self._fast is not None:
            self._fast_rng = rng
        else:
            reseed_rngs(self._rngs, rng.integers(2**63))

    def propose(self, point, *, reuse=False):
        """One joint draw of all records from their conditional prior (value space).

        ``reuse=True`` (fast route only) fills buffers owned by the block, overwritten by the next
        call: the caller must copy what it keeps.
        """
        if self._fast is not None:
            if self._fast_rng is None:
                raise RuntimeError(
                    "RecordBlock.propose draws from the generator given to reseed(rng); call "
                    "block.reseed(np.random.default_rng(seed)) first."
                )
            shapes = [np.shape(point[n]) for n in self.value_names]
            return self._fast.draw(point, shapes, self._fast_rng, reuse=reuse)
        return [np.asarray(p) for p in self._propose(*[point[n] for n in self.input_names])]

    def contributions(self, point):
        """``(additive (n, D_add), local (n, D_loc))`` contributions at ``point``."""
        add, loc = self._contrib(*[point[n] for n in self.input_names])
        return np.ascontiguousarray(add, dtype=np.float64), np.ascontiguousarray(
            loc, dtype=np.float64
        )

    def releases(self):
        """Flat released values of the additive and the local nodes."""
        values = self._releases()
        vals = dict(zip([id(n) for n in self.nodes], values))
        add = [vals[id(n)] for n in self.additive_nodes]
        loc = [vals[id(n)].reshape(self.n, -1) for n in self.local_nodes]
        return (
            np.concatenate(add) if add else np.zeros(0),
            np.concatenate(loc, axis=1) if loc else np.zeros((self.n, 0)),
        )
