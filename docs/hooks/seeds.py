"""MkDocs hook: link every "seed NNN" (and "seeds 002/004", "seeds 002 and 004") to the bibliography.

Works on the rendered HTML of every page, so mentions in hand-written pages and in docstrings
rendered by mkdocstrings are linked alike; text inside ``<a>``, ``<code>``, ``<pre>`` and headings'
permalink anchors is left alone. Also checks that every seed number mentioned has an entry.
"""

from __future__ import annotations

import html
import posixpath
import re

from mkdocs.exceptions import PluginError

TITLES = {  # shown on hover; the full entries are in docs/bibliography.md
    "000": "Alparslan (2023), Monte Carlo Methods for Data Privacy Applications, MSc thesis",
    "001": "Alparslan & Yıldırım (2022), Statistic Selection and MCMC for Differentially Private Bayesian Estimation",
    "002": "Räisä (2020), Differentially Private Markov Chain Monte Carlo, MSc thesis",
    "003": "Ju, Gong, Awan & Rao (2022), Data Augmentation MCMC for Bayesian Inference from Privatized Data",
    "004": "Räisä (2020), Differentially Private Markov Chain Monte Carlo, LaTeX source of a draft",
}
KNOWN = set(TITLES)
BIB = "bibliography.md"
SKIP = {"a", "code", "pre", "script", "style", "kbd", "textarea"}
TAG = re.compile(r"(<[^>]+>)")
MENTION = re.compile(r"\b([Ss]eeds?)(\s+)(\d{3})((?:\s*(?:/|,|and|&amp;)\s*\d{3})*)")
NUM = re.compile(r"\d{3}")


def _href(page, config) -> str:
    target = BIB[:-3] + (".html" if not config["use_directory_urls"] else "/")
    here = posixpath.dirname(page.url) if not page.url.endswith("/") else page.url.rstrip("/")
    return posixpath.relpath(target, here or ".")


def _link_text(text: str, href: str, page) -> str:
    def one(num, text=None):
        if num not in KNOWN:
            raise PluginError(f"{page.file.src_uri}: 'seed {num}' has no bibliography entry.")
        return f'<a href="{href}#seed-{num}" title="{html.escape(TITLES[num])}">{text or num}</a>'

    def repl(m):
        word, space, first, rest = m.groups()
        rest = NUM.sub(lambda n: one(n.group(0)), rest)
        return one(first, f"{word}{space}{first}") + rest

    return MENTION.sub(repl, text)


def on_page_content(html, page, config, files):
    if page.file.src_uri == BIB:
        return html
    href = _href(page, config)
    parts = TAG.split(html)
    depth = 0  # inside a tag whose text must not be linked
    for i, part in enumerate(parts):
        if part.startswith("<"):
            m = re.match(r"<(/?)([a-zA-Z0-9]+)", part)
            if m and m.group(2).lower() in SKIP and not part.endswith("/>"):
                depth += -1 if m.group(1) else 1
                depth = max(depth, 0)
        elif depth == 0 and "seed" in part:
            parts[i] = _link_text(part, href, page)
    return "".join(parts)
