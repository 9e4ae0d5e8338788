"""The θ proposal of PMMH and MHAAR: a Gaussian random walk in PyMC's value space, tuned in warm-up.

Pure functions of a `RandomWalkState` (per-coordinate log scale, adaptation counter): the
Robbins–Monro update (`pymc_dp.samplers.adapt`) moves the log scale towards a target acceptance probability during warm-up
only, within [e^-5, e^3] times the initial scale.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pymc_dp._checks import check_count
from pymc_dp.samplers.adapt import robbins_monro
from pymc_dp.samplers.base import DPStep
from pymc_dp.samplers.points import layout_point

__all__ = [
    "RandomWalkThetaStep",
    "RandomWalkState",
    "random_walk_propose",
    "random_walk_adapt",
    "initial_scale",
    "clip_scale",
    "check_n_particles",
]


def check_n_particles(n_particles, owner):
    return check_count(
        n_particles,
        name="n_particles",
        fix=f"{owner} averages over n_particles draws of the latent data; use e.g. n_particles=10.",
    )


class RandomWalkState(NamedTuple):
    """Per-coordinate proposal scale and the adaptation counter."""

    log_scale: np.ndarray
    n_adapt: int


def random_walk_propose(rng, theta, rw_state: RandomWalkState):
    """Return ``(θ', log q(θ|θ') - log q(θ'|θ))`` (= 0 for the symmetric walk)."""
    return theta + np.exp(rw_state.log_scale) * rng.standard_normal(theta.shape), 0.0


def initial_scale(proposal_scale, target, model):
    """Initial random-walk standard deviations, one per θ coordinate (default 0.5)."""
    d = target.theta_flat(layout_point(model)).size
    if proposal_scale is None:
        return np.full(d, 0.5)
    scale = np.broadcast_to(np.asarray(proposal_scale, dtype=float), (d,)).copy()
    if not np.all(np.isfinite(scale) & (scale > 0)):
        raise ValueError(
            f"proposal_scale must be finite and > 0 for each of the {d} θ coordinates, got "
            f"proposal_scale={proposal_scale!r}. Give the random-walk standard deviation in "
            "PyMC's value space (log scale for positive parameters)."
        )
    return scale


def clip_scale(rw: RandomWalkState, init_scale):
    """Keep the tuned scale within [e^-5, e^3] times the initial one."""
    lo, hi = np.log(init_scale) - 5.0, np.log(init_scale) + 3.0
    return rw._replace(log_scale=np.clip(rw.log_scale, lo, hi))


def random_walk_adapt(rw_state: RandomWalkState, accept_prob: float, target: float):
    """`robbins_monro` step on the log scale towards the target acceptance (warm-up only)."""
    t = rw_state.n_adapt + 1
    return RandomWalkState(robbins_monro(rw_state.log_scale, accept_prob, target, t), t)


class RandomWalkThetaStep(DPStep):
    """Step base of the samplers that move θ by an adapted Gaussian random walk over a
    ``LatentTarget`` (PMMH, MHAAR): the initial scale, its per-chain reset and warm-up adaptation."""

    def _init_walk(self, proposal_scale, target_accept, model, rng) -> None:
        """End of ``__init__``: the walk's initial scale, then the first chain."""
        self.target_accept = float(target_accept)
        self._init_scale = initial_scale(proposal_scale, self.target, model)
        self._init_step(rng)

    def reseed(self, rng):
        self.target.reseed(rng)

    def start_chain(self):
        self._rw = RandomWalkState(np.log(self._init_scale), 0)

    def propose_theta(self, rng, theta):
        """θ' from the current walk: ``(θ', log q ratio = 0)``."""
        return random_walk_propose(rng, theta, self._rw)

    def adapt(self, accept_prob: float) -> None:
        """Warm-up only: move the scale towards ``target_accept`` (kept within its clip range)."""
        if self.tune:
            self._rw = clip_scale(
                random_walk_adapt(self._rw, accept_prob, self.target_accept), self._init_scale
            )

    @property
    def mean_scale(self) -> float:
        """The mean proposal standard deviation now in use (the ``dp_scale`` stat)."""
        return float(np.exp(self._rw.log_scale).mean())
