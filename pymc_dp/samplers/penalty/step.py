r"""DP penalty Metropolis–Hastings on confidential data: the PyMC adapter (seed 002, Räisä 2020, §3.1; Yıldırım & Ermiş 2019).

The data holder runs MCMC on the confidential records and releases the draws. Each iteration
proposes `\theta'`, computes the per-record log-likelihood ratios
`r_i = \ln p(x_i\mid\theta') - \ln p(x_i\mid\theta)`, clips them to
`\pm L\lVert\theta'-\theta\rVert_2`, and releases

```text
\lambda^* = \sum_i \operatorname{clip}(r_i) + \ln\frac{p(\theta')}{p(\theta)}
+ \ln\frac{q(\theta\mid\theta')}{q(\theta'\mid\theta)} + \xi,\qquad
\xi \sim \mathcal N(0, \sigma^2),\quad \sigma = z\, c(\theta,\theta'),\quad
c = 2L\lVert\theta'-\theta\rVert_2 ,
```

then accepts with the penalty probability `\min\{1, \exp(\lambda^* - \sigma^2/2)\}` (Ceperley &
Dewing 1999). Because `\sigma` is symmetric in `(\theta,\theta')`, the chain leaves the
posterior of the *clipped* likelihood invariant — the exact posterior when no ratio is clipped
(the ``dp_clipped_fraction`` stat reports how often clipping bites). Every iteration is a Gaussian
mechanism with noise multiplier `z` (the ``tau=`` argument) on `\lambda/c` (sensitivity
1 under substitution of a record): `pymc_dp.accounting` composes them (seed 002 Theorems 6–7).

Layout (dependencies point one way): `kernel` holds the one kernel
``penalty_kernel(rng, state, target, params) -> (state, info)`` with the symmetric proposals
("rw", "coordinate", "guided") and the penalty test; `mala` (MALA
proposal), `subsampled` (batch test with the variance correction) and
`barker` (Barker test) plug into it;
`target` compiles a PyMC model's per-record log-likelihood;
`options` checks the arguments; this module is the PyMC step;
`publish` strips what must not be published (all in `pymc_dp.samplers.penalty`).

Privacy notes: the released draws, the accept flags and the acceptance probabilities are
post-processing of the noisy ratios; the noise sd is a data-free function of the move;
``dp_clipped_fraction`` counts records without noise — keep it with the curator
(`publishable`). Chains start from data-independent points
(``init=``), and no other step may touch the confidential data.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
from pymc.step_methods.metropolis import tune as metropolis_tune
from scipy.special import ndtr

from pymc_dp.accounting.ledger import ChainLedger
from pymc_dp.accounting.penalty_plan import budget_iterations
from pymc_dp.accounting.spent import (
    PrivacyBudgetExceeded,
    epsilon_of_event,
    iteration_event,
    run_event,
)
from pymc_dp.samplers.penalty import options as opt
from pymc_dp.samplers.base import DPStep
from pymc_dp.samplers.penalty.kernel import (
    PenaltyInfo,
    PenaltyParams,
    PenaltyState,
    advance,
    clipped_diff_sum,
    clipped_sum,
    penalty_accept,
    penalty_init,
    penalty_kernel,
    propose,
)
from pymc_dp.samplers.penalty.target import ModelTarget

__all__ = [
    "BudgetExhaustedWarning",
    "ClippingWarning",
    "PenaltyInfo",
    "PenaltyMH",
    "PenaltyParams",
    "PenaltyState",
    "advance",
    "clipped_diff_sum",
    "clipped_sum",
    "penalty_accept",
    "penalty_init",
    "penalty_kernel",
    "propose",
]

PROPOSALS = opt.PROPOSAL_NAMES
ACCEPTANCES = opt.ACCEPTANCES


NOISE_OPTIMUM = 2.4  # noise sd of the log ratio that maximises σ²·2Φ(−σ/2)


class ClippingWarning(UserWarning):
    """More than the tolerated fraction of log-likelihood ratios were clipped."""


class BudgetExhaustedWarning(UserWarning):
    """PenaltyMH reached its privacy budget: the rest of the chain repeats its last state, marked."""


def _full_then_index(loglik):
    def wrapped(theta, idx=None):
        full = loglik(theta)
        return full if idx is None else full[idx]

    return wrapped


class PenaltyMH(DPStep):
    r"""Data holder's DP penalty Metropolis–Hastings step (seed 002 §3.1, §4.1, §4.2).

    Parameters
    ----------
    vars : list, optional
        Continuous free variables to update (default: all of them — any variable left to another
        step would be sampled from the confidential data without privacy).
    lipschitz : float
        L: per-record log-likelihood ratios are clipped to `\pm L\lVert\theta'-\theta\rVert_2`
        (θ in the transformed space of the value variables).
    tau : float
        Noise multiplier: noise standard deviation over the sensitivity of the released ratio.
        Plan it from a budget with `pymc_dp.accounting.penalty_tau`.
    scale : float or array
        Proposal standard deviation (per coordinate); the step size σ_p for ``proposal="mala"``.
    proposal : {"rw", "coordinate", "guided", "mala"}
    observed : list, optional
        Observed variables holding the confidential records (default: all observed variables).
    batch_size : int, optional
        Subsampled penalty (seed 002 §4.1) with batches of this size drawn without replacement.
    temperature : float
        Likelihood tempering T: the chain targets `p(\theta)\prod_i p(x_i\mid\theta)^T`
        (full data, Barker and subsampled; T = n0 / n in the seed's §4.1). The released ratio is
        `T\sum_i\operatorname{clip}(r_i) + \dots`, with sensitivity `2TL\lVert\theta'-\theta\rVert_2`
        under substitution of one record; the noise sd scales with it, so the noise multiplier
        and the privacy accounting are unchanged. Refused with ``proposal="mala"``.
    grad_bound, mala_a, total_grad_bound : float
        DP MALA: per-record gradient clipping norm `L_g`, proposal variance factor ``a``
        (variance `a\sigma_p^2`), optional bound `L_S` on the total gradient norm.
    budget : (epsilon, delta), optional
        Privacy budget of the whole run, every chain included. The step allows the iterations
        `pymc_dp.accounting.budget_iterations` gives (the accountant of `penalty_tau`). When it is
        reached the step stops reading the data: the rest of the chain repeats its last state with
        the sample stat ``dp_budget_exhausted=True`` (a `BudgetExhaustedWarning` says so), so the
        draws already paid for are kept; `privacy_spent(idata)` gives the ε actually spent.
    chains : int, optional
        With ``budget``: the number of chains of the run. Each chain may then run
        ``iterations // chains`` iterations, wherever it runs, so the budget holds across
        processes. Required with ``budget`` when PyMC runs chains in worker processes
        (``cores > 1``); without it one object counts every chain it runs in its process.
    iterations : int, optional
        With ``budget``: the planned data-touching iterations of the run, ``chains * (tune + draws)``.
        Checked against the budget at construction — before sampling, on every PyMC version
        (`PrivacyBudgetExceeded` if it does not fit). Default: all the
        budget allows.
    init : {"prior", "model"} or (lower, upper)
        Where each chain starts: ``"prior"`` (default) a draw from the prior, ``(lower, upper)`` a
        uniform draw in that public box of θ (transformed space), both from the step's generator —
        dispersed and data-independent; ``"model"`` the point PyMC passes (the model's initial
        point, the same for every chain).
    accountant : {"pld", "rdp"}
        Accountant for the budget ("rdp" is used for subsampled runs).
    acceptance : {"penalty", "barker"}
        ``"penalty"`` (default): penalty test min{1, exp(λ* − σ²/2)}. ``"barker"``: DP Barker test
        (seed 002 §3.2, `pymc_dp.samplers.penalty.barker`): the noise is topped up to the fixed
        sd ``barker_sigma`` and a fitted Gaussian-mixture correction makes the test Barker's
        1/(1+e^{−λ}) up to ``barker_error``. Proposals "rw", "coordinate", "guided"; full data only.
    barker_sigma : float
        Total Gaussian noise sd of the Barker test, in [0.1, 1.25]. Proposals whose privacy noise
        τ·2L‖θ′−θ‖ exceeds it are rejected without reading the data (``dp_noise_sd > barker_sigma``).
    clip_warning : float
        Warn (`ClippingWarning`) once per chain when the running clipped fraction exceeds it.
    tune_interval : int
        During tuning, rescale the proposal every ``tune_interval`` iterations from the acceptance
        rate (PyMC ``Metropolis`` rule; 0 disables). The accept flags are private outputs and the
        per-iteration privacy does not depend on the scale, so tuning costs no extra privacy;
        the scale restarts from ``scale`` for each chain. Not applied to ``proposal="mala"``,
        whose step size enters the privacy of the proposal.

    Data: the step reads the records from the model's data containers before every iteration
    (identity check of the containers' storage, about a microsecond), so after
    ``pm.set_data({...})`` the next iteration — and every later ``pm.sample`` call — samples the
    posterior of the new data; its cached per-record log-likelihood is rebuilt. A new number of
    records is taken as is on the full data (``n`` and ``dp_n_records`` follow it; the per-iteration
    privacy event does not depend on n) and refused with ``batch_size`` (the subsampling rate
    ``batch_size/n`` was accounted at construction).

    Sampler stats
    -------------
    ``dp_accepted``, ``dp_accept_prob`` (acceptance probability given the noisy ratio), ``dp_clipped_fraction``,
    ``dp_noise_sd``, ``dp_noise_multiplier``, ``dp_grad_noise_multiplier`` (NaN unless MALA),
    ``dp_n_records``, ``dp_batch_size``, ``dp_iterations`` (data-touching iterations of the chain,
    tuning included), ``dp_coordinate``, ``dp_scale`` (mean proposal scale, adapted during tuning),
    ``dp_budget_exhausted`` (True on the iterations after the budget was reached: no data read,
    the last state repeated; public — a function of the iteration count and the declared budget).
    ``dp_clipped_fraction`` is not privatised: publish with
    `publishable`, which drops it.
    """

    name = "penalty_mh"
    dp_stats = {
        "dp_accepted": (bool, []),
        "dp_accept_prob": (float, []),
        "dp_clipped_fraction": (float, []),
        "dp_noise_sd": (float, []),
        "dp_noise_multiplier": (float, []),
        "dp_grad_noise_multiplier": (float, []),
        "dp_n_records": (int, []),
        "dp_batch_size": (int, []),
        "dp_iterations": (int, []),
        "dp_coordinate": (int, []),
        "dp_scale": (float, []),
        "dp_budget_exhausted": (bool, []),
    }

    def __init__(
        self,
        vars=None,
        *,
        lipschitz,
        tau,
        scale=1.0,
        proposal="rw",
        observed=None,
        batch_size=None,
        temperature=1.0,
        grad_bound=None,
        mala_a=1.0,
        total_grad_bound=None,
        budget=None,
        accountant="pld",
        clip_warning=0.1,
        tune_interval=100,
        acceptance="penalty",
        barker_sigma=1.0,
        chains=None,
        iterations=None,
        init="prior",
        model=None,
        rng=None,
        blocked=True,
    ):
        import pymc as pm

        model = pm.modelcontext(model)
        self.lipschitz, self.noise_multiplier, temperature = opt.check_core(
            lipschitz, tau, temperature
        )
        opt.check_combination(proposal, acceptance, batch_size, grad_bound, temperature)
        opt.check_grad_bound_use(proposal, grad_bound, mala_a, total_grad_bound)
        self.proposal, self.acceptance, self.temperature = proposal, acceptance, temperature
        self.vars = opt.select_vars(model, vars)
        self.rv_names = [model.values_to_rvs[v].name for v in self.vars]
        scale_in = opt.check_scale(scale, proposal)
        self.budget = opt.check_budget(budget)
        self.tune_interval = opt.check_tune_interval(tune_interval, proposal)
        self.clip_warning = opt.check_clip_warning(clip_warning)
        self._build_target(model, observed, batch_size)
        self.scale = opt.broadcast_scale(scale_in, self.d)
        self._scale0 = self.scale.copy()
        kind = opt.build_proposal(proposal, scale_in, grad_bound, mala_a, total_grad_bound)
        test = opt.build_test(acceptance, self.batch_size, barker_sigma)
        self.mala = kind if proposal == "mala" else None
        self.barker_correction = getattr(test, "correction", None)
        self.barker_error = None if self.barker_correction is None else self.barker_correction.error
        self.grad_noise_multiplier = opt.grad_noise_multiplier(kind)
        self._grad_z_stat = opt.nan_if_none(self.grad_noise_multiplier)
        self.params = PenaltyParams(
            kind, self.scale, self.lipschitz, self.noise_multiplier, test, self.temperature
        )
        self._plan_budget(accountant, chains, iterations)
        self._init = opt.check_init(init, self.d)
        self._init_fn = opt.prior_init_fn(model) if self._init == "prior" else None
        self._pid = os.getpid()
        self.budget_exhausted = False
        self.total_iterations = 0
        self._state = None
        self._init_step(rng)

    @property
    def tau(self) -> float:
        """The ``tau=`` argument: the noise multiplier (noise sd over sensitivity)."""
        return self.noise_multiplier

    @property
    def n(self) -> int:
        """Number of confidential records in the data the step currently reads."""
        return self.target.n

    def _build_target(self, model, observed, batch_size):
        self.target = ModelTarget(model, self.vars, observed, need_grad=self.proposal == "mala")
        self.batch_size = opt.check_batch_size(batch_size, self.n)
        self.target.compile()
        self._n_planned = self.n  # the record count the subsampling accounting was planned with
        start = model.initial_point()
        self.target.set_point(start)
        self.target.check_record_terms()
        self.d = self.target.theta_of(start).size
        if self.batch_size is not None and not self.target.batch_ok():
            self.target.loglik = _full_then_index(self.target.loglik)
            warnings.warn(
                "the likelihood depends on per-record constants besides the observed data, so "
                "each batch is evaluated on the full data and indexed (O(n) per iteration).",
                UserWarning,
                stacklevel=3,
            )

    def _plan_budget(self, accountant, chains, iterations):
        self.accountant = "rdp" if self.batch_size is not None else opt.check_accountant(accountant)
        self.max_iterations = self.run_cap = self.chain_cap = self._ledger = None
        self.chains, planned = opt.check_run_plan(chains, iterations, self.budget)
        if self.budget is None:
            return
        eps, delta = self.budget
        self.max_iterations = budget_iterations(
            self.noise_multiplier,
            eps,
            delta,
            n=None if self.batch_size is None else self.n,
            batch_size=self.batch_size,
            grad_noise_multiplier=self.grad_noise_multiplier,
            accountant=self.accountant,
        )
        if planned is not None and planned > self.max_iterations:
            raise PrivacyBudgetExceeded(
                opt.plan_message(self.budget, self.max_iterations, self.noise_multiplier, planned)
            )
        self.run_cap = self.max_iterations if planned is None else planned
        if self.chains is not None:
            self.chain_cap = self.run_cap // self.chains
        # the chains' shares (or, without chains=, the whole run: one holder), counted across
        # processes, pm.sample calls and copies of the step. The slot files outlive the step: a
        # copy pickled before it ran and loaded after it was collected finds its shares taken.
        self._ledger = ChainLedger(1 if self.chains is None else self.chains)
        self._holder = None  # without chains=: whether this object holds the run (claimed once)

    def _sync_data(self) -> bool:
        """Follow ``pm.set_data``: read the current records; True if any data container changed.

        Full data: each iteration's event (a Gaussian mechanism with noise multiplier z) does not
        depend on n, so a new record count is taken as is (``n``, ``dp_n_records``, the MALA
        sensitivity follow it). Subsampled: the rate batch_size/n is part of the accounting and of
        the budget planned at construction, so another n is refused.
        """
        changed = self.target.refresh(check=self._check_n)
        if changed:  # new records or hyperparameters: one record, one term, checked again
            self.target.check_record_terms()
        return changed

    def _check_n(self, n):
        if self.batch_size is not None and n != self._n_planned:
            raise ValueError(
                f"batch_size={self.batch_size} was planned with n={self._n_planned} records (the "
                f"subsampling rate batch_size/n enters every iteration's privacy accounting), but the "
                f"observed data {self.target.obs_names} now hold n={n} records after pm.set_data. "
                f"With batch_size the record count must stay n={self._n_planned}; build a new "
                "pdp.PenaltyMH for data with another number of records."
            )
        if self.batch_size is None and n < 1:
            raise ValueError(
                f"the observed data {self.target.obs_names} hold n={n} records after pm.set_data; "
                "PenaltyMH needs at least one confidential record. Set data with records on axis 0."
            )

    # --------------------------------------------------------------- accounting
    def iteration_event(self):
        """dp_accounting event of one iteration of this step."""
        return iteration_event(
            self.noise_multiplier,
            grad_noise_multiplier=self.grad_noise_multiplier,
            n_records=self.n,
            batch_size=self.batch_size,
        )

    def dp_event(self):
        """Event of every iteration this object ran in this process (all chains)."""
        return run_event(self.iteration_event(), self.total_iterations)

    def epsilon_spent(self, delta, accountant=None):
        return epsilon_of_event(self.dp_event(), delta, accountant=accountant or self.accountant)

    # --------------------------------------------------------------- DPStep hooks
    def _refuse_unplanned_worker(self) -> None:
        if self.budget is not None and self.chains is None and os.getpid() != self._pid:
            raise ValueError(opt.WORKER_BUDGET_MESSAGE)

    def set_rng(self, rng) -> None:  # PyMC <= 6.2
        self._refuse_unplanned_worker()
        super().set_rng(rng)

    def setup_chain(self, rng, tune, draws) -> None:  # PyMC >= 6.3
        self._refuse_unplanned_worker()
        super().setup_chain(rng, tune, draws)

    def start_chain(self):
        """Per-chain reset: kernel state, counters, clipping warning and the adapted scale."""
        self._state = None
        self._started = False
        self._slot = None  # the chain's share of the budget (`ChainLedger`), claimed at its start
        self._exhausted_warned = False
        self._sync_data()  # refuse incompatible data before the chain touches them
        self._chain_iters = 0
        self._chain_clipped = 0.0
        self._warned = False
        self._window_acc = 0
        self._window_noise = [0.0, 0.0]  # Σ 2Φ(−σ_i/2), Σ σ_i over the tuning window
        self._set_scale(self._scale0.copy())

    def plan_chain(self, tune, draws):
        """Refuse a chain that cannot fit the budget before it touches the data (PyMC ≥ 6.3).

        Raised only while no iteration of this object has run (so no trace is lost); a later chain
        that does not fit runs until the budget and is marked (``dp_budget_exhausted``).
        """
        if self.max_iterations is None or tune + draws <= self._allowance():
            return
        if self.total_iterations == 0:
            raise PrivacyBudgetExceeded(self._budget_message(tune + draws))
        self._warn_exhausted(planned=tune + draws)

    def _allowance(self) -> int:
        """Iterations this chain may still run within the budget."""
        left = self.run_cap - self.total_iterations
        if self.chain_cap is not None:
            left = min(left, self.chain_cap - self._chain_iters)
        if self._slot is False:  # every share went to earlier chains (or copies of the step)
            left = 0
        return max(left, 0)

    def __getstate__(self):
        """A copy (pickle, deepcopy, PyMC's worker processes) holds no share: it claims its own
        from the ledger when it runs, so a copy made after this step ran, or of a step still
        running, cannot spend the budget again."""
        state = dict(self.__dict__)
        if state.get("_ledger") is not None:
            state["_slot"] = None
            state["_holder"] = None
        return state

    def _claim_share(self) -> None:
        """At a chain's first iteration: take one of the ``chains`` shares (`ChainLedger`, across
        processes, pm.sample calls and copies); without one the chain reads no data (marked,
        warned). Without chains=, the object's first iteration takes the run's one slot."""
        if self.chains is None:
            if self._holder is None:
                self._holder = self._ledger.claim() is not None
                if not self._holder:
                    self._exhausted_warned = True
                    warnings.warn(
                        "PenaltyMH: another copy of this step (pickled, deep-copied or loaded "
                        "from disk) has already run on its budget, so this one reads no data and "
                        "repeats its start, marked dp_budget_exhausted=True. A copy of a step "
                        "shares its budget; build a new step for a new budget.",
                        BudgetExhaustedWarning,
                        stacklevel=3,
                    )
            self._slot = self._holder
            return
        self._slot = self._ledger.claim() is not None
        if not self._slot:
            self._exhausted_warned = True
            warnings.warn(
                f"PenaltyMH was declared for chains={self.chains}, and {self.chains} chains of "
                "this step have already started (pm.sample(chains=...) above the declared number, "
                "or the same step in another pm.sample call): each share of the budget is taken, "
                "so this chain reads no data and repeats its start, marked "
                "dp_budget_exhausted=True. Declare chains= (and iterations=) for every chain the "
                "step will run, or build a new step for a new budget.",
                BudgetExhaustedWarning,
                stacklevel=3,
            )

    def _set_scale(self, scale):
        self.scale = scale
        self._scale_mean = float(np.mean(scale))
        self.params = self.params._replace(scale=scale)

    def _budget_message(self, wanted):
        eps, delta = self.budget
        share = (
            ""
            if self.chain_cap is None
            else f" ({self.chain_cap} per chain for chains={self.chains})"
        )
        return (
            f"privacy budget exceeded: budget=(epsilon={eps}, delta={delta}) allows "
            f"{self.run_cap} PenaltyMH iterations{share}, {self.total_iterations} already ran and "
            f"{wanted} more were requested. Raise tau, lower tune+draws, or declare a larger budget."
        )

    def _warn_exhausted(self, planned=None):
        if self._exhausted_warned:
            return
        self._exhausted_warned = True
        warnings.warn(
            opt.exhausted_message(self._chain_iters, self.total_iterations, planned),
            BudgetExhaustedWarning,
            stacklevel=3,
        )

    # --------------------------------------------------------------- iteration
    def _current_state(self, point):
        t = self.target
        changed = self._sync_data() | t.set_point(point)  # both run: new data rebuild the cache
        st = self._state
        theta = t.theta_of(point)
        if st is not None and not changed and np.array_equal(st.theta, theta):
            return st
        if st is not None and st.direction.size == self.d:
            direction = st.direction
        else:
            direction = np.where(self.rng.random(self.d) < 0.5, -1.0, 1.0)
        return penalty_init(t, theta, self.params, direction)

    def _start_theta(self, point):
        """The chain's data-independent start: a prior draw, a draw in the declared box, or the point."""
        if self._init == "model":
            return self.target.theta_of(point)
        if self._init == "prior":
            seed = int(self.rng.integers(2**31 - 1))
            return self.target.theta_of({**point, **self._init_fn(seed)})
        lower, upper = self._init
        return lower + (upper - lower) * self.rng.random(self.d)

    def _frozen(self, point):
        """An iteration past the budget: no data read, the last state repeated, marked."""
        self.budget_exhausted = True
        self._warn_exhausted()
        theta = self.target.theta_of(point) if self._state is None else self._state.theta
        nan = float("nan")
        stats = self.stats(
            dp_accepted=False,
            dp_accept_prob=nan,
            dp_clipped_fraction=nan,
            dp_noise_sd=nan,
            dp_noise_multiplier=self.noise_multiplier,
            dp_grad_noise_multiplier=self._grad_z_stat,
            dp_n_records=self.n,
            dp_batch_size=self.n if self.batch_size is None else self.batch_size,
            dp_iterations=self._chain_iters,
            dp_coordinate=-1,
            dp_scale=self._scale_mean,
            dp_budget_exhausted=True,
        )
        return {**point, **self.target.point_of(theta)}, [stats]

    def step(self, point):
        if self._ledger is not None and self._slot is None:
            self._claim_share()
        if self.max_iterations is not None and self._allowance() == 0:
            return self._frozen(point)
        if not self._started:
            self._started = True
            self._state = None
            point = {**point, **self.target.point_of(self._start_theta(point))}
        st, info = penalty_kernel(self.rng, self._current_state(point), self.target, self.params)
        self._state = st
        self.total_iterations += 1
        self._chain_iters += 1
        self._chain_clipped += info.clipped_fraction
        self._maybe_warn()
        self._maybe_tune(info.accepted, info.noise_sd)
        stats = self.stats(
            dp_accepted=bool(info.accepted),
            dp_accept_prob=float(info.accept_prob),
            dp_clipped_fraction=float(info.clipped_fraction),
            dp_noise_sd=float(info.noise_sd),
            dp_noise_multiplier=self.noise_multiplier,
            dp_grad_noise_multiplier=self._grad_z_stat,
            dp_n_records=self.n,
            dp_batch_size=self.n if self.batch_size is None else self.batch_size,
            dp_iterations=self._chain_iters,
            dp_coordinate=int(info.coordinate),
            dp_scale=self._scale_mean,
            dp_budget_exhausted=False,
        )
        return {**point, **self.target.point_of(st.theta)}, [stats]

    def _maybe_tune(self, accepted, noise_sd):
        """Warm-up adaptation of the proposal scale (every ``tune_interval`` iterations).

        PyMC's `Metropolis` rule, applied to the acceptance rate *relative to what the privacy
        noise alone allows* (the penalty test accepts a zero-ratio move with probability
        2Φ(−σ/2), σ the iteration's noise sd — a data-free function of θ, θ′), and capped at the
        scale whose mean noise sd is `NOISE_OPTIMUM` (2.4, where σ²·2Φ(−σ/2), the mean squared
        accepted move, peaks). When the noise dominates (large τ) the scale settles at that
        cap instead of being shrunk by the noise's rejections; when the posterior is narrow the
        rule shrinks the scale as usual. The Barker test uses the plain rule.
        """
        if not (self.tune and self.tune_interval):
            return
        self._window_acc += bool(accepted)
        if self.acceptance == "penalty" and np.isfinite(noise_sd):
            self._window_noise[0] += 2.0 * ndtr(-0.5 * noise_sd)
            self._window_noise[1] += noise_sd
        if self._chain_iters % self.tune_interval:
            return
        rate = self._window_acc / self.tune_interval
        allowed, sigma_sum = self._window_noise
        if allowed > 0:
            rate = min(1.0, rate * self.tune_interval / allowed)
        new = np.asarray(metropolis_tune(self.scale, rate), dtype=float)  # PyMC Metropolis rule
        if sigma_sum > 0:
            new = np.minimum(new, self.scale * NOISE_OPTIMUM * self.tune_interval / sigma_sum)
        self._set_scale(new)
        self._window_acc = 0
        self._window_noise = [0.0, 0.0]

    def _maybe_warn(self):
        if self._warned or self._chain_iters < 50:
            return
        frac = self._chain_clipped / self._chain_iters
        if frac > self.clip_warning:
            self._warned = True
            warnings.warn(
                f"PenaltyMH clipped more than clip_warning={self.clip_warning} of the per-record "
                "log-likelihood ratios of this chain so far (the fraction itself, sample stat dp_clipped_fraction, is a noise-free statistic of "
                "the records: keep it with the curator). The chain targets the clipped posterior, not the exact one. The proposal scale does "
                "not change this fraction (a ratio and its bound L*||theta'-theta|| shrink together). "
                "Raise lipschitz to a bound derived from declared bounds of the data (e.g. "
                "pymc_dp.accounting.lipschitz_normal_regression; the noise grows with it: replan the "
                "scale with plan_penalty), or clip the records to those public bounds (fewer "
                "records with steep log-likelihoods).",
                ClippingWarning,
                stacklevel=2,
            )
