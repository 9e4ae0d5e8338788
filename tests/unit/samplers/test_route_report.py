"""The route in ``idata.sample_stats.attrs`` (pymc_dp/samplers/route_report.py): which pymc-dp step
moved which variables and why, on both PyMC lines (ArviZ 0.x InferenceData, ArviZ 1.x DataTree),
with ``cores=1`` and ``cores=2``, written by ``to_netcdf``. It wraps ``pymc.sampling.mcmc``'s
``init_traces`` and ``_sample_return``, so a PyMC that stops calling them fails here."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_dp as pdp
from tests.support.models import beta_bernoulli_sum_model
from tests.support.sampling import sample
from tests.support.user_models import normal_scale


def _route(idata):
    attrs = idata["sample_stats"].attrs
    assert attrs == idata.sample_stats.attrs
    return attrs["pymc_dp_steps"], json.loads(attrs["pymc_dp_route"])


def test_wrappers_are_installed_on_the_calls_pymc_makes():
    from pymc.sampling import mcmc

    assert getattr(mcmc.init_traces, "_pdp_route_note", False)
    assert getattr(mcmc._sample_return, "_pdp_route_attach", False)
    params = inspect.signature(mcmc._sample_return.__wrapped__).parameters
    assert {"model", "return_inferencedata"} <= set(params)
    assert "_sample_return(" in inspect.getsource(mcmc.sample)


@pytest.mark.parametrize("cores", [1, 2])
def test_default_route_in_attrs_and_netcdf(cores, tmp_path):
    model, _ = normal_scale(n=20)
    idata = sample(model, draws=30, tune=100, seed=4, cores=cores)
    steps, route = _route(idata)
    assert steps == "ConjugateTheta[mu] + SufficientTheta[sigma_log__] + DataAugmentation[x]"
    assert [r["step"] for r in route] == ["ConjugateTheta", "SufficientTheta", "DataAugmentation"]
    assert route[0]["vars"] == ["mu"] and route[0]["families"] == {"mu": "normal"}
    assert "conjugate prior" in route[0]["reason"]
    assert route[1]["families"] == {"x": "normal"}
    da = route[2]
    assert "s (Mean, Laplace)" in da["reason"]
    (decision,) = da["interweave"]
    assert decision["records"] == ["x"] and decision["parents"] == ["mu", "sigma"]
    last = np.asarray(idata.sample_stats["dp_route"])[:, -1]
    assert [c["chain"] for c in decision["chains"]] == [0, 1]
    assert [c["theta_move"] for c in decision["chains"]] == [int(r & 1) for r in last]
    for c in decision["chains"]:
        if cores == 1:  # the step object ran both chains here: the measured numbers
            assert c["reason"].startswith("measured at warm-up over 50 iterations")
        else:
            assert "chain's own process" in c["reason"]
    path = tmp_path / "run.nc"
    idata.to_netcdf(str(path))
    if hasattr(xr, "open_datatree"):
        back = xr.open_datatree(str(path))["sample_stats"].attrs
    else:  # pragma: no cover - xarray without DataTree
        back = xr.open_dataset(str(path), group="sample_stats").attrs
    assert back["pymc_dp_route"] == idata.sample_stats.attrs["pymc_dp_route"]
    assert back["pymc_dp_steps"] == steps


def test_explicit_steps_collapsed_plan_and_no_inferencedata():
    model = beta_bernoulli_sum_model(n=8)
    with model:
        step = pdp.Collapsed([model["p"], model["x"]])
    idata = sample(model, step=[step], draws=20, tune=60, seed=5, chains=1)
    steps, (route,) = _route(idata)
    assert steps == "Collapsed[x,p_logodds__]" or steps == "Collapsed[p_logodds__,x]"
    assert route["step"] == "Collapsed" and route["plans"]["x"]["records"] == 8
    assert route["plans"]["x"]["case"].startswith("additive")
    assert "summed out exactly" in route["reason"]
    with model:
        trace = pm.sample(
            draws=10,
            tune=10,
            chains=1,
            step=[step],
            random_seed=5,
            progressbar=False,
            compute_convergence_checks=False,
            return_inferencedata=False,
        )
    assert isinstance(trace, pm.backends.base.MultiTrace) and len(trace) == 10


def test_forced_move_and_pymc_only_model():
    model, _ = normal_scale(n=10)
    idata = sample(
        model,
        step=lambda: [
            pdp.DataAugmentation(interweave=False),
            pdp.ConjugateTheta([model["mu"]]),
            pm.Slice([model["sigma"]]),
        ],
        draws=10,
        tune=10,
        seed=6,
        chains=1,
    )
    steps, route = _route(idata)
    assert steps == "DataAugmentation[x] + ConjugateTheta[mu] + Slice[sigma_log__]"
    assert [r["step"] for r in route] == ["DataAugmentation", "ConjugateTheta"]
    (decision,) = route[0]["interweave"]
    assert decision["enabled"] == 0 and decision["reason"] == "interweave=False"
    assert decision["chains"] == [{"chain": 0, "theta_move": 0}]
    with pm.Model() as plain:
        pm.Normal("y", 0, 1)
    idata = sample(plain, draws=10, tune=10, seed=7, chains=1)
    assert "pymc_dp_route" not in idata.sample_stats.attrs


def test_two_data_augmentation_steps_each_get_their_own_chains():
    """Two DataAugmentation steps in one run: PyMC stacks their ``dp_route`` stats along a last
    axis; each step's decision reads its own column (it crashed with a TypeError)."""
    rng = np.random.default_rng(8)
    stat, mech = pdp.Mean(lower=-3, upper=3), pdp.Laplace(epsilon=1.0)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        xs = []
        for i, n in enumerate((10, 12)):
            r = pdp.release(rng.normal(0.5, 1.0, n), stat, mech, rng=rng)
            xs.append(pm.Normal(f"x{i}", mu, 1.0, shape=n))
            pdp.DPObserved(f"s{i}", xs[-1], statistic=stat, mechanism=mech, observed=r)
    idata = sample(
        model,
        step=lambda: [
            pdp.DataAugmentation([model["x0"]], interweave=False),
            pdp.DataAugmentation([model["x1"]], interweave=True),
        ],
        draws=10,
        tune=10,
        seed=9,
        chains=2,
    )
    steps, route = _route(idata)
    assert steps.startswith("DataAugmentation[x0] + DataAugmentation[x1]")
    assert [r["step"] for r in route][:2] == ["DataAugmentation", "DataAugmentation"]
    (off,), (on,) = route[0]["interweave"], route[1]["interweave"]
    assert off["records"] == ["x0"] and on["records"] == ["x1"]
    assert [c["theta_move"] for c in off["chains"]] == [0, 0]
    assert [c["theta_move"] for c in on["chains"]] == [1, 1]
