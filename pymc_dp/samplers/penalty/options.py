"""Argument checks and builders of `PenaltyMH`.

Each helper checks one group of keyword arguments (messages name the argument, the rule, the
value and the fix) and builds the kernel piece they configure: the proposal, the acceptance test,
the budget. `PenaltyMH.__init__` only calls them in order.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from pymc_dp._checks import check_count, check_delta, check_epsilon, check_positive
from pymc_dp.samplers.penalty.barker import BarkerTest, check_sigma, fit_correction
from pymc_dp.samplers.penalty.kernel import PROPOSALS, PenaltyTest
from pymc_dp.samplers.penalty.mala import MalaProposal
from pymc_dp.samplers.penalty.subsampled import SubsampledTest

__all__ = [
    "ACCEPTANCES",
    "PROPOSAL_NAMES",
    "broadcast_scale",
    "build_proposal",
    "build_test",
    "check_accountant",
    "check_batch_size",
    "check_budget",
    "check_clip_warning",
    "check_combination",
    "check_grad_bound_use",
    "check_core",
    "check_init",
    "check_run_plan",
    "check_scale",
    "check_tune_interval",
    "grad_noise_multiplier",
    "nan_if_none",
    "prior_init_fn",
    "select_vars",
]

PROPOSAL_NAMES = (*PROPOSALS, "mala")
ACCEPTANCES = ("penalty", "barker")


def check_core(lipschitz, tau, temperature):
    """``(lipschitz, noise_multiplier, temperature)`` as positive floats."""
    lipschitz = check_positive(
        lipschitz,
        name="lipschitz",
        fix="L bounds |log p(x|θ') - log p(x|θ)| <= L·||θ' - θ||; pass e.g. lipschitz=5.0.",
    )
    noise_multiplier = check_positive(
        tau,
        name="tau",
        fix="tau is the noise multiplier; plan it with pymc_dp.accounting.penalty_tau.",
    )
    temperature = check_positive(temperature, name="temperature", fix="Use 1.0 for no tempering.")
    return lipschitz, noise_multiplier, temperature


def check_combination(proposal, acceptance, batch_size, grad_bound, temperature):
    """Refuse unknown names and the combinations the kernel does not support."""
    if proposal not in PROPOSAL_NAMES:
        raise ValueError(
            f"proposal must be one of {PROPOSAL_NAMES}, got proposal={proposal!r}. "
            "Use 'rw' (full random walk), 'coordinate', 'guided' or 'mala'."
        )
    if acceptance not in ACCEPTANCES:
        raise ValueError(
            f"acceptance must be one of {ACCEPTANCES}, got acceptance={acceptance!r}. "
            "Use 'penalty' (default) or 'barker' (DP Barker test, seed 002 §3.2)."
        )
    if acceptance == "barker" and (proposal == "mala" or batch_size is not None):
        raise ValueError(
            f"acceptance='barker' supports proposal='rw', 'coordinate' or 'guided' on the full "
            f"data, got proposal={proposal!r}, batch_size={batch_size!r}. Use "
            "acceptance='penalty' for DP MALA or subsampling."
        )
    if proposal == "mala":
        if grad_bound is None:
            raise ValueError(
                "proposal='mala' needs grad_bound (L_g, the per-record gradient clipping norm), "
                "got grad_bound=None. Pass e.g. grad_bound=5.0."
            )
        if batch_size is not None:
            raise ValueError(
                "batch_size is not supported with proposal='mala'; pass batch_size=None."
            )
        if temperature != 1.0:
            raise ValueError(
                f"temperature is not supported with proposal='mala' (the clipped-gradient drift and "
                f"its privacy are those of the untempered likelihood), got temperature={temperature!r}. "
                "Use temperature=1.0, or a symmetric proposal ('rw', 'coordinate', 'guided')."
            )


def check_scale(scale, proposal):
    """The proposal scale as a float array (one value for MALA)."""
    given = np.asarray(scale)
    if given.dtype.kind not in "iuf":
        raise TypeError(
            f"scale must be a number or an array of numbers (one per coordinate), got "
            f"scale={scale!r}. Pass e.g. scale=0.1."
        )
    arr = given.astype(np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(
            f"scale must be finite and > 0 in every coordinate, got scale={arr.tolist()!r}. "
            "A zero proposal scale never moves the chain; pass e.g. scale=0.1."
        )
    if proposal == "mala" and arr.size != 1:
        raise ValueError(
            f"proposal='mala' takes one step size, got scale={arr.tolist()!r}. "
            "Pass a scalar scale (sigma_p); the proposal variance is mala_a * scale**2."
        )
    return arr


def broadcast_scale(scale, d):
    """The checked scale as one value per coordinate of θ (``d`` of them)."""
    if scale.size not in (1, d):
        raise ValueError(
            f"scale must be one value or one per coordinate of the updated variables (d={d}), got "
            f"{scale.size} values, scale={scale.tolist()!r}. Pass a scalar or an array of length {d} "
            "(θ in the transformed space, variables in the order given in vars)."
        )
    return np.broadcast_to(scale.ravel() if scale.size == d else scale, (d,)).copy()


def check_accountant(accountant):
    if accountant not in ("pld", "rdp"):
        raise ValueError(
            f"accountant must be 'pld' or 'rdp', got accountant={accountant!r}. Use 'pld' (tight) "
            "or 'rdp'; subsampled runs always use 'rdp'."
        )
    return accountant


def check_budget(budget):
    """``None`` or ``(epsilon, delta)`` checked."""
    if budget is None:
        return None
    if isinstance(budget, str | bytes) or np.ndim(budget) != 1 or len(budget) != 2:
        raise TypeError(
            f"budget must be a pair (epsilon, delta), got budget={budget!r}. Pass e.g. "
            "budget=(1.0, 1e-5): the run stops before it would spend more."
        )
    eps, delta = budget
    return check_epsilon(eps, name="budget epsilon"), check_delta(delta, name="budget delta")


def check_clip_warning(clip_warning) -> float:
    """The fraction of clipped per-record ratios above which PenaltyMH warns: a number in [0, 1]."""
    if isinstance(clip_warning, bool | np.bool_) or not isinstance(
        clip_warning, int | float | np.integer | np.floating
    ):
        raise TypeError(
            f"clip_warning must be a fraction in [0, 1], got clip_warning={clip_warning!r}. "
            "Use e.g. clip_warning=0.1 (warn when more than 10 % of the ratios are clipped)."
        )
    value = float(clip_warning)
    if not 0.0 <= value <= 1.0:  # NaN fails too (it turned the warning off silently)
        raise ValueError(
            f"clip_warning must be a fraction in [0, 1], got clip_warning={clip_warning!r}. "
            "Use e.g. clip_warning=0.1 (warn when more than 10 % of the ratios are clipped), or "
            "1.0 never to warn."
        )
    return value


def check_grad_bound_use(proposal, grad_bound, mala_a, total_grad_bound):
    """MALA's options are refused with another proposal (they would be ignored silently)."""
    given = [
        name
        for name, value, default in (
            ("grad_bound", grad_bound, None),
            ("mala_a", mala_a, 1.0),
            ("total_grad_bound", total_grad_bound, None),
        )
        if value is not None and value != default
    ]
    if proposal != "mala" and given:
        raise ValueError(
            f"{', '.join(given)} configure the DP MALA proposal, but proposal={proposal!r}: they "
            "would be ignored. Pass proposal='mala' to use them, or drop them."
        )


def check_tune_interval(tune_interval, proposal):
    tune_interval = check_count(
        tune_interval,
        name="tune_interval",
        minimum=0,
        fix="Use 0 to keep the proposal scale fixed.",
    )
    return 0 if proposal == "mala" else tune_interval  # MALA's step size enters its privacy


def check_batch_size(batch_size, n):
    if batch_size is None:
        return None
    rule = f"an integer in [2, n={n}]"
    fix = "A batch cannot be larger than the data; use batch_size=None for the full data."
    value = check_count(batch_size, name="batch_size", minimum=2, rule=rule, fix=fix)
    if value > n:
        raise ValueError(f"batch_size must be {rule}, got batch_size={batch_size!r}. {fix}")
    return value


def select_vars(model, vars):
    """The continuous value variables to update; warn when some free variables are left out."""
    from pymc.util import get_value_vars_from_user_vars

    value_vars = model.value_vars if vars is None else get_value_vars_from_user_vars(vars, model)
    for v in value_vars:
        if v.dtype.startswith("int") or v.dtype.startswith("uint") or v.dtype == "bool":
            raise ValueError(
                f"PenaltyMH updates continuous variables only, got discrete {v.name!r}. "
                "Pass the continuous parameters in vars=."
            )
    if vars is not None and len(value_vars) < len(model.value_vars):
        warnings.warn(
            "PenaltyMH updates only some free variables; the steps of the others see the "
            "confidential data without privacy and are not in privacy_spent.",
            UserWarning,
            stacklevel=3,
        )
    return list(value_vars)


def build_proposal(proposal, scale, grad_bound, mala_a, total_grad_bound):
    """The `Proposal` object named by ``proposal``."""
    if proposal != "mala":
        return PROPOSALS[proposal]
    return MalaProposal(
        float(np.ravel(scale)[0]),
        check_positive(grad_bound, name="grad_bound"),
        check_positive(mala_a, name="mala_a", fix="Use mala_a=1.0 for the standard MALA variance."),
        None
        if total_grad_bound is None
        else check_positive(total_grad_bound, name="total_grad_bound"),
    )


def build_test(acceptance, batch_size, barker_sigma):
    """The acceptance test: penalty (full data), subsampled penalty, or corrected Barker."""
    if acceptance == "barker":
        return BarkerTest(fit_correction(check_sigma(barker_sigma)))
    if batch_size is not None:
        return SubsampledTest(batch_size)
    return PenaltyTest()


def grad_noise_multiplier(proposal):
    """The drift's noise multiplier for DP MALA, ``None`` otherwise."""
    return proposal.grad_noise_multiplier if isinstance(proposal, MalaProposal) else None


def nan_if_none(value):
    return math.nan if value is None else value


def check_run_plan(chains, iterations, budget):
    """``(chains, iterations)`` of a budgeted run, checked (both optional; only with ``budget``)."""
    if budget is None and (chains is not None or iterations is not None):
        raise ValueError(
            f"chains and iterations declare how a budget is shared, got chains={chains!r}, "
            f"iterations={iterations!r} without budget. Pass budget=(epsilon, delta) too, or drop them."
        )
    for name, value in (("chains", chains), ("iterations", iterations)):
        if value is not None:
            check_count(
                value,
                name=name,
                fix="Pass chains= as in pm.sample and iterations=chains * (tune + draws).",
            )
    if chains is not None and iterations is not None and iterations < chains:
        raise ValueError(
            f"iterations={iterations} is the total over all chains and must be >= chains={chains}. "
            "Pass iterations=chains * (tune + draws)."
        )
    return (None if chains is None else int(chains)), (
        None if iterations is None else int(iterations)
    )


def check_init(init, d):
    """``"prior"``, ``"model"`` or a ``(lower, upper)`` box of θ (arrays of length 1 or ``d``)."""
    if isinstance(init, str):
        if init in ("prior", "model"):
            return init
    else:
        try:
            lower, upper = (
                np.broadcast_to(np.asarray(b, dtype=float).ravel(), (d,)).copy() for b in init
            )
        except (TypeError, ValueError):
            lower = upper = None
        if (
            lower is not None
            and np.all(np.isfinite(lower))
            and np.all(np.isfinite(upper))
            and np.all(lower < upper)
        ):
            return lower, upper
    raise ValueError(
        f"init must be 'prior', 'model' or a public box (lower, upper) of theta with lower < upper "
        f"(one value or d={d} values each, transformed space), got init={init!r}. Use 'prior' for "
        "dispersed data-independent starts."
    )


def prior_init_fn(model):
    """``seed -> point``: a draw of every free variable from the prior, in the transformed space."""
    from pymc.initial_point import make_initial_point_fn

    return make_initial_point_fn(model=model, default_strategy="prior", return_transformed=True)


WORKER_BUDGET_MESSAGE = (
    "PenaltyMH(budget=...) runs in a worker process (pm.sample with cores > 1), where each process "
    "would keep its own count and the budget would not hold across chains. Declare the run on the "
    "step, e.g. PenaltyMH(..., budget=(eps, delta), chains=2, iterations=2 * (tune + draws)) (each "
    "chain then gets its share), or sample with cores=1."
)


def plan_message(budget, allowed, tau, planned):
    """`PrivacyBudgetExceeded` text for a declared run that does not fit (public numbers only)."""
    eps, delta = budget
    return (
        f"the planned run does not fit the budget: budget=(epsilon={eps}, delta={delta}) allows "
        f"{allowed} PenaltyMH iterations with tau={tau:.6g}, iterations={planned} were planned. Plan "
        f"tau with pymc_dp.accounting.penalty_tau({eps}, {delta}, {planned}), lower tune+draws or "
        "chains, or declare a larger budget."
    )


def exhausted_message(chain_iters, total, planned=None):
    """`BudgetExhaustedWarning` text (iteration counts only)."""
    what = "" if planned is None else f" of the {planned} planned"
    return (
        f"PenaltyMH reached its privacy budget after {chain_iters}{what} iterations of this chain "
        f"({total} in this process): the rest of the chain repeats its last state without reading "
        "the data, marked by the sample stat dp_budget_exhausted=True. Keep only the draws where it "
        "is False; pdp.privacy_spent(idata, delta=...) gives the epsilon actually spent."
    )
