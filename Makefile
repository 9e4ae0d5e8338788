# The README's two commands: `make demo` and `make test`; `make docs` builds the documentation site.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test test-heavy test-fast docs docs-fast docs-env venv lint clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e ".[test,examples,dask]"
	touch $@

# the docs extra (mkdocs, material, mkdocstrings) on top of the package, installed only when missing:
# an environment that already has them (VENV=...) is used as it is, without network
DOCS_OK = $(PY) -c "import pymc, matplotlib, mkdocs, material, mkdocstrings_handlers.python" 2>/dev/null
docs-env:
	@$(DOCS_OK) || { $(MAKE) venv PYTHON="$(PYTHON)" VENV="$(VENV)" && $(PY) -m pip install -e ".[docs]"; }

venv: $(VENV)/.installed

demo: venv
	$(PY) examples/quickstart.py

# SLOW_PART=K/N runs the default tier and every N-th test of the slow tier, K1,K2/N several such parts
# (CI: 1/2 on the PyMC 5 line, 2/2 on the PyMC 6 line, so each line's run stays under 10
# minutes and CI covers the whole tier)
SLOW_PART ?= all
test: venv
	$(PY) -m pytest -q -n 2 --dist worksteal -m "not heavy" --slow-part=$(SLOW_PART) --durations=25

test-heavy: venv
	$(PY) -m pytest -q -n 2 -m heavy

test-fast: venv
	$(PY) -m pytest -q -n 2 -m "not slow and not heavy" --durations=25

# ruff (lint + format check) and the layer contracts of docs/architecture.md (import-linter)
lint: venv
	@$(PY) -c "import ruff, importlinter" 2>/dev/null || $(PY) -m pip install -e ".[lint]"
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports

# site/index.html; runs every example with --smoke (cached in examples/output/docs-cache/)
docs: docs-env
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# the same without executing the examples (quick edits of the prose)
docs-fast: docs-env
	NO_MKDOCS_2_WARNING=1 PYMC_DP_DOCS_EXAMPLES=skip $(PY) -m mkdocs build --strict

clean:
	rm -rf $(VENV) .pytest_cache site
