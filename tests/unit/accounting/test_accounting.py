"""Closed forms of seed 002 (Theorems 1, 6, 7, 9, 10) against dp_accounting's RDP and PLD accountants."""

import math
import pickle
import re

import dp_accounting
import dp_accounting.pld
import numpy as np
import pymc as pm
import pytest
from dp_accounting.rdp import RdpAccountant

import pymc_dp as pdp

from pymc_dp.accounting import (
    epsilon_of_event,
    iteration_event,
    mala_iterations,
    mala_rho,
    mala_sensitivity,
    max_iterations,
    penalty_delta_tight,
    penalty_epsilon_tight,
    penalty_iterations,
    penalty_iterations_zcdp,
    penalty_tau,
    privacy_spent,
    rdp_epsilon,
    run_event,
    subsampled_rdp,
    subsampled_sensitivity,
    zcdp_epsilon,
    zcdp_rho,
)

CASES = [(10.0, 1000), (30.0, 5000), (3.0, 50), (100.0, 20000)]


@pytest.mark.parametrize("tau,k", CASES)
def test_theorem7_matches_pld(tau, k):
    ev = run_event(iteration_event(tau), k)
    pld = epsilon_of_event(ev, 1e-5, accountant="pld")
    closed = penalty_epsilon_tight(1e-5, k, tau)
    assert closed == pytest.approx(pld, rel=2e-3)
    # and δ(ε_pld) of the closed form sits at 1e-5
    assert penalty_delta_tight(pld, k, tau) == pytest.approx(1e-5, rel=0.05)


@pytest.mark.parametrize("tau,k", CASES)
def test_theorem6_zcdp_is_looser_than_accountants(tau, k):
    rho = k / (2 * tau**2)
    zc = zcdp_epsilon(rho, 1e-5)
    ev = run_event(iteration_event(tau), k)
    assert zc >= epsilon_of_event(ev, 1e-5, accountant="rdp") - 1e-9
    assert zc >= epsilon_of_event(ev, 1e-5, accountant="pld") - 1e-9


def test_seed_printed_theorem7_mu_is_looser():
    for tau, k in CASES:
        eps = penalty_epsilon_tight(1e-5, k, tau)
        assert penalty_delta_tight(eps, k, tau, seed_printed=True) >= penalty_delta_tight(
            eps, k, tau
        )


def test_zcdp_rho_inverts_epsilon():
    for eps, delta in [(0.5, 1e-6), (1.0, 1e-5), (8.0, 1e-3)]:
        assert zcdp_epsilon(zcdp_rho(eps, delta), delta) == pytest.approx(eps, rel=1e-12)


def test_theorem6_iterations_stay_within_budget():
    for eps, tau in [(1.0, 30.0), (2.0, 10.0), (0.5, 100.0)]:
        k = penalty_iterations_zcdp(eps, 1e-5, tau)
        assert zcdp_epsilon(k / (2 * tau**2), 1e-5) <= eps + 1e-12
        assert zcdp_epsilon((k + 1) / (2 * tau**2), 1e-5) > eps
        # seed's n^alpha parameterisation: z = tau n^alpha
        assert penalty_iterations_zcdp(eps, 1e-5, tau / 10, n=100, alpha=0.5) == k


def test_planning_helpers_agree_with_pld():
    eps, delta, tau = 1.0, 1e-5, 30.0
    k_tight = penalty_iterations(eps, delta, tau)
    k_pld = max_iterations(iteration_event(tau), eps, delta, accountant="pld")
    assert abs(k_tight - k_pld) <= max(2, int(0.01 * k_pld))
    assert penalty_iterations(eps, delta, tau, method="zcdp") <= k_tight
    t = penalty_tau(eps, delta, 1000)
    assert epsilon_of_event(run_event(iteration_event(t), 1000), delta) == pytest.approx(
        eps, rel=5e-3
    )
    assert penalty_tau(eps, delta, 1000, method="zcdp") >= t


def test_theorem9_closed_form_at_least_dp_accounting():
    orders = np.arange(2, 65)
    for n, b, z in [(1000, 10, 2.0), (1000, 100, 1.0), (1000, 50, 5.0)]:
        closed = subsampled_rdp(orders, b / n, z)
        acc = RdpAccountant(
            orders=[float(o) for o in orders],
            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
        )
        acc.compose(iteration_event(z, n_records=n, batch_size=b))
        eps_acc = acc.get_epsilon(1e-5)
        # composed over 1000 iterations, converted with Theorem 1
        eps_closed = rdp_epsilon(orders, 1000 * closed, 1e-5)
        assert (
            eps_closed
            >= epsilon_of_event(
                run_event(iteration_event(z, n_records=n, batch_size=b), 1000),
                1e-5,
                accountant="rdp",
            )
            - 1e-9
        )
        assert eps_closed >= eps_acc - 1e-9
        # order 2 has no room for improvement: both are the WBK19 expression
        # (compared on the RDP curve itself: get_epsilon uses a sharper RDP -> DP conversion)
        acc2 = RdpAccountant(
            orders=[2.0], neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE
        )
        acc2.compose(iteration_event(z, n_records=n, batch_size=b))
        assert closed[0] == pytest.approx(float(np.ravel(acc2._rdp)[0]), rel=1e-9)


def test_lemma1_sensitivity_bounds_the_released_statistic():
    rng = np.random.default_rng(3)
    n, b, L, d = 1000, 20, 1.5, 0.3
    lam_d, sig_d, c = subsampled_sensitivity(n, b, L, d)
    assert c == pytest.approx(lam_d + sig_d)
    f = n / b
    worst = 0.0
    for _ in range(2000):
        r = rng.uniform(-L * d, L * d, size=b)
        r2 = r.copy()
        r2[0] = rng.choice([-L * d, L * d])
        stat = [f * x.sum() - 0.5 * f * f * (np.dot(x, x) - x.sum() ** 2 / b) for x in (r, r2)]
        worst = max(worst, abs(stat[0] - stat[1]))
    assert worst <= c


def test_mala_theorem10_vs_accountant():
    step, lg, a, tau = 0.05, 2.0, 1.0, 20.0
    rg, rl = mala_rho(step, lg, a, tau)
    assert rg == pytest.approx(step**2 * lg**2 / (2 * a))
    k = mala_iterations(1.0, 1e-5, step, lg, a, tau)
    ev = run_event(iteration_event(tau, grad_noise_multiplier=math.sqrt(a) / (step * lg)), k)
    assert epsilon_of_event(ev, 1e-5, accountant="rdp") <= 1.0 + 1e-9
    assert epsilon_of_event(ev, 1e-5, accountant="pld") <= 1.0 + 1e-9
    # L_S tightens the (n - 1) L_g term
    loose = mala_sensitivity(1.0, lg, 0.1, step, a, 10_000)
    tight = mala_sensitivity(1.0, lg, 0.1, step, a, 10_000, total_grad_bound=5.0)
    assert tight < loose


def test_privacy_spent_from_event_and_errors():
    ev = run_event(iteration_event(20.0), 100)
    assert privacy_spent(ev, delta=1e-5) == pytest.approx(epsilon_of_event(ev, 1e-5))
    sub = run_event(iteration_event(2.0, n_records=100, batch_size=10), 10)
    with pytest.raises(
        ValueError, match=re.escape("Use accountant='rdp' for subsampled penalty runs.")
    ):
        privacy_spent(sub, delta=1e-5, accountant="pld")
    with pytest.raises(
        ValueError, match=re.escape("delta must lie in the open interval (0, 1), got delta=1.5")
    ):
        privacy_spent(ev, delta=1.5)
    with pytest.raises(
        ValueError, match=re.escape("accountant must be 'pld' or 'rdp', got accountant='x'")
    ):
        privacy_spent(ev, delta=1e-5, accountant="x")
    with pytest.raises(
        ValueError, match=re.escape("epsilon must be finite and > 0, got epsilon=0")
    ):
        penalty_iterations(0, 1e-5, 10.0)
    with pytest.raises(ValueError, match=re.escape("tau must be finite and > 0, got tau=-1")):
        penalty_iterations(1.0, 1e-5, -1)
    assert privacy_spent(run_event(iteration_event(20.0), 0), delta=1e-5) == 0.0


# ---------------------------------------------------------------- releases, models, several runs
def _releases():
    import pymc_dp as pdp

    rng = np.random.default_rng(5)
    cond, stay = rng.binomial(1, 0.2, 200), rng.gamma(2.0, 2.5, 200)
    r1 = pdp.release(cond, pdp.Sum(lower=0, upper=1), pdp.Laplace(epsilon=0.5), rng=1)
    r2 = pdp.release(stay, pdp.Mean(lower=0, upper=20), pdp.Laplace(epsilon=1.0), rng=2)
    return cond, stay, r1, r2


def test_privacy_spent_composes_releases_and_the_model_alike():
    import pymc as pm

    import pymc_dp as pdp

    cond, stay, r1, r2 = _releases()
    spent = privacy_spent([r1, r2], delta=1e-6)
    # the PLD of two pure Laplace releases: close to ε₁ + ε₂ at small δ, never above it
    assert 1.45 < spent <= 1.5
    assert spent.rho is None and spent.delta == 1e-6 and spent.neighbouring == "replace-one"
    ref = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4).compose(
        dp_accounting.ComposedDpEvent(
            [dp_accounting.LaplaceDpEvent(2.0), dp_accounting.LaplaceDpEvent(1.0)]
        )
    )
    assert float(spent) == pytest.approx(ref.get_epsilon(1e-6), abs=5e-4)  # loss grid 1e-4·ε
    assert privacy_spent([r1, r2], delta=1e-6, accountant="rdp") >= spent
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        m = pm.Gamma("m", 2.0, 0.4)
        c = pm.Bernoulli("c", p, shape=200)
        s = pm.Gamma("s", alpha=2.0, beta=2.0 / m, shape=200)
        pdp.DPObserved(
            "count", c, statistic=r1.statistic, mechanism=pdp.Laplace(epsilon=0.5), observed=r1
        )
        pdp.DPObserved(
            "stay", s, statistic=r2.statistic, mechanism=pdp.Laplace(epsilon=1.0), observed=r2
        )
    assert privacy_spent(model, delta=1e-6) == pytest.approx(float(spent), rel=1e-12)


def test_privacy_spent_of_gaussian_releases_reports_rho():
    import pymc_dp as pdp

    x = np.random.default_rng(1).uniform(size=100)
    r1 = pdp.release(x, pdp.Sum(lower=0, upper=1), pdp.Gaussian(sigma=2.0), rng=1)
    r2 = pdp.release(x, pdp.Sum(lower=0, upper=1), pdp.Gaussian(sigma=4.0, sensitivity=2.0), rng=1)
    spent = privacy_spent([r1, r2], delta=1e-5)
    assert spent.rho == pytest.approx(1 / (2 * 4.0) + 4.0 / (2 * 16.0))
    # two Gaussians of noise multipliers 2 and 2 are one of multiplier √2 (exact)
    one = dp_accounting.pld.PLDAccountant().compose(dp_accounting.GaussianDpEvent(math.sqrt(2.0)))
    assert float(spent) == pytest.approx(one.get_epsilon(1e-5), rel=1e-3)
    assert float(spent) <= zcdp_epsilon(spent.rho, 1e-5)
    import pickle

    back = pickle.loads(pickle.dumps(spent))
    assert back == spent and back.rho == spent.rho and str(back) == repr(float(spent))


def test_privacy_spent_counts_and_randomized_response():
    import pymc_dp as pdp

    x = np.random.default_rng(1).integers(0, 3, size=60)
    counts = pdp.release(x, pdp.Counts(3), pdp.Laplace(epsilon=1.0), rng=1)
    assert privacy_spent(counts, delta=1e-9) == pytest.approx(1.0, abs=2e-3)
    rr = pdp.release(x, pdp.Local(), pdp.RandomizedResponse(epsilon=2.0, n_categories=3), rng=1)
    # one record changes only its own response: ε of one randomized response
    assert privacy_spent(rr, delta=1e-9) == pytest.approx(2.0, abs=2e-3)
    assert privacy_spent(rr, delta=1e-9, accountant="rdp") == pytest.approx(2.0, abs=1e-9)
    both = privacy_spent([counts, rr], delta=1e-9)
    assert 2.9 < both <= 3.0


def test_privacy_spent_smooth_laplace_by_basic_composition():
    import pymc_dp as pdp

    x = np.random.default_rng(2).uniform(0, 10, size=51)
    med = pdp.release(
        x, pdp.Median(lower=0, upper=10), pdp.SmoothLaplace(epsilon=1.0, delta=1e-6), rng=1
    )
    _, _, r1, _ = _releases()
    assert privacy_spent(med, delta=1e-5) == pytest.approx(1.0)
    both = privacy_spent([med, r1], delta=1e-5)
    assert both == pytest.approx(1.0 + privacy_spent(r1, delta=1e-5 - 1e-6), rel=1e-9)
    with pytest.raises(
        ValueError, match=re.escape("delta=1e-07 is not larger than the total delta 1e-06")
    ):
        privacy_spent(med, delta=1e-7)


def test_privacy_spent_refuses_what_carries_no_privacy():
    import pymc as pm

    _, _, r1, _ = _releases()
    with pytest.raises(TypeError, match=re.escape("privacy_spent got a bare array/number")):
        privacy_spent(np.asarray(r1), delta=1e-5)
    with pytest.raises(TypeError, match=re.escape("this array lost its release metadata")):
        privacy_spent([np.asarray(r1).view(type(r1))], delta=1e-5)
    with pytest.raises(ValueError, match=re.escape("the model has no DPObserved node")):
        privacy_spent(pm.Model(), delta=1e-5)
    with pytest.raises(ValueError, match=re.escape("privacy_spent got an empty list")):
        privacy_spent([], delta=1e-5)
    with pytest.raises(ValueError, match=re.escape("accountant='pld' cannot compose ZCDpEvent")):
        privacy_spent(dp_accounting.ZCDpEvent(0.1), delta=1e-5, accountant="pld")
    auto = privacy_spent(
        [dp_accounting.ZCDpEvent(0.1), dp_accounting.GaussianDpEvent(2.0)], delta=1e-5
    )
    assert auto.accountant == "rdp" and auto.rho == pytest.approx(0.1 + 0.125)
    assert float(auto) <= zcdp_epsilon(0.225, 1e-5)
    sub = run_event(iteration_event(2.0, n_records=100, batch_size=10), 10)
    assert privacy_spent(sub, delta=1e-5).accountant == "rdp"
    assert privacy_spent(dp_accounting.GaussianDpEvent(2.0), delta=1e-5).accountant == "pld"


def test_two_penalty_steps_in_one_model_compose():
    """privacy_spent(idata) of a run with two PenaltyMH steps (a TypeError before)."""
    import pymc as pm

    import pymc_dp as pdp

    x = np.random.default_rng(0).normal(1.0, 1.0, size=40)
    with pm.Model():
        a = pm.Normal("a", 0, 3)
        b = pm.Normal("b", 0, 3)
        pm.Normal("y", a + b, 1.0, observed=x)
        with pytest.warns(UserWarning, match="updates only some free variables"):
            s1 = pdp.PenaltyMH([a], lipschitz=3.0, tau=20.0, scale=0.1)
        with pytest.warns(UserWarning, match="updates only some free variables"):
            s2 = pdp.PenaltyMH([b], lipschitz=3.0, tau=30.0, scale=0.1)
        idata = pm.sample(
            draws=30,
            tune=10,
            chains=2,
            cores=1,
            step=[s1, s2],
            progressbar=False,
            random_seed=1,
            compute_convergence_checks=False,
        )
    spent = privacy_spent(idata, delta=1e-5)
    per_chain = [run_event(iteration_event(20.0), 40), run_event(iteration_event(30.0), 40)] * 2
    expected = epsilon_of_event(dp_accounting.ComposedDpEvent(per_chain), 1e-5)
    assert float(spent) == pytest.approx(expected, rel=1e-9)
    assert spent.rho == pytest.approx(2 * 40 * (1 / (2 * 400) + 1 / (2 * 900)))
    # a model's releases and its penalty runs compose in one call
    _, _, r1, _ = _releases()
    assert privacy_spent([r1, idata], delta=1e-5) > spent


def test_pure_releases_compose_at_delta_zero():
    """δ = 0 is meaningful for pure ε-DP releases (basic composition); it used to be refused
    by the (0, 1) check. A release that is only (ε, δ)-DP is refused at δ = 0, named."""
    import numpy as np

    import pymc_dp as pdp

    x = np.random.default_rng(0).integers(0, 2, 50)
    rels = [
        pdp.release(x, pdp.Sum(0, 1), pdp.Laplace(epsilon=0.5), rng=1),
        pdp.release(x, pdp.Sum(0, 1), pdp.DiscreteLaplace(epsilon=0.3), rng=1),
        pdp.release(x, pdp.Local(0, 1), pdp.RandomizedResponse(1.0), rng=1),
        pdp.release(x, pdp.Sum(0, 1), pdp.Staircase(epsilon=0.7), rng=1),
    ]
    spent = pdp.privacy_spent(rels, delta=0)
    assert float(spent) == pytest.approx(2.5, rel=1e-9) and float(spent) <= 2.5
    assert spent.delta == 0.0
    bands = [
        pdp.release(x, pdp.Sum(0, 1), pdp.Laplace(epsilon=1.0), rng=1, partition=("band", b))
        for b in "ab"
    ]
    assert float(pdp.privacy_spent(bands, delta=0)) == pytest.approx(1.0, rel=1e-9)
    g = pdp.release(x, pdp.Sum(0, 1), pdp.Gaussian(epsilon=1.0, delta=1e-6), rng=1)
    with pytest.raises(ValueError, match=r"delta=0.*pure.*Gaussian"):
        pdp.privacy_spent([*rels, g], delta=0)
    m = pdp.release(x.astype(float), pdp.Median(0, 1), pdp.SmoothLaplace(1.0, 1e-6), rng=1)
    with pytest.raises(ValueError, match=r"delta=0.*pure"):
        pdp.privacy_spent([*rels, m], delta=0)
    with pytest.raises(ValueError, match=r"delta must lie"):
        pdp.privacy_spent(rels, delta=-1e-9)


def test_tables_are_accounted_for_the_relation_they_state():
    """A Cells table released under add/remove is calibrated to one cell changing by one, so the
    ε of its event holds for add/remove neighbours: the result says so (it said replace-one, for
    which the same noise gives 2ε). Releases stating different relations are refused: composing
    an add/remove ε with a replace-one ε (0.5 + 0.5 = 1.0 here) holds for neither (the truth is
    1.5 for replace-one and 0.75 for add/remove)."""
    codes = np.array([0, 1, 2, 2, 1, 0, 2])
    table = np.bincount(codes, minlength=3)
    cells = pdp.release(table, pdp.Cells(), pdp.Laplace(epsilon=0.5), rng=1)
    counts = pdp.release(codes, pdp.Counts(3), pdp.Laplace(epsilon=0.5), rng=2)
    ar = pdp.privacy_spent(cells, delta=0)
    assert float(ar) == pytest.approx(0.5) and ar.neighbouring == "add/remove"
    assert pdp.privacy_spent(counts, delta=1e-6).neighbouring == "replace-one"
    dg = pdp.privacy_spent(
        pdp.release(table, pdp.Cells(), pdp.DiscreteGaussian(sigma=2.0), rng=3), delta=1e-6
    )
    assert dg.rho == pytest.approx(1 / 8) and dg.neighbouring == "add/remove"
    with pm.Model() as model:
        pi = pm.Dirichlet("pi", np.ones(3))
        c = pm.Multinomial("c", n=7, p=pi)
        pdp.DPObserved(
            "s", c, statistic=pdp.Cells(), mechanism=pdp.Laplace(epsilon=0.5), observed=cells
        )
    assert pdp.privacy_spent(model, delta=0).neighbouring == "add/remove"
    assert pickle.loads(pickle.dumps(ar)).neighbouring == "add/remove"
    for delta in (0, 1e-6):
        with pytest.raises(
            ValueError, match=r"state different ones \(add/remove: .*Cells.*replace-one: .*Counts"
        ):
            pdp.privacy_spent([cells, counts], delta=delta)
    # replace-one tables compose with replace-one records
    ro = pdp.release(table, pdp.Cells(neighbouring="replace-one"), pdp.Laplace(epsilon=0.5), rng=4)
    both = pdp.privacy_spent([ro, counts], delta=0)
    assert float(both) == pytest.approx(1.0) and both.neighbouring == "replace-one"
