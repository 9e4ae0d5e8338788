"""What ``pm.sample()`` keeps in the trace: latent records and cells above a size are left out.

A model with a ``DPObserved`` node has one free variable per latent record (or a latent count
table, `pymc_dp.Cells`). PyMC's default trace keeps every free variable at every iteration, warm-up
included, in memory: 10⁶ Normal records over 2 chains × 800 iterations are 1.6 × 10⁹ float64
numbers (12.8 GB, and ArviZ's conversion copies them: 21 GB peak measured). The posterior of the
parameters θ does not need them: the steps read the records from the current point, never from
the trace.

**The rule.** When ``pm.sample()`` is called without ``var_names`` on a model with ``DPObserved``
nodes, the latent variables of those nodes (free variables that are the data of a node, with their
transformed value variables) and their *companions* (free variables with at least one value per
value of a latent variable they feed and no other reader: the rows ``π`` of a latent table
``c ~ Multinomial(n, π)``, a mean per record) are not traced when, together, they would hold more
than `TRACE_LIMIT` numbers over the run (chains × (tune + draws) × size). A `LatentTraceWarning`
names them, the size and how to keep them. Everything else is traced as before (θ, deterministics,
sampler stats), and the draws of θ are the same whether the records are kept or not (same seed).

**What the steps may skip.** The wrapper also tells each pymc-dp step which free variables the
trace does not read (``DPStep.untraced``: neither traced themselves nor read by a traced
deterministic; empty outside ``pm.sample()`` and with a backend of the user's). A step may leave
such a variable's value as it is instead of drawing it, when no other step reads it: e.g.
`DirichletHyper` does not redraw the (G, K) rows π it sums out (2 × 10⁶ gamma draws per iteration
at G = 1,000) when it moves their table itself. It still takes the same numbers from its
generator, so the draws of everything traced are the same either way.

**Keeping them.** ``pm.sample(var_names=[...])`` traces exactly the variables named (PyMC's own
argument; the rule never touches an explicit ``var_names``), and ``with pdp.keep_latent(): ...``
keeps every latent variable whatever its size (``pdp.keep_latent(limit=n)`` raises the limit to
``n`` numbers instead).

**How (PyMC internals used).** PyMC gives neither the model nor a step a say in what its default
trace holds: ``pm.sample`` computes ``trace_vars`` (None without ``var_names``), instantiates the
steps and then calls ``init_traces(backend=..., chains=..., expected_length=..., step=...,
trace_vars=..., initial_point=..., model=..., tune=...)``, which it imports into
``pymc.sampling.mcmc`` (same call and keywords on PyMC 5.28 and 6.4). `install` replaces that
module attribute with a wrapper that fills ``trace_vars`` by this rule when it is None and the
model has ``DPObserved`` nodes, and leaves every other call untouched (models without releases,
an explicit ``var_names``, a user-made ``BaseTrace`` or McBackend). With ``trace_vars`` set,
PyMC's NDArray and Zarr backends trace those variables only, exactly as for ``var_names``. If a
later PyMC calls something else, the rule silently stops applying and the test
``tests/unit/samplers/test_trace_memory.py`` fails on that PyMC line.
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import numpy as np

__all__ = [
    "TRACE_LIMIT",
    "LatentTraceWarning",
    "install",
    "keep_latent",
    "latent_trace_plan",
    "untraced",
]

#: default limit, in numbers over the run (chains × iterations × size), of latent variables traced
TRACE_LIMIT = 10**7

_LIMIT: dict = {"limit": TRACE_LIMIT}


class LatentTraceWarning(UserWarning):
    """``pm.sample()`` left latent records or cells out of the trace (names them and the fix)."""


@contextlib.contextmanager
def keep_latent(limit: int | None = None):
    """Inside this block ``pm.sample()`` traces latent records and cells up to ``limit`` numbers.

    Parameters
    ----------
    limit : int, optional
        Largest number of latent values (chains × (tune + draws) × size, all latent variables
        together) kept in the trace; None (default) keeps them whatever their size. Outside the
        block the limit is `TRACE_LIMIT` (10⁷).

    Examples
    --------
    ```python
    with model, pdp.keep_latent():
        idata = pm.sample()  # idata.posterior holds the records too
    ```
    """
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, int | np.integer) or limit < 0
    ):
        raise ValueError(
            f"keep_latent: limit must be a non-negative integer number of values or None, got "
            f"limit={limit!r}. Pass e.g. limit=10**8, or no limit to keep every latent variable."
        )
    saved = _LIMIT["limit"]
    _LIMIT["limit"] = None if limit is None else int(limit)
    try:
        yield
    finally:
        _LIMIT["limit"] = saved


def latent_trace_plan(model, chains: int, iterations: int, initial_point=None):
    """The latent variables ``pm.sample()`` leaves out of the default trace, and why.

    Parameters
    ----------
    model : pm.Model
    chains, iterations : int
        Chains and iterations per chain traced (tune + draws).
    initial_point : dict, optional
        A point of the model (sizes are read from it; default ``model.initial_point()``).

    Returns
    -------
    dict
        ``latent`` (names of the latent free variables), ``size`` (values per draw, together),
        ``numbers`` (chains × iterations × size), ``limit`` (the one in force, None: no limit),
        ``companions`` (names of the free variables dropped with them: at least one value per value
        of a latent variable they feed and no other reader, e.g. the rows π of a latent table),
        ``drop`` (bool) and ``trace_vars`` (what to trace: PyMC's default list without the latent
        variables and their companions; None when nothing is dropped).
    """
    from pymc_dp.distributions.graph import free_records
    from pymc_dp.distributions.registry import dp_nodes

    latent = free_records(model, dp_nodes(model))
    if initial_point is None:
        initial_point = model.initial_point()

    def size_of(rv):
        return int(np.size(initial_point[model.rvs_to_values[rv].name]))

    companions = _companions(model, latent, size_of)
    size = sum(size_of(rv) for rv in latent + companions)
    numbers = int(chains) * int(iterations) * size
    limit = _LIMIT["limit"]
    drop = bool(latent) and limit is not None and numbers > limit
    trace_vars = None
    if drop:
        left = latent + companions
        names = {rv.name for rv in left} | {model.rvs_to_values[rv].name for rv in left}
        trace_vars = [v for v in model.unobserved_value_vars if v.name not in names]
    return {
        "latent": [rv.name for rv in latent],
        "companions": [rv.name for rv in companions],
        "size": size,
        "numbers": numbers,
        "limit": limit,
        "drop": drop,
        "trace_vars": trace_vars,
    }


def _message(plan, chains, iterations, kept) -> str:
    names = ", ".join(repr(n) for n in plan["latent"])
    gb = plan["numbers"] * 8 / 1e9
    keep = [*kept, *plan["latent"], *plan["companions"]]
    with_them = (
        f" nor {', '.join(repr(n) for n in plan['companions'])} (one value or more per latent "
        f"value, read only by them)"
        if plan["companions"]
        else ""
    )
    return (
        f"pymc_dp: pm.sample() does not keep the latent variables {names} of the DPObserved "
        f"node(s){with_them} in the trace: {chains} chain(s) × {iterations} iterations × "
        f"{plan['size']:,} "
        f"values = {plan['numbers']:.3g} numbers (about {gb:.3g} GB as float64), above the limit "
        f"of {plan['limit']:.3g} numbers. The draws of the other variables are unchanged, but "
        "pm.sample_posterior_predictive then draws these latent values afresh from their prior "
        "given the parameters, not given the releases (a predictive check of a release is wider "
        "than with them kept). To keep "
        f"them: `with pdp.keep_latent(): pm.sample(...)` (or pdp.keep_latent(limit=...)), or "
        f"pm.sample(var_names={keep!r})."
    )


def _wrap(init_traces):
    @functools.wraps(init_traces)
    def wrapper(*args, **kwargs):
        _tell_steps(kwargs.get("step"), frozenset())  # whatever happens below: nothing skipped
        if args or not _default_backend(kwargs):
            return init_traces(*args, **kwargs)
        model = kwargs.get("model")
        from pymc_dp.distributions.registry import dp_nodes

        if model is None or not dp_nodes(model):
            return init_traces(*args, **kwargs)
        if kwargs.get("trace_vars") is not None:  # var_names: PyMC's own choice, untouched
            _tell_steps(kwargs.get("step"), untraced(model, kwargs["trace_vars"]))
            return init_traces(*args, **kwargs)
        chains, iterations = int(kwargs["chains"]), int(kwargs["expected_length"])
        plan = latent_trace_plan(model, chains, iterations, kwargs.get("initial_point"))
        if plan["drop"]:
            kept = sorted(
                {rv.name for rv in model.unobserved_RVs}
                - set(plan["latent"])
                - set(plan["companions"]),
                key=[rv.name for rv in model.unobserved_RVs].index,
            )
            warnings.warn(
                _message(plan, chains, iterations, kept), LatentTraceWarning, stacklevel=3
            )
            kwargs = {**kwargs, "trace_vars": plan["trace_vars"]}
            _tell_steps(kwargs.get("step"), untraced(model, plan["trace_vars"]))
        return init_traces(*args, **kwargs)

    wrapper._pdp_trace_rule = True
    return wrapper


def _companions(model, latent, size_of) -> list:
    """The free variables (model order) dropped with the latent ones: every child a latent
    variable, at least as many values as the smallest of those children, and no deterministic
    reading them (`latent_trace_plan`)."""
    from pymc_dp.distributions.graph import direct_children, direct_upstream

    latent_set = set(latent)
    if not latent_set:
        return []
    read = set()  # what the deterministics read (they are traced)
    for det in model.deterministics:
        read.update(direct_upstream(model, [det]))
    out = []
    for rv in model.free_RVs:
        if rv in latent_set or rv in read:
            continue
        children = direct_children(model, [rv])
        if children and all(ch in latent_set for ch in children):
            if _natural_size(rv, size_of) >= min(_natural_size(ch, size_of) for ch in children):
                out.append(rv)
    return out


def _natural_size(rv, size_of) -> int:
    """Values of ``rv`` on its own scale (its static shape; else its value variable's size): a
    simplex of K values has K − 1 on PyMC's transformed scale."""
    shape = rv.type.shape
    if None in shape:
        return size_of(rv)
    return int(np.prod(shape, dtype=np.int64))


def untraced(model, trace_vars) -> frozenset:
    """Names (and value-variable names) of the free variables of ``model`` that the trace of
    ``trace_vars`` (PyMC's graphs over value variables; None: every variable) does not read."""
    if trace_vars is None:
        return frozenset()
    from pymc_dp.distributions.graph import upstream

    read = set(upstream(list(trace_vars)))
    out = set()
    for rv in model.free_RVs:
        value = model.rvs_to_values[rv]
        if value not in read:
            out.update((rv.name, value.name))
    return frozenset(out)


def _tell_steps(step, names: frozenset) -> None:
    """Set ``untraced`` on every pymc-dp step of ``step`` (a step or a CompoundStep)."""
    from pymc_dp.samplers.base import DPStep

    for method in getattr(step, "methods", [step]):
        if isinstance(method, DPStep):
            method.untraced = names


def _default_backend(kwargs) -> bool:
    """PyMC's in-memory NDArray (``trace=None``) or a ZarrTrace: the backends that read ``trace_vars``."""
    backend = kwargs.get("backend")
    if backend is None:
        return True
    return any(c.__name__ in {"ZarrTrace", "_ZarrTraceBase"} for c in type(backend).__mro__)


def install() -> None:
    """Apply the rule inside ``pm.sample()`` (wraps ``pymc.sampling.mcmc.init_traces``, once)."""
    from pymc.sampling import mcmc

    if not getattr(mcmc.init_traces, "_pdp_trace_rule", False):
        mcmc.init_traces = _wrap(mcmc.init_traces)
