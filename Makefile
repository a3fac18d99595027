# Fresh-machine entry points: `make demo` and `make test` set up .venv themselves.
VENV ?= .venv
PY := $(VENV)/bin/python
# torch is installed first and pinned: a bare `torch` requirement pulls GBs of CUDA wheels.
TORCH_SPEC ?= torch==2.13.0

.PHONY: setup demo test test-fast clean

$(VENV)/.installed: pyproject.toml setup.py
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH_SPEC)
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(VENV)/bin/capsel demo

test: setup
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) capsel.duckdb capsel_out
