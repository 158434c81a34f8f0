# loopbench: every target installs what it needs; a fresh clone needs no other step.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev

PORT ?= 8000
SCRIPTED_PORT ?= 8001
SCENARIO ?= plan

.PHONY: setup serve-local serve-scripted stop eval run test check lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

serve-scripted: $(STAMP)
	$(PY) -m serve_local.daemon start scripted $(SCRIPTED_PORT) --timeout 60 -- --backend scripted

# The local model backend (llama.cpp / transformers) is not in this version yet.
serve-local: $(STAMP)
	@echo "serve-local: the local model backend is not available yet; use 'make serve-scripted'" >&2
	@exit 2

stop: $(STAMP)
	$(PY) -m serve_local.daemon stop

# One scripted run through the real loop: make run SCENARIO=runaway
run: serve-scripted
	LLM_BASE_URL=http://127.0.0.1:$(SCRIPTED_PORT)/v1 $(PY) -m harness run --scenario $(SCENARIO)

eval: $(STAMP)
	@echo "eval: the eval runner is not available yet; 'make run SCENARIO=plan' runs one scripted task" >&2
	@exit 2

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

check: lint test

clean:
	rm -rf $(VENV) .run runs .pytest_cache .mypy_cache .ruff_cache
