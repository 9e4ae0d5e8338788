r"""Conjugate Gibbs updates of θ given the records, from their sufficient statistics.

With data augmentation the records `x` are in the point, so `\theta \mid x` is an ordinary
posterior; when the prior of θ is conjugate to the records' distribution it is drawn exactly from
sufficient statistics — one compiled `O(n)` reduction per iteration instead of a gradient over
`n` records at every leapfrog step of NUTS. Patterns detected from the model graph (prior op and
the slot θ fills in every child's distribution):

=====================  ==============================================  ===============================
prior of θ             children (θ in the slot shown)                  posterior
=====================  ==============================================  ===============================
Normal(m, s)           Normal(mu=θ, sigma=σᵢ)                          Normal, precision s⁻² + Σσᵢ⁻²
Normal(m, s), θ ≤ 1-d  Normal(mu=aᵢ + Jᵢθ, sigma=σᵢ) (e.g. Xβ)         Normal, precision diag(s⁻²) + JᵀWJ
Beta(a, b)             Bernoulli(p=θ), Binomial(N, p=θ)                Beta(a + Σx, b + Σ(N − x))
Gamma(α, rate β)       Poisson(θ); Exponential(lam=θ);                 Gamma(α + Σx, β + n); (α + n, β + Σx);
                       Normal(mu, tau=θ)                               (α + n/2, β + Σ(x − mu)²/2)
InverseGamma(α, β)     Normal(mu, sigma=√θ)                            InverseGamma(α + n/2, β + Σ(x − mu)²/2)
Dirichlet(a)           Categorical(p=θ); Multinomial(N, p=θ)           Dirichlet(a + counts); (a + Σ tables)
=====================  ==============================================  ===============================

The prior's parameters and the children's other parameters may be any graphs of *other* variables
(evaluated at the current point: the update is the full conditional of θ). Anything else that
depends on θ (another distribution, a ``Potential``) makes the step refuse, naming it. θ enters a
child either as itself (broadcast along leading axes) or, for the power forms (``1/θ``, ``θ^{-1/2}``,
``√θ``), through a graph of θ alone that is checked numerically to equal the power at random points.

**Float64 rule.** Every parameter read from the graph (the prior's, the children's, the records) is
cast to float64 where it is read, before any arithmetic of the update: ``pm.Normal("mu", 0, 100)``
holds int8 constants, and ``1 / 100**2`` in int8 is ``1 / 16``. `ConjugateTheta.conditional`
returns the conditional the step draws from (same parameters, same code path), so tests compare its
log density with the model's (``tests/unit/samplers/test_conditionals_vs_logp.py``).
"""

from __future__ import annotations

import math
import warnings
import weakref
from typing import NamedTuple

import numba
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.logprob.utils import replace_rvs_by_values
from pymc.pytensorf import compile as pm_compile
from pymc.step_methods.compound import Competence
from pymc.distributions.transforms import SimplexTransform
from pymc.util import get_value_vars_from_user_vars
from pytensor.graph.replace import graph_replace
from pytensor.tensor.elemwise import DimShuffle

from pymc_dp._checks import child_rng
from pymc_dp.distributions.graph import direct_children, direct_upstream, fixed_shape
from pymc_dp.samplers.assign import augmentation_competence, cached_verdict, coupled_parameters
from pymc_dp.samplers.base import DPStep
from pymc_dp.samplers.cells import table_competence

__all__ = ["ConjugatePattern", "ConjugateTheta", "ThetaConditional", "conjugate_pattern"]

#: prior op -> {child op: (index of θ's slot in the child's params, power of θ in that slot)}
RULES = {
    "NormalRV": {"NormalRV": (0, 1.0)},
    "BetaRV": {"BernoulliRV": (0, 1.0), "BinomialRV": (1, 1.0)},
    "GammaRV": {"PoissonRV": (0, 1.0), "ExponentialRV": (0, -1.0), "NormalRV": (1, -0.5)},
    "InvGammaRV": {"NormalRV": (1, 0.5)},
    "DirichletRV": {"CategoricalRV": (0, 1.0), "MultinomialRV": (1, 1.0)},
}
_FAMILY = {
    "NormalRV": "normal",
    "BetaRV": "beta",
    "GammaRV": "gamma",
    "InvGammaRV": "inverse_gamma",
    "DirichletRV": "dirichlet",
}


class ConjugatePattern(NamedTuple):
    """A detected conjugate pair: θ, its posterior family and the children it was built from."""

    theta: pt.TensorVariable
    family: str
    children: tuple


def _strip(var):
    """Remove broadcasting ``DimShuffle``s (expand-dims only) around ``var``."""
    while (
        var.owner is not None
        and isinstance(var.owner.op, DimShuffle)
        and "x" in var.owner.op.new_order
    ):
        kept = [d for d in var.owner.op.new_order if d != "x"]
        if kept != list(range(var.owner.inputs[0].ndim)):
            break
        var = var.owner.inputs[0]
    return var


def _free_rvs(graph, model):
    rvs = set(model.basic_RVs)
    return {v for v in direct_upstream(model, [graph]) if v in rvs}


def _is_power_of(param, theta, power, model, low, high, rng=None):
    """``param`` is ``theta ** power`` (structurally for power 1, numerically otherwise: at five
    points drawn with ``rng``, see `pymc_dp._checks.child_rng`)."""
    core = _strip(param)
    if power == 1.0:
        return core is theta
    if _free_rvs(core, model) != {theta}:
        return False
    probe = pt.tensor("probe", dtype=theta.dtype, shape=theta.type.shape)
    fn = pytensor.function(
        [probe], graph_replace(core, {theta: probe}, strict=False), on_unused_input="ignore"
    )
    shape = tuple(1 if s is None else s for s in theta.type.shape)
    rng = child_rng(rng)
    for _ in range(5):
        t = rng.uniform(low, high, size=shape).astype(theta.dtype)
        got = np.asarray(fn(t), dtype=float)
        if not np.allclose(
            got, np.broadcast_to(t.astype(float) ** power, got.shape), rtol=1e-10, atol=0
        ):
            return False
    return True


def conjugate_pattern(model, theta, rng=None) -> ConjugatePattern:
    """Detect the conjugate family of ``theta`` (an RV) in ``model``; raise ``ValueError`` otherwise.

    ``rng`` (the step's generator; fresh entropy if None) draws the points of the numeric checks.
    """
    op_name = type(theta.owner.op).__name__
    rules = RULES.get(op_name)
    if rules is None:
        raise ValueError(
            f"ConjugateTheta has no conjugate update for {theta.name!r} with prior "
            f"{op_name.removesuffix('RV')}; supported priors: Normal, Beta, Gamma, InverseGamma, "
            "Dirichlet (see the table in pymc_dp.samplers.conjugate). Leave it to NUTS."
        )
    children, others, linear = [], [], False
    for var in direct_children(model, [theta]):
        name = type(var.owner.op).__name__ if var.owner is not None else ""
        rule = rules.get(name) if var in set(model.basic_RVs) else None
        ok = False
        if rule is not None:
            slot, power = rule
            params = var.owner.op.dist_params(var.owner)
            rest = [p for k, p in enumerate(params) if k != slot]
            ok = _is_power_of(
                params[slot], theta, power, model, 0.3, 3.0, rng
            ) and theta not in direct_upstream(model, rest)
            if ok and theta.ndim:  # shapes with dims= / pm.Data lengths as sampling sees them
                t_shape, v_shape = fixed_shape(theta), fixed_shape(var)
                same = (
                    t_shape is not None
                    and v_shape is not None
                    and v_shape[var.ndim - theta.ndim :] == t_shape
                )
            if ok and op_name == "DirichletRV":  # codes: one θ; tables: θ of any batch shape
                ok = theta.ndim == 1 or (name == "MultinomialRV" and same)
            elif ok and theta.ndim:  # θ broadcast along the child's leading axes only
                ok = same
        if not ok and rule is not None and op_name == "NormalRV" and theta.ndim <= 1:
            # a Normal child whose mean is a function of θ (checked to be affine when compiled)
            params = var.owner.op.dist_params(var.owner)
            if theta not in direct_upstream(model, [params[1]]):
                ok, linear = True, True
        if ok:
            children.append(var)
        else:
            others.append(var)
    if others:
        allowed = ", ".join(f"{c.removesuffix('RV')}" for c in rules)
        raise ValueError(
            f"ConjugateTheta needs every term that depends on {theta.name!r} to be a conjugate child "
            f"({allowed} with {theta.name!r} as the parameter itself, or for a Normal prior a Normal "
            f"whose mean is affine in {theta.name!r}; see the table in "
            f"pymc_dp.samplers.conjugate), but {', '.join(repr(o.name) for o in others)} is not. "
            f"Update {theta.name!r} with NUTS instead."
        )
    if not children:
        raise ValueError(
            f"ConjugateTheta found nothing that depends on {theta.name!r}; its conditional is its "
            "prior. Sample it with PyMC's default step."
        )
    family = "normal_linear" if linear else _FAMILY[op_name]
    return ConjugatePattern(theta, family, tuple(children))


def _reduce_to(c, theta):
    """Sum the leading axes of ``c`` (child-shaped) down to ``theta``'s shape."""
    k = c.ndim - theta.ndim
    return c.sum(axis=tuple(range(k))) if k > 0 else c


def _f64(graph):
    """``graph`` cast to float64: every value read from the model passes here before arithmetic."""
    return pt.cast(graph, "float64")


def _params_of(rv):
    """The distribution parameters of ``rv`` as float64 graphs (ints of any width, float32, data)."""
    return [_f64(p) for p in rv.owner.op.dist_params(rv.owner)]


def _posterior_params(model, pattern):
    """PyTensor graphs of the posterior parameters (natural units), in terms of the model's RVs."""
    theta, family = pattern.theta, pattern.family
    prior = _params_of(theta)
    if family == "normal":
        m0, s0 = prior
        prec = pt.broadcast_to(1.0 / s0**2, theta.shape)
        num = pt.broadcast_to(m0 / s0**2, theta.shape)
        for child in pattern.children:
            sigma = _params_of(child)[1]
            w = pt.broadcast_to(1.0 / sigma**2, child.shape)
            prec = prec + _reduce_to(w, theta)
            num = num + _reduce_to(w * _f64(child), theta)
        return [num / prec, 1.0 / pt.sqrt(prec)]
    if family == "beta":
        a, b = (pt.broadcast_to(p, theta.shape) for p in prior)
        for child in pattern.children:
            trials = 1.0 if type(child.owner.op).__name__ == "BernoulliRV" else _params_of(child)[0]
            x = pt.cast(child, "float64")
            a = a + _reduce_to(x, theta)
            b = b + _reduce_to(pt.broadcast_to(trials, child.shape) - x, theta)
        return [a, b]
    if family in ("gamma", "inverse_gamma"):
        if family == "gamma":
            alpha, scale = prior
            rate = 1.0 / scale
        else:
            alpha, rate = prior
        alpha, rate = pt.broadcast_to(alpha, theta.shape), pt.broadcast_to(rate, theta.shape)
        for child in pattern.children:
            name = type(child.owner.op).__name__
            x = pt.cast(child, "float64")
            ones = pt.ones_like(x)
            if name == "PoissonRV":
                alpha, rate = alpha + _reduce_to(x, theta), rate + _reduce_to(ones, theta)
            elif name == "ExponentialRV":
                alpha, rate = alpha + _reduce_to(ones, theta), rate + _reduce_to(x, theta)
            else:  # Normal: precision (Gamma) or variance (InverseGamma)
                mu = _params_of(child)[0]
                alpha = alpha + _reduce_to(ones, theta) / 2.0
                rate = rate + _reduce_to((x - mu) ** 2, theta) / 2.0
        return [alpha, rate]
    # Dirichlet: the prior concentration and the children's codes, counted by `_dirichlet_posterior` with
    # np.bincount (O(n + K); a one-hot sum in the graph costs O(n·K): 16–54 ms at K = 2,016)
    (a,) = prior
    a = pt.broadcast_to(pt.cast(a, "float64"), theta.shape)
    codes = [
        pt.flatten(child)
        for child in pattern.children
        if type(child.owner.op).__name__ == "CategoricalRV"
    ]
    for child in pattern.children:  # Multinomial tables: their counts, summed over leading axes
        if type(child.owner.op).__name__ == "MultinomialRV":
            a = a + _reduce_to(pt.cast(child, "float64"), theta)
    codes = (
        pt.concatenate(codes)
        if len(codes) > 1
        else (codes[0] if codes else pt.zeros((0,), dtype="int64"))
    )
    return [a, codes]


class _LinearNormal:
    """Normal prior, Normal children with mean a + Jθ: the posterior of θ from one O(n·d) pass.

    J is recomputed at every call from d + 1 evaluations of the children's mean (it may depend on
    other variables, e.g. latent covariates); one more evaluation at the current θ checks that the
    mean is affine in θ there (a ValueError otherwise: the update would not be exact).
    """

    def __init__(self, model, pattern, value, rng=None):
        theta = pattern.theta
        self.name, self.value_name = theta.name, value.name
        probe = pt.tensor("theta_probe", dtype="float64", shape=value.type.shape)
        m0, s0 = _params_of(theta)
        mus, ys, sigmas = [], [], []
        for child in pattern.children:
            mu, sigma = _params_of(child)[:2]
            mus.append(pt.broadcast_to(mu, child.shape).ravel())
            sigmas.append(pt.broadcast_to(sigma, child.shape).ravel())
            ys.append(pt.cast(child, "float64").ravel())
        fixed = [
            pt.concatenate(ys),
            pt.concatenate(sigmas),
            pt.broadcast_to(m0, theta.shape).ravel(),
            pt.broadcast_to(s0, theta.shape).ravel(),
        ]
        graphs = replace_rvs_by_values(
            [pt.concatenate(mus), *fixed],
            rvs_to_values=model.rvs_to_values,
            rvs_to_transforms=model.rvs_to_transforms,
        )
        mean_graph = graph_replace(graphs[0], {value: probe}, strict=False)
        self._mu = pm_compile(
            list(model.value_vars) + [probe],
            pt.cast(mean_graph, "float64"),
            on_unused_input="ignore",
        )
        self._fixed = pm_compile(
            model.value_vars, [pt.cast(g, "float64") for g in graphs[1:]], on_unused_input="ignore"
        )
        self.input_names = [v.name for v in model.value_vars]
        point = model.initial_point(random_seed=int(child_rng(rng).integers(2**32)))
        self.shape = np.shape(point[value.name])
        probe_value = child_rng(rng).normal(size=self.shape)
        self(*[point[n] for n in self.input_names], check_at=probe_value)

    def __call__(self, *args, check_at=None):
        d = int(np.prod(self.shape, dtype=int))
        y, sig, m0, s0 = self._fixed(*args)
        basis = np.eye(d).reshape((d, *self.shape)) if self.shape else np.ones((1,))
        a = np.asarray(self._mu(*args, np.zeros(self.shape)), dtype=float)
        J = np.column_stack([np.asarray(self._mu(*args, e), dtype=float) - a for e in basis])
        at = args[self.input_names.index(self.value_name)] if check_at is None else check_at
        got = np.asarray(self._mu(*args, np.asarray(at, dtype=float)), dtype=float)
        want = a + J @ np.ravel(at)
        if not np.allclose(got, want, rtol=1e-8, atol=1e-8 * (1.0 + np.abs(a).max(initial=0.0))):
            raise ValueError(
                f"ConjugateTheta treats the children of {self.name!r} as Normal with a mean affine in "
                f"{self.name!r}, but their mean is not affine (it differs from a + J·{self.name} by "
                f"{np.abs(got - want).max():.3g}). Update {self.name!r} with NUTS instead."
            )
        w = 1.0 / sig**2
        prec = np.diag(1.0 / s0**2) + J.T @ (w[:, None] * J)
        rhs = m0 / s0**2 + J.T @ (w * (y - a))
        chol = np.linalg.cholesky(prec)
        mean = np.linalg.solve(chol.T, np.linalg.solve(chol, rhs))
        factor = np.linalg.inv(chol).T  # factor @ factorᵀ = prec⁻¹
        return [mean, factor]


class ThetaConditional(NamedTuple):
    """The full conditional of one θ that `ConjugateTheta` draws from, in θ's natural space.

    ``family`` is a row of the module's table (``"normal_linear"``: a multivariate Normal with
    covariance ``factor @ factor.T``); ``params`` are its float64 parameters at the current point.
    `draw` is what the step does; `logpdf` is the matching log density (scipy), for
    checks against the model's own log density.
    """

    family: str
    params: tuple

    def draw(self, rng) -> np.ndarray:
        """One draw (natural space), from ``rng``."""
        family, params = self.family, self.params
        if family == "normal_linear":
            mean, factor = params
            return mean + factor @ rng.standard_normal(mean.shape[0])
        if family == "normal":
            mean, sd = params
            return rng.normal(mean, sd)
        if family == "beta":
            return rng.beta(*params)
        if family == "gamma":
            alpha, rate = params
            return rng.gamma(alpha, 1.0 / rate)
        if family == "inverse_gamma":
            alpha, rate = params
            return 1.0 / rng.gamma(alpha, 1.0 / rate)
        log_pi = self.log_dirichlet(rng)
        return np.exp(log_pi)

    def log_dirichlet(self, rng) -> np.ndarray:
        """log θ of one Dirichlet draw, computed in log space: Gamma(a) = Gamma(a + 1)·U^(1/a) for
        a < 1, so concentrations far below 1 (whose gamma draws underflow to 0 in float64) keep
        their exact log values."""
        a = np.asarray(self.params[0], dtype=np.float64)
        small = a < 1.0
        log_g = np.log(rng.gamma(np.where(small, a + 1.0, a)))
        if small.any():
            log_g[small] += np.log(rng.random(int(small.sum()))) / a[small]
        top = log_g.max(axis=-1, keepdims=True)
        return log_g - top - np.log(np.exp(log_g - top).sum(axis=-1, keepdims=True))

    def logpdf(self, value) -> float:
        """``log q(value | rest)`` summed over θ's elements (``value`` in natural space)."""
        from scipy import stats

        family, params = self.family, self.params
        x = np.asarray(value, dtype=np.float64)
        if family == "normal_linear":
            mean, factor = params
            return float(stats.multivariate_normal(mean, factor @ factor.T).logpdf(np.ravel(x)))
        if family == "normal":
            lp = stats.norm.logpdf(x, params[0], params[1])
        elif family == "beta":
            lp = stats.beta.logpdf(x, *params)
        elif family == "gamma":
            lp = stats.gamma.logpdf(x, params[0], scale=1.0 / params[1])
        elif family == "inverse_gamma":
            lp = stats.invgamma.logpdf(x, params[0], scale=params[1])
        else:  # Dirichlet rows (θ of any batch shape): Σ_rows log Dir(x_row | a_row)
            from scipy.special import gammaln

            a = np.broadcast_to(params[0], x.shape)
            lp = gammaln(a.sum(axis=-1)) - gammaln(a).sum(axis=-1)
            lp = lp + ((a - 1.0) * np.log(x)).sum(axis=-1)
        return float(np.sum(lp))


@numba.njit(cache=True)
def dirichlet_rows_simplex(rng, a, out):
    """PyMC's simplex values ``y = log θ[:-1] − mean(log θ)`` of one Dirichlet draw per row of
    ``a`` (rows × K), into ``out`` (rows × (K − 1)), from log-gamma draws ``g`` (``y = g[:-1] −
    mean(g)``: the normalisation cancels). ``log Gamma(a) = log Gamma(a + 1) + log(U) / a`` for
    a < 1, exact where the gamma draw itself underflows (as `ThetaConditional.log_dirichlet`)."""
    n_rows, k = a.shape
    g = np.empty(k)
    for row in range(n_rows):
        tot = 0.0
        for j in range(k):
            aj = a[row, j]
            if aj < 1.0:
                v = math.log(rng.standard_gamma(aj + 1.0)) + math.log(1.0 - rng.random()) / aj
            else:
                v = math.log(rng.standard_gamma(aj))
            g[j] = v
            tot += v
        mean = tot / k
        for j in range(k - 1):
            out[row, j] = g[j] - mean


def _dirichlet_posterior(a, codes):
    """Dirichlet(a + counts of the children's codes): counted with np.bincount, O(n + K)."""
    a = np.asarray(a, dtype=np.float64)
    codes = np.asarray(codes).astype(np.int64, copy=False).ravel()
    if codes.size and (codes.min() < 0 or codes.max() >= a.shape[-1]):
        raise ValueError(
            f"ConjugateTheta counts categories 0..{a.shape[-1] - 1} for a Dirichlet parameter, but the "
            "children hold categories outside that range at this point; their values must be valid "
            "Categorical draws."
        )
    return (a + np.bincount(codes, minlength=a.shape[-1]),)


class ConjugateTheta(DPStep):
    """Exact Gibbs draws of θ | records from sufficient statistics (see the module's table).

    ``pm.sample()`` assigns it by itself to a parameter whose prior is conjugate to every term that
    depends on it when latent records of a ``DPObserved`` node are among those terms (see
    `conjugate_competence`). Explicitly, e.g. at large n:
    ``pm.sample(step=[pdp.DataAugmentation([x]), pdp.ConjugateTheta([mu])])``: each iteration costs
    one compiled reduction over the records instead of NUTS' gradients over n records per leapfrog.

    Parameters
    ----------
    vars : list
        Parameters with a conjugate prior; updated one after another (each from its full conditional).
    model : pm.Model, optional

    Raises
    ------
    ValueError
        Naming the variable and the term that breaks conjugacy, when a pattern is not recognised.
    """

    name = "conjugate_theta"
    dp_stats = {}

    def __init__(
        self, vars, *, model=None, rng=None, blocked=True, initial_point=None, compile_kwargs=None
    ):
        model = pm.modelcontext(model)
        if vars is None or (isinstance(vars, list | tuple) and not vars):
            raise ValueError(
                f"ConjugateTheta needs vars=[theta, ...], the parameters it draws; got {vars!r}."
            )
        values = get_value_vars_from_user_vars(vars, model)
        self.vars = list(values)
        probe = child_rng(rng)  # the numeric checks' points: from the step's generator
        self.patterns = [conjugate_pattern(model, model.values_to_rvs[v], probe) for v in values]
        self.input_names = [v.name for v in model.value_vars]
        #: model-specific advice for the convergence guard (value name → text)
        self.convergence_hints = margin_hints(model, values, self.patterns)
        self._updates = []
        #: PyMC's simplex transform (value = log θ[:-1] − mean log θ): Dirichlet draws go there from
        #: log θ directly, never through θ (which underflows for tiny concentrations)
        self._simplex = {
            v.name: isinstance(model.rvs_to_transforms.get(p.theta), SimplexTransform)
            for v, p in zip(values, self.patterns)
        }
        for value, pattern in zip(values, self.patterns):
            if pattern.family == "normal_linear":
                if model.rvs_to_transforms.get(pattern.theta) is not None:
                    raise ValueError(
                        f"ConjugateTheta draws {value.name!r} in its natural space, but it has a "
                        "transform. Declare the Normal prior without transform=."
                    )
                self._updates.append(
                    (value.name, pattern.family, _LinearNormal(model, pattern, value, probe), None)
                )
                continue
            params = _posterior_params(model, pattern)
            params = replace_rvs_by_values(
                params, rvs_to_values=model.rvs_to_values, rvs_to_transforms=model.rvs_to_transforms
            )
            post = pm_compile(
                model.value_vars, [pt.cast(p, "float64") for p in params], on_unused_input="ignore"
            )
            rv = pattern.theta
            tr = model.rvs_to_transforms.get(rv)
            natural = pt.tensor("natural", dtype="float64", shape=rv.type.shape)
            if tr is not None:
                (fwd,) = replace_rvs_by_values(
                    [tr.forward(natural, *rv.owner.inputs)],
                    rvs_to_values=model.rvs_to_values,
                    rvs_to_transforms=model.rvs_to_transforms,
                )
            else:
                fwd = natural
            forward = pm_compile(
                [natural, *model.value_vars], pt.cast(fwd, value.dtype), on_unused_input="ignore"
            )
            self._updates.append((value.name, pattern.family, post, forward))
        self._init_step(rng)

    def _conditional(self, update, point) -> ThetaConditional:
        _, family, post, _ = update
        args = [point[n] for n in self.input_names]
        params = post(*args)
        if family == "dirichlet":  # (prior concentration, codes) -> posterior concentration
            params = _dirichlet_posterior(*params)
        return ThetaConditional(family, tuple(np.asarray(p, dtype=np.float64) for p in params))

    def conditional(self, point) -> dict:
        """The full conditional of each θ given the rest of ``point``: θ's name -> `ThetaConditional`.

        ``point`` is in PyMC's value space (as in a trace); the conditionals are of θ in its natural
        space (no Jacobian). `step` draws θ in turn from exactly these (after the first θ,
        at the point holding the new values of those before it).
        """
        return {
            pattern.theta.name: self._conditional(u, point)
            for pattern, u in zip(self.patterns, self._updates)
        }

    def step(self, point):
        new = dict(point)
        for update in self._updates:
            name, family, _, forward = update
            args = [new[n] for n in self.input_names]
            cond = self._conditional(update, new)
            if family == "dirichlet" and self._simplex[name]:  # value space from log θ: exact
                a = np.ascontiguousarray(cond.params[0], dtype=np.float64)  # however small θ is
                k = a.shape[-1]
                out = np.empty((a.size // k, k - 1))
                dirichlet_rows_simplex(self.rng, a.reshape(-1, k), out)
                new[name] = out.reshape(np.shape(point[name])).astype(
                    np.asarray(point[name]).dtype, copy=False
                )
                continue
            draw = np.asarray(cond.draw(self.rng), dtype=float)
            if forward is None:  # Normal prior: no transform
                new[name] = draw.reshape(np.shape(point[name])).astype(
                    np.asarray(point[name]).dtype
                )
            else:
                new[name] = np.asarray(forward(draw, *args)).reshape(np.shape(point[name]))
        return {**point, **{name: new[name] for name, *_ in self._updates}}, [self.stats()]

    def route(self) -> dict:
        families = {v.name: p.family for v, p in zip(self.vars, self.patterns)}
        children = sorted({c.name for p in self.patterns for c in p.children})
        return {
            **super().route(),
            "reason": (
                f"conjugate prior: exact draw from the posterior family ({', '.join(families.values())}) "
                f"given the records, from sufficient statistics of {children}"
            ),
            "families": families,
        }

    @staticmethod
    def competence(var, has_grad=None):
        return conjugate_competence(var)


# -- pm.sample()'s default assignment -------------------------------------------------------
_CONJUGATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def conjugate_competence(var) -> Competence:
    """``IDEAL`` if ``var`` is a conjugate parameter of latent records that DataAugmentation takes.

    Conditions (all): ``var`` is a free RV of a model with ``DPObserved`` nodes;
    `conjugate_pattern` accepts it (every term depending on it is a
    conjugate child); at least one of its children is a latent record variable for which
    `augmentation_competence` is ``IDEAL``. Cached per model state; never warns.
    """
    return cached_verdict(var, _CONJUGATE, _conjugate_verdict)


def _conjugate_verdict(model, var) -> Competence:
    if coupled_parameters(model, var):  # hierarchical block: NUTS on it jointly (samplers.assign)
        return Competence.INCOMPATIBLE
    try:
        pattern = conjugate_pattern(model, var)
    except Exception:  # noqa: BLE001 - not conjugate (the message is for explicit use): leave to NUTS
        return Competence.INCOMPATIBLE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        records = [
            c
            for c in pattern.children
            if c in model.free_RVs
            and (
                augmentation_competence(c) == Competence.IDEAL
                or table_competence(c) == Competence.IDEAL
            )
        ]
    return Competence.IDEAL if records else Competence.INCOMPATIBLE


def margin_hints(model, values, patterns) -> dict:
    """Advice for a Dirichlet π of a Multinomial table, or Gamma rates of a table of Poisson cells,
    released only through margins (`pymc_dp.Marginals` dropping axes): the margins leave θ's split
    within a margin cell to its prior, and Gibbs between θ and the table's cells moves that split
    by a random walk (measured: θ ESS/draw 0.01–0.02 on a 2 × 3 table with its row margin
    released). The generic advice (MHAAR, interweaving) does not apply to count tables."""
    from pymc_dp.distributions.graph import nodes_reading
    from pymc_dp.distributions.registry import dp_nodes
    from pymc_dp.statistics.cells import Marginals

    nodes = dp_nodes(model)
    out = {}
    for value, pattern in zip(values, patterns):
        if pattern.family not in ("dirichlet", "gamma"):
            continue
        for child in pattern.children:
            rv = getattr(child, "rv", child)
            fed = nodes_reading(nodes, rv) if rv in model.free_RVs else {}
            if fed and all(
                isinstance(node.statistic, Marginals)
                and len(node.statistic.keep)
                < (len(node.statistic.shape) if node.statistic.shape else rv.ndim)
                for node in fed.values()
            ):
                margin = (
                    "a pm.Multinomial over the margin's cells with a Dirichlet whose α sums the "
                    "prior's α within each margin cell — and release it with pdp.Cells() (the sums "
                    "of π over a margin cell mix well, ESS/draw ≈ 0.8 where π's cells had 0.01)"
                    if pattern.family == "dirichlet"
                    else "Poisson cells over the margin's cells (a sum of Poisson counts is Poisson "
                    "with the summed rate) with a prior on those rates — and release it with "
                    "pdp.Cells()"
                )
                out[value.name] = (
                    f"only margins of the table {rv.name!r} are released ({', '.join(fed)}), so "
                    f"{pattern.theta.name}'s split within each margin cell is known from its prior "
                    "alone and moves with the table's cells one count at a time: if the margin is "
                    f"what you need, model it directly — {margin}; else give the table more moves "
                    f"per iteration (step=[pdp.TableCells([{rv.name}], reps=40)])"
                )
    return out
