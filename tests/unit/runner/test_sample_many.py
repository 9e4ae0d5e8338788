"""`pdp.sample_many`: results keyed by unit, seeds independent of order, resume, errors, Dask."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pymc as pm
import pytest

import pymc_dp as pdp
from pymc_dp.runner.many import local_cluster, unit_seed
from tests.support import runner as R

KW = {"draws": 60, "tune": 60, "chains": 1, "progressbar": False}
PRIOR_MEAN = 0.0  # read by `build_prior`; the resume tests change it
ROOT = Path(__file__).resolve().parents[3]


def mu_draws(res, unit):
    return np.asarray(res[unit].posterior["mu"]).ravel()


def build_prior(unit):
    """A prior only (fast): its mean is the module constant PRIOR_MEAN."""
    import pymc as pm

    with pm.Model() as model:
        pm.Normal("mu", PRIOR_MEAN, 0.1)
    return model


def build_with_mean(mean):
    """``unit -> model`` closures: each has the qualname ``build_with_mean.<locals>.build``."""

    def build(unit):
        import pymc as pm

        with pm.Model() as model:
            pm.Normal("mu", mean, 0.1)
        return model

    return build


def test_in_process_results_summary_and_order_free_seeds():
    res = pdp.sample_many(R.build, [0, 1, 2], n_workers=0, **KW)
    assert list(res) == [0, 1, 2] and len(res) == 3
    assert set(res.units["status"]) == {"ok"}
    assert res.units["route"].tolist() == ["ConjugateTheta[mu]; DataAugmentation[x]"] * 3
    row = res.summary.set_index(["unit", "variable"]).loc[(1, "mu")]
    d = mu_draws(res, 1)
    assert (
        row["mean"] == pytest.approx(d.mean()) and row["hdi_lower"] < row["mean"] < row["hdi_upper"]
    )
    assert {"sd", "ess_bulk", "r_hat", "route", "seconds"} <= set(res.summary.columns)
    # the latent records (30 per draw) are not summarised
    assert set(res.summary["variable"]) == {"mu"}
    # the same unit draws the same whatever the other units and their order
    again = pdp.sample_many(R.build, [2, 1], n_workers=0, **KW)
    for u in (1, 2):
        np.testing.assert_array_equal(mu_draws(again, u), mu_draws(res, u))
    assert not np.array_equal(mu_draws(res, 1), mu_draws(res, 2))
    assert unit_seed(0, 1) != unit_seed(1, 1) != unit_seed(0, 2)


def test_data_mode_reuses_model_and_steps_and_draws_what_a_fresh_build_draws():
    # unit 0 is built in both runs; the reused units 1 and 2 are compared with fresh builds
    fresh = pdp.sample_many(R.build, [1, 2], n_workers=0, **KW)
    reused = pdp.sample_many(R.build, [0, 1, 2], data=R.data, n_workers=0, **KW)
    assert reused.units["note"].tolist() == [
        "built",
        "reused model and steps",
        "reused model and steps",
    ]
    for u in (1, 2):
        np.testing.assert_array_equal(mu_draws(reused, u), mu_draws(fresh, u))


def test_data_mode_builds_the_steps_again_for_other_step_keywords():
    """A second call with target_accept=0.99 said "reused model and steps" and ran NUTS tuned for
    the first call's 0.6 (acceptance 0.66): the worker's cache ignored the steps' keywords."""

    def build(u):
        with pm.Model() as model:
            y = pm.Data("y", np.random.default_rng(u).normal(1, 1, 20))
            pm.Normal("o", pm.Normal("mu", 0, 3), pm.HalfNormal("s", 2), observed=y)
        return model

    def data(u):
        return {"y": np.random.default_rng(u).normal(1, 1, 20)}

    kw = {**KW, "tune": 100}
    first = pdp.sample_many(build, [0, 1], data=data, n_workers=0, target_accept=0.6, **kw)
    assert first.units["note"].tolist()[1] == "reused model and steps"
    again = pdp.sample_many(build, [1], data=data, n_workers=0, target_accept=0.99, **kw)
    assert again.units["note"].tolist() == ["built"]
    rate = float(np.asarray(again[1].sample_stats["acceptance_rate"]).mean())
    assert rate > 0.9, rate  # tuned for 0.99, not 0.6


def test_data_mode_reuses_collapsed_and_draws_what_a_fresh_build_draws():
    """pdp.Collapsed plans for its release: with data= it follows each unit's release (only the
    noise table changes) instead of being built and compiled again. The convergence guard pools
    the chains one step object ran (cores=1): reused on the next unit, the step starts a new run,
    so units with posteriors far apart raise no false ConvergenceWarning."""
    import warnings

    units, kw = [0, 1], {**KW, "draws": 100}  # 100 draws: the guard gives a verdict
    fresh = pdp.sample_many(R.build_bernoulli, [1], n_workers=0, **kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reused = pdp.sample_many(R.build_bernoulli, units, data=R.data_bernoulli, n_workers=0, **kw)
    assert not [w for w in caught if issubclass(w.category, pdp.ConvergenceWarning)]
    assert reused.units["route"].tolist() == ["Collapsed[p, x]"] * 2
    assert reused.units["note"].tolist() == ["built", "reused model and steps"]
    a, b = (np.asarray(r[1].posterior["p"]).ravel() for r in (reused, fresh))
    np.testing.assert_array_equal(a, b)
    means = reused.summary.query("variable == 'p'")["mean"]
    assert means.max() - means.min() > 0.2  # pooled, these chains would not mix


def test_data_mode_builds_again_when_shapes_differ():
    res = pdp.sample_many(R.build_sized, [0, 2, 1], data=R.data_sized, n_workers=0, **KW)
    # unit 1's container w has 2 entries where the model built for unit 0 has 1
    assert res.units["note"].tolist()[:2] == ["built", "reused model and steps"]
    assert res.units["note"].iloc[2].startswith("built again: the data of w have other shapes")
    assert set(res.units["status"]) == {"ok"}


def test_data_mode_builds_again_when_build_gives_another_model():
    """Unit 1's build sets 12 records (not in data(unit)): it reused unit 0's model of 30 records
    (its note said "reused model and steps"), a silently wrong posterior."""
    res = pdp.sample_many(R.build_records_by_unit, [0, 2, 1], data=R.data, n_workers=0, **KW)
    notes = res.units["note"].tolist()
    assert notes[:2] == ["built", "reused model and steps"]
    assert notes[2].startswith("built again: build(unit) returns another model")
    assert res[1].posterior["x"].shape[-1] == 12 and res[2].posterior["x"].shape[-1] == 30
    fresh = pdp.sample_many(R.build_records_by_unit, [1], n_workers=0, **KW)
    np.testing.assert_array_equal(res[1].posterior["mu"], fresh[1].posterior["mu"])


def test_numpy_units_are_the_numbers_they_hold_and_bad_seeds_or_units_are_named():
    """units=np.arange(2): res[0] raised KeyError and the seeds differed from units [0, 1];
    seed=1.9 ran as seed=1, seed=None / -1 / a generator and list units gave bare errors."""
    np_units = pdp.sample_many(R.build, np.arange(2), n_workers=0, seed=3, **KW)
    ints = pdp.sample_many(R.build, [0, 1], n_workers=0, seed=3, **KW)
    np.testing.assert_array_equal(np_units[0].posterior["mu"], ints[0].posterior["mu"])
    np.testing.assert_array_equal(np_units[np.int64(1)].posterior["mu"], ints[1].posterior["mu"])
    for seed, exc in ((1.9, TypeError), (None, TypeError), (-1, ValueError), (True, TypeError)):
        with pytest.raises(exc, match=r"seed must be an int >= 0"):
            pdp.sample_many(R.build, [0], n_workers=0, seed=seed, **KW)
    with pytest.raises(TypeError, match=r"units must be hashable"):
        pdp.sample_many(R.build, [[0], [1]], n_workers=0, **KW)


def test_a_step_class_or_a_built_step_is_refused_by_name():
    """step=pm.NUTS (the class) failed every unit with "not random variables in the model:
    ['']": the runner called it with the model as its variables."""
    import pymc as pm

    with R.build(0):
        built = pm.NUTS()
    for step, name in ((pm.NUTS, "NUTS"), (built, "NUTS"), ("nuts", "str")):
        with pytest.raises(
            TypeError, match=rf"step must be a function model -> step\(s\), got {name}"
        ):
            pdp.sample_many(R.build, [0], n_workers=0, step=step, **KW)


def test_target_accept_reaches_the_nuts_step_the_runner_builds():
    """sample_many(target_accept=...) failed every unit: "Invalid key found in step_kwargs:
    {'nuts'}" (the runner passes step= to pm.sample, which then uses no step keywords)."""
    kw = {**KW, "tune": 200, "draws": 200}
    low = pdp.sample_many(R.build_with_nuts, [0], n_workers=0, target_accept=0.6, **kw)
    high = pdp.sample_many(R.build_with_nuts, [0], n_workers=0, nuts={"target_accept": 0.99}, **kw)
    assert set(low.units["status"]) == set(high.units["status"]) == {"ok"}
    rate = [float(r[0].sample_stats["acceptance_rate"].mean()) for r in (low, high)]
    assert rate[1] > 0.95 > rate[0], rate


def test_outdir_resume_skips_finished_units_and_refuses_another_call(tmp_path):
    out = tmp_path / "run"
    first = pdp.sample_many(R.build, [0, 1], outdir=out, n_workers=0, **KW)
    assert sorted(p.suffix for p in (out / "units").iterdir()) == [".json", ".json", ".nc", ".nc"]
    again = pdp.sample_many(R.build, [0, 1, 2], outdir=out, n_workers=0, **KW)
    assert again.units["status"].tolist() == ["skipped", "skipped", "ok"]
    np.testing.assert_array_equal(mu_draws(again, 0), mu_draws(first, 0))  # read back from disk
    with pytest.raises(
        ValueError,
        match=re.escape("holds the results of a different sample_many call (it differs in seed)"),
    ):
        pdp.sample_many(R.build, [0], outdir=out, n_workers=0, seed=5, **KW)
    redo = pdp.sample_many(R.build, [0], outdir=out, n_workers=0, seed=5, overwrite=True, **KW)
    assert redo.units["status"].tolist() == ["ok"]


CHANGED_CODE = re.escape(
    "holds the results of a different sample_many call (it differs in build_code). The code of "
    "build (or a value it reads: a module-level constant, a closure variable, a default) is not "
    "the one that sampled those units: resuming would return posteriors of the old model. Use "
    "another outdir, or pass overwrite=True to discard those results."
)


def test_resume_refuses_a_build_whose_constant_changed(tmp_path, monkeypatch):
    """The manifest held only build's name: a run whose module constant inside build changed was
    marked 'skipped' and the old model's posteriors came back without a word."""
    out, kw = tmp_path / "run", {**KW, "draws": 30, "tune": 10}
    first = pdp.sample_many(build_prior, [0, 1], outdir=out, n_workers=0, **kw)
    assert first.units["status"].tolist() == ["ok", "ok"]
    # the same function (already run in this process) resumes
    same = pdp.sample_many(build_prior, [0, 1], outdir=out, n_workers=0, **kw)
    assert same.units["status"].tolist() == ["skipped", "skipped"]
    monkeypatch.setattr(sys.modules[__name__], "PRIOR_MEAN", 5.0)
    with pytest.raises(ValueError, match=CHANGED_CODE):
        pdp.sample_many(build_prior, [0, 1], outdir=out, n_workers=0, **kw)
    redo = pdp.sample_many(build_prior, [0, 1], outdir=out, n_workers=0, overwrite=True, **kw)
    assert redo.units["status"].tolist() == ["ok", "ok"]
    assert abs(float(redo[0].posterior["mu"].mean()) - 5.0) < 0.2


def test_resume_refuses_a_closure_over_another_value(tmp_path):
    out, kw = tmp_path / "run", {**KW, "draws": 30, "tune": 10}
    pdp.sample_many(build_with_mean(0.0), [0], outdir=out, n_workers=0, **kw)
    again = pdp.sample_many(build_with_mean(0.0), [0], outdir=out, n_workers=0, **kw)
    assert again.units["status"].tolist() == ["skipped"]
    with pytest.raises(ValueError, match=CHANGED_CODE):
        pdp.sample_many(build_with_mean(5.0), [0], outdir=out, n_workers=0, **kw)


def test_code_digest_is_the_same_in_every_process_and_follows_the_code(tmp_path, monkeypatch):
    """A script's functions (``__main__``): a resume in a new process (another PYTHONHASHSEED)
    must see the same digests, and a changed constant another one."""
    import runpy

    script = tmp_path / "digest.py"
    script.write_text(
        textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        import numpy as np
        import pymc_dp as pdp
        from pymc_dp.runner.many import _manifest
        PRIOR_MEAN = float(os.environ["PRIOR_MEAN"])
        STAT, TAGS, TABLE = pdp.Mean(lower=-3, upper=5), {{"a", "b", "cc"}}, np.arange(4.0)

        def helper(unit):
            return TABLE * unit + PRIOR_MEAN

        def build(unit):
            shift = lambda v: v + 1
            return shift(helper(unit)), unit in TAGS or unit in {{"x", "y"}}, STAT

        m = _manifest(build, lambda u: {{"s": u}}, None, 0, {{"draws": 10}})
        DIGESTS = [m["build_code"], m["data_code"], m["step_code"]]
        print(*DIGESTS)
    """)
    )
    env = {**os.environ, "PYTHONHASHSEED": "1", "PRIOR_MEAN": "0.0"}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    there = proc.stdout.split()
    assert len(there) == 3, proc.stderr
    here = {}
    for mean in ("0.0", "0.5"):
        monkeypatch.setenv("PRIOR_MEAN", mean)
        here[mean] = [str(d) for d in runpy.run_path(str(script), run_name="__main__")["DIGESTS"]]
    assert here["0.0"] == there  # the same script in another process: the same digests
    assert here["0.5"][0] != there[0] and here["0.5"][1:] == there[1:]  # build's constant
    assert there[2] == "None"


def test_code_digest_ignores_line_numbers_and_caches_and_sees_helpers():
    from pymc_dp.runner._code import code_digest

    src = "def f(u):\n    return g(u) + K\n\ndef g(u):\n    return u * 2\n"
    ns_a, ns_b = {"K": 1}, {"K": 1}
    exec(compile(src, "a.py", "exec"), ns_a)
    exec(compile("\n\n# a comment\n" + src, "b.py", "exec"), ns_b)
    assert code_digest(ns_a["f"]) == code_digest(ns_b["f"])  # moved, same code
    ns_b["K"] = 2
    assert code_digest(ns_a["f"]) != code_digest(ns_b["f"])  # a constant it reads
    ns_b["K"] = 1
    exec(compile("def g(u):\n    return u * 3\n", "b.py", "exec"), ns_b)
    assert code_digest(ns_a["f"]) != code_digest(ns_b["f"])  # a helper it calls
    stat = pdp.Mean(lower=-3, upper=5)
    before = code_digest(lambda u: stat)
    stat._cache = object()  # private state (caches) is not what the function computes
    assert code_digest(lambda u: stat) == before
    table = __import__("pandas").DataFrame({"s": [1.0, 2.0]})
    before = code_digest(lambda u: table)
    table.loc[1, "s"] = 3.0  # a table's state is private (_mgr): its values count
    assert code_digest(lambda u: table) != before
    assert code_digest(lambda u: pdp.Mean(lower=-3, upper=6)) != code_digest(
        lambda u: pdp.Mean(lower=-3, upper=5)
    )
    # objects without __dict__ (xarray arrays, Fractions) counted their type only: a resume
    # returned the posteriors of a build that read other numbers
    import fractions

    import xarray as xr

    arr = xr.DataArray(np.zeros(3))
    before = code_digest(lambda u: arr)
    arr = xr.DataArray(np.full(3, 100.0))
    assert code_digest(lambda u: arr) != before
    frac = fractions.Fraction(1, 3)
    before = code_digest(lambda u: frac)
    frac = fractions.Fraction(1, 4)
    assert code_digest(lambda u: frac) != before


@pytest.mark.parametrize("at", [30, 70], ids=["warm-up", "draws"])
def test_ctrl_c_stops_the_run_and_saves_no_unit(tmp_path, at):
    """PyMC's sequential sampler catches Ctrl-C and returns a short trace (or fails on it during
    warm-up): the run must stop there, without recording the unit as finished or failed."""

    def ctrl_c(trace, draw):
        if draw.draw_idx == at:
            os.kill(os.getpid(), signal.SIGINT)

    # Ctrl-C as in an interactive session: Python's own handler. A test process can inherit an
    # ignored SIGINT (an xdist worker after other tests), and sample_many leaves an ignored SIGINT
    # alone, so the signal would never arrive.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt, match="interrupted"):
            pdp.sample_many(
                R.build, [0, 1], outdir=tmp_path / "out", n_workers=0, callback=ctrl_c, **KW
            )
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not list((tmp_path / "out" / "units").glob("*"))


def test_a_failing_unit_is_recorded_and_the_others_finish(tmp_path):
    res = pdp.sample_many(R.build_failing_on_3, [2, 3, 4], outdir=tmp_path, n_workers=0, **KW)
    assert res.units["status"].tolist() == ["ok", "error", "ok"]
    assert res.errors == {3: "ValueError: unit 3 has no data"}
    assert list(res) == [2, 4]
    with pytest.raises(KeyError, match="unit 3 failed: ValueError: unit 3 has no data"):
        res[3]
    rec = json.loads(next((tmp_path / "units").glob("3-*.json")).read_text())
    assert rec["status"] == "error" and "Traceback" in rec["traceback"]


@pytest.mark.parametrize(
    "kwargs, exc, msg",
    [
        ({"units": []}, ValueError, "units is empty"),
        ({"units": [1, 1]}, ValueError, "units holds 1 twice"),
        ({"random_seed": 3}, TypeError, "sample_many sets random_seed= itself"),
        (
            {"n_workers": -1},
            ValueError,
            "n_workers must be an int >= 0 (not a bool), got n_workers=-1",
        ),
        ({"build": 3}, TypeError, "build must be a function unit -> pm.Model, got int"),
    ],
)
def test_bad_arguments(kwargs, exc, msg):
    args = {"build": R.build, "units": [0], "n_workers": 0, **KW, **kwargs}
    with pytest.raises(exc, match=re.escape(msg)):
        pdp.sample_many(args.pop("build"), args.pop("units"), **args)


@pytest.mark.parametrize("batch_size", [-1, 0, 2.5, True, "4"])
def test_batch_size_must_be_a_positive_int(batch_size):
    """batch_size=-1 submitted no task and returned every unit 'missing', 2.5 raised a bare
    TypeError, 0 meant the default."""
    msg = (
        f"batch_size must be an int >= 1 (units per Dask task; not a bool), got "
        f"batch_size={batch_size!r}. Pass e.g. batch_size=4, or None to keep every worker busy "
        "(at most 16 per task)."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        pdp.sample_many(R.build, [0], n_workers=0, batch_size=batch_size, **KW)


@pytest.mark.parametrize("n_workers", [True, False, -1, 1.0])
def test_n_workers_must_be_a_non_negative_int(n_workers):
    """n_workers=True ran one worker."""
    msg = (
        f"n_workers must be an int >= 0 (not a bool), got n_workers={n_workers!r}. Use 0 to run "
        "in this process, None for one worker per core."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        pdp.sample_many(R.build, [0], n_workers=n_workers, **KW)


@pytest.mark.parametrize(
    "where", [{"n_workers": 1}, {"n_workers": None}, {"client": "tcp://127.0.0.1:9"}]
)
@pytest.mark.parametrize("cores", [2, None])
def test_cores_above_one_is_refused_on_dask_before_any_work(where, cores):
    """cores=2 on Dask failed every unit: "daemonic processes are not allowed to have children"
    (pm.sample starts a process per chain; a Dask worker's process is daemonic)."""
    msg = (
        f"cores must be 1 on Dask workers, got cores={cores!r}: pm.sample would run a unit's "
        "chains in processes of their own, which a Dask worker (a daemonic process) cannot "
        "start. Pass cores=1 (each unit's chains then run one after another on its worker; run "
        "more units at once with more workers, n_workers=...), or n_workers=0 to run the units "
        f"in this process with cores={cores!r}."
    )
    start = time.perf_counter()
    with pytest.raises(ValueError, match=re.escape(msg)):
        pdp.sample_many(R.build, [0, 1], cores=cores, timeout=1, **where, **{**KW, "chains": 2})
    assert time.perf_counter() - start < 1.0  # refused up front: no cluster started


def test_cores_in_this_process_is_passed_to_pm_sample():
    res = pdp.sample_many(build_prior, [0], n_workers=0, cores=2, **{**KW, "draws": 20})
    assert res.units["status"].tolist() == ["ok"]


def test_unreachable_scheduler_is_a_clear_error():
    with pytest.raises(
        ConnectionError,
        match=re.escape("client='tcp://127.0.0.1:9': no Dask scheduler answered within 2"),
    ):
        pdp.sample_many(R.build, [0], client="tcp://127.0.0.1:9", timeout=2, **KW)


@pytest.mark.slow
@pytest.mark.heavy
def test_dask_workers_own_compiledirs_and_a_killed_worker_is_retried(tmp_path):
    distributed = pytest.importorskip("distributed")
    with local_cluster(2) as cluster, distributed.Client(cluster) as client:
        dirs = client.run(lambda: str(__import__("pytensor").config.compiledir))
        assert len(set(dirs.values())) == 2 and all("pymc_dp_workers" in d for d in dirs.values())
    # a shared compile directory keeps this test's first compile warm; the kill is what matters
    with local_cluster(2, own_compiledirs=False) as cluster, distributed.Client(cluster) as client:
        pids = client.run(os.getpid)
        victim = sorted(pids.values())[0]

        def kill_when_started():
            deadline = time.time() + 120
            while time.time() < deadline and not list((tmp_path / "units").glob("*.json")):
                time.sleep(0.2)
            os.kill(victim, signal.SIGKILL)

        import threading

        killer = threading.Thread(target=kill_when_started, daemon=True)
        killer.start()
        res = pdp.sample_many(
            R.build_slow,
            list(range(8)),
            data=R.data,
            outdir=tmp_path,
            client=cluster,
            batch_size=1,
            **KW,
        )
        killer.join()
    assert res.units["status"].tolist() == ["ok"] * 8
    # same draws as one process running the units alone
    ref = pdp.sample_many(R.build, [5], n_workers=0, **KW)
    np.testing.assert_array_equal(mu_draws(res, 5), mu_draws(ref, 5))


@pytest.mark.slow
@pytest.mark.heavy
def test_interrupted_client_resumes(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import pymc_dp as pdp
        from tests.support import runner as R
        if __name__ == "__main__":
            pdp.sample_many(R.build_slow, list(range(6)), outdir={str(tmp_path / "out")!r},
                            n_workers=0, draws=60, tune=60, chains=1, progressbar=False)
    """)
    )
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path)
    deadline = time.time() + 240
    while time.time() < deadline and len(list((tmp_path / "out" / "units").glob("*.nc"))) < 2:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    done_before = len(list((tmp_path / "out" / "units").glob("*.nc")))
    assert 2 <= done_before < 6
    res = pdp.sample_many(R.build_slow, list(range(6)), outdir=tmp_path / "out", n_workers=0, **KW)
    status = res.units["status"].tolist()
    assert status.count("skipped") == done_before and status.count("ok") == 6 - done_before


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"return_inferencedata": False}, "return_inferencedata must be True"),
        ({"chains": 0}, "chains must be an integer >= 1"),
        ({"draws": -5}, "draws must be an integer >= 1"),
        ({"tune": 1.5}, "tune must be an integer >= 0"),
    ],
)
def test_run_lengths_are_checked_once_not_failed_in_every_unit(kw, match):
    """return_inferencedata=False failed every unit with KeyError 'posterior', chains=0 with a
    ZeroDivisionError."""
    with pytest.raises((TypeError, ValueError), match=re.escape(match)):
        pdp.sample_many(R.build, [0, 1], n_workers=0, progressbar=False, **kw)
