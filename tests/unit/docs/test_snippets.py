"""Every python block of the docs runs when the site is built (docs/hooks/snippets.py, issue 21.5).

The build itself executes the pages (CI runs `make docs`); these tests pin the hook's rules: which
blocks run, with which hidden setup, how `pm.sample` is shortened, and that exceptions stay rare.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SPEC = importlib.util.spec_from_file_location("snippets_hook", ROOT / "docs/hooks/snippets.py")
hook = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(hook)

PAGE = """Intro.

<!-- setup
answers = [1, 2]
-->
```python
total = sum(answers)
```

Text.

<!-- not-run: needs a cluster -->
```python
connect("tcp://host:8786")
```

```python
assert total == 3
print("done")
```
"""


def test_parse_setup_and_not_run():
    blocks, as_written = hook.parse(PAGE)
    assert not as_written
    assert [b["not_run"] for b in blocks] == [None, "needs a cluster", None]
    assert blocks[0]["setup"].strip() == "answers = [1, 2]"
    assert blocks[1]["setup"] == "" and blocks[2]["setup"] == ""
    assert hook.parse(PAGE + "\n<!-- snippets: as-written -->\n")[1]


def test_script_runs_setup_then_blocks_and_skips_not_run(tmp_path):
    blocks, as_written = hook.parse(PAGE)
    src = hook.script("page.md", blocks, as_written)
    assert "connect(" not in src
    path = tmp_path / "s.py"
    path.write_text(src)
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "done"


def test_smoke_wrapper_caps_draws_and_tune_only():
    seen = {}
    ns = {}
    exec(hook.PRELUDE, ns)
    ns["_pm_sample"] = lambda draws, *a, tune, **kw: seen.update(draws=draws, tune=tune, **kw)
    ns["_smoke_sample"](5000, tune=20, chains=3)
    assert seen == {"draws": hook.SMOKE, "tune": 20, "chains": 3, "progressbar": False}
    ns["_smoke_sample"]()
    assert (seen["draws"], seen["tune"]) == (hook.SMOKE, hook.SMOKE)


def test_markers_are_removed_from_the_rendered_page():
    md = hook.on_page_markdown(PAGE + "<!-- snippets: as-written -->\n", None, None, None)
    assert "setup" not in md and "not-run" not in md and "as-written" not in md
    assert md.count("```python") == 3


def test_every_page_block_runs_or_says_why_not():
    skipped = []
    for page in hook.pages():
        blocks, _ = hook.parse(page.read_text())
        skipped += [(page.name, b["not_run"]) for b in blocks if b["not_run"] is not None]
        for b in blocks:
            compile(b["setup"] + "\n" + b["code"], str(page), "exec")  # valid Python
    assert all(reason for _, reason in skipped)
    assert len(skipped) <= 3, skipped
