"""MkDocs hook: execute every ```python block of every page when the site is built.

Each page becomes one script: its python blocks in order, in one namespace, run in a fresh
interpreter with the checkout's `pymc_dp` first on the path (two pages at a time). A block that
raises fails the build, naming the page, the block and the error.

Markers in a page (HTML comments, removed from the rendered page):

- `<!-- setup` ... `-->`: hidden code run before the next python block (the data a snippet
  stands for: `answers`, `noisy_table`, a `model` described in the prose). The shown code is run as
  written after it.
- `<!-- not-run: reason -->` right before a block: the block is not executed (a cluster address,
  a third-party package we do not install). The build log lists every such block with its reason,
  and `tests/unit/docs/test_snippets.py` keeps the list short.
- `<!-- snippets: as-written -->` anywhere in the page: `pm.sample` keeps the page's draws.
  Otherwise `pm.sample` runs at most `SMOKE` tuning and `SMOKE` kept draws per chain (the code is
  the same; the numbers are smaller, as for the examples' `--smoke` runs).

Results are cached under `examples/output/docs-cache/snippets/` keyed by a hash of the page, the
package sources and the Python version. `PYMC_DP_DOCS_EXAMPLES=skip` skips execution (as for the
examples hook), `rerun` ignores the cache.
"""

from __future__ import annotations

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

try:
    from mkdocs.exceptions import PluginError
except ImportError:  # parse() is also used by tests/unit/docs/test_snippets.py, without mkdocs
    PluginError = RuntimeError

log = logging.getLogger("mkdocs.hooks.snippets")

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CACHE = ROOT / "examples" / "output" / "docs-cache" / "snippets"
WORKERS = int(os.environ.get("PYMC_DP_DOCS_WORKERS", "2"))
TIMEOUT = 900
SMOKE = 100

FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
SETUP = re.compile(r"<!--\s*setup\s*\n(.*?)-->\n?", re.S)
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.*?)\s*-->\n?", re.S)
AS_WRITTEN = re.compile(r"<!--\s*snippets:\s*as-written\s*-->\n?")

PRELUDE = f"""\
import functools as _functools
import matplotlib as _mpl
_mpl.use("Agg")
import pymc as _pm

_pm_sample = _pm.sample


@_functools.wraps(_pm_sample)
def _smoke_sample(draws=1000, *args, tune=1000, **kwargs):
    kwargs.setdefault("progressbar", False)
    return _pm_sample(min(draws, {SMOKE}), *args, tune=min(tune, {SMOKE}), **kwargs)
"""


def parse(text: str) -> tuple[list[dict], bool]:
    """The python blocks of a page: code, hidden setup before it, reason it is not run (or None)."""
    blocks, pos = [], 0
    for m in FENCE.finditer(text):
        before = text[pos : m.start()]
        setups = SETUP.findall(before)
        skips = NOT_RUN.findall(before)
        blocks.append(
            {
                "code": m.group(1),
                "setup": "\n".join(setups),
                "not_run": skips[-1] if skips else None,
                "line": text.count("\n", 0, m.start()) + 2,
            }
        )
        pos = m.end()
    return blocks, bool(AS_WRITTEN.search(text))


def script(page: str, blocks: list[dict], as_written: bool) -> str:
    parts = [PRELUDE]
    if not as_written:
        # the script's own process only: Dask's spawned workers import it as __mp_main__ and
        # sample_many refuses a unit that stopped before its draws (as after Ctrl-C)
        parts.append('if __name__ == "__main__":\n    _pm.sample = _smoke_sample\n')
    for i, b in enumerate(blocks):
        if b["not_run"] is not None:
            continue
        if b["setup"]:
            parts.append(f"# --- setup before block {i} ({page}) ---\n{b['setup']}\n")
        parts.append(f"# --- block {i} ({page}, line {b['line']}) ---\n")
        parts.append(f"print('@@block {i}', flush=True)\n{b['code']}\n")
    return "\n".join(parts)


def _key(page: pathlib.Path) -> str:
    h = hashlib.sha256()
    h.update(sys.version.encode())
    h.update(pathlib.Path(__file__).read_bytes())
    h.update(page.read_bytes())
    for path in sorted((ROOT / "pymc_dp").rglob("*.py")):
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _run(page: pathlib.Path, mode: str) -> dict:
    name = str(page.relative_to(DOCS))
    blocks, as_written = parse(page.read_text())
    out = CACHE / name.replace("/", "__") / _key(page)
    skipped = [(i, b["not_run"]) for i, b in enumerate(blocks) if b["not_run"] is not None]
    if mode == "run" and (out / "ok").exists():
        return {"page": name, "cached": True, "seconds": 0.0, "skipped": skipped}
    if out.parent.exists():
        shutil.rmtree(out.parent)
    out.mkdir(parents=True)
    src = script(name, blocks, as_written)
    (out / "snippets.py").write_text(src)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        MPLBACKEND="Agg",
        PYTHONWARNINGS="ignore",
    )
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(out / "snippets.py")],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        done = re.findall(r"@@block (\d+)", proc.stdout)
        i = int(done[-1]) if done else 0
        shutil.rmtree(out.parent)
        raise PluginError(
            f"docs/{name}: python block {i} (line {blocks[i]['line']}) failed when executed "
            f"(exit {proc.returncode}):\n{proc.stderr[-3000:]}\nFix the snippet, give it the data it "
            "stands for in a '<!-- setup ... -->' comment, or mark it '<!-- not-run: reason -->'."
        )
    (out / "ok").write_text(f"{seconds:.1f}")
    return {"page": name, "cached": False, "seconds": seconds, "skipped": skipped}


def pages() -> list[pathlib.Path]:
    return [p for p in sorted(DOCS.rglob("*.md")) if FENCE.search(p.read_text())]


def on_pre_build(config):
    mode = os.environ.get("PYMC_DP_DOCS_EXAMPLES", "run")
    if mode not in ("run", "rerun", "skip"):
        raise PluginError(f"PYMC_DP_DOCS_EXAMPLES must be run, rerun or skip, got {mode!r}.")
    if mode == "skip":
        # asked for (make docs-fast), so not a warning: --strict would abort the build on it
        log.info("python blocks of the pages not executed (PYMC_DP_DOCS_EXAMPLES=skip)")
        return
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        futures = [pool.submit(_run, p, mode) for p in pages()]
        for fut in futures:
            r = fut.result()
            ran = "cached" if r["cached"] else f"ran in {r['seconds']:.1f} s"
            log.info(f"docs/{r['page']}: python blocks {ran}")
            for i, reason in r["skipped"]:
                log.info(f"docs/{r['page']}: block {i} not run ({reason})")
    log.info(f"page snippets: {time.perf_counter() - t0:.1f} s in total")


def on_page_markdown(markdown: str, page, config, files):
    markdown = SETUP.sub("", markdown)
    markdown = NOT_RUN.sub("", markdown)
    return AS_WRITTEN.sub("", markdown)
