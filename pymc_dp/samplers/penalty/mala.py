r"""DP MALA: the penalty algorithm with a privatised Langevin proposal (seed 002, Räisä 2020, §4.2).

With per-record gradients clipped to norm `L_g`, `g(\theta) = \sum_i
\operatorname{clip}_{L_g}(\nabla\ln p(x_i\mid\theta))`, the proposal

```text
\theta' \sim \mathcal N\big(\theta + \tfrac12\sigma_p^2 g(\theta),\ a\sigma_p^2 I\big)
```

is a Gaussian mechanism on the drift (Lemma 2: `\rho_g = \sigma_p^2 L_g^2/(2a)`, noise
multiplier `\sqrt a/(\sigma_p L_g)`). The log ratio

```text
\lambda = \sum_i \operatorname{clip}(r_i) + \ln\frac{p(\theta')}{p(\theta)}
+ \ln\frac{q(\theta\mid\theta')}{q(\theta'\mid\theta)}
```

has sensitivity `c_l` of `pymc_dp.accounting.mala_sensitivity` (the seed's bound,
with `L_S` when given: `g` is then projected onto the ball of radius `L_S`, so the bound holds
on every data set rather than being trusted) and is released with noise `z c_l` (z the noise multiplier;
Lemma 3: `\rho_l = 1/(2z^2)`); acceptance is the penalty test. The drift is a deterministic
function of θ and the data, so the chain is an exact MH chain for the clipped-likelihood
posterior; gradient clipping changes only efficiency. Accounting: Theorem 10 (zCDP) or the
composition of both Gaussian events in ``dp_accounting``.

`MalaProposal` is the proposal plugged into
`penalty_kernel`: it evaluates the per-record gradients with
the log-likelihood, caches `g(\theta)` in the state, and adds the `q` ratio and its
share `c_l - 2L\lVert\theta'-\theta\rVert_2` of the sensitivity. Untempered only (T = 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pymc_dp.accounting.penalty_bounds import mala_sensitivity
from pymc_dp.samplers.penalty.kernel import Move, PenaltyState, Proposal, penalty_kernel

__all__ = ["MalaParams", "MalaProposal", "clipped_grad_sum", "log_q", "mala_kernel"]


def clipped_grad_sum(per_record_grad, bound, total_bound=None):
    """Sum over records of gradients rescaled to norm ≤ ``bound`` (rows of an (n, d) array), then
    rescaled to norm ≤ ``total_bound`` (`L_S`) when given.

    A row with a non-finite entry (a record outside a θ-dependent support) contributes 0, so every
    record's share stays within the bound whatever the model (the rule of
    `pymc_dp.samplers.penalty.kernel.clip_ratios` for the gradients). The sensitivity with
    `L_S` (`mala_sensitivity`) assumes ``‖g‖ ≤ L_S`` on every data set; the projection onto that
    ball makes it hold whatever the data (it is 1-Lipschitz, so one record still moves ``g`` by at
    most its own clipped share, and the drift's Gaussian mechanism keeps its sensitivity).
    """
    per_record_grad = np.asarray(per_record_grad, dtype=np.float64)
    bad = ~np.all(np.isfinite(per_record_grad), axis=1)
    if bad.any():
        per_record_grad = np.where(bad[:, None], 0.0, per_record_grad)
    norms = np.sqrt(np.einsum("ij,ij->i", per_record_grad, per_record_grad))
    factor = np.minimum(1.0, bound / np.maximum(norms, 1e-300))
    total = factor @ per_record_grad
    if total_bound is not None:
        norm = float(np.sqrt(np.dot(total, total)))
        if norm > total_bound:
            total = total * (total_bound / norm)
    return total


@dataclass(frozen=True)
class MalaProposal(Proposal):
    """σ_p (``step_size``), L_g (per-record gradient norm bound), a (variance factor), L_S (optional)."""

    step_size: float
    grad_bound: float
    a: float = 1.0
    total_grad_bound: float | None = None
    name = "mala"

    @property
    def grad_noise_multiplier(self) -> float:
        """Noise multiplier `\\sqrt a/(\\sigma_p L_g)` of the drift (seed 002 Lemma 2)."""
        return float(np.sqrt(self.a) / (self.step_size * self.grad_bound))

    def draw(self, rng, state: PenaltyState, params) -> Move:
        theta, s = state.theta, self.step_size
        prop = (
            theta + 0.5 * s * s * state.grad + np.sqrt(self.a) * s * rng.standard_normal(theta.size)
        )
        step = prop - theta
        return Move(prop, float(np.sqrt(np.dot(step, step))), -1)

    def evaluate(self, target, theta):
        ll, g = target.loglik_grad(theta)
        return ll, clipped_grad_sum(g, self.grad_bound, self.total_grad_bound)

    def q_sensitivity(self, params, move, n):
        # c_l without its 2 L ||θ'-θ|| term, which the acceptance test counts
        return float(
            mala_sensitivity(
                0.0,
                self.grad_bound,
                move.norm,
                self.step_size,
                self.a,
                n,
                total_grad_bound=self.total_grad_bound,
            )
        )

    def log_q_ratio(self, state, move, cache):
        return log_q(state.theta, move.theta, cache, self) - log_q(
            move.theta, state.theta, state.grad, self
        )


MalaParams = MalaProposal
"""Former name of `MalaProposal` (same fields)."""


def log_q(to, frm, grad_frm, mala: MalaProposal):
    """Log density (up to a constant) of the MALA proposal ``to`` given ``frm``."""
    s2 = mala.step_size**2
    diff = to - frm - 0.5 * s2 * grad_frm
    return -float(np.dot(diff, diff)) / (2.0 * mala.a * s2)


def mala_kernel(rng, state: PenaltyState, target, params, mala: MalaProposal):
    """One DP-MALA iteration (seed 002, Algorithm 3): `penalty_kernel` with ``mala`` as the
    proposal. ``state.grad`` caches g(θ)."""
    return penalty_kernel(rng, state, target, params._replace(proposal=mala))
