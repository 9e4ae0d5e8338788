"""Every example script: ``--help`` works, ``--smoke`` runs, prints posterior diagnostics and writes
only under its ``--outdir`` (never the committed results); plus the shared summary helper."""

from __future__ import annotations

import hashlib
import os
import pathlib
import runpy
import subprocess
import sys
import time

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SCRIPTS = sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
SMOKE_SECONDS = 300  # the examples promise < 1 min alone; CI machines are shared and loaded
# `make docs` runs every script with plain --smoke (docs/hooks/examples.py); what this test checks
# (the summary columns, writes only under --outdir, committed results untouched) does not depend on
# the chain length, so the two scripts whose --smoke time is mostly sampling run shorter chains here
# (about 3 s of CPU less each; the others are dominated by imports and compilation)
SMOKE_ARGS = {
    "quickstart": ["--no-progressbar"],
    "linear_regression": ["--draws", "30"],
    "naive_bayes": ["--draws", "30"],
}


def _tracked_results():
    """Hashes of the committed results the scripts could overwrite."""
    paths = sorted(EXAMPLES.glob("*.md")) + sorted((EXAMPLES / "figures").glob("*"))
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def _run(args, tmp_path, timeout):
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    return subprocess.run(
        [sys.executable, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_every_example_is_listed():
    assert len(SCRIPTS) >= 9, SCRIPTS
    assert set(SMOKE_ARGS) <= set(SCRIPTS), SMOKE_ARGS
    for name in ("quickstart", "tutorial_contingency", "tutorial_workflow"):
        assert name in SCRIPTS


@pytest.mark.slow
@pytest.mark.parametrize("name", SCRIPTS)
def test_example_help(name, tmp_path, monkeypatch, capsys):
    # in this process (the script runs as __main__ until argparse exits): a subprocess per script
    # re-imported PyMC and pymc_dp nine times; --smoke below runs each script in a fresh interpreter
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(EXAMPLES / f"{name}.py"), "--help"])
    monkeypatch.setenv("MPLBACKEND", "Agg")
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    out = capsys.readouterr()
    assert exit_.value.code in (0, None), out.err[-2000:]
    assert "--smoke" in out.out and "--outdir" in out.out
    assert not any(tmp_path.iterdir())  # --help runs nothing


# `make docs` runs every example with --smoke in CI (docs/hooks/examples.py fails the build when
# one fails); this test adds the output checks below, in the heavy tier (`make test-heavy`), so CI
# does not run each script twice.
@pytest.mark.heavy
@pytest.mark.parametrize("name", SCRIPTS)
def test_example_smoke(name, tmp_path):
    before = _tracked_results()
    out = tmp_path / "out"
    args = [
        str(EXAMPLES / f"{name}.py"),
        "--smoke",
        "--outdir",
        str(out),
        *SMOKE_ARGS.get(name, []),
    ]
    t0 = time.perf_counter()
    proc = _run(args, tmp_path, timeout=600)
    seconds = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-3000:]
    # posterior summaries: mean, sd, 94 % HDI, ESS and R-hat
    for column in ("mean", "sd", "hdi_3%", "hdi_97%", "ess_bulk", "r_hat"):
        assert column in proc.stdout, f"{name} --smoke printed no {column!r} column"
    assert _tracked_results() == before, f"{name} --smoke changed committed results"
    assert set(p.parent for p in tmp_path.rglob("*") if p.is_file()) <= {out}, (
        f"{name} wrote outside --outdir: {[str(p) for p in tmp_path.rglob('*') if p.is_file()]}"
    )
    assert seconds < SMOKE_SECONDS, f"{name} --smoke took {seconds:.0f} s"


# --- the shared summary helper (fast) --------------------------------------------------------------
sys.path.insert(0, str(EXAMPLES))
import _report


def test_hdi_of_a_grid_and_of_normal_draws():
    # 1001 equally spaced points: every window of 940 gaps has the same width; the first is chosen
    assert _report.hdi(np.arange(1001.0), 0.94) == (0.0, 940.0)
    # N(0, 1): the 94 % HDI is ±1.8808; tolerance 4 standard errors of the empirical quantile
    z = np.random.default_rng(0).normal(size=200_000)
    lo, hi = _report.hdi(z, 0.94)
    se = np.sqrt(0.03 * 0.97 / len(z)) / 0.0681  # sqrt(p(1-p)/n) / density at the quantile
    assert abs(lo + 1.8808) < 4 * se and abs(hi - 1.8808) < 4 * se


def test_summary_columns_and_values(capsys):
    import arviz as az

    rng = np.random.default_rng(1)
    post = {"a": rng.normal(2.0, 0.5, size=(2, 500)), "b": rng.normal(size=(2, 500, 2))}
    try:
        idata = az.from_dict(posterior=post)
    except TypeError:  # ArviZ 1.x
        idata = az.from_dict({"posterior": post})
    text = _report.summary(idata, ["a", "b"])
    lines = text.splitlines()
    assert lines[0].split() == ["mean", "sd", "hdi_3%", "hdi_97%", "ess_bulk", "ess_tail", "r_hat"]
    assert [ln.split()[0] for ln in lines[1:]] == ["a", "b[0]", "b[1]"]
    mean_a, sd_a = map(float, lines[1].split()[1:3])
    assert abs(mean_a - 2.0) < 4 * 0.5 / np.sqrt(1000) and abs(sd_a - 0.5) < 0.05
    ess = float(lines[1].split()[5])
    assert 500 < ess < 2000  # independent draws: ESS ≈ 1000
