r"""Normal records summed out of a linear-Gaussian release: the ``"gaussian"`` collapsed plan.

When the records are ``pm.Normal`` (``x_i ~ N(m_i(θ), v_i(θ))``, any expressions of θ broadcast
per record, vector records included), the statistic is linear and unclamped (``pdp.Sum()``,
``pdp.Mean()``, ``pdp.Local()``: no bounds, no ``fn``, contributions ``t(x) = x``) and the
mechanism's log density is the Gaussian kernel ``b - (s - t)^2 / (2σ^2)`` (the mechanism says so:
`Mechanism.gaussian_sd`), the release given θ is exactly Gaussian:

* ``Sum`` / ``Mean`` (``S = c Σ_i x_i`` per entry): ``s | θ ~ N(c Σ_i m_i, c^2 Σ_i v_i + σ^2)``;
* ``Local`` (``s_i = x_i + noise`` per record and entry): ``s_i | θ ~ N(m_i, v_i + σ^2)``;

so ``log p(s | θ) = Σ_entries [b + ½ log(2πσ²) + log N(s; M, V)]`` — the integral of the model's own
joint density over the records, its constant ``b`` included. The records come back exactly
given ``(θ, s)`` from the conditional Gaussian:

* ``Local``: independently, ``x_i | s_i ~ N((m_i σ² + s_i v_i) / (v_i + σ²), v_i σ² / (v_i + σ²))``;
* ``Sum`` / ``Mean``: ``x | s ~ N(m + c v (s − c Σ m) / D, diag(v) − c² v vᵀ / D)``,
  ``D = c² Σ v + σ²`` (a rank-one update per release entry), drawn as
  ``x = x₀ + c v (s − c Σ x₀ − ε) / D`` with ``x₀ ~ N(m, diag v)`` and ``ε ~ N(0, σ²)``
  (conditioning by simulation: Matheron's rule), O(n) per draw, vectorised.

One release per record variable; anything else (clamping bounds, ``fn``, a non-Gaussian or
data-dependent mechanism, several releases of the same records, other readers of the records) is
refused with the reason (`gaussian_plan`; a TypeError, as for other continuous records).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytensor.tensor as pt

from pymc_dp.marginal.records import RecordLaw

__all__ = [
    "GaussianPlan",
    "gaussian_draw",
    "gaussian_logq",
    "gaussian_params",
    "gaussian_plan",
    "is_normal",
]

_LOG_2PI = math.log(2.0 * math.pi)


def is_normal(rv) -> bool:
    """Whether ``rv`` is a ``pm.Normal`` random variable (its op, not a transform of it)."""
    op = getattr(getattr(rv, "owner", None), "op", None)
    return getattr(op, "name", None) == "normal"


def gaussian_params(rv, shape):
    """``(mu, sigma)`` of the Normal ``rv`` as float64 graphs broadcast to the records' ``shape``."""
    mu, sigma = rv.owner.op.dist_params(rv.owner)
    return tuple(pt.broadcast_to(pt.cast(p, "float64"), shape) for p in (mu, sigma))


@dataclasses.dataclass
class GaussianPlan:
    """``log p(s_dp | θ)`` of Normal records under one linear unclamped Gaussian release."""

    law: RecordLaw  # kind "normal", params (mu, sigma) broadcast to `shape`
    nodes: tuple  # name of the release
    kind: str  # "sum" (Sum / Mean) or "local"
    factor: float  # c in S = c Σ x (1 for Local)
    shape: tuple  # shape of the record variable
    noise_sd: float  # σ of the mechanism
    log_peak: float  # b: the mechanism's log density at zero noise
    release: np.ndarray  # the release's value (float64)
    cost: float  # record entries: terms of one evaluation
    case: str = "gaussian"
    release_var: object = dataclasses.field(default=None, compare=False, repr=False)

    # the fields the discrete plans' callers read
    closed = None
    support = np.zeros(0)
    tail = False
    truncation = 0.0

    def release_graph(self):
        """The release in the collapsed likelihood's graph: a shared variable, so `follow` can swap
        in a new release without recompiling."""
        if self.release_var is None:
            import pytensor

            self.release_var = pytensor.shared(
                np.asarray(self.release, dtype="float64"), name=f"{self.nodes[0]}_release"
            )
        return self.release_var

    def moments(self, mu, sigma, lib=pt):
        """Mean ``M`` and variance ``V`` of the release given θ (without and with the noise)."""
        v = sigma * sigma
        if self.kind == "local":
            return mu, v + self.noise_sd**2
        c = self.factor
        return c * lib.sum(mu, axis=0), c * c * lib.sum(v, axis=0) + self.noise_sd**2

    def loglik(self, params=None):
        """The collapsed ``log p(s_dp | θ)`` as a PyTensor graph (``params``: ``(mu, sigma)``)."""
        mu, sigma = self.law.params if params is None else params
        m, var = self.moments(mu, sigma)
        s = self.release_graph()
        sig2 = self.noise_sd**2
        const = self.log_peak + 0.5 * math.log(2.0 * math.pi * sig2)
        return pt.sum(const - 0.5 * (_LOG_2PI + pt.log(var) + pt.sqr(s - m) / var))

    def follows(self, new) -> bool:
        """Whether ``new`` differs from this plan in its release value alone."""
        return (
            getattr(new, "case", None) == "gaussian"
            and new.kind == self.kind
            and new.nodes == self.nodes
            and new.shape == self.shape
            and new.factor == self.factor
            and new.noise_sd == self.noise_sd
            and new.log_peak == self.log_peak
            and np.shape(new.release) == np.shape(self.release)
        )

    def follow(self, new) -> None:
        """Take ``new``'s release value (``follows(new)`` must hold)."""
        if not self.follows(new):
            raise ValueError("follow: the new plan differs in more than its release value.")
        self.release = np.asarray(new.release, dtype="float64")
        if self.release_var is not None:
            self.release_var.set_value(self.release)


def _refuse(name, why, fix="Sample the records with pdp.DataAugmentation."):
    """A TypeError, as for every continuous record variable collapsed likelihoods cannot take."""
    raise TypeError(
        f"Record variable {name!r} is continuous (Normal); collapsed likelihoods sum Normal records "
        f"out only under one linear unclamped Gaussian release: {why} {fix}"
    )


def _linear(stat) -> bool:
    """A ``Sum`` / ``Mean`` / ``Local`` without bounds or ``fn``: contributions ``t(x) = x``."""
    return (
        all(hasattr(stat, a) for a in ("lower", "upper", "fn"))
        and stat.lower is None
        and stat.upper is None
        and stat.fn is None
    )


def _kernel(mech, name):
    """``(σ, b)`` of a mechanism whose log density is ``b - z²/(2σ²)``; refuses the others."""
    sd = mech.gaussian_sd
    if sd is None or getattr(mech, "dist_params", None) is not None:
        _refuse(
            name,
            f"its release's mechanism {mech!r} is not Gaussian with a fixed noise sd "
            "(mechanism.gaussian_sd is None or the density depends on the data), so the release "
            "given θ is not Gaussian.",
        )
    sd = float(sd)
    z = np.array([0.0, sd, 2.0 * sd, 5.0 * sd])
    logd = np.asarray(mech.logpdf(np.zeros(4), z), dtype=float)
    b = float(logd[0])
    if not np.allclose(logd, b - 0.5 * (z / sd) ** 2, rtol=1e-12, atol=1e-10):
        _refuse(
            name,
            f"{mech!r} states gaussian_sd={sd} but its log density is not b − z²/(2σ²).",
        )
    return sd, b


def gaussian_plan(model, record, nodes, release, costs) -> GaussianPlan:
    """The `GaussianPlan` of the Normal record variable ``record`` read by ``nodes`` (DPNode list),
    ``release`` the value of the one release; refuses (TypeError) what it cannot make exact."""
    name = record.name
    names = [nd.rv.name for nd in nodes]
    if len(nodes) != 1:
        _refuse(
            name,
            f"it feeds {len(nodes)} releases {names}; the Gaussian collapsed likelihood handles "
            "one linear release per Normal record variable.",
        )
    (node,) = nodes
    stat, mech = node.statistic, node.mechanism
    if len(node.data) != 1:
        _refuse(name, f"release {node.rv.name!r} reads {len(node.data)} record arrays.")
    if not _linear(stat):
        _refuse(
            name,
            f"its release {node.rv.name!r} uses {stat!r}; the Gaussian collapsed likelihood needs "
            "a linear unclamped statistic: pdp.Sum(), pdp.Mean() or pdp.Local() without bounds "
            "or fn (clamping makes the release non-Gaussian).",
        )
    sd, b = _kernel(mech, name)
    shape = tuple(
        int(d)
        for d in (record.type.shape if None not in record.type.shape else record.shape.eval())
    )
    if not shape:
        _refuse(name, "it is a scalar; records lie on axis 0 (shape=(n, ...)).")
    n = shape[0]
    kind = "local" if stat.local else "sum"
    factor = 1.0 if kind == "local" else float(stat.factor(n))
    want = shape if kind == "local" else shape[1:]
    s = np.asarray(release, dtype="float64")
    if s.shape != want:
        _refuse(name, f"release {node.rv.name!r} has shape {s.shape}, expected {want}.")
    x = np.arange(int(np.prod(shape)), dtype="float64").reshape(shape) / 7.0 - 1.0
    t = np.asarray(stat.contributions(pt.as_tensor_variable(x)).eval(), dtype=float)
    if t.shape != shape or not np.array_equal(t, x):  # pragma: no cover - guarded by _linear
        _refuse(name, f"{stat!r} does not contribute the records themselves.")
    params = gaussian_params(record, shape)
    law = RecordLaw(name=name, kind="normal", params=params, n=n, low=0, high=None)
    plan = GaussianPlan(
        law=law,
        nodes=(node.rv.name,),
        kind=kind,
        factor=factor,
        shape=shape,
        noise_sd=sd,
        log_peak=b,
        release=s,
        cost=float(np.prod(shape)),
    )
    return plan


# ------------------------------------------------------------------------------ the records draw
def _arrays(plan, params):
    mu, sigma = (np.broadcast_to(np.asarray(p, dtype=np.float64), plan.shape) for p in params)
    return mu, sigma * sigma, np.asarray(plan.release, dtype=np.float64)


def gaussian_draw(plan, params, rng) -> np.ndarray:
    """One exact draw ``x ~ p(x | θ, s_dp)`` (module docstring), float64 of the records' shape."""
    mu, v, s = _arrays(plan, params)
    sig2 = plan.noise_sd**2
    if plan.kind == "local":
        mean = (mu * sig2 + s * v) / (v + sig2)
        return mean + np.sqrt(v * sig2 / (v + sig2)) * rng.standard_normal(plan.shape)
    c = plan.factor
    x0 = mu + np.sqrt(v) * rng.standard_normal(plan.shape)
    eps = plan.noise_sd * rng.standard_normal(plan.shape[1:])
    d = c * c * v.sum(axis=0) + sig2
    return x0 + c * v * ((s - c * x0.sum(axis=0) - eps) / d)


def gaussian_logq(plan, params, x) -> float:
    """``log q(x)`` of the law `gaussian_draw` draws from (normalised)."""
    mu, v, s = _arrays(plan, params)
    x = np.asarray(x, dtype=np.float64)
    if x.shape != plan.shape:
        return -np.inf
    sig2 = plan.noise_sd**2
    if plan.kind == "local":
        mean = (mu * sig2 + s * v) / (v + sig2)
        var = v * sig2 / (v + sig2)
        return float(np.sum(-0.5 * (_LOG_2PI + np.log(var) + (x - mean) ** 2 / var)))
    c, n = plan.factor, plan.shape[0]
    d = c * c * v.sum(axis=0) + sig2
    mean = mu + c * v * ((s - c * mu.sum(axis=0)) / d)
    r = x - mean
    quad = np.sum(r * r / v, axis=0) + (c * c / sig2) * np.sum(r, axis=0) ** 2
    logdet = -np.sum(np.log(v), axis=0) + np.log(d / sig2)  # log det of the precision
    return float(np.sum(-0.5 * quad + 0.5 * logdet - 0.5 * n * _LOG_2PI))
