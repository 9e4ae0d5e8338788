"""Subsampled penalty (seed 002 §4.1) and DP MALA (seed 002 §4.2): kernels, accounting, PyMC adapter."""

import math
import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.accounting import (
    epsilon_of_event,
    iteration_event,
    run_event,
)
from pymc_dp.samplers.penalty.mala import clipped_grad_sum
from pymc_dp.samplers.penalty.subsampled import batch_log_ratio
from tests.support.sampling import sample


def test_clipped_grad_sum():
    g = np.array([[3.0, 4.0], [0.3, 0.4]])
    np.testing.assert_allclose(clipped_grad_sum(g, 1.0), [0.6 + 0.3, 0.8 + 0.4])


def test_batch_log_ratio_matches_seed_formula():
    """The seed's σ_b² times the finite-population correction κ = (1 - b/n)·b/(b - 1) (≤ 1)."""
    r = np.array([0.1, -0.2, 0.05, 0.3])
    lam, var = batch_log_ratio(r, n=100, temperature=0.5)
    f = 100 * 0.5 / 4
    assert lam == pytest.approx(f * r.sum())
    kappa = (1 - 4 / 100) * 4 / 3
    assert kappa > 1  # n > b²: capped at 1, so Lemma 1's sensitivity bound holds
    assert var == pytest.approx(f**2 * (np.sum(r**2) - r.sum() ** 2 / 4))
    _, var_small_n = batch_log_ratio(r, n=10, temperature=0.5)
    f10 = 10 * 0.5 / 4
    want = (1 - 4 / 10) * 4 / 3 * f10**2 * (np.sum(r**2) - r.sum() ** 2 / 4)
    assert var_small_n == pytest.approx(want, rel=1e-12)
    assert batch_log_ratio(r, n=4)[1] == 0.0  # the whole data set: no subsampling error
    assert batch_log_ratio(r[:1], n=10)[1] == 0.0


@pytest.mark.parametrize(("n", "b"), [(8, 3), (9, 3), (7, 5)])
def test_batch_variance_is_unbiased_for_batches_drawn_without_replacement(n, b):
    """Over every batch of b of the n records (the sampler draws them without replacement), the
    mean of σ_b² equals the variance of the scaled sum (nT/b)·R exactly when n ≤ b²; the seed's
    with-replacement σ_b² (no finite-population correction) would be (1 - b/n)⁻¹·(b-1)/b times
    too large or small and fails."""
    import itertools

    r_all = np.array([0.3, -1.2, 0.7, 2.0, -0.4, 1.1, 0.0, -2.5, 0.9])[:n]
    lams, vars_ = [], []
    for batch in itertools.combinations(range(n), b):
        lam, var = batch_log_ratio(r_all[list(batch)], n=n, temperature=0.7)
        lams.append(lam)
        vars_.append(var)
    assert np.mean(lams) == pytest.approx(0.7 * r_all.sum(), rel=1e-12)  # unbiased λ̂
    assert np.mean(vars_) == pytest.approx(np.var(lams), rel=1e-12)


def _model(n=300):
    rng = np.random.default_rng(0)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=rng.normal(1.0, 1.0, size=n))
    return model


def test_subsampled_pm_sample_and_rdp_accounting():
    model = _model()
    with model:
        step = pdp.PenaltyMH(lipschitz=5.0, tau=0.5, scale=0.02, batch_size=100)
    idata = sample(model, [step], draws=100, tune=20, chains=1, seed=3)
    ss = idata["sample_stats"]
    assert np.asarray(ss["dp_batch_size"]).ravel()[0] == 100
    ev = run_event(iteration_event(0.5, n_records=300, batch_size=100), 120)
    assert pdp.privacy_spent(idata, delta=1e-5, accountant="rdp") == pytest.approx(
        epsilon_of_event(ev, 1e-5, accountant="rdp")
    )
    # subsampling amplifies: cheaper than the full-data Gaussian with the same multiplier
    assert pdp.privacy_spent(idata, delta=1e-5, accountant="rdp") < epsilon_of_event(
        run_event(iteration_event(0.5), 120), 1e-5, accountant="rdp"
    )
    with pytest.raises(ValueError, match=re.escape("Use accountant='rdp'")):
        pdp.privacy_spent(idata, delta=1e-5, accountant="pld")


def test_mala_pm_sample_and_accounting():
    model = _model()
    with model:
        step = pdp.PenaltyMH(
            lipschitz=5.0,
            tau=0.05,
            scale=0.03,
            proposal="mala",
            grad_bound=4.0,
            total_grad_bound=50.0,
        )
    idata = sample(model, [step], draws=100, tune=20, chains=1, seed=3)
    zg = math.sqrt(1.0) / (0.03 * 4.0)
    ev = run_event(iteration_event(0.05, grad_noise_multiplier=zg), 120)
    assert pdp.privacy_spent(idata, delta=1e-5) == pytest.approx(
        epsilon_of_event(ev, 1e-5), rel=1e-6
    )
    assert np.asarray(idata["sample_stats"]["dp_accepted"]).mean() > 0.05
    assert np.asarray(idata["sample_stats"]["dp_grad_noise_multiplier"]).ravel()[
        0
    ] == pytest.approx(zg)


def test_variant_errors():
    model = _model()
    with model:
        with pytest.raises(
            ValueError, match=re.escape("batch_size is not supported with proposal='mala'")
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, proposal="mala", grad_bound=1.0, batch_size=10)
        with pytest.raises(
            ValueError,
            match=re.escape("proposal='mala' takes one step size, got scale=[0.1, 0.2]."),
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, proposal="mala", grad_bound=1.0, scale=[0.1, 0.2])
        with pytest.raises(
            ValueError, match=re.escape("grad_bound must be finite and > 0, got grad_bound=0.")
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, proposal="mala", grad_bound=0)


# ------------------------------------------------------------------- tempering (issue 10 item 7)


def test_tempered_pm_sample_accounting_unchanged_and_mala_refused():
    model = _model()
    with model:
        hot = pdp.PenaltyMH(lipschitz=5.0, tau=0.5, scale=0.02, temperature=0.25)
        cold = pdp.PenaltyMH(lipschitz=5.0, tau=0.5, scale=0.02)
        assert hot.params.temperature == 0.25 and cold.params.temperature == 1.0
        with pytest.raises(
            ValueError,
            match=re.escape(
                "temperature is not supported with proposal='mala' (the clipped-gradient drift and its "
                "privacy are those of the untempered likelihood), got temperature=0.5."
            ),
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, proposal="mala", grad_bound=1.0, temperature=0.5)
        with pytest.raises(
            ValueError, match=re.escape("temperature must be finite and > 0, got temperature=0.")
        ):
            pdp.PenaltyMH(lipschitz=1.0, tau=1.0, temperature=0)
    hot_id, cold_id = (
        sample(model, [hot], draws=100, tune=20, chains=1, seed=3),
        sample(model, [cold], draws=100, tune=20, chains=1, seed=3),
    )
    # the noise sd scales with T (same proposal draws from the same seed until the first decision)
    sd_hot = np.asarray(hot_id["sample_stats"]["dp_noise_sd"]).ravel()[0]
    sd_cold = np.asarray(cold_id["sample_stats"]["dp_noise_sd"]).ravel()[0]
    assert sd_hot == pytest.approx(0.25 * sd_cold)
    assert pdp.privacy_spent(hot_id, delta=1e-5) == pytest.approx(
        pdp.privacy_spent(cold_id, delta=1e-5)
    )


def test_penalty_modules_depend_one_way():
    """penalty.kernel imports no penalty module; the variants import only the kernel; no cycle."""
    import ast
    from pathlib import Path

    import pymc_dp.samplers.penalty as pkg

    root = Path(pkg.__file__).parent

    def imports(mod):
        tree = ast.parse((root / f"{mod}.py").read_text())
        names = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        return {n.rsplit(".", 1)[-1] for n in names if n.startswith("pymc_dp.samplers.penalty")}

    assert imports("kernel") == set()
    for variant in ("barker", "mala", "subsampled"):
        assert imports(variant) == {"kernel"}, variant
    assert not {"penalty", "step"} & (imports("options") | imports("target"))
