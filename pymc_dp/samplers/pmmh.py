r"""Pseudo-marginal Metropolis–Hastings for privatized releases (seed 001, Algorithm 5).

Target: the marginal posterior `p(\theta \mid s_{dp}) \propto \eta(\theta)\, p(s_{dp} \mid
\theta)` with the intractable likelihood `p(s_{dp} \mid \theta) = \int g(s_{dp} \mid x)
f(x \mid \theta)\, dx` of the latent data `x` (the confidential records, or a latent statistic
`u` such as the CLT approximation of `pymc_dp.distributions.clt`). One iteration:

1. propose `\theta' \sim q(\cdot \mid \theta)` (Gaussian random walk in PyMC's value space,
   scale tuned during warm-up);
2. draw `x^{(j)} \sim f(\cdot \mid \theta')`, `j = 1..N` (the latent's conditional prior,
   so the importance weights are `w_j = g(s_{dp} \mid x^{(j)})`) and form the unbiased
   estimate `\hat Z' = \frac1N \sum_j w_j`;
3. accept with probability `\min\{1, \frac{q(\theta \mid \theta')\eta(\theta')\hat Z'}
   {q(\theta' \mid \theta)\eta(\theta)\hat Z}\}` where `\hat Z` is the estimate *carried* from
   the last accepted move (never recomputed).

On acceptance one particle `x^{(k)}`, `k \sim w`, is written back to the latent variable.
The chain then leaves invariant the extended target whose `(\theta, x^{(k)})` marginal is the
joint posterior `p(\theta, x \mid s_{dp})` (Andrieu and Roberts 2009; Andrieu, Doucet and
Holenstein 2010), so the trace of the latent is a valid posterior draw as well.

The pure kernel `pmmh_kernel` works on NumPy arrays and callables; `PMMH` adapts it to
``pm.sample``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from pymc_dp.samplers.accept import mh_accept
from pymc_dp.samplers.latent import (
    LatentTarget,
    check_n_particles,
    estimate_log_lik,
    pick_particle,
)
from pymc_dp.samplers.random_walk import RandomWalkThetaStep

__all__ = ["PMMH", "PMMHState", "PMMHInfo", "pmmh_kernel"]


class PMMHState(NamedTuple):
    """State of the pseudo-marginal chain.

    theta : (d,) current θ (value space, flattened)
    log_prior : log η(θ)
    log_lik : log Ẑ(θ), the carried estimate of log p(s_dp | θ)
    latent : the particle written back to the latent variable (list of arrays)
    """

    theta: np.ndarray
    log_prior: float
    log_lik: float
    latent: list


class PMMHInfo(NamedTuple):
    """accept_prob = min(1, α); log_lik_proposal = log Ẑ(θ')."""

    accepted: bool
    accept_prob: float
    log_lik_proposal: float


def pmmh_kernel(rng, state: PMMHState, *, propose_theta, log_prior, estimate):
    r"""One iteration of seed 001 Algorithm 5.

    Parameters
    ----------
    rng : np.random.Generator
    state : PMMHState
    propose_theta : callable ``(rng, θ) -> (θ', log q(θ|θ') - log q(θ'|θ))``
    log_prior : callable ``θ -> log η(θ)``
    estimate : callable ``(rng, θ') -> (log_w, particles)``: log importance weights
        `\log[f(x^{(j)}|\theta') g(s_{dp}|x^{(j)}) / q_{\theta'}(x^{(j)})]` and the particles.
        ``log_w`` is ``(N,)`` (one estimate of the whole likelihood; ``particles[k]`` is the latent
        of particle k) or ``(N, B)`` for a likelihood that factors over B blocks (records):
        `\hat Z = \prod_b \frac1N\sum_j w_{jb}` and ``particles(k)`` builds the latent
        from one index per block (see `pymc_dp.samplers.latent.estimate_log_lik`).

    Returns
    -------
    (PMMHState, PMMHInfo)
    """
    theta_p, log_q = propose_theta(rng, state.theta)
    lp_p = log_prior(theta_p)
    if not np.isfinite(lp_p):  # outside the support: α = 0, no need to estimate
        return state, PMMHInfo(False, 0.0, -math.inf)
    log_w, particles = estimate(rng, theta_p)
    ll_p = estimate_log_lik(log_w)
    if not np.isfinite(ll_p):
        return state, PMMHInfo(False, 0.0, ll_p)
    accepted, prob = mh_accept(rng, log_q + lp_p + ll_p - state.log_prior - state.log_lik)
    if accepted:
        latent = pick_particle(rng, log_w, particles)
        return PMMHState(theta_p, lp_p, ll_p, latent), PMMHInfo(True, prob, ll_p)
    return state, PMMHInfo(False, prob, ll_p)


class PMMH(RandomWalkThetaStep):
    r"""Pseudo-marginal MH on θ integrating the latent data (seed 001, Algorithm 5).

    ``pdp.PMMH([theta])`` finds the latent records (or latent statistic) feeding the
    ``DPObserved`` nodes that depend on θ and owns them too: ``pm.sample(step=[pdp.PMMH([theta])])``
    assigns no other sampler to them. The importance proposal is the latent's conditional prior
    given θ' (drawn from the PyMC graph), so the weights are the release densities.

    When the latent splits into several record groups (`pymc_dp.samplers.records.record_groups`)
    that no release reads together and whose records do not depend on each other (e.g. two hospitals
    each releasing a noisy sum of their own records, sharing θ), the groups are independent given θ
    and the estimate is the product over groups of per-group particle averages
    `\prod_g \frac1N\sum_j g(s_g \mid x_g^{(j)})` (unbiased; the variance of the log adds up
    over groups from N particles each, instead of one average of products). Otherwise (a release
    reading two groups, or records of one group feeding another's) the estimate stays joint.
    ``step.factorisation`` says which estimate is used.

    When every release of the latent is local (one per record, ``pdp.Local``) the likelihood
    factors over records and is estimated as `\prod_i \frac1N \sum_j g(s_i \mid x_i^{(j)})`
    (unbiased; the variance of its log grows like n/N instead of exponentially in n), and for a
    single discrete record variable with a small finite support (Bernoulli, Categorical, Binomial,
    DiscreteUniform; at most ``max_support`` values) as the exact
    `\prod_i \sum_x f(x \mid \theta) g(s_i \mid x)` (zero variance: marginal MH).

    Parameters
    ----------
    vars : list
        θ, the continuous parameters proposed jointly (must include every free parent of the
        latent data, since the likelihood estimate is carried between iterations).
    n_particles : int
        N, draws of the latent data per likelihood estimate (per record when factorised).
    latent : list, optional
        The latent variables to integrate; default: found from the ``DPObserved`` nodes.
    proposal : callable, optional
        Importance proposal ``proposal(rng, point, n_particles) -> (particles, log_q)`` replacing
        the conditional prior: ``particles`` holds one array ``(n_particles, *shape)`` per latent
        variable in PyMC's value space (given the θ' in ``point``) and ``log_q`` their
        ``(n_particles,)`` log proposal densities there. The weights become
        `f(x|\theta') g(s_{dp}|x) / q(x)`. Useful for a latent statistic whose prior is much
        wider than the release noise. Not factorised.
    proposal_scale : float or array, optional
        Initial random-walk standard deviation per θ coordinate (value space); tuned during
        warm-up towards ``target_accept``. Default 0.5.
    target_accept : float
        Warm-up target of the acceptance probability.
    max_support : int
        Largest finite record support summed exactly (local releases).

    Sampler stats
    -------------
    ``dp_accept``: acceptance probability min(1, α); ``dp_accepted``: move accepted;
    ``dp_loglik_estimate``: the carried log Ẑ(θ); ``dp_scale``: mean proposal scale;
    ``dp_loglik_factors``: number of independently estimated factors of Ẑ (records, groups or 1).
    Check N with `pymc_dp.diagnostics.loglik_estimate_sd` (sd of log Ẑ ≈ 1 is good).
    """

    name = "pmmh"
    dp_stats = {
        "dp_accept": (float, []),
        "dp_accepted": (bool, []),
        "dp_loglik_estimate": (float, []),
        "dp_scale": (float, []),
        "dp_loglik_factors": (int, []),
    }

    def __init__(
        self,
        vars,
        *,
        n_particles: int = 10,
        latent=None,
        proposal=None,
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

        self.n_particles = check_n_particles(n_particles, "PMMH")
        model = pm.modelcontext(model)
        self.target = LatentTarget(
            model,
            vars,
            latent=latent,
            owner="PMMH",
            own_parents=True,
            max_support=max_support,
            rng=rng,
        )
        self.vars = list(self.target.theta_values) + list(self.target.block.value_vars)
        if proposal is not None and not callable(proposal):
            raise TypeError(
                f"proposal must be callable as proposal(rng, point, n_particles) -> (particles, "
                f"log_q), got proposal={proposal!r}. Leave it None to draw from the conditional prior."
            )
        self.proposal = proposal
        if proposal is None and self.target.support is None:
            self.target.compile_batch_draw(self.n_particles)
        self._init_walk(proposal_scale, target_accept, model, rng)

    def start_chain(self):
        self._state = None
        super().start_chain()

    # ------------------------------------------------------------------------------------------
    @property
    def factorisation(self) -> str:
        """How the likelihood is estimated: ``"support"`` (exact sum over a finite record support),
        ``"records"`` (product over records, local releases), ``"groups"`` (product over
        independent record groups), ``"joint"`` (one average of whole-latent particles; always with
        a user ``proposal``). Also ``dp_loglik_factors`` (number of factors) per draw."""
        return "joint" if self.proposal is not None else self.target.factorisation

    @property
    def factorised(self) -> bool:
        """Whether the likelihood estimate is a product over records (local releases)."""
        return self.factorisation in ("support", "records")

    @property
    def n_factors(self) -> int:
        r"""Number of independently estimated factors of `\hat Z` (1 for a joint estimate)."""
        return {
            "support": self.target.block.n,
            "records": self.target.block.n,
            "groups": len(self.target.groups),
        }.get(self.factorisation, 1)

    def estimator(self, base_point):
        """The kernel's ``estimate(rng, θ) -> (log_w, particles)`` at the other values of ``base_point``."""
        target = self.target

        def estimate(rng, theta):
            pt_theta = target.with_theta(base_point, theta)
            if self.proposal is None:
                return target.particle_weights(pt_theta, self.n_particles)
            # user importance proposal: w = f(x|θ') g(s_dp|x) / q(x), one joint estimate
            parts, log_q = self.proposal(rng, pt_theta, self.n_particles)
            parts = [np.asarray(p, dtype=v.dtype) for p, v in zip(parts, target.block.value_vars)]
            total, per, rec = target.evaluate(pt_theta, parts)
            log_w = total + per.sum(axis=1) + rec.sum(axis=1) - np.asarray(log_q, dtype=float)
            return log_w, [[p[j] for p in parts] for j in range(self.n_particles)]

        return estimate

    def loglik_estimate(self, point, rng) -> float:
        r"""One estimate `\log\hat Z(\theta)` of `\log p(s_{dp} \mid \theta)` at ``point``."""
        target = self.target
        target.reseed(rng)  # the particle draws come from rng: reproducible
        return estimate_log_lik(self.estimator(point)(rng, target.theta_flat(point))[0])

    def _init_state(self, point):
        target = self.target
        theta = target.theta_flat(point)
        log_w, particles = self.estimator(point)(self.rng, theta)
        latent = pick_particle(self.rng, log_w, particles)
        return PMMHState(theta, target.log_rest(point), estimate_log_lik(log_w), latent)

    def _matches(self, point):
        s = self._state
        if s is None or not np.array_equal(s.theta, self.target.theta_flat(point)):
            return False
        return all(np.array_equal(a, b) for a, b in zip(s.latent, self.target.latent_of(point)))

    def step(self, point):
        target = self.target
        if not self._matches(point):
            self._state = self._init_state(point)
        # log η depends on variables other samplers may move: evaluate it at the current point
        state = self._state._replace(
            log_prior=target.log_rest(target.with_theta(point, self._state.theta))
        )

        def log_prior(theta):
            return target.log_rest(target.with_theta(point, theta))

        state, info = pmmh_kernel(
            self.rng,
            state,
            propose_theta=self.propose_theta,
            log_prior=log_prior,
            estimate=self.estimator(point),
        )
        self.adapt(info.accept_prob)
        self._state = state
        new = target.with_latent(target.with_theta(point, state.theta), state.latent)
        new = {name: new[name] for name in target.theta_names + target.block.value_names}
        return {**point, **new}, [
            self.stats(
                dp_accept=float(info.accept_prob),
                dp_accepted=bool(info.accepted),
                dp_loglik_estimate=float(state.log_lik),
                dp_scale=self.mean_scale,
                dp_loglik_factors=self.n_factors,
            )
        ]
