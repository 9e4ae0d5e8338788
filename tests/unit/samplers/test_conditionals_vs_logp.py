"""Every self-computed conditional update agrees with PyMC's own joint log density (STYLE 15).

For a step that draws θ (or records) from a conditional q it computes itself, on random model
variants (``tests/support/variants.py``) and random states: log q(θ′ | rest) − log q(θ | rest) must
equal logp(θ′, rest) − logp(θ, rest) of ``model.compile_logp()`` — Geweke (2004)'s "getting it
right" applied to one update. The accessors used (``ConjugateTheta.conditional``,
``SufficientTheta.conditional_logp``, ``InterweaveTarget.logp``, ``Collapsed.record_logq``) are the
code paths the steps draw with. Graphs compile in FAST_COMPILE mode (the same dtypes and arithmetic,
far faster to build) to keep the file fast.
"""

from __future__ import annotations

import zlib

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pymc.logprob.utils import replace_rvs_by_values
from pytensor.compile.mode import Mode

import pymc_dp as pdp
from pymc_dp._compat import ancestors
from tests.support import variants as V

TOL = 1e-8
N_FAST = 8  # variants per step in the default tier (each builds and compiles a model: ~0.5 s)
N_SLOW = 40  # variants per step in the slow tier


@pytest.fixture(autouse=True)
def _fast_compile():
    """Python linker, no graph rewrites: same dtypes and arithmetic, a fraction of the build time."""
    with pytensor.config.change_flags(mode=Mode(linker="py", optimizer=None)):
        yield


def _natural_fn(model, names):
    rvs = [model[n] for n in names]
    outs = replace_rvs_by_values(
        rvs, rvs_to_values=model.rvs_to_values, rvs_to_transforms=model.rvs_to_transforms
    )
    fn = pm.compile(model.value_vars, outs, on_unused_input="ignore")
    order = [v.name for v in model.value_vars]
    return lambda point: dict(zip(names, fn(*[point[n] for n in order])))


def _tolerance(model):
    """1e-8, or 1e-6 where PyMC itself evaluates part of the model's logp in float32.

    PyTensor upcasts int8/int16 inputs of ``log``, ``/`` … to float32 (``pm.Poisson("x", 100)``:
    ``log(mu)`` in float32), so the reference carries float32 rounding there; our updates are in
    float64 throughout, and the errors this file exists to catch are orders of magnitude larger.
    """
    graph = model.logp()
    low = any(getattr(v.type, "dtype", None) == "float32" for v in ancestors([graph]))
    return 1e-6 if low else TOL


def _close(lhs, rhs, label, tol=TOL):
    assert np.isfinite(lhs) and np.isfinite(rhs), f"{label}: {lhs} vs {rhs}"
    assert abs(lhs - rhs) <= tol * max(1.0, abs(rhs)), (
        f"{label}: conditional {lhs!r} vs model {rhs!r}"
    )


# ------------------------------------------------------------------------------- ConjugateTheta
def _check_conjugate(variant, rng, k=2):
    model = variant.model
    with model:
        step = pdp.ConjugateTheta([model[n] for n in variant.vars])
    logp = model.compile_logp(jacobian=False)  # θ in natural space: no Jacobian on either side
    natural = _natural_fn(model, variant.vars)
    for point in V.points(model, rng, k):
        cond = step.conditional(point)
        new, _ = step.step(point)
        before, after = natural(point), natural(new)
        for name in variant.vars:
            lhs = cond[name].logpdf(after[name]) - cond[name].logpdf(before[name])
            moved = {
                **point,
                model.rvs_to_values[model[name]].name: new[model.rvs_to_values[model[name]].name],
            }
            _close(
                lhs,
                float(logp(moved) - logp(point)),
                f"{variant.label} [{name}]",
                _tolerance(model),
            )


@pytest.mark.parametrize("sd", [100, 16, 20])
def test_conjugate_int8_prior_sd(sd):
    """Issue 17: int8 constants of pm.Normal("mu", 0, sd); 100² and 16² overflowed in int8."""
    rng = np.random.default_rng(sd)
    variant = V.int8_normal(sd)
    assert variant.model["mu"].owner.inputs[-1].dtype == "int8"
    _check_conjugate(variant, rng, k=3)
    with variant.model:
        step = pdp.ConjugateTheta([variant.model["mu"]])
    point = {**variant.model.initial_point(0), "x": np.ones(20)}
    mean, sd_post = step.conditional(point)["mu"].params
    prec = 20 + 1 / sd**2
    np.testing.assert_allclose([mean, sd_post], [20 / prec, prec**-0.5], rtol=1e-12)


# ------------------------------------------------------------------------------ SufficientTheta
def _value_names(model, names):
    return [model.rvs_to_values[model[n]].name for n in names]


def _check_sufficient(variant, rng, k=2):
    model = variant.model
    with model:
        step = pdp.SufficientTheta([model[n] for n in variant.vars])
    logp = model.compile_logp()  # value space, Jacobians included on both sides
    for point in V.points(model, rng, k):
        target = step.conditional_logp(point)
        q = step.flat(point)
        q_new = q + rng.normal(0, 0.5, size=q.size)
        moved, pos = dict(point), 0
        for v, shape in zip(step.vars, step.shapes):
            size = int(np.prod(shape, dtype=int))
            moved[v.name] = q_new[pos : pos + size].reshape(shape)
            pos += size
        _close(
            float(target(q_new) - target(q)),
            float(logp(moved) - logp(point)),
            variant.label,
            _tolerance(model),
        )


# ----------------------------------------------------------------------------------- Interweave
def _check_interweave(variant, rng, k=2):
    """log π(θ′|z) − log π(θ|z) = Δ[logp(θ, T_θ(z)) + Σ log|∂T_θ(z)/∂z|] (records in value space)."""
    model = variant.model
    with model:
        step = pdp.Interweave([model[n] for n in variant.vars])
    target = step.target
    logp = model.compile_logp()
    terms = [
        pt.log(pt.abs(pytensor.grad(x.sum(), z))).sum()  # T_θ acts elementwise on z
        for x, z in zip(target.x_graphs, target.z_inputs)
    ]
    log_jac = pm.compile(
        list(model.value_vars) + target.z_inputs, pt.add(*terms), on_unused_input="ignore"
    )
    order = [v.name for v in model.value_vars]

    def joint(point, zs):
        return float(logp(point)) + float(log_jac(*[point[n] for n in order], *zs))

    for point in V.points(model, rng, k):
        zs = target.z_of(point)
        density = target.conditional(point, zs)  # what the step slices on
        theta = target.theta_flat(point)
        theta_new = theta + rng.normal(0, 0.3, size=theta.size)
        before, after = target.update(point, theta, zs), target.update(point, theta_new, zs)
        _close(
            float(density(theta_new) - density(theta)),
            joint(after, zs) - joint(before, zs),
            variant.label,
            _tolerance(model),
        )


@pytest.mark.parametrize("groups", [2, 3])
def test_interweave_hierarchy_all_groups(groups):
    """The θ-move DataAugmentation runs for a hierarchy (μ_g = μ0 + τ z_g, one record variable per
    group, issue 17 (c)): every group's records written through z at once."""
    from tests.support.user_models import hierarchical_groups

    model, names = hierarchical_groups(n=6, groups=groups)
    _check_interweave(
        V.Variant(model, names, f"hierarchy {groups} groups"), np.random.default_rng(9)
    )


# ------------------------------------------------------------------------ Collapsed and recovery
def _check_records(logq, draw, logp, point, name, label, tol):
    """q(x′)/q(x) of the records' exact conditional equals the model's joint ratio (θ, release fixed)."""
    x1, x2 = draw(), draw()
    if np.array_equal(x1, x2):
        x2 = draw()
    lhs = logq(x2) - logq(x1)
    l2, l1 = float(logp({**point, name: x2})), float(logp({**point, name: x1}))
    # a float32 reference rounds each of its two terms, not their difference
    scale = max(1.0, abs(l1), abs(l2)) if tol > TOL else 1.0
    _close(float(lhs), l2 - l1, label, tol * scale)


def _check_collapsed(variant, rng, k=2):
    model = variant.model
    with model:
        step = pdp.Collapsed([model[n] for n in variant.vars])
    logp = model.compile_logp()
    for point in V.points(model, rng, k):
        for name, cond in step.record_conditionals(point).items():
            for _ in range(2):
                _check_records(
                    cond.logq,
                    lambda cond=cond: cond.draw(rng),
                    logp,
                    point,
                    name,
                    variant.label,
                    _tolerance(model),
                )


def _check_recover(variant, rng, k=2):
    """The same check through recover_records' path: natural-space θ of the original model."""
    from pymc_dp.distributions.registry import get_extra
    from pymc_dp.marginal.recover import RecordConditional, _compile

    model = variant.model
    marginal = pdp.marginalize(model)
    info = get_extra(marginal, "collapsed")
    logp = model.compile_logp()
    names = [rv.name for rv in model.free_RVs]
    natural = _natural_fn(model, names)
    for point in V.points(model, rng, k):
        values = natural(point)
        for name, plan in info["plans"].items():
            fn, inputs, has_logf = _compile(plan, info["original"])
            cond = RecordConditional(plan, fn(*[values[v] for v in inputs]), has_logf)
            _check_records(
                cond.logq,
                lambda cond=cond: cond.draw(rng),
                logp,
                point,
                name,
                variant.label,
                _tolerance(model),
            )


def _check_gaussian(variant, rng, k=2):
    """The Gaussian plan, normalised: for any records x (a conditional draw, a prior draw, a far
    point), log p(θ, x, s) − log q(x | θ, s) = log p(θ, s) of the marginalized model — the identity
    log p(x, s | θ) − log p(x | s, θ) = log p(s | θ) checks the collapsed likelihood and the records'
    conditional at once; then the records draw through Collapsed and recover_records' paths."""
    model = variant.model
    with model:
        step = pdp.Collapsed([model[n] for n in variant.vars])
    (plan,) = step.plans.values()
    assert plan.case == "gaussian", variant.label
    marginal = pdp.marginalize(model)
    logp, mlogp = model.compile_logp(), marginal.compile_logp()
    mnames = [v.name for v in marginal.value_vars]
    tol = _tolerance(model)
    for point in V.points(model, rng, k):
        (cond,) = step.record_conditionals(point).values()
        collapsed = float(mlogp({n: point[n] for n in mnames}))
        x_prior = np.asarray(point["x"], dtype=float)
        for x in (cond.draw(rng), x_prior, x_prior + rng.normal(0, 5, x_prior.shape)):
            joint = float(logp({**point, "x": x}))
            _close(joint - cond.logq(x), collapsed, variant.label, tol)
    _check_collapsed(variant, rng, k=1)
    _check_recover(variant, rng, k=1)


# ------------------------------------------------------------------- DirichletCells, GammaCells
def _check_parent_cells(variant, rng, step_cls, log_q, k=2):
    """The parent | table as ``step_cls`` draws it (its ``conditional``) against the model's logp
    with the parent (``variant.vars[0]``, natural space: no Jacobian) changed and the table kept.
    ``log_q(cond, x)``: the conditional's log density at the parent's natural values ``x``."""
    model = variant.model
    name = variant.vars[0]
    from tests.support.sampling import assigned

    # pm.sample() picks the step by itself, with shape= or dims= (`graph.fixed_shape`)
    got = assigned(model).get(step_cls.__name__, [])
    assert len(got) == len(variant.vars), (variant.label, assigned(model))
    with model:
        step = step_cls([model[n] for n in variant.vars])
    logp = model.compile_logp(jacobian=False)
    natural = _natural_fn(model, [name])
    value = model.rvs_to_values[model[name]].name
    points = V.points(model, rng, k + 1)
    for point, other in zip(points[:-1], points[1:], strict=True):
        cond = step.conditional(point)[name]
        moved = {**point, value: other[value]}
        before = np.asarray(natural(point)[name], dtype=float)
        after = np.asarray(natural(moved)[name], dtype=float)
        lhs = log_q(cond, after) - log_q(cond, before)
        _close(lhs, float(logp(moved) - logp(point)), variant.label, _tolerance(model))


def _check_dirichlet_cells(variant, rng, k=2):
    """π | c: Dirichlet(a + c_g) per row (`DirichletCells.conditional`)."""
    from scipy import stats

    def log_q(params, pi):
        pi = pi.reshape(params.shape)
        return sum(
            stats.dirichlet.logpdf(pi[g] / pi[g].sum(), params[g]) for g in range(params.shape[0])
        )

    _check_parent_cells(variant, rng, pdp.DirichletCells, log_q, k)


def _check_gamma_cells(variant, rng, k=2):
    """λ | c: Gamma(α + c, β + 1) per cell (`GammaCells.conditional`)."""
    from scipy import stats

    def log_q(shape_rate, lam):
        shape, rate = shape_rate
        return float(np.sum(stats.gamma(shape, scale=1.0 / rate).logpdf(lam.reshape(-1))))

    _check_parent_cells(variant, rng, pdp.GammaCells, log_q, k)


CHECKS = {
    "conjugate": (
        V.conjugate_variant,
        _check_conjugate,
        {"normal", "linear", "beta", "gamma", "inverse_gamma", "dirichlet"},
    ),
    "sufficient": (V.sufficient_variant, _check_sufficient, set()),
    "interweave": (V.interweave_variant, _check_interweave, set()),
    "collapsed": (V.collapsed_variant, _check_collapsed, set()),
    "recover": (V.collapsed_variant, _check_recover, set()),
    "gaussian": (V.gaussian_variant, _check_gaussian, {"sum", "mean", "local"}),
    "dirichlet_cells": (V.dirichlet_cells_variant, _check_dirichlet_cells, set()),
    "gamma_cells": (V.gamma_cells_variant, _check_gamma_cells, set()),
}


def _run(which, seed, count):
    make, check, kinds_needed = CHECKS[which]
    rng = np.random.default_rng(seed)
    kinds = set()
    for _ in range(count):
        variant = make(rng)
        kinds.add(variant.label.split()[0])
        check(variant, rng)
    assert kinds_needed <= kinds or count < 20, f"{which}: only {sorted(kinds)}"
    return kinds


@pytest.mark.parametrize("which", list(CHECKS))
def test_random_variants(which):
    _run(which, 1701, N_FAST)


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.parametrize("which", list(CHECKS))
def test_random_variants_many(which):
    _run(which, 1702, N_SLOW)


@pytest.mark.parametrize(
    "kind",
    [
        "bernoulli",
        "binomial",
        "poisson_tail",
        "poisson_closed",
        "poisson_local",
        "poisson_const",
        "geometric",
        "negbin_tail",
        "negbin_closed",
        "negbin_local",
        "per_record_local",
        "categorical_counts",
        "categorical_local",
    ],
)
def test_collapsed_every_record_law(kind):
    # a seed per law that is the same in every process (str hashes are salted per process)
    rng = np.random.default_rng(zlib.crc32(kind.encode()))
    _check_collapsed(V.collapsed_variant(rng, kind), rng, k=1)


# -------------------------------------------------------------------------------- DirichletHyper
@pytest.mark.parametrize(
    "prior",
    [
        lambda: pm.LogNormal("alpha", 1.0, 1.2),
        lambda: pm.Gamma("alpha", 2.0, 0.5),
        lambda: pm.HalfNormal("alpha", 7.0),
    ],
    ids=["lognormal", "gamma", "halfnormal"],
)
def test_dirichlet_hyper_matches_joint_logp(prior):
    """α moves (value space, Jacobians on both sides) and pair moves of base (natural space, no
    Jacobian) change DirichletHyper's target exactly as they change PyMC's joint logp; the numba
    pair terms and S = Σ_g log π_g are the ones of that target."""
    from pymc_dp.samplers.dirichlet_hyper import _coord, _marginal_coord, count_tails

    rng = np.random.default_rng(18)
    g, k = 3, 4
    beta, totals = np.array([0.7, 2.0, 1.5, 3.0]), np.array([5, 7, 4])
    with pm.Model() as model:
        base = pm.Dirichlet("base", beta)
        alpha = prior()
        pi = pm.Dirichlet("pi", alpha * base, shape=(g, k))
        c = pm.Multinomial("c", n=totals, p=pi, shape=(g, k))
        noisy = np.ones((g, k), dtype=np.int64)
        pdp.DPObserved(
            "s", c, statistic=pdp.Cells(), mechanism=pdp.DiscreteGaussian(sigma=1.0), observed=noisy
        )
        step = pdp.DirichletHyper([alpha, base])
    value_logp, natural_logp = model.compile_logp(), model.compile_logp(jacobian=False)
    alpha_prior = model.compile_logp(vars=[model["alpha"]])
    natural = _natural_fn(model, ["alpha", "base", "pi"])
    a_name, b_name = step.alpha_name, step.base_name
    # π summed out: PyMC's DirichletMultinomial rows and base's Dirichlet, compiled once with
    # (α, base, table) as inputs rather than two .eval() graphs per reference value
    a_in, b_in = pt.scalar("a"), pt.vector("b")
    tab_in = pt.matrix("tab", dtype=c.dtype)
    rows_in = pm.DirichletMultinomial.dist(n=totals, a=a_in * b_in, shape=(g, k))
    pymc_marginal = pytensor.function(
        [a_in, b_in, tab_in],
        pm.logp(pm.Dirichlet.dist(beta), b_in) + pm.logp(rows_in, tab_in).sum(),
    )
    for point in V.points(model, rng, 3):
        target, nat = step.log_density(point), natural(point)
        np.testing.assert_allclose(
            step.row_stats(point), np.log(nat["pi"]).sum(axis=0), rtol=1e-12, atol=1e-12
        )
        v, b = float(point[a_name]), nat["base"]
        v_new = v + rng.normal(0, 0.5)
        moved = {**point, a_name: np.asarray(v_new, dtype=point[a_name].dtype)}
        _close(
            target(v_new, b) - target(v, b),
            float(value_logp(moved) - value_logp(point)),
            "alpha move",
        )
        j, m = rng.choice(k, 2, replace=False)
        d = rng.uniform(-b[j], b[m])
        b_new = b.copy()
        b_new[j] += d
        b_new[m] -= d
        log_b = np.log(b_new)
        moved = {**point, b_name: log_b[:-1] - log_b.mean()}
        _close(
            target(v, b_new) - target(v, b),
            float(natural_logp(moved) - natural_logp(point)),
            "base pair move",
        )
        a, s = float(nat["alpha"]), step.row_stats(point)
        pair = lambda x: sum(_coord(x[i], a, float(g), s[i], beta[i]) for i in (j, m))  # noqa: E731
        _close(pair(b_new) - pair(b), target(v, b_new) - target(v, b), "numba pair terms")
        # π summed out (the step's target here): PyMC's DirichletMultinomial, Dirichlet and α prior
        assert step.marginal
        marginal, table = step.marginal_log_density(point), point["c"]

        def reference(v_, b_):
            alpha_nat = float(natural({**point, a_name: np.asarray(v_)})["alpha"])
            return float(
                alpha_prior({**point, a_name: np.asarray(v_)})
                + pymc_marginal(np.asarray(alpha_nat), b_, table)
            )

        _close(
            marginal(v_new, b_new) - marginal(v, b),
            reference(v_new, b_new) - reference(v, b),
            "marginal (π summed out)",
        )
        ms = lambda x: sum(  # noqa: E731
            _marginal_coord(x[i], a, i, *count_tails(table), beta[i]) for i in (j, m)
        )
        _close(ms(b_new) - ms(b), marginal(v, b_new) - marginal(v, b), "numba marginal pair terms")


def test_dirichlet_hyper_with_a_fixed_mean_matches_joint_logp():
    """π_g ~ Dirichlet(α·b), b fixed and not on the simplex (α·b = (α·Σb)·(b/Σb) inside the
    step): α moves change the step's target (π given, and π summed out) exactly as they change
    PyMC's joint logp and its DirichletMultinomial rows."""
    rng = np.random.default_rng(23)
    g, k = 3, 4
    b_raw, totals = np.array([0.9, 2.0, 0.4, 1.3]), np.array([5, 7, 4])
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 0.5)
        pi = pm.Dirichlet("pi", alpha * b_raw, shape=(g, k))
        c = pm.Multinomial("c", n=totals, p=pi, shape=(g, k))
        pdp.DPObserved(
            "s",
            c,
            statistic=pdp.Cells(),
            mechanism=pdp.DiscreteGaussian(sigma=1.0),
            observed=np.ones((g, k), dtype=np.int64),
        )
        step = pdp.DirichletHyper([alpha])
    assert step.base_name is None and np.isclose(step.base_scale, b_raw.sum())
    value_logp = model.compile_logp()
    alpha_prior = model.compile_logp(vars=[model["alpha"]])
    natural = _natural_fn(model, ["alpha"])
    a_in, tab_in = pt.scalar("a"), pt.matrix("tab", dtype=c.dtype)
    rows_in = pm.DirichletMultinomial.dist(n=totals, a=a_in * b_raw, shape=(g, k))
    pymc_marginal = pytensor.function([a_in, tab_in], pm.logp(rows_in, tab_in).sum())
    b = b_raw / b_raw.sum()
    a_name = step.alpha_name
    for point in V.points(model, rng, 3):
        target, marginal = step.log_density(point), step.marginal_log_density(point)
        v = float(point[a_name])
        v_new = v + rng.normal(0, 0.5)
        moved = {**point, a_name: np.asarray(v_new, dtype=point[a_name].dtype)}
        _close(
            target(v_new, b) - target(v, b),
            float(value_logp(moved) - value_logp(point)),
            "alpha move, fixed mean",
        )

        def reference(v_):
            at = {**point, a_name: np.asarray(v_)}
            nat = float(natural(at)["alpha"])
            return float(alpha_prior(at) + pymc_marginal(np.asarray(nat), point["c"]))

        _close(
            marginal(v_new, b) - marginal(v, b),
            reference(v_new) - reference(v),
            "alpha move, π summed out, fixed mean",
        )


@pytest.mark.parametrize("kind", ["sum", "mean", "local"])
def test_collapsed_gaussian_every_statistic(kind):
    rng = np.random.default_rng({"sum": 11, "mean": 12, "local": 13}[kind])
    for _ in range(2):
        _check_gaussian(V.gaussian_variant(rng, kind), rng, k=1)


@pytest.mark.parametrize("seed", range(4))
def test_dirichlet_hyper_column_move_matches_joint_logp(seed):
    """The joint move of a base pair (b_j, b_k) with the columns j, k of the table: its density of
    x = b_j / (b_j + b_k) with both columns summed out row by row (`column_pair_log_f`, what the
    slice move evaluates) changes exactly as log Σ over the columns' splits of PyMC's joint logp
    with π summed out (``pm.DirichletMultinomial`` rows, base's ``pm.Dirichlet``, the releases'
    log densities), enumerated; random variants: G, K, row totals, β, noise law, α, table, pair."""

    rng = np.random.default_rng(100 + seed)
    g, k = int(rng.integers(2, 4)), int(rng.integers(3, 5))
    n = rng.integers(2, 7, size=g)
    beta = rng.uniform(0.5, 3.0, size=k)
    mech = [pdp.DiscreteGaussian(sigma=rng.uniform(0.7, 2.0)), pdp.DiscreteLaplace(scale=1.1)][
        seed % 2
    ]
    _column_move_case(rng, g, k, n, beta, mech)


def test_dirichlet_hyper_column_move_without_the_weight_walk():
    """As above with a Gaussian so narrow (σ = 0.08: 4A(t + 1) > 600 for t ≥ 1) that every row's weights
    come from its log weights, summed by the recurrence log e_v − log e_{v−1} = L − 4Av +
    log((t − v + 1)/v), not from the walk."""
    rng = np.random.default_rng(7)
    _column_move_case(
        rng, 3, 4, np.array([5, 6, 4]), rng.uniform(0.5, 3.0, 4), pdp.DiscreteGaussian(sigma=0.08)
    )


def test_dirichlet_hyper_column_move_rows_grouped_by_key():
    """Rows repeated (the same people and releases three times over, plus one row on its own), so
    that rows share their pair total t and D = r_j − r_k + t and the move sums each group once
    (`dirichlet_hyper._column_groups`): still Σ over the columns' splits of PyMC's joint logp."""
    rng = np.random.default_rng(8)
    _column_move_case(
        rng,
        10,
        3,
        np.array([3, 2, 4] * 3 + [2]),
        rng.uniform(0.5, 3.0, 3),
        pdp.DiscreteGaussian(sigma=1.3),
        tile=3,
    )


def _column_move_case(rng, g, k, n, beta, mech, tile=1):
    from scipy.special import logsumexp

    from pymc_dp.samplers.dirichlet_hyper import column_pair_log_f

    noisy = rng.integers(-1, 5, size=(g, k))
    p = (g - 1) // tile  # tile > 1: rows 0 … p − 1 repeated tile times (releases and table)
    if tile > 1:
        noisy[: p * tile] = np.tile(noisy[:p], (tile, 1))
    with pm.Model():
        base = pm.Dirichlet("base", beta)
        alpha = pm.LogNormal("alpha", 1.0, 1.0)
        pi = pm.Dirichlet("pi", alpha * base, shape=(g, k))
        c = pm.Multinomial("c", n=n, p=pi, shape=(g, k))
        pdp.DPObserved("s", c, statistic=pdp.Cells(), mechanism=mech, observed=noisy)
        step = pdp.DirichletHyper([alpha, base])
    assert step.columns
    table = np.stack([rng.multinomial(n[i], rng.dirichlet(np.ones(k))) for i in range(g)])
    if tile > 1:
        table[: p * tile] = np.tile(table[:p], (tile, 1))
    a_nat, b = float(np.exp(rng.normal(1.0, 0.8))), rng.dirichlet(np.ones(k))
    j, m = (int(v) for v in rng.choice(k, 2, replace=False))
    codes, ka, kb, r, logs, keyed = step._column_args(table.reshape(-1))
    assert keyed == (isinstance(mech, pdp.DiscreteGaussian) and len(codes) == 1)
    xs = rng.uniform(0.02, 0.98, size=3)
    got = column_pair_log_f(
        table.reshape(-1), k, j, m, a_nat, b, beta, codes, ka, kb, r, logs, xs, keyed
    )
    if keyed:  # rows grouped by (t, D) or one by one: the same function of x
        alone = column_pair_log_f(
            table.reshape(-1), k, j, m, a_nat, b, beta, codes, ka, kb, r, logs, xs, False
        )
        np.testing.assert_allclose(got - got[0], alone - alone[0], rtol=1e-9, atol=1e-9)

    # PyMC's graph compiled once with (b, table) as inputs, not one .eval() per evaluated table
    b_in, tab_in = pt.vector("b"), pt.matrix("tab", dtype=table.dtype)
    rows = pm.DirichletMultinomial.dist(n=n, a=a_nat * b_in, shape=(g, k))
    pymc_joint = pytensor.function(
        [b_in, tab_in], pm.logp(pm.Dirichlet.dist(beta), b_in) + pm.logp(rows, tab_in).sum()
    )

    def joint(b_, tab):
        return float(pymc_joint(b_, tab) + mech.logpdf(noisy.ravel(), tab.ravel()).sum())

    def reference(x):
        b_ = b.copy()
        b_[j], b_[m] = x * (b[j] + b[m]), (1 - x) * (b[j] + b[m])
        at = joint(b_, table)
        out = at
        for i in range(g):  # rows separate given x: Σ over each row's split of the pair's total
            t = table[i, j] + table[i, m]
            terms = []
            for v in range(t + 1):
                tab = table.copy()
                tab[i, j], tab[i, m] = v, t - v
                terms.append(joint(b_, tab) - at)
            out += logsumexp(terms)
        return out

    ref = [reference(x) for x in xs]
    _close(got[1] - got[0], ref[1] - ref[0], "column move, x0 -> x1")
    _close(got[2] - got[0], ref[2] - ref[0], "column move, x0 -> x2")
