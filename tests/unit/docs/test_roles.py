"""No raw Sphinx roles on the built site (issue 21.5).

`make docs` greps every rendered page with docs/hooks/roles.py (`on_post_page`) and fails the build
on a raw role or directive; these tests pin what the hook catches, and check the package's
docstrings, which mkdocstrings renders, with the same pattern without a build.
"""

import ast
import functools
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[3]
SPEC = importlib.util.spec_from_file_location("roles_hook", ROOT / "docs/hooks/roles.py")
hook = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(hook)


_Page = functools.partial(SimpleNamespace, file=SimpleNamespace(src_uri="api/x.md"))  # page.file


@pytest.mark.parametrize(
    "html",
    [
        "<p>See :class:`Laplace`.</p>",
        "<p>See :func:<code>release</code>.</p>",  # as mkdocstrings renders a role's backticks
        "<p>:py:meth:`Mechanism.logp`</p>",
        "<p>where :math:`\\sigma` is</p>",
        "<p>.. math::</p><p>x^2</p>",
        "<p>.. note:: careful</p>",
    ],
)
def test_hook_fails_the_build_on_a_raw_role(html):
    with pytest.raises(hook.PluginError, match="raw Sphinx markup"):
        hook.on_post_page(f"<html><body>{html}</body></html>", _Page(), None)


def test_hook_passes_rendered_markup_and_source_listings():
    ok = "<p>See <code>Laplace</code> and <span class='arithmatex'>x</span>.</p>"
    listing = "<pre><code>s = ':class:`x`'  # quoted in a listing\n</code></pre>"
    page = f"<html><body>{ok}{listing}</body></html>"
    assert hook.on_post_page(page, _Page(), None) == page


def _docstrings(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield getattr(node, "name", "<module>"), doc


def test_package_docstrings_have_no_raw_roles():
    found = [
        f"{path.relative_to(ROOT)}:{name}: {m.group(0)!r}"
        for path in sorted((ROOT / "pymc_dp").rglob("*.py"))
        for name, doc in _docstrings(path)
        for m in [hook.RAW.search(doc)]
        if m
    ]
    assert not found, found
    # the check can fail: a docstring with a role is found
    assert hook.RAW.search("Uses :class:`pymc_dp.Laplace` noise.")
