r"""Which collapsed likelihood applies to one record variable, and its constants.

`make_plan` looks at the ``DPObserved`` nodes that read one record variable and returns a
`CollapsedPlan`: the case (local / additive / counts, `pymc_dp.marginal.loglik`), the
enumerated support, the noise log densities ``log η`` at every value the statistic can take, and
the cost per gradient. It refuses, with the reason and the alternative, everything it cannot make
exact or cheap.

Truncation
----------
An unclamped infinite support (Poisson, Geometric) is cut where the noise density has fallen to
``TRUNCATION · max η`` (Laplace-type: ``|z| ≥ b ln 10¹²``; Gaussian: ``|z| ≥ σ √(2 ln 10¹²)``), so the
omitted part of ``p(s_dp | θ)`` is at most ``1e-12`` times the largest noise density (per record for
local releases). Clamped statistics (``upper`` declared) need no truncation: the tail
``P(X ≥ upper)`` is one exact cell.

Cost model
----------
A plan is refused when its gradient is estimated above a time limit (data augmentation is faster
there). The estimate is **configuration, not a run-time measurement**: a `CostModel` (seconds per
term of each route, and the limit; `pymc_dp.samplers.cost`, re-exported here) whose defaults,
`SECONDS_PER_TERM` and `MAX_SECONDS`, were measured once with ``benchmarks/bench_collapsed_cost.py``
(PyMC 5.28, C backend, 2 shared cores). Timing
the kernel at plan time would make whether a model is collapsed depend on the machine's load,
so the same model and seed could be sampled differently from one run to the next. Pass
``cost=pdp.marginal.CostModel(...)`` to ``marginalize`` / ``collapsed_plans`` / ``Collapsed``
to state other numbers (e.g. measured with ``benchmarks/bench_collapsed_cost.py`` on your machine).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytensor.tensor as pt

from pymc_dp.marginal import loglik as ll
from pymc_dp.marginal.gaussian import gaussian_plan, is_normal
from pymc_dp.marginal.records import RecordLaw, log_pmf, nb_shape, record_law
from pymc_dp.samplers.cost import MAX_SECONDS, SECONDS_PER_TERM, CostModel
from pymc_dp.samplers.cost import cost_model as _cost_model

__all__ = [
    "MAX_SECONDS",
    "SECONDS_PER_TERM",
    "TRUNCATION",
    "CollapsedPlan",
    "CostModel",
    "make_plan",
]

#: relative size of the truncated part of the noise density (see module docstring)
TRUNCATION = 1e-12


@dataclasses.dataclass
class CollapsedPlan:
    """Everything needed to write ``log p(s_dp | θ)`` for one record variable and to undo it."""

    law: RecordLaw
    case: str  # "local", "additive" or "counts"
    nodes: tuple  # names of the DPObserved nodes collapsed
    support: np.ndarray  # enumerated record values
    tail: bool  # support[-1] stands for X >= support[-1]
    eta: np.ndarray  # noise log densities (see loglik)
    cost: float  # terms per evaluation
    truncation: float = 0.0  # bound on the omitted likelihood relative to max η
    weights: np.ndarray | None = None  # local: records per distinct release row
    rows: np.ndarray | None = None  # local: release row of each record
    cells: np.ndarray | None = None  # additive: lattice cell of each support point
    n_cells: int = 0  # additive: lattice points per record
    length: int = 0  # additive: lattice points of the sum
    closed: str | None = None  # additive: closed form of the sum's law
    bands: list | None = None  # counts: cell values within the noise radius
    offset: int = 0  # additive closed forms: the sum is offset + index (window of the noise)
    eta_var: object = dataclasses.field(default=None, compare=False, repr=False)

    def eta_graph(self):
        """``eta`` in the collapsed likelihood's graph: a shared variable for local and additive
        plans (so `follow` can swap in the table of a new release without recompiling), a
        constant for counts (folded into the recursion's constants)."""
        if self.case == "counts":
            return self.eta
        if self.eta_var is None:
            import pytensor

            self.eta_var = pytensor.shared(np.asarray(self.eta, dtype="float64"), name="eta")
        return self.eta_var

    def follows(self, new: CollapsedPlan) -> bool:
        """Whether ``new`` (the plan of the same records for another release) differs from this plan
        in its noise table ``eta`` alone (and, for local releases, which record gave which release
        row, ``rows``, read by the records draw only): same case, law, support, lattice, release
        row counts ``weights`` and window, and an ``eta`` of the same shape. Then `follow` makes this plan — and every graph
        and draw built from it — exactly ``new``."""
        if self.case == "counts" or new.case != self.case:
            return False
        for f in dataclasses.fields(self):
            if f.name in ("eta", "eta_var", "rows", "law", "cost"):
                continue
            a, b = getattr(self, f.name), getattr(new, f.name)
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                if a is None or b is None or not np.array_equal(a, b):
                    return False
            elif a != b:
                return False
        law_a, law_b = self.law, new.law
        same_law = all(
            getattr(law_a, k) == getattr(law_b, k)
            for k in ("name", "kind", "n", "low", "high", "n_categories", "per_record")
        )
        return (
            same_law
            and np.shape(self.eta) == np.shape(new.eta)
            and np.shape(self.rows) == np.shape(new.rows)
        )

    def follow(self, new: CollapsedPlan) -> None:
        """Take ``new``'s noise table (``follows(new)`` must hold): the compiled collapsed likelihood
        reads it through the shared ``eta``, the records draw through ``self.eta``."""
        if not self.follows(new):
            raise ValueError("follow: the new plan differs in more than its noise table.")
        self.eta = np.asarray(new.eta, dtype="float64")
        self.rows = new.rows
        if self.eta_var is not None:
            self.eta_var.set_value(self.eta)

    def logf(self, params=None):
        """``log f(x | θ)`` over `support` (graph; ``params`` default the law's own)."""
        return log_pmf(self.law, self.support, tail=self.tail, params=params)

    def log_q(self, logf):
        """Per-record log pmf over the contribution lattice (additive case)."""
        if np.array_equal(self.cells, np.arange(self.n_cells)):
            return logf
        member = np.where(self.cells[None, :] == np.arange(self.n_cells)[:, None], 0.0, ll.NEG)
        return pt.logsumexp(logf[None, :] + member, axis=1)

    def log_p_sum(self, params=None):
        """``log P(K = k | θ)`` for the lattice sum ``K``, k = 0..length-1 (additive case)."""
        law = self.law
        params = law.params if params is None else params
        k = pt.as_tensor_variable(np.arange(self.length, dtype="int64"))
        total = pt.as_tensor_variable(self.offset + np.arange(self.length, dtype="int64"))
        import pymc as pm

        n = law.n
        if self.closed == "binomial":
            trials = n * (1 if law.kind == "bernoulli" else int(law.high))
            return pm.logp(pm.Binomial.dist(n=trials, p=params[-1]), k)
        if self.closed == "poisson":
            return pm.logp(pm.Poisson.dist(mu=n * params[0]), total)
        if self.closed == "negative_binomial":  # Σx − n·low ~ NegativeBinomial(n·r, p)
            r, p = nb_shape(law, params)
            return pm.logp(pm.NegativeBinomial.dist(n=n * r, p=p), total - n * law.low)
        logq = self.log_q(self.logf(params))
        return ll.log_conv_power(logq, self.n_cells, n, self.length)

    def loglik(self, params=None):
        """The collapsed ``log p(s_dp | θ)`` as a PyTensor graph."""
        if self.case == "local":
            return ll.local_loglik(self.logf(params), self.eta_graph(), self.weights)
        if self.case == "counts":
            return ll.counts_loglik(self.logf(params), self.eta, self.law.n, self.bands)
        return ll.additive_loglik(self.log_p_sum(params), self.eta_graph())


def _release(model, node):
    from pytensor.compile.sharedvalue import SharedVariable

    value = model.rvs_to_values[node.rv]
    if isinstance(value, SharedVariable):
        return np.asarray(value.get_value())
    return np.asarray(value.data if hasattr(value, "data") else value.eval())


def _contributions(node, support, *, entries=False):
    """Contributions ``t(x)`` at each support point: shape ``(w,)``, or ``(w, d)`` with
    ``entries=True`` (a local release of ``d`` answers per record, e.g. ``Local(fn=...)`` returning
    a vector: its noise densities are summed over the entries)."""
    t = node.statistic.contributions(pt.as_tensor_variable(np.asarray(support, dtype="int64")))
    t = np.asarray(t.eval(), dtype="float64")
    if entries and t.ndim >= 1 and t.shape[0] == len(support):
        return t.reshape(len(support), -1)
    if t.shape != (len(support),):
        raise ValueError(
            f"DPObserved {node.rv.name!r}: {node.statistic!r} gives {t.shape[1:]} entries per record; "
            "collapsed likelihoods of additive statistics handle one number per record (or "
            "pdp.Counts; local releases take any number of entries). Use pdp.DataAugmentation for "
            "vector contributions to a sum."
        )
    return t


def _local_eta(law, nodes, releases, support):
    """``eta[i, x] = Σ_m Σ_j log η_m(s_{m,ij} | t_{m,j}(x))`` for local releases: every entry of
    every record's answers (``Local(fn=...)`` with vector values included), enumerated over the
    record's support through the statistic's own ``contributions``."""
    eta = np.zeros((law.n, len(support)))
    for nd, s in zip(nodes, releases):
        t = _contributions(nd, support, entries=True)  # (w, d)
        s = s.reshape(law.n, -1)
        if s.shape[1] != t.shape[1]:
            raise ValueError(
                f"DPObserved {nd.rv.name!r}: the release has {s.shape[1]} entries per record but "
                f"{nd.statistic!r} gives {t.shape[1]}; release one value per answer of each record."
            )
        eta += np.sum(nd.mechanism.logpdf(s[:, None, :], t[None, :, :]), axis=2)
    return eta


def _radius(mech, name):
    """|z| beyond which the noise density is below TRUNCATION · its maximum."""
    radius = mech.tail_radius(-math.log(TRUNCATION))
    if radius is not None:
        return radius
    raise ValueError(
        f"DPObserved {name!r}: the records have an infinite support and the statistic declares no "
        f"upper bound, so the support must be truncated by the noise tails, which {mech!r} does not "
        "have in a known form. Declare bounds (e.g. pdp.Sum(lower=0, upper=...)) to clamp."
    )


def _check_node(node):
    stat, mech = node.statistic, node.mechanism
    if getattr(mech, "dist_params", None) is not None:
        raise ValueError(
            f"DPObserved {node.rv.name!r}: {type(mech).__name__} has a data-dependent noise density; "
            "collapsed likelihoods need noise that depends on the statistic only."
        )
    if len(node.data) != 1:
        raise ValueError(
            f"DPObserved {node.rv.name!r} reads {len(node.data)} record arrays; collapsed "
            "likelihoods handle one record variable per release."
        )
    if not (stat.record_additive or stat.local) or not hasattr(stat, "contributions"):
        raise ValueError(
            f"DPObserved {node.rv.name!r}: {stat!r} is not record-additive or local, so p(s_dp | θ) "
            "has no convolution form. Use pdp.MHAAR / pdp.DataAugmentation."
        )


def _support(law, nodes, releases, case):
    """Enumerated support, lumped tail flag, truncation bound, closed infinite form."""
    if law.finite:
        return np.arange(law.low, law.high + 1), False, 0.0
    uppers = [getattr(nd.statistic, "upper", None) for nd in nodes]
    fns = [getattr(nd.statistic, "fn", None) for nd in nodes]
    if all(u is not None for u in uppers) and all(f is None for f in fns):
        top = max(law.low + 1, math.ceil(max(uppers)))
        return np.arange(law.low, top + 1), True, 0.0
    if any(f is not None for f in fns) or any(u is not None for u in uppers):
        raise ValueError(
            f"Record variable {law.name!r} ({law.kind}) has an infinite support; collapsed "
            "likelihoods need every statistic on it to clamp with an upper bound and no fn, or none "
            "to (truncation by the noise). Give all its statistics the same form."
        )
    if case != "local":
        return None, False, TRUNCATION  # closed form of the sum, cut in make_plan
    top = max(
        float(np.max(s + _radius(nd.mechanism, nd.rv.name))) for nd, s in zip(nodes, releases)
    )
    return np.arange(law.low, max(law.low + 1, math.ceil(top)) + 1), False, TRUNCATION


def make_plan(model, record, nodes, *, method="auto", cost=None) -> CollapsedPlan:
    """Plan the collapsed likelihood of ``record`` from its ``DPObserved`` ``nodes`` (DPNode list).

    ``cost`` (a `CostModel`, default `CostModel()`) decides which plans are too slow.
    """
    costs = _cost_model(cost)
    if is_normal(record):  # continuous: exact only under a linear unclamped Gaussian release
        releases = [np.asarray(_release(model, nd), dtype="float64") for nd in nodes]
        plan = gaussian_plan(model, record, nodes, releases[0] if releases else None, costs)
        return _check_cost(plan, f"{plan.cost:.0f} record entries", costs)
    names = tuple(nd.rv.name for nd in nodes)
    for nd in nodes:
        _check_node(nd)
    kinds = {
        "local"
        if nd.statistic.local
        else "counts"
        if hasattr(nd.statistic, "n_categories")
        else "additive"
        for nd in nodes
    }
    # records with their own parameters (a covariate, per-record trials) only under local
    # releases: each record's likelihood is then its own sum over its support
    law = record_law(record, per_record=kinds == {"local"})
    if law.per_record:
        _check_per_record_parents(model, record, law)
    if len(kinds) > 1 or (kinds != {"local"} and len(nodes) > 1 and kinds == {"counts"}):
        raise ValueError(
            f"Record variable {law.name!r} feeds releases {list(names)} of kinds {sorted(kinds)}; "
            "collapsed likelihoods handle several local releases, or releases of one additive "
            "statistic, or one pdp.Counts release. Use pdp.DataAugmentation for this combination."
        )
    case = kinds.pop()
    releases = [np.asarray(_release(model, nd), dtype="float64") for nd in nodes]
    if case == "counts":
        return _counts_plan(law, nodes[0], releases[0], names, costs)
    support, tail, trunc = _support(law, nodes, releases, case)
    if case == "local":
        eta = _local_eta(law, nodes, releases, support)
        if law.per_record:  # each record its own pmf: one row per record, none shared
            rows, inverse, weights = eta, np.arange(law.n), np.ones(law.n)
        else:
            rows, inverse, weights = np.unique(eta, axis=0, return_inverse=True, return_counts=True)
        plan = CollapsedPlan(
            law,
            "local",
            names,
            support,
            tail,
            rows,
            cost=rows.size,
            truncation=trunc,
            weights=weights.astype(float),
            rows=inverse.reshape(-1),
        )
        return _check_cost(
            plan, f"{rows.shape[0]} distinct release rows × {len(support)} support points", costs
        )
    return _additive_plan(law, nodes, releases, names, support, tail, method, costs)


def _check_per_record_parents(model, record, law):
    """Records with their own parameters are summed out when those come from fixed per-record
    data (a covariate, trials) and a few parameters; a free variable with an entry per record
    (``lam ~ Gamma(a, b, shape=n)``, ``x ~ Poisson(lam)``) would put n parameters into the
    θ-move: its conjugate or table steps take it instead."""
    from pymc_dp.distributions.graph import direct_parents, fixed_shape

    for parent in direct_parents(model, [record]):
        shape = fixed_shape(parent)
        size = None if shape is None else int(np.prod(shape, dtype=int))
        if size is None or size >= law.n:
            raise ValueError(
                f"Record variable {law.name!r} has parameters that differ between records and come "
                f"from {parent.name!r}, a free variable with {size or 'unknown'} entries for "
                f"{law.n} records; collapsed likelihoods sum out records whose own parameters come "
                "from fixed data (covariates, trials) and fewer parameters than records. Use its "
                "conjugate step (ConjugateTheta, GammaCells) with pdp.DataAugmentation / TableCells."
            )


def _additive_plan(law, nodes, releases, names, support, tail, method, costs):
    n = law.n
    c = nodes[0].statistic.factor(n)
    if any(nd.statistic.factor(n) != c for nd in nodes):
        raise ValueError(
            f"Releases {list(names)} scale their sums differently; release one statistic."
        )
    if support is None:  # unclamped Poisson / Geometric: closed form, cut by the noise tails
        closed = "poisson" if law.kind == "poisson" else "negative_binomial"
        # keep only sums within the noise radius of every release (both tails below TRUNCATION)
        bottom = max(
            (float(s.reshape(())) - _radius(nd.mechanism, nd.rv.name)) / c
            for nd, s in zip(nodes, releases)
        )
        top = min(
            (float(s.reshape(())) + _radius(nd.mechanism, nd.rv.name)) / c
            for nd, s in zip(nodes, releases)
        )
        offset = max(n * law.low, math.floor(bottom))
        length = max(2, math.ceil(top) - offset + 1)
        s_values = c * (offset + np.arange(length))
        eta = sum(nd.mechanism.logpdf(s.reshape(()), s_values) for nd, s in zip(nodes, releases))
        plan = CollapsedPlan(
            law,
            "additive",
            names,
            np.arange(law.low, law.low + 1),
            False,
            np.asarray(eta),
            cost=length,
            truncation=TRUNCATION,
            length=length,
            closed=closed,
            offset=offset,
        )
        return _check_cost(plan, f"{length} values of the sum", costs)
    ts = [_contributions(nd, support) for nd in nodes]
    if any(not np.array_equal(t, ts[0]) for t in ts):
        raise ValueError(
            f"Releases {list(names)} on {law.name!r} add up different contributions; collapsed "
            "likelihoods handle one additive statistic per record variable."
        )
    t = ts[0]
    lo = float(t.min())
    diffs = t - lo
    pos = diffs[diffs > 0]
    step = (
        1.0
        if pos.size == 0
        else (
            float(np.gcd.reduce(np.rint(pos).astype(np.int64)))
            if np.allclose(pos, np.rint(pos), rtol=0, atol=1e-9)
            else float(pos.min())
        )
    )
    cells = diffs / step
    if not np.allclose(cells, np.rint(cells), rtol=0, atol=1e-9):
        raise ValueError(
            f"The contributions of {law.name!r} to {list(names)} ({np.unique(t)[:6].tolist()}…) do not "
            "lie on an evenly spaced lattice, so their sum has no small support. Use "
            "pdp.DataAugmentation."
        )
    cells = np.rint(cells).astype(np.int64)
    n_cells = int(cells.max()) + 1
    length = n * (n_cells - 1) + 1
    s_values = c * (n * lo + step * np.arange(length))
    eta = sum(nd.mechanism.logpdf(s.reshape(()), s_values) for nd, s in zip(nodes, releases))
    identity = (not tail) and np.array_equal(t, support.astype(float))
    closed = (
        "binomial"
        if (identity and method == "auto" and law.kind in ("bernoulli", "binomial"))
        else None
    )
    if method not in ("auto", "convolution"):
        raise ValueError(f"method must be 'auto' or 'convolution', got method={method!r}.")
    squarings = 2 * max(1, math.ceil(math.log2(max(n, 2))))
    cost = length if closed else length * length * squarings
    plan = CollapsedPlan(
        law,
        "additive",
        names,
        support,
        tail,
        np.asarray(eta),
        cost=cost,
        cells=cells,
        n_cells=n_cells,
        length=length,
        closed=closed,
    )
    return _check_cost(
        plan,
        f"{length} values of the sum, about {squarings} log-space convolutions "
        f"of up to {length}² terms",
        costs,
    )


def _counts_plan(law, node, release, names, costs):
    k = node.statistic.n_categories
    if not (law.kind == "categorical" and law.n_categories == k) and not (
        law.kind == "bernoulli" and k == 2
    ):
        raise ValueError(
            f"pdp.Counts({k}) on {law.name!r} ({law.kind}) needs categorical records with exactly {k} "
            "categories (or Bernoulli records with Counts(2))."
        )
    n = law.n
    c = np.arange(n + 1, dtype=float)
    eta = np.stack([node.mechanism.logpdf(release[j], c) for j in range(k)])
    try:  # cells far outside the noise radius of their release carry < TRUNCATION of the density
        radius = _radius(node.mechanism, node.rv.name)
        bands = [np.flatnonzero(np.abs(c - release[j]) <= radius) for j in range(k - 1)]
        bands = [
            b if b.size else np.array([int(np.clip(np.rint(release[j]), 0, n))])
            for j, b in enumerate(bands)
        ]
        trunc = TRUNCATION
    except ValueError:
        bands, trunc = None, 0.0
    width = (n + 1) * (k - 1) if bands is None else sum(b.size for b in bands)
    plan = CollapsedPlan(
        law,
        "counts",
        names,
        np.arange(k),
        False,
        eta,
        cost=float(n + 1) * width,
        truncation=trunc,
        bands=bands,
    )
    return _check_cost(plan, f"(N+1)·Σ_k |band_k| with N = {n}, K = {k}", costs)


def _check_cost(plan, what, costs):
    seconds = costs.seconds(plan)
    if seconds > costs.max_seconds:
        raise ValueError(
            f"The collapsed likelihood of {plan.law.name!r} ({plan.case}) needs {plan.cost:.3g} terms "
            f"per gradient ({what}), about {seconds * 1e3:.0f} ms, above the "
            f"{costs.max_seconds * 1e3:.0f} ms where data augmentation is faster (cost model: "
            "pymc_dp.marginal.CostModel). Use pdp.DataAugmentation for these records, or pass "
            "cost=pdp.marginal.CostModel(max_seconds=...) to accept slower gradients."
        )
    return plan
