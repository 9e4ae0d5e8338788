# The README's two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test test-fast venv clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e ".[test,examples]"
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(PY) examples/quickstart.py

test: venv
	$(PY) -m pytest -q

test-fast: venv
	$(PY) -m pytest -q -m "not slow"

clean:
	rm -rf $(VENV) .pytest_cache
