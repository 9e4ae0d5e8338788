"""`publishable`: only private content leaves the curator (issues 10, 20.3, 22.3)."""

import re
import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_dp as pdp
from pymc_dp.accounting import epsilon_of_event, iteration_event, run_event
from pymc_dp.samplers.penalty.publish import MIXING, PUBLIC_STATS, mixing_diagnostics
from tests.support.models import compound_model, compound_steps
from tests.support.sampling import sample


def _group_names(data):
    return set(data.children) if hasattr(data, "children") else set(data.groups())


def _datasets(data):
    if hasattr(data, "children"):
        return {name: node.to_dataset() for name, node in data.children.items()}
    return {name: getattr(data, name) for name in data.groups()}


def _set_group(data, name, ds):
    if hasattr(data, "children"):
        data[name] = xr.DataTree(ds)
    else:
        setattr(data, name, ds)


def _strings(obj):
    """Every string and number reachable from an attribute value or a coordinate array."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from _strings(v)
    else:
        arr = np.asarray(obj)
        if arr.dtype.kind in "OUS":
            yield from (str(v) for v in arr.ravel())
        else:
            yield from (repr(v) for v in arr.ravel())


def _assert_nothing_confidential(pub, secrets_num, secrets_str):
    """Walk the root, every group, variable, coordinate and attribute of ``pub``."""
    texts = list(_strings(dict(pub.attrs)))
    for gname, ds in _datasets(pub).items():
        texts += [gname, *map(str, ds.dims)]
        texts += list(_strings(dict(ds.attrs)))
        for name, var in {**ds.coords, **ds.data_vars}.items():
            texts += [str(name), *map(str, var.dims)]
            texts += list(_strings(dict(var.attrs)))
            values = np.asarray(var.values)
            if values.dtype.kind in "fiu":
                assert not np.isin(values, secrets_num).any(), (gname, name)
            else:
                texts += list(_strings(values))
    leaks = [t for t in texts for s in secrets_str if s in t]
    assert not leaks, leaks[:5]


def _worst_case(seed=5, n=40):
    """A run whose every corner holds confidential values: labels, data groups, attrs, stats."""
    rng = np.random.default_rng(seed)
    x = 1000.0 + rng.normal(0.0, 1.0, size=n)  # confidential outcomes
    cov = 500.0 + rng.normal(0.0, 1.0, size=n)  # confidential covariate
    labels = [f"pt-{v:.9f}" for v in x]  # coordinate labels built from the data
    sites = [f"site-{x.max():.9f}", f"site-{x.min():.9f}"]
    with pm.Model(coords={"patient": labels, "site": sites}) as model:
        c = pm.Data("cov", cov, dims="patient")
        mu = pm.Normal("mu", 1000.0, 10.0, dims="site")
        pm.Deterministic("fit", mu[0] + 0.0 * c, dims="patient")  # reads the data
        pm.Normal("y", mu[0] + 0.001 * mu[1] + 0.0 * c, 1.0, observed=x, dims="patient")
        step = pdp.PenaltyMH(lipschitz=8.0, tau=0.5, scale=0.05)
    idata = sample(
        model,
        [step],
        draws=40,
        tune=40,
        seed=2,
        discard_tuned_samples=False,
        idata_kwargs={"log_likelihood": True},
    )
    groups = _datasets(idata)
    ss = groups["sample_stats"]
    extra = xr.DataArray(
        np.broadcast_to(x[:1], ss["dp_iterations"].shape).copy(), dims=ss["dp_iterations"].dims
    )
    _set_group(idata, "sample_stats", ss.assign(dp_future_stat=extra, my_stat=extra))
    post = groups["posterior"].assign_coords(secret_aux=("patient", x))
    post.attrs["note"] = labels[0]
    post["mu"].attrs["hint"] = float(x[1])
    _set_group(idata, "posterior", post)
    idata.attrs["mean_of_x"] = float(x.mean())
    idata.attrs["dict"] = str({"first": x[2]})
    secrets_num = np.concatenate([x, cov, [x.mean(), x.sum()]])
    secrets_str = [lab[3:] for lab in labels] + [f"{v:.6f}" for v in cov] + [s[5:] for s in sites]
    secrets_str += [repr(float(v))[:10] for v in np.concatenate([x, cov, [x.mean()]])]
    return model, step, idata, secrets_num, secrets_str


def test_no_confidential_value_survives_anywhere():
    _model, step, idata, secrets_num, secrets_str = _worst_case()
    # the input does hold them (the check can fail)
    with pytest.raises(AssertionError):
        _assert_nothing_confidential(idata, secrets_num, secrets_str)
    pub = pdp.publishable(idata, step, delta=1e-5, allow_unmixed=True)
    assert type(pub) is type(idata)
    assert _group_names(pub) == {
        "posterior",
        "warmup_posterior",
        "sample_stats",
        "warmup_sample_stats",
    }
    assert {"observed_data", "constant_data", "log_likelihood"} <= _group_names(idata)
    _assert_nothing_confidential(pub, secrets_num, secrets_str)
    post = pub["posterior"]
    assert set(post.data_vars) == {"mu"} and post["mu"].dims == ("chain", "draw", "site")
    np.testing.assert_array_equal(post["site"].values, [0, 1])
    assert "patient" not in post.dims and "patient" not in post.coords
    np.testing.assert_array_equal(np.asarray(post["mu"]), np.asarray(idata["posterior"]["mu"]))
    assert set(pub["sample_stats"].data_vars) <= set(PUBLIC_STATS)
    for gone in ["dp_future_stat", "my_stat", "dp_accept_prob", "dp_clipped_fraction"]:
        assert gone not in pub["sample_stats"] and gone in pub.attrs["dp_removed_stats"]
    assert "fit" in pub.attrs["dp_removed_variables"]
    # declared public labels survive, the others still do not
    labelled = pdp.publishable(idata, step, delta=1e-5, allow_unmixed=True, public_coords=["site"])
    assert list(labelled["posterior"]["site"].values) == list(idata["posterior"]["site"].values)


def test_publishable_drops_non_private_parts_and_attaches_epsilon():
    model, mu, _ = compound_model()
    pen, met = compound_steps(model, mu, scale=0.1)
    idata = sample(model, [pen, met], draws=60, tune=20, seed=3)
    pub = pdp.publishable(
        idata, [pen, met], delta=1e-5, allow_unmixed=True
    )  # z is data-free: no refusal
    ss = pub["sample_stats"]
    for name in [
        "dp_clipped_fraction",
        "dp_noise_sd",
        "dp_accept_prob",
        "accept",
        "scaling",
        "accepted",
    ]:
        assert name not in ss
    for name in ["dp_accepted", "dp_iterations", "dp_noise_multiplier", "dp_scale"]:
        assert name in ss
    assert "observed_data" not in _group_names(pub) and "observed_data" in _group_names(idata)
    assert set(pub["posterior"].data_vars) == {"mu"}  # z was updated by another step
    np.testing.assert_array_equal(
        np.asarray(pub["posterior"]["mu"]), np.asarray(idata["posterior"]["mu"])
    )
    eps = pdp.privacy_spent(idata, delta=1e-5)
    assert eps == pytest.approx(
        epsilon_of_event(run_event(iteration_event(0.5), 160), 1e-5), rel=1e-6
    )
    for attrs in (pub.attrs, pub["posterior"].attrs):
        assert attrs["dp_epsilon"] == pytest.approx(eps) and attrs["dp_delta"] == 1e-5
        assert attrs["dp_accountant"] == "pld" and attrs["dp_iterations"] == 160
        assert "dp_clipped_fraction" in attrs["dp_removed_stats"]
        assert attrs["dp_public_stats"] == ", ".join(PUBLIC_STATS)
    assert "sampling_time" not in pub["posterior"].attrs
    assert "dp_clipped_fraction" in idata["sample_stats"]  # the input is not modified
    kept = pdp.publishable(idata, pen, delta=1e-5, keep=["z"], allow_unmixed=True)
    assert set(kept["posterior"].data_vars) == {"mu", "z"}
    with pytest.raises(
        ValueError, match=re.escape("steps must hold the PenaltyMH step(s) of the run")
    ):
        pdp.publishable(idata, [met], delta=1e-5)
    with pytest.raises(
        ValueError, match=re.escape("keep names variables absent from the posterior: ['w']")
    ):
        pdp.publishable(idata, pen, delta=1e-5, keep=["w"])


def test_accept_prob_is_not_publishable():
    assert "dp_accept_prob" not in PUBLIC_STATS
    assert not any(s in PUBLIC_STATS for s in ("dp_clipped_fraction", "dp_noise_sd"))


def test_refuses_variables_drawn_by_non_private_steps():
    rng = np.random.default_rng(8)
    x = rng.normal(1.0, 2.0, size=60)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        sigma = pm.HalfNormal("sigma", 3.0)
        pm.Normal("y", mu, sigma, observed=x)
        with pytest.warns(UserWarning, match="not in privacy_spent"):
            pen = pdp.PenaltyMH([mu], lipschitz=5.0, tau=0.5, scale=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        idata = sample(model, [pen], draws=30, tune=30, seed=1)  # NUTS on sigma reads the data
    msg = "variables ['sigma'] were drawn by steps other than PenaltyMH and their conditional reads"
    with pytest.raises(ValueError, match=re.escape(msg)):
        pdp.publishable(idata, pen, delta=1e-5, allow_unmixed=True)
    pub = pdp.publishable(idata, pen, delta=1e-5, allow_unmixed=True, allow_non_private=True)
    assert pub.attrs["dp_non_private_variables"] == "sigma"
    assert set(pub["posterior"].data_vars) == {"mu"}


def test_refuses_a_chain_that_did_not_mix():
    model, mu, _ = compound_model()
    pen, met = compound_steps(model, mu, scale=1e-4)  # steps of 1e-4 against a posterior sd of 0.1
    idata = sample(model, [pen, met], draws=100, tune=0, seed=3)
    with pytest.raises(ValueError, match=re.escape("the private draws did not mix: split R-hat")):
        pdp.publishable(idata, [pen, met], delta=1e-5)
    pub = pdp.publishable(idata, [pen, met], delta=1e-5, allow_unmixed=True)
    assert pub.attrs["dp_mixed"] == 0 and pub.attrs["dp_max_rhat"] > MIXING["max_rhat"]


def test_mixing_rule_on_iid_and_stuck_draws():
    rng = np.random.default_rng(0)
    good = xr.Dataset({"th": (("chain", "draw", "k"), rng.normal(size=(4, 1000, 2)))})
    diag = mixing_diagnostics(good)
    assert diag["mixed"] and diag["max_rhat"] <= MIXING["max_rhat"] and diag["min_ess"] > 1000
    stuck = good.copy()
    stuck["th"] = stuck["th"] * 0.01 + np.arange(4)[:, None, None]  # chains never meet
    assert not mixing_diagnostics(stuck)["mixed"]
