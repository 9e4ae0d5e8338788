r"""Metropolis–Hastings with averaged acceptance ratios for privatized releases (seed 001, Algs 6–8).

Target: the joint posterior of θ and the latent data given the releases; the θ-marginal is
`p(\theta \mid s_{dp})`. Each iteration proposes `\theta' \sim q(\cdot\mid\theta)`, builds
N particles of which the first is the *current* latent value, and accepts with the averaged ratio

```text
\alpha = \min\Big\{1, \frac{q(\theta\mid\theta')\eta(\theta')}{q(\theta'\mid\theta)\eta(\theta)}
\prod_{b} \frac{\sum_j w'_{j,b}}{\sum_j w_{j,b}}\Big\}.
```

The returned particle is drawn with probability ∝ `w'` when accepted (with θ') and ∝
`w` when rejected (with θ) — Andrieu, Yildirim, Doucet and Chopin (2020, §3).

Variants (``space``):

* ``"u"`` (Algorithm 6): particles `u^{(j)} \sim q_{\theta,\theta'} = f(\cdot\mid(\theta+\theta')/2)`
  for `j \ge 2`, symmetric in (θ, θ');
  `w_j = f(u^{(j)}\mid\theta) g(s_{dp}\mid u^{(j)})/q_{\theta,\theta'}(u^{(j)})`, `w'_j` with θ'.
  Meant for a latent statistic (one "record"); valid but high-variance for many records.
* ``"z"`` (Algorithm 7): θ-free uniforms `z` with `x = F_\theta^{-1}(z)` (PyMC ``icdf``);
  particles refresh all of `z` or, with ``subset_size=m``, one uniformly chosen subset of m
  records shared by all particles (Proposition 1 of seed 001). Weights
  `h(s_{dp}\mid z,\theta) = g(s_{dp}\mid F_\theta^{-1}(z))` — any statistic, including
  ``Median``/``Max`` with ``SmoothLaplace`` whose density depends on the whole database.
* ``"local"`` (Algorithm 8): local releases `s_{dp,t}` of single records; N particles per record,
  the ratio is the product over records and each record draws its own index `k_t`.

The pure kernel `mhaar_kernel` takes a weight function (the pluggable piece);
`MHAAR` adapts it to ``pm.sample``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from pymc_dp.distributions.clt import releases_latent_statistic
from pymc_dp.distributions.dp_observed import dp_nodes
from pymc_dp.samplers.accept import mh_accept
from pymc_dp.samplers.latent import (
    LatentTarget,
    check_n_particles,
    estimate_log_lik,
    logsumexp0,
    sample_indices,
)
from pymc_dp.samplers.random_walk import RandomWalkThetaStep

__all__ = ["MHAAR", "MHAARState", "MHAARInfo", "mhaar_kernel"]

_SPACES = ("auto", "u", "z", "local")


class MHAARState(NamedTuple):
    """theta (d,) value space; log_prior log η(θ); latent: current latent (any representation)."""

    theta: np.ndarray
    log_prior: float
    latent: object


class MHAARInfo(NamedTuple):
    accepted: bool
    accept_prob: float
    log_ratio_estimate: float  # log of the averaged likelihood ratio estimate


def mhaar_kernel(rng, state: MHAARState, *, propose_theta, log_prior, weights):
    r"""One MHAAR iteration (seed 001 Algorithms 6–8).

    Parameters
    ----------
    propose_theta : callable ``(rng, θ) -> (θ', log q(θ|θ') - log q(θ'|θ))``
    log_prior : callable ``θ -> log η(θ)``
    weights : callable ``(rng, θ, θ', latent) -> (log_w (N, B), log_w' (N, B), pick)``; row 0 is the
        current latent; ``pick(k (B,), accepted) -> new latent`` builds the returned latent from the
        chosen particle indices.
    """
    theta_p, log_q = propose_theta(rng, state.theta)
    lp_p = log_prior(theta_p)
    if not np.isfinite(lp_p):
        log_w, _, pick = weights(rng, state.theta, None, state.latent)
        k = sample_indices(rng, log_w)
        return state._replace(latent=pick(k, False)), MHAARInfo(False, 0.0, -math.inf)
    log_w, log_wp, pick = weights(rng, state.theta, theta_p, state.latent)
    log_w = np.where(np.isnan(log_w), -np.inf, log_w)
    log_wp = np.where(np.isnan(log_wp), -np.inf, log_wp)
    ratio = float(np.sum(logsumexp0(log_wp) - logsumexp0(log_w)))
    accepted, prob = mh_accept(rng, log_q + lp_p - state.log_prior + ratio)
    if accepted:
        k = sample_indices(rng, log_wp)
        return MHAARState(theta_p, lp_p, pick(k, True)), MHAARInfo(True, prob, ratio)
    k = sample_indices(rng, log_w)
    return state._replace(latent=pick(k, False)), MHAARInfo(False, prob, ratio)


def _check_subset_size(subset_size, n):
    ok = (
        isinstance(subset_size, int | np.integer)
        and not isinstance(subset_size, bool)
        and 1 <= subset_size <= n
    )
    if not ok:
        raise ValueError(
            f"subset_size must be an integer in 1..n={n} (records refreshed per particle), "
            f"got subset_size={subset_size!r}. Use None to refresh all records."
        )


class MHAAR(RandomWalkThetaStep):
    r"""MHAAR on θ and the latent data (seed 001, Algorithms 6–8); see the module docstring.

    Parameters
    ----------
    vars : list
        θ, the continuous parameters proposed jointly.
    n_particles : int
        N, particles per iteration including the current latent value (N ≥ 1; N = 1 gives a
        valid but slow chain).
    subset_size : int, optional
        z-space only: refresh a random subset of this many records per particle (1..n);
        default refreshes all records.
    space : {"auto", "u", "z", "local"}
        ``"auto"``: ``"local"`` if every release of the latent is local, ``"u"`` for a latent
        statistic made by `pymc_dp.CLTStatistic`, ``"z"`` otherwise.
    latent : list, optional
        The latent variables; default: found from the ``DPObserved`` nodes depending on θ.
    proposal_scale, target_accept
        Random-walk initial scale (value space) and warm-up acceptance target.

    Sampler stats
    -------------
    ``dp_accept``, ``dp_accepted``, ``dp_log_ratio_estimate`` (log averaged likelihood ratio),
    ``dp_scale``, ``dp_loglik_factors`` (independent factors of the ratio: records, groups or 1).

    z-space over several record groups that no release reads together and whose records do not
    depend on each other (e.g. two hospitals' noisy sums sharing θ) averages the ratio per group,
    each group drawing its own returned particle (as Algorithm 8 does per record); with
    ``subset_size`` or dependent groups it stays joint. ``step.factorisation`` says which.
    """

    name = "mhaar"
    dp_stats = {
        "dp_accept": (float, []),
        "dp_accepted": (bool, []),
        "dp_log_ratio_estimate": (float, []),
        "dp_scale": (float, []),
        "dp_loglik_factors": (int, []),
    }

    def __init__(
        self,
        vars,
        *,
        n_particles: int = 10,
        subset_size=None,
        space: str = "auto",
        latent=None,
        proposal_scale=None,
        target_accept: float = 0.3,
        max_support: int = 64,
        model=None,
        rng=None,
        blocked=True,
        initial_point=None,
        compile_kwargs=None,
    ):
        import pymc as pm

        self.n_particles = check_n_particles(n_particles, "MHAAR")
        if space not in _SPACES:
            raise ValueError(f"space must be one of {_SPACES}, got space={space!r}.")
        model = pm.modelcontext(model)
        counts = {node.n for node in dp_nodes(model).values()}
        if subset_size is not None and len(counts) == 1:  # fail fast, before compiling
            _check_subset_size(subset_size, counts.pop())
        self.target = LatentTarget(
            model, vars, latent=latent, owner="MHAAR", max_support=max_support, rng=rng
        )
        block = self.target.block
        auto = space == "auto"
        if auto:
            if self.target.all_local:
                space = "local"
            elif releases_latent_statistic(block.nodes):
                space = "u"
            else:
                space = "z"
        if space == "local" and not self.target.all_local:
            raise ValueError(
                "space='local' (seed 001 Algorithm 8) needs every release of the latent records to "
                "be local (pdp.Local), but some DPObserved node aggregates them. Use space='z'."
            )
        self.space = space
        n = block.n
        if subset_size is not None:
            _check_subset_size(subset_size, n)
            if space != "z":
                raise ValueError(
                    f"subset_size applies to z-space (seed 001 Algorithm 7), but space={space!r}. "
                    "Drop subset_size or use space='z'."
                )
            subset_size = int(subset_size)
        self.subset_size = subset_size
        #: local releases of records with a small finite support: sum over it exactly
        self.enumerate = space == "local" and self.target.support is not None
        if space in ("z", "local") and not self.enumerate:
            try:
                self.target.compile_z_space()
            except ValueError:
                if not auto or subset_size is not None:
                    raise
                space = "u"  # "auto" never picks a space that refuses: u-space needs only draws
        if space == "u":
            self.target.compile_batch_draw(self.n_particles)
        self.space = space
        self.vars = list(self.target.theta_values) + list(block.value_vars)
        self._init_walk(proposal_scale, target_accept, model, rng)

    def start_chain(self):
        super().start_chain()
        self._z_cache = None

    # -- weight functions (the pluggable piece) ------------------------------------------------
    def _u_weights(self, point):
        """Algorithm 6: q_{θ,θ'} = f(·|(θ+θ')/2); latent = list of record arrays."""
        target, N = self.target, self.n_particles

        def weights(rng, theta, theta_p, latent):
            th_q = theta if theta_p is None else 0.5 * (theta + theta_p)
            p_q = target.with_theta(point, th_q)
            fresh = target.draws(p_q, N)
            parts = [np.concatenate([cur[None], f[1:]]) for cur, f in zip(latent, fresh)]
            p_cur = target.with_theta(point, theta)
            total, per, rec_cur = target.evaluate(p_cur, parts)
            lg = total + per.sum(axis=1)
            lq = target.evaluate(p_q, parts)[2].sum(axis=1)
            log_w = (rec_cur.sum(axis=1) + lg - lq)[:, None]
            log_wp = None
            if theta_p is not None:
                rec_p = target.evaluate(target.with_theta(point, theta_p), parts)[2]
                log_wp = (rec_p.sum(axis=1) + lg - lq)[:, None]
            return log_w, log_wp, lambda k, acc: [P[int(k[0])] for P in parts]

        return weights

    def _support_weights(self, point):
        """Local releases, finite support: log f(v|θ) + log g(s_i|v) over the support (exact)."""
        target = self.target
        support = target.support
        n = target.block.n
        vals = [np.ascontiguousarray(np.broadcast_to(support[:, None], (support.size, n)))]

        def logw(theta):
            _, per, rec = target.evaluate(target.with_theta(point, theta), vals)
            return rec + per

        def weights(rng, theta, theta_p, latent):
            log_wp = logw(theta_p) if theta_p is not None else None
            return logw(theta), log_wp, lambda k, acc: [np.asarray(support[k])]

        return weights

    def _z_particles(self, rng, z_cur):
        """Particles of uniforms: row 0 current; others full or subset refreshes (Alg. 7)."""
        N = self.n_particles
        out = []
        if self.subset_size is None:
            for z in z_cur:
                zz = rng.random((N, *z.shape))
                zz[0] = z
                out.append(zz)
            return out
        n = self.target.block.n
        b = rng.choice(n, size=self.subset_size, replace=False)
        for z in z_cur:
            zz = np.repeat(z[None], N, axis=0)
            zz[1:, b] = rng.random((N - 1, self.subset_size, *z.shape[1:]))
            out.append(zz)
        return out

    def _z_weights(self, point):
        """Algorithms 7 (aggregate releases) and 8 (local releases); latent = list of uniforms."""
        target, N = self.target, self.n_particles
        local = self.space == "local"

        groups = not local and self.factorisation == "groups"

        def logh(theta, zs):
            pt_theta = target.with_theta(point, theta)
            xs = target.icdf(pt_theta, zs)
            if groups:  # independent record groups: one column (and one index k_g) per group
                return target.evaluate_groups(pt_theta, xs), xs
            total, per, _ = target.evaluate(pt_theta, xs)
            return (per if local else (total + per.sum(axis=1))[:, None]), xs

        def weights(rng, theta, theta_p, z_cur):
            zs = (
                self._z_particles(rng, z_cur)
                if not local
                else [np.concatenate([z[None], rng.random((N - 1, *z.shape))]) for z in z_cur]
            )
            log_w, _ = logh(theta, zs)
            log_wp = logh(theta_p, zs)[0] if theta_p is not None else None

            def pick(k, acc):
                if local:
                    idx = np.arange(target.block.n)
                    return [z[k, idx] for z in zs]
                if groups:
                    return [z[int(k[g])] for z, g in zip(zs, target.group_index)]
                return [z[int(k[0])] for z in zs]

            return log_w, log_wp, pick

        return weights

    # ------------------------------------------------------------------------------------------
    def step(self, point):
        target = self.target
        theta = target.theta_flat(point)
        log_prior0 = target.log_rest(point)
        if self.enumerate:
            latent = target.latent_of(point)
            weights = self._support_weights(point)
        elif self.space == "u":
            latent = target.latent_of(point)
            weights = self._u_weights(point)
        else:
            latent = self._current_z(point)
            weights = self._z_weights(point)
        state = MHAARState(theta, log_prior0, latent)

        def log_prior(th):
            return target.log_rest(target.with_theta(point, th))

        state, info = mhaar_kernel(
            self.rng,
            state,
            propose_theta=self.propose_theta,
            log_prior=log_prior,
            weights=weights,
        )
        self.adapt(info.accept_prob)
        pt_theta = target.with_theta(point, state.theta)
        if self.enumerate or self.space == "u":
            values = state.latent
        else:
            values = [x[0] for x in target.icdf(pt_theta, [z[None] for z in state.latent])]
        new = target.with_latent(pt_theta, values)
        if not (self.enumerate or self.space == "u"):
            self._z_cache = (target.latent_key(new), state.latent)
        new = {name: new[name] for name in target.theta_names + target.block.value_names}
        return {**point, **new}, [
            self.stats(
                dp_accept=float(info.accept_prob),
                dp_accepted=bool(info.accepted),
                dp_log_ratio_estimate=float(info.log_ratio_estimate),
                dp_scale=self.mean_scale,
                dp_loglik_factors=self.n_factors,
            )
        ]

    @property
    def factorisation(self) -> str:
        """How the averaged ratio factors: ``"support"`` (local releases, exact sum over a finite
        support), ``"records"`` (local, Algorithm 8), ``"groups"`` (z-space over independent record
        groups, each with its own particle index; full refreshes only) or ``"joint"``."""
        if self.enumerate:
            return "support"
        if self.space == "local":
            return "records"
        if self.space == "z" and self.subset_size is None and self.target.groups_independent:
            return "groups"
        return "joint"

    @property
    def n_factors(self) -> int:
        """Number of independent factors of the averaged ratio (1 when joint)."""
        return {
            "support": self.target.block.n,
            "records": self.target.block.n,
            "groups": len(self.target.groups),
        }.get(self.factorisation, 1)

    def loglik_estimate(self, point, rng) -> float:
        r"""One conditional-prior particle estimate of `\log p(s_{dp} \mid \theta)` at ``point``
        with ``n_particles`` (factorised over records for local releases, exact over a small finite
        support); its spread (`pymc_dp.diagnostics.loglik_estimate_sd`) tells whether N is
        large enough. The particle draws are reseeded from ``rng`` (reproducible)."""
        self.target.reseed(rng)
        log_w, _ = self.target.particle_weights(point, self.n_particles)
        return estimate_log_lik(log_w)

    def _current_z(self, point):
        """The uniforms behind the current records: cached from the last step if neither the
        records nor any input of their distribution moved (another sampler may move a parent,
        e.g. σ under NUTS), else re-derived from the records (uniform within atoms)."""
        target = self.target
        cache = self._z_cache
        if cache is not None:
            key, zs = cache
            if all(np.array_equal(a, b) for a, b in zip(key, target.latent_key(point))):
                return zs
        return target.z_of(point, self.rng)
