"""MkDocs hook: fail the build when a page shows a raw Sphinx role or directive.

Docstrings are NumPy style in Markdown (mkdocstrings renders them): a `:class:` / `:func:` /
`:math:` role or a `.. math::` directive left in a docstring reaches the site as literal text. This
hook scans every rendered page and names the page and the first offending text.
"""

from __future__ import annotations

import re

try:
    from mkdocs.exceptions import PluginError
except ImportError:  # tests/unit/docs/test_roles.py runs the hook without mkdocs (make test's venv)
    PluginError = RuntimeError

RAW = re.compile(
    r":(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc|math|ref|term):(?:`|<code>)|\.\. (?:math|note|warning|code-block)::"
)


PRE = re.compile(r"<pre\b.*?</pre>", re.S)  # source listings may quote anything


def on_post_page(output: str, page, config):
    text = PRE.sub("", output)
    m = RAW.search(text)
    if m:
        start = max(0, m.start() - 60)
        raise PluginError(
            f"{page.file.src_uri}: raw Sphinx markup on the rendered page: "
            f"...{text[start : m.end() + 40]!r}... Write `name` or a fenced block."
        )
    return output
