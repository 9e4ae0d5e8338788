"""MkDocs hook: run every example script with ``--smoke`` and render its output as a page.

For each entry of :data:`EXAMPLES` the hook runs ``python examples/<name>.py --smoke --outdir DIR``
(two at a time, with the Python that runs MkDocs and the checkout's ``pymc_dp`` first on the path),
then adds a generated page ``examples/<name>.md`` holding the script's docstring, the command, the
printed output and every figure the run wrote, followed by the source. A failing script fails the
build (with its stderr).

Results are cached under ``examples/output/docs-cache/`` keyed by a hash of the script, the shared
helper, the package sources and the Python version, so ``mkdocs serve`` and repeated builds do not
rerun unchanged examples. Environment variables:

``PYMC_DP_DOCS_EXAMPLES=run`` (default: use the cache when it is valid), ``rerun`` (ignore the cache)
or ``skip`` (do not execute; pages say so — for quick edits of the prose).
"""

from __future__ import annotations

import ast
import concurrent.futures
import hashlib
import logging
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.examples")

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES_DIR = ROOT / "examples"
CACHE = EXAMPLES_DIR / "output" / "docs-cache"

# name -> extra arguments for the documentation run (all get --smoke --outdir)
EXAMPLES = {
    "tutorial_contingency": [],
    "tutorial_workflow": [],
    "tutorial_census": [],
    "quickstart": ["--no-progressbar"],
    "naive_bayes": [],
    "linear_regression": [],
    "regression_seed000": [],
    "reproduce_seed001": [],
    "banana_penalty": [],
    "fisher_figures": [],
}
WORKERS = int(os.environ.get("PYMC_DP_DOCS_WORKERS", "2"))
TIMEOUT = 600


def _key(name: str) -> str:
    h = hashlib.sha256()
    h.update(sys.version.encode())
    h.update(" ".join(EXAMPLES[name]).encode())
    for path in [
        EXAMPLES_DIR / f"{name}.py",
        EXAMPLES_DIR / "_report.py",
        *sorted((ROOT / "pymc_dp").rglob("*.py")),
    ]:
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _run(name: str, mode: str) -> dict:
    out = CACHE / name / _key(name)
    if mode == "run" and (out / "stdout.txt").exists():
        return {"dir": out, "cached": True, "seconds": float((out / "seconds.txt").read_text())}
    if out.parent.exists():
        shutil.rmtree(out.parent)
    out.mkdir(parents=True)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        MPLBACKEND="Agg",
        PYTHONWARNINGS="ignore",
    )
    cmd = [
        sys.executable,
        str(EXAMPLES_DIR / f"{name}.py"),
        "--smoke",
        "--outdir",
        str(out / "files"),
        *EXAMPLES[name],
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        shutil.rmtree(out)
        raise PluginError(
            f"examples/{name}.py --smoke failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
        )
    (out / "stdout.txt").write_text(proc.stdout)
    (out / "seconds.txt").write_text(f"{seconds:.1f}")
    return {"dir": out, "cached": False, "seconds": seconds}


def _docstring(name: str) -> tuple[str, str, str]:
    """(title, body in Markdown, source) of an example script."""
    src = (EXAMPLES_DIR / f"{name}.py").read_text()
    doc = ast.get_docstring(ast.parse(src)) or name
    title, _, body = doc.partition("\n")
    body = re.sub(r"``([^`]+)``", r"`\1`", body)  # reST literals -> Markdown
    body = re.sub(r"::\n", ":\n", body)
    return title.rstrip("."), body.strip(), src


def _clean(text: str, files_dir: pathlib.Path) -> str:
    text = text.replace(str(files_dir), "examples/output").replace(str(ROOT) + os.sep, "")
    return text.rstrip()


def on_files(files, config):
    mode = os.environ.get("PYMC_DP_DOCS_EXAMPLES", "run")
    if mode not in ("run", "rerun", "skip"):
        raise PluginError(f"PYMC_DP_DOCS_EXAMPLES must be run, rerun or skip, got {mode!r}.")
    results = {}
    if mode != "skip":
        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
            futures = {name: pool.submit(_run, name, mode) for name in EXAMPLES}
            for name, fut in futures.items():
                results[name] = fut.result()
                r = results[name]
                log.info(
                    f"examples/{name}.py --smoke: "
                    + ("cached" if r["cached"] else f"ran in {r['seconds']:.1f} s")
                )
        log.info(f"examples: {time.perf_counter() - t0:.1f} s in total")
    for name in EXAMPLES:
        title, body, src = _docstring(name)
        lines = [f"# {title}", "", body, ""]
        run = results.get(name)
        cmd = f"python examples/{name}.py --smoke"
        if run is None:
            lines += [
                "!!! warning",
                "    Not executed in this build (`PYMC_DP_DOCS_EXAMPLES=skip`).",
                "",
            ]
        else:
            files_dir = run["dir"] / "files"
            stdout = _clean((run["dir"] / "stdout.txt").read_text(), files_dir)
            lines += [
                "## Output",
                "",
                (
                    f"Executed when this site was built: `{cmd}` (small settings; "
                    f"{run['seconds']:.0f} s). Run it without `--smoke` for the full setting, "
                    f"`--help` for the options."
                ),
                "",
                "```text",
                stdout,
                "```",
                "",
            ]
            figs = sorted(files_dir.glob("*.png")) if files_dir.exists() else []
            for fig in figs:
                uri = f"examples/{name}/{fig.name}"
                files.append(File.generated(config, uri, abs_src_path=str(fig)))
                lines += [f"![{fig.stem}]({name}/{fig.name})", ""]
        lines += [
            "## Source",
            "",
            f"`examples/{name}.py`:",
            "",
            "```python",
            src.rstrip(),
            "```",
            "",
        ]
        files.append(File.generated(config, f"examples/{name}.md", content="\n".join(lines)))
    return files
